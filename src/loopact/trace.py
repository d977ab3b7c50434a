"""Trace files (SPEC H3): JSON Lines of the agent's events, a readable timeline, replay scripts.

``--trace PATH`` writes one JSON object per line: first ``{"type": "trace_start", "schema": 1,
...}``, then every event of the bus except the live-only deltas (``docs/trace.md`` lists the
types and fields). ``loopact trace PATH`` prints a timeline; ``loopact trace PATH --to-script
OUT.json`` turns the recorded model responses into a script for the scripted model server
(``loopact.testing``), so a run seen once replays offline as a test.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from loopact.events import LIVE_ONLY_TYPES, Event, EventBus

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


class TraceWriter:
    """Writes the bus's events to a JSON Lines file, one flushed line per event.

    Args:
        path: The trace file (parent folders are created; an existing file is replaced).
        header: Extra fields for the ``trace_start`` line (provider, model, ...).

    Raises:
        OSError: The file cannot be created.
    """

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # backslashreplace: a lone surrogate in an event (undecodable bytes) is written as
        # \udcff rather than failing the write
        self._file: IO[str] | None = path.open("w", encoding="utf-8", errors="backslashreplace")
        self._unsubscribe: Any = None
        self._write(
            {
                "ts": time.time(),
                "type": "trace_start",
                "task_id": None,
                "schema": SCHEMA_VERSION,
                **(header or {}),
            }
        )

    def attach(self, bus: EventBus) -> TraceWriter:
        """Subscribe to ``bus``; returns self."""
        self._unsubscribe = bus.subscribe(self.on_event)
        return self

    def on_event(self, event: Event) -> None:
        """Write one event (live-only deltas are skipped)."""
        if event.type in LIVE_ONLY_TYPES:
            return
        self._write(event.to_json())

    def _write(self, obj: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(obj, ensure_ascii=False, default=_json_default) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Unsubscribe and close the file."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._file is not None:
            self._file.close()
            self._file = None


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def read_trace(path: Path) -> Iterator[dict[str, Any]]:
    """The trace's events as dicts, in order.

    Raises:
        ValueError: A line is not JSON (names the line number).
        OSError: The file cannot be read.
    """
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON line ({exc.msg})") from None


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def timeline(events: list[dict[str, Any]]) -> list[str]:
    """Readable lines, one per event: ``+seconds  task  type  summary``."""
    if not events:
        return []
    t0 = float(events[0].get("ts", 0.0))
    lines = []
    for ev in events:
        typ = ev.get("type", "?")
        rel = float(ev.get("ts", t0)) - t0
        task = (ev.get("task_id") or "-")[:8]
        if typ == "trace_start":
            summary = f"schema {ev.get('schema')} {ev.get('provider', '')} {ev.get('model', '')}"
        elif typ == "task_start":
            summary = _short(ev.get("text", ""))
        elif typ == "model_request":
            summary = f"round {ev.get('round')}: {ev.get('n_messages')} messages, " + (
                f"tools [{', '.join(ev.get('tools', []))}]" if ev.get("tools") else "no tools"
            )
        elif typ == "model_response":
            calls = ", ".join(
                f"{c.get('name')}({_short(c.get('arguments'), 60)})"
                for c in ev.get("tool_calls", [])
            )
            summary = f"round {ev.get('round')} [{ev.get('finish_reason')}] " + (
                calls or _short(ev.get("text", ""))
            )
        elif typ == "tool_call":
            summary = f"{ev.get('name')}({_short(ev.get('arguments'), 80)})"
        elif typ == "tool_result":
            mark = "ok" if ev.get("ok") else "FAILED"
            body = ev.get("data") if ev.get("ok") else ev.get("error")
            summary = f"{ev.get('name')} {mark}: {_short(body, 80)}"
        elif typ == "tool_image":
            summary = (
                f"{ev.get('name')} image {ev.get('n')} ({ev.get('width_px')}x"
                f"{ev.get('height_px')}, {ev.get('bytes')} B): {_short(ev.get('caption', ''), 80)}"
            )
        elif typ in ("reply",):
            summary = _short(ev.get("text", ""), 120)
        elif typ == "error":
            summary = _short(ev.get("message", ""), 120)
        elif typ == "task_end":
            summary = f"{ev.get('status')} after {ev.get('rounds')} rounds"
        elif typ == "robot_state":
            summary = (
                f"x={ev.get('x_m', 0):.3f} m y={ev.get('y_m', 0):.3f} m "
                f"yaw={ev.get('yaw_rad', 0):.3f} rad ({ev.get('frame')})"
            )
        else:
            rest = {k: v for k, v in ev.items() if k not in ("ts", "type", "task_id")}
            summary = _short(rest)
        lines.append(f"+{rel:8.3f}s  {task:8}  {typ:15} {summary}")
    return lines


def to_script(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A scripted-server script that replays the trace's model responses in order.

    Raises:
        ValueError: The trace has no ``model_response`` events.
    """
    turns: list[dict[str, Any]] = []
    for ev in events:
        if ev.get("type") != "model_response":
            continue
        turn: dict[str, Any] = {}
        if ev.get("text"):
            turn["text"] = ev["text"]
        if ev.get("reasoning"):
            turn["reasoning"] = ev["reasoning"]
        calls = ev.get("tool_calls") or []
        if calls:
            turn["tool_calls"] = [
                {"id": c["id"], "name": c["name"], "arguments": c.get("arguments") or {}}
                for c in calls
            ]
        reason = ev.get("finish_reason")
        if reason in ("stop", "tool_calls", "length"):
            turn["finish_reason"] = reason
        turns.append(turn)
    if not turns:
        raise ValueError("the trace has no model_response events to replay")
    return {"turns": turns}
