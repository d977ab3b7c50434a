"""References between the steps of a plan (SPEC A4): ``{{steps.N.outputs.data}}`` and
``{{steps.N.outputs.metadata.KEY}}``, found in a step's parameters and resolved against the
results of the steps before it. See :mod:`loopact.agent.plan` for the plans themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from loopact.errors import PlanError
from loopact.tools.base import ToolResult

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
REFERENCE = re.compile(
    r"^\s*steps\.(?P<step>[A-Za-z0-9_-]+)\.outputs\."
    r"(?P<field>data|metadata)(?P<path>(?:\.[A-Za-z0-9_-]+)*)\s*$"
)
"""The body of one placeholder: ``steps.<id>.outputs.data|metadata[.key...]``."""
_MAX_RESOLVE_DEPTH = 16


def placeholders(value: Any, depth: int = 0) -> list[str]:
    """Every ``{{...}}`` body in the strings of ``value`` (nested lists/objects included)."""
    if depth > _MAX_RESOLVE_DEPTH:
        return []
    if isinstance(value, str):
        return [m.group(1).strip() for m in _PLACEHOLDER.finditer(value)]
    if isinstance(value, Mapping):
        return [p for v in value.values() for p in placeholders(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in placeholders(v, depth + 1)]
    return []


def resolve_parameters(
    params: Mapping[str, Any], outputs: Mapping[str, ToolResult]
) -> dict[str, Any]:
    """Resolve ``{{steps.N.outputs.data}}`` / ``{{steps.N.outputs.metadata.KEY}}`` (SPEC A4).

    A string that is exactly one placeholder takes the referenced value with its type (a
    number stays a number, a list a list); placeholders embedded in longer text are
    interpolated as text (strings as they are, other values as JSON). References nested in
    lists and objects are resolved. A dotted path after ``data`` or ``metadata.KEY`` walks
    into objects (by key) and lists (by index).

    Args:
        params: A step's parameters.
        outputs: Results of the steps run so far, keyed by step id (as text).

    Returns:
        A new parameter dict; ``params`` is not modified.

    Raises:
        PlanError: A reference is malformed, names a step without an output, or a key that
            does not exist (the message names the available keys).
    """
    return {k: _resolve_value(v, outputs, 0) for k, v in params.items()}


def _resolve_value(value: Any, outputs: Mapping[str, ToolResult], depth: int) -> Any:
    if depth > _MAX_RESOLVE_DEPTH:
        raise PlanError("parameters nested too deeply")
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole is not None and "{{" not in whole.group(1):
            return _lookup(whole.group(1), outputs)
        return _PLACEHOLDER.sub(lambda m: _as_text(_lookup(m.group(1), outputs)), value)
    if isinstance(value, Mapping):
        return {k: _resolve_value(v, outputs, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_resolve_value(v, outputs, depth + 1) for v in value]
    return value


def _lookup(ref: str, outputs: Mapping[str, ToolResult]) -> Any:
    m = REFERENCE.match(ref)
    if m is None:
        raise PlanError(
            f"bad reference {{{{{ref.strip()}}}}}; use {{{{steps.N.outputs.data}}}} or "
            "{{steps.N.outputs.metadata.KEY}}"
        )
    step = m.group("step")
    result = outputs.get(step)
    if result is None:
        available = ", ".join(outputs) or "none"
        raise PlanError(f"step {step} has no outputs; steps with outputs: {available}")
    path = [p for p in m.group("path").split(".") if p]
    where = f"steps.{step}.outputs.{m.group('field')}"
    if m.group("field") == "data":
        value: Any = result.data
    else:
        if not path:
            raise PlanError(
                f"{{{{{where}}}}} needs a key: {{{{{where}.KEY}}}}; available keys: "
                f"{_keys(result.metadata)}"
            )
        value = result.metadata
    for part in path:
        if isinstance(value, Mapping):
            if part not in value:
                raise PlanError(f"{where} has no key {part!r}; available keys: {_keys(value)}")
            value = value[part]
        elif isinstance(value, (list, tuple)) and part.lstrip("-").isdigit():
            idx = int(part)
            if not -len(value) <= idx < len(value):
                raise PlanError(f"{where} has no index {idx}; it has {len(value)} items")
            value = value[idx]
        else:
            raise PlanError(f"{where} is {type(value).__name__}, it has no key {part!r}")
        where += f".{part}"
    return value


def _keys(mapping: Mapping[str, Any]) -> str:
    return ", ".join(str(k) for k in mapping) or "none"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
