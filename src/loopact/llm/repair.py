"""Tool-argument repair (SPEC B7).

Models write almost-JSON: trailing commas, single quotes, Python literals, unclosed brackets
when the output is cut, arguments wrapped in a code fence or in a sentence, or JSON encoded
twice. :func:`parse_tool_arguments` turns such text into a JSON object when it can and says
why when it cannot, so the loop can answer the call with an error result instead of crashing.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import json_repair

from loopact.llm.arguments import MAX_ARGUMENT_DEPTH, TOO_DEEP_ERROR, nesting_depth, value_depth

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```", re.DOTALL)
_MAX_REPAIR_CHARS = 200_000
_MAX_DECODE_DEPTH = 2


def parse_tool_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Parse (and repair if needed) tool-call arguments into a JSON object (SPEC B7).

    Args:
        raw: The arguments as the model sent them: JSON text (possibly broken, fenced,
            wrapped in prose or encoded twice), an already-parsed object, or None.

    Returns:
        ``(arguments, None)`` on success; ``({}, reason)`` when no JSON object could be
        produced, ``reason`` saying what was wrong (``"arguments nested too deeply ..."``
        past :data:`~loopact.llm.arguments.MAX_ARGUMENT_DEPTH` levels, checked before any
        decoding so that it cannot recurse). Empty or missing arguments are ``{}`` without an
        error (tools without parameters). Never raises.
    """
    return _parse(raw, 0)


def _parse(raw: object, depth: int) -> tuple[dict[str, Any], str | None]:
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        if value_depth(raw) > MAX_ARGUMENT_DEPTH:
            return {}, TOO_DEEP_ERROR
        return {str(k): v for k, v in raw.items()}, None
    if not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {_kind(raw)}"
    text = raw.strip()
    if not text:
        return {}, None
    if nesting_depth(text) > MAX_ARGUMENT_DEPTH:
        return {}, TOO_DEEP_ERROR
    repaired = False
    try:
        value = json.loads(text)
    except ValueError:
        value, repaired = _repair(text), True
        if isinstance(value, _Failure):
            return {}, value.reason
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str) and depth < _MAX_DECODE_DEPTH:
        # JSON encoded twice: '"{\"a\": 1}"'.
        inner, err = _parse(value, depth + 1)
        if err is None and (inner or value.strip()):
            return inner, None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        return value[0], None
    if repaired:  # what the repair made of broken text is no evidence of what was meant
        return {}, f"arguments are not valid JSON and could not be repaired: {_clip(text)}"
    return {}, f"arguments must be a JSON object, got {_kind(value)}: {_clip(text)}"


class _Failure:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _repair(text: str) -> object:
    """Repair ``text`` into a JSON value, or return a :class:`_Failure`."""
    if len(text) > _MAX_REPAIR_CHARS:
        return _Failure(f"arguments are not valid JSON and too long to repair ({len(text)} chars)")
    fence = _FENCE.search(text)
    if fence:
        text = fence.group(1).strip()
        try:
            return json.loads(text)
        except ValueError:
            pass
    start = text.find("{")
    if start < 0:
        return _Failure(f"arguments are not a JSON object: {_clip(text)}")
    candidate = text[start:]
    try:
        value = json_repair.loads(candidate)
    except Exception as exc:  # json_repair is lenient; never let it crash the loop
        logger.debug("json_repair failed: %s", exc)
        return _Failure(f"arguments are not valid JSON and could not be repaired: {_clip(text)}")
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        if len(objects) > 1:
            return _Failure(f"arguments hold {len(objects)} JSON objects, expected one")
    if value == "" or value is None:
        return _Failure(f"arguments are not valid JSON and could not be repaired: {_clip(text)}")
    return value


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
