"""Event types are one enumeration and each type's fields one definition (issue 38 item 4).

``docs/trace.md`` is the contract: every type its table names is a member of
:class:`loopact.events.EventType` and every member is documented there; every field a type's
definition names is named in that type's row. The enumeration is ``str``-valued, so an event's
JSON form (its trace line) is the same as when types were bare strings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from loopact.events import LIVE_ONLY_TYPES, Event, EventBus, EventType
from loopact.events.payloads import PAYLOADS, ToolCallPayload, ToolResultPayload

ROOT = Path(__file__).resolve().parents[1]
TRACE_DOC = ROOT / "docs" / "trace.md"


def _table_rows() -> dict[str, set[str]]:
    """Each event type of docs/trace.md's table -> the backticked names of its row's fields."""
    text = TRACE_DOC.read_text(encoding="utf-8")
    section = text.split("## Event types", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            rows[name] = set(re.findall(r"`([a-z_0-9]+)`", cells[1]))
    return rows


def test_every_documented_type_is_in_the_enumeration_and_back() -> None:
    rows = _table_rows()
    assert len(rows) >= 35, sorted(rows)  # the table was found and read
    text = TRACE_DOC.read_text(encoding="utf-8")
    # the header line and the live-only deltas are documented beside the table
    assert '"type": "trace_start"' in text
    for live in LIVE_ONLY_TYPES:
        assert f"`{live}`" in text.split("## Order", 1)[0].split("## Event types", 1)[1]
    documented = set(rows) | {"trace_start"} | {str(t) for t in LIVE_ONLY_TYPES}
    assert documented == {str(t) for t in EventType}


def test_every_type_has_one_definition_and_its_fields_are_documented() -> None:
    assert set(PAYLOADS) == set(EventType)
    rows = _table_rows()
    undocumented = {
        str(t): sorted(set(PAYLOADS[t].__annotations__) - rows[t])
        for t in EventType
        if t in rows and not set(PAYLOADS[t].__annotations__) <= rows[t]
    }
    assert undocumented == {}


def test_an_event_type_is_its_name_in_json_and_in_text() -> None:
    kind = EventType.TOOL_CALL
    assert kind == "tool_call" and hash(kind) == hash("tool_call")
    assert str(kind) == f"{kind}" == "%s" % kind == "tool_call"  # noqa: UP031 - as logging does
    assert f"{kind:>10}" == " tool_call"
    assert json.dumps({"type": kind}) == '{"type": "tool_call"}'
    assert {"tool_call": 1}[kind] == 1 and EventType("tool_call") is kind


def test_a_trace_line_is_the_same_as_with_bare_strings() -> None:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    bus.emit(EventType.TOOL_CALL, "t1", id="c1", name="wait", arguments={"seconds": 1})
    (event,) = seen
    typed = json.dumps(event.to_json())
    bare = json.dumps({**event.to_json(), "type": "tool_call"})
    assert typed == bare
    assert json.loads(typed)["type"] == "tool_call"


def test_reading_an_event_as_another_types_fields_is_refused() -> None:
    event = Event(EventType.TOOL_CALL, "t1", {"id": "c1", "name": "wait", "arguments": {}})
    assert event.payload(ToolCallPayload)["name"] == "wait"
    with pytest.raises(TypeError, match="a tool_call event read as ToolResultPayload"):
        event.payload(ToolResultPayload)
