"""Per-round JSON snapshots of the agent's context (SPEC E2): building, capping, naming.

A snapshot is one JSON document::

    {"round": 3, "machine_id": "robot-1", "time": "2026-11-30T14:03:22.123456+00:00",
     "n_messages": 12, "truncated": false, "messages": [...]}

``messages`` is :func:`loopact.llm.messages.history_summary` of the history: images are
replaced by their SHA-256 and size, so a snapshot never holds image bytes. A document larger
than the cap is shrunk by cutting long texts (each cut text ends with a ``[... N chars
truncated]`` marker) and, if that is not enough, by dropping the oldest messages (counted in
``dropped_messages``); ``truncated`` is then true.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from loopact.llm.messages import Message, history_summary

#: Folder of the snapshots inside the memory repository; one subfolder per machine.
SNAPSHOT_DIR = "snapshots"

_MIN_TEXT_CHARS = 64


def snapshot_name(when: datetime, round_no: int) -> str:
    """File name of a snapshot: ``20261130T140322123456-r00003.json`` (UTC, sorts by time)."""
    ts = when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    return f"{ts}-r{round_no:05d}.json"


def names_to_prune(names: Sequence[str], retention: int) -> list[str]:
    """The snapshot file names to delete so that only the newest ``retention`` remain."""
    ordered = sorted(n for n in names if n.endswith(".json"))
    keep = max(retention, 0)
    return ordered[: len(ordered) - keep] if len(ordered) > keep else []


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}[... {len(text) - limit} chars truncated]", True


def _shrink_message(d: dict[str, Any], limit: int) -> bool:
    """Cut every long text in one summarised message to ``limit`` chars; True if any was cut."""
    cut_any = False
    for part in d.get("content", []):
        if part.get("type") == "text":
            part["text"], cut = _cut(part["text"], limit)
            cut_any |= cut
    if "reasoning" in d:
        d["reasoning"], cut = _cut(d["reasoning"], limit)
        cut_any |= cut
    for block in d.get("thinking", []):
        block["text"], cut = _cut(block["text"], limit)
        cut_any |= cut
    for call in d.get("tool_calls", []):
        args = json.dumps(call["arguments"], ensure_ascii=False, default=str)
        if len(args) > limit:
            call["arguments"] = {"_truncated": _cut(args, limit)[0]}
            cut_any = True
    return cut_any


def build_snapshot(
    round_no: int,
    messages: Sequence[Message],
    machine_id: str,
    when: datetime,
    max_bytes: int,
    mask: Callable[[Any], Any] | None = None,
) -> bytes:
    """Serialise one round's context as a size-capped JSON snapshot (UTF-8).

    Args:
        round_no: The agent round the snapshot belongs to.
        messages: The full history sent to the model in that round.
        machine_id: Which robot wrote it.
        when: When (timezone-aware, or naive meaning UTC).
        max_bytes: Upper bound of the encoded size in bytes (at least 1024).
        mask: Masks secrets in the summarised messages (JSON-able values in, masked copy
            out; :meth:`loopact.redact.Redactor.value`), applied before the size cap (H6).

    Returns:
        The encoded document, at most ``max_bytes`` bytes long.
    """
    max_bytes = max(max_bytes, 1024)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    doc: dict[str, Any] = {
        "round": round_no,
        "machine_id": machine_id,
        "time": when.astimezone(timezone.utc).isoformat(),
        "n_messages": len(messages),
        "truncated": False,
        "messages": history_summary(list(messages)),
    }
    if mask is not None:
        doc["messages"] = mask(doc["messages"])

    def encode() -> bytes:
        return json.dumps(doc, ensure_ascii=False, default=str, indent=1).encode()

    data = encode()
    limit = 8192
    while len(data) > max_bytes and limit >= _MIN_TEXT_CHARS:
        cut = False
        for d in doc["messages"]:
            cut |= _shrink_message(d, limit)
        if cut:
            doc["truncated"] = True
            data = encode()
        limit //= 2
    dropped = 0
    while len(data) > max_bytes and doc["messages"]:
        # Drop the oldest messages, estimating how many from the size overshoot.
        n = len(doc["messages"])
        k = max(1, int(n * (len(data) - max_bytes) / len(data)))
        doc["messages"] = doc["messages"][k:]
        dropped += k
        doc["truncated"] = True
        doc["dropped_messages"] = dropped
        data = encode()
    return data
