"""Trace files (SPEC H3): JSON Lines of the agent's events, a readable timeline, replay scripts.

``--trace PATH`` writes one JSON object per line: first ``{"type": "trace_start", "schema": 1,
...}``, then every event of the bus except the live-only deltas (``docs/trace.md`` lists the
types and fields). ``loopact trace PATH`` prints a timeline; ``loopact trace PATH --to-script
OUT.json`` turns the recorded model responses into a script for the scripted model server
(``loopact.testing``), so a run seen once replays offline as a test.

Reading checks every line in one place (:func:`check_event`): an object, the common fields
and the fields the timeline and the replay use of the right JSON kind, else a ``ValueError``
naming the file and line. A last line cut off mid-write (a crash) is skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from loopact.events import LIVE_ONLY_TYPES, Event, EventBus, EventType

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
                "type": EventType.TRACE_START,
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


@dataclass(frozen=True)
class Trace:
    """A trace file as :func:`load_trace` read it.

    Attributes:
        path: The file.
        events: Its events in order, each one checked by :func:`check_event`.
        lines: The line number (from 1) of each event, for messages about it.
        warnings: What reading skipped, one sentence each naming the file and line (a last
            line cut off mid-write).
    """

    path: Path
    events: tuple[dict[str, Any], ...]
    lines: tuple[int, ...]
    warnings: tuple[str, ...] = ()


def load_trace(path: Path) -> Trace:
    """Read and check a trace file (SPEC H3, docs/trace.md "Reading a trace").

    Args:
        path: A JSON Lines trace, as ``--trace`` writes it.

    Returns:
        Its events with their line numbers; no events when the file is empty or blank. A last
        line without its newline that is not JSON (the run was cut off while writing it) is
        skipped and named in ``warnings``.

    Raises:
        ValueError: A line is not UTF-8, not JSON, or not an event of the documented shape
            (the message names the file, the line and what is wrong); or no line has the
            ``ts`` and ``type`` of an event (JSON Lines of something else, such as a
            ``--sim-log`` pose file).
        OSError: The file cannot be read.
    """
    warnings: list[str] = []
    numbered = list(_scan(path, warnings))
    return Trace(
        path=path,
        events=tuple(event for _n, event in numbered),
        lines=tuple(n for n, _event in numbered),
        warnings=tuple(warnings),
    )


def read_trace(path: Path) -> Iterator[dict[str, Any]]:
    """The trace's events as dicts, in order, each checked by :func:`check_event`.

    A last line cut off mid-write is skipped silently (:func:`load_trace` reports it).

    Raises:
        ValueError: A line is not JSON or not an event (names the line number); or, once
            every line is read, none had the ``ts`` and ``type`` of an event.
        OSError: The file cannot be read.
    """
    for _n, event in _scan(path, []):
        yield event


def _scan(path: Path, warnings: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, event)`` of every non-blank line; a cut-off last line goes to warnings.

    Raises ``ValueError`` at the end (:func:`_not_a_trace`) when lines were read but none of
    them is an event: the file is JSON Lines of something else.
    """
    seen_event = False
    first: tuple[int, dict[str, Any]] | None = None  # the first line, for the refusal
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            where = f"{path}:{n}"
            try:
                text = _decode(raw, where)
                if not text.strip():
                    continue
                value = _parse(text, where)
            except ValueError:
                if raw.endswith(b"\n") or not raw.lstrip().startswith(b"{"):
                    raise  # a line the writer began is a JSON object: this one is not
                # only the last line can lack its newline: the writer died inside it
                warnings.append(
                    f"{where}: the last line is incomplete (the run was cut off); ignored"
                )
                break
            event = check_event(value, where)
            seen_event = seen_event or _is_event(event)
            first = first or (n, event)
            yield n, event
    if first is not None and not seen_event:
        raise ValueError(_not_a_trace(path, *first))


def _is_event(line: dict[str, Any]) -> bool:
    """Whether a checked line has what every event has: ``ts`` (a number) and ``type``."""
    return "ts" in line and "type" in line


def _not_a_trace(path: Path, n: int, line: dict[str, Any]) -> str:
    """Why a file none of whose lines is an event is refused, from its first line ``n``.

    Names what the line lacks and what it holds; a ``--sim-log`` pose file (``t_s``,
    ``x_m``, ...: the JSON Lines file most often mistaken for a trace) is named as one.
    """
    lacks = " or ".join(repr(k) for k in ("ts", "type") if k not in line)
    keys = ", ".join(list(line)[:6]) + (", ..." if len(line) > 6 else "")
    holds = f"its keys: {keys}" if line else "it is an empty object"
    hint = (
        f"a --sim-log pose file? use loopact sim --snapshot DIR --sim-log {path}"
        if "t_s" in line and "x_m" in line
        else "loopact trace reads the files loopact run --trace writes"
    )
    return f"{path} is not a loopact trace: line {n} has no {lacks} ({holds}); {hint}"


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text") from None


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not a JSON line ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # an integer of 4300+ digits, deep nesting
        raise ValueError(f"{where}: not a JSON line ({exc})") from None


_Check = Callable[[Any, str], str | None]
"""Checks one value named ``name``; returns what is wrong (``'ts' must be a number, ...``)."""


def _kind(value: Any) -> str:
    """The JSON kind of a parsed value, as a message says it: ``an array``, ``a string``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and not _fits_a_float(value):
        return "a number too large"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _fits_a_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _expect(wanted: str, kinds: tuple[str, ...]) -> _Check:
    def check(value: Any, name: str) -> str | None:
        return None if _kind(value) in kinds else f"{name} must be {wanted}, got {_kind(value)}"

    return check


def _list_of(wanted: str, item: _Check) -> _Check:
    def check(value: Any, name: str) -> str | None:
        if not isinstance(value, list):
            return f"{name} must be {wanted}, got {_kind(value)}"
        for i, element in enumerate(value):
            if problem := item(element, f"{name}[{i}]"):
                return problem
        return None

    return check


def _object_with(fields: dict[str, _Check]) -> _Check:
    def check(value: Any, name: str) -> str | None:
        if not isinstance(value, dict):
            return f"{name} must be an object, got {_kind(value)}"
        for key, field_check in fields.items():
            if key in value and (problem := field_check(value[key], f"{name}.{key}")):
                return problem
        return None

    return check


_NUMBER = _expect("a number", ("a number",))
_STRING = _expect("a string", ("a string",))
_STRING_OR_NULL = _expect("a string or null", ("a string", "null"))
_COMMON_FIELDS: dict[str, _Check] = {"ts": _NUMBER, "type": _STRING, "task_id": _STRING_OR_NULL}
"""The fields of every line (docs/trace.md, Common fields)."""
_TYPE_FIELDS: dict[str, dict[str, _Check]] = {
    EventType.MODEL_REQUEST: {"tools": _list_of("a list of strings", _STRING)},
    EventType.MODEL_RESPONSE: {
        "text": _STRING_OR_NULL,
        "reasoning": _STRING_OR_NULL,
        "finish_reason": _STRING_OR_NULL,
        "tool_calls": _list_of(
            "a list",
            _object_with(
                {"id": _STRING, "name": _STRING, "arguments": _expect("an object", ("an object",))}
            ),
        ),
    },
    EventType.ROBOT_STATE: {"x_m": _NUMBER, "y_m": _NUMBER, "yaw_rad": _NUMBER},
}
"""Per event type, the fields whose kind the timeline and the replay rely on; other fields
and types are shown as they are (new ones may appear without a schema bump)."""


def check_event(value: Any, where: str) -> dict[str, Any]:
    """Check one parsed trace line: an object whose documented fields have the right kind.

    A field may be missing (the timeline prints what there is); when present it must be of
    its documented JSON kind, or nothing downstream could use it (SPEC H3).

    Args:
        value: The parsed JSON of one line.
        where: ``FILE:LINE`` for the message.

    Returns:
        ``value``, an event dict.

    Raises:
        ValueError: ``FILE:LINE: expected an event object, got an array``, or ``FILE:LINE:
            'tool_calls' must be a list, got a string`` (the first problem found).
    """
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an event object, got {_kind(value)}")
    _check_fields(value, _COMMON_FIELDS, where)
    # the type is a string or absent by now; an unknown type has no fields of its own
    _check_fields(value, _TYPE_FIELDS.get(str(value.get("type")), {}), where)
    return value


def _check_fields(event: dict[str, Any], fields: dict[str, _Check], where: str) -> None:
    for key, field_check in fields.items():
        if key in event and (problem := field_check(event[key], f"'{key}'")):
            raise ValueError(f"{where}: {problem}")


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def timeline(events: Sequence[dict[str, Any]]) -> list[str]:
    """Readable lines, one per event: ``+seconds  task  type  summary``.

    Args:
        events: Events as :func:`load_trace` or :func:`read_trace` checked them; a missing
            field is shown as what there is (``None``, ``?``), never raised about.
    """
    if not events:
        return []
    # times count from the first line that has one (a line without is shown at +0)
    t0 = float(next((ev["ts"] for ev in events if "ts" in ev), 0.0))
    lines = []
    for ev in events:
        typ = ev.get("type", "?")
        rel = float(ev.get("ts", t0)) - t0
        task = (ev.get("task_id") or "-")[:8]
        if typ == EventType.TRACE_START:
            summary = f"schema {ev.get('schema')} {ev.get('provider', '')} {ev.get('model', '')}"
        elif typ == EventType.TASK_START:
            summary = _short(ev.get("text", ""))
        elif typ == EventType.MODEL_REQUEST:
            summary = f"round {ev.get('round')}: {ev.get('n_messages')} messages, " + (
                f"tools [{', '.join(ev.get('tools', []))}]" if ev.get("tools") else "no tools"
            )
        elif typ == EventType.MODEL_RESPONSE:
            calls = ", ".join(
                f"{c.get('name', '?')}({_short(c.get('arguments'), 60)})"
                for c in ev.get("tool_calls", [])
            )
            summary = f"round {ev.get('round')} [{ev.get('finish_reason')}] " + (
                calls or _short(ev.get("text", ""))
            )
        elif typ == EventType.TOOL_CALL:
            summary = f"{ev.get('name')}({_short(ev.get('arguments'), 80)})"
        elif typ == EventType.TOOL_RESULT:
            mark = "ok" if ev.get("ok") else "FAILED"
            body = ev.get("data") if ev.get("ok") else ev.get("error")
            summary = f"{ev.get('name')} {mark}: {_short(body, 80)}"
        elif typ == EventType.TOOL_IMAGE:
            summary = (
                f"{ev.get('name')} image {ev.get('n')} ({ev.get('width_px')}x"
                f"{ev.get('height_px')}, {ev.get('bytes')} B): {_short(ev.get('caption', ''), 80)}"
            )
        elif typ in (EventType.REPLY,):
            summary = _short(ev.get("text", ""), 120)
        elif typ == EventType.ERROR:
            summary = _short(ev.get("message", ""), 120)
        elif typ == EventType.TASK_END:
            summary = f"{ev.get('status')} after {ev.get('rounds')} rounds"
        elif typ == EventType.ROBOT_STATE:
            summary = (
                f"x={ev.get('x_m', 0):.3f} m y={ev.get('y_m', 0):.3f} m "
                f"yaw={ev.get('yaw_rad', 0):.3f} rad ({ev.get('frame')})"
            )
        else:
            rest = {k: v for k, v in ev.items() if k not in ("ts", "type", "task_id")}
            summary = _short(rest)
        lines.append(f"+{rel:8.3f}s  {task:8}  {typ:15} {summary}")
    return lines


NOTHING_TO_REPLAY = "the trace has no model_response events to replay"
"""Why :func:`to_script` refuses a trace without model responses."""


def to_script(events: Trace | Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A scripted-server script that replays the trace's model responses in order (SPEC H3).

    Args:
        events: A trace as :func:`load_trace` read it (messages name its lines), or its
            events as :func:`read_trace` yields them (messages name the event's position).

    Returns:
        ``{"turns": [...]}``, one turn per ``model_response``.

    Raises:
        ValueError: The trace has no ``model_response`` events; or a recorded tool call lacks
            its ``id``, ``name`` or ``arguments``, which the replay would have to guess.
    """
    if isinstance(events, Trace):
        where = [f"{events.path}:{n}" for n in events.lines]
        events = events.events
    else:
        where = [f"event {i}" for i in range(1, len(events) + 1)]
    turns: list[dict[str, Any]] = []
    for at, ev in zip(where, events, strict=True):
        if ev.get("type") != EventType.MODEL_RESPONSE:
            continue
        turn: dict[str, Any] = {}
        if ev.get("text"):
            turn["text"] = ev["text"]
        if ev.get("reasoning"):
            turn["reasoning"] = ev["reasoning"]
        calls = ev.get("tool_calls") or []
        if calls:
            turn["tool_calls"] = [_replayed_call(c, i, at) for i, c in enumerate(calls, 1)]
        reason = ev.get("finish_reason")
        if reason in ("stop", "tool_calls", "length"):
            turn["finish_reason"] = reason
        turns.append(turn)
    if not turns:
        raise ValueError(NOTHING_TO_REPLAY)
    return {"turns": turns}


def _replayed_call(call: dict[str, Any], i: int, where: str) -> dict[str, Any]:
    """The script's form of the ``i``-th recorded call (from 1) of the event at ``where``."""
    for key in ("id", "name", "arguments"):
        if key not in call:
            raise ValueError(
                f"{where}: tool call {i} has no {key!r}, which a replay needs; no script written"
            )
    return {"id": call["id"], "name": call["name"], "arguments": call["arguments"]}
