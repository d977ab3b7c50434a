"""Event types are one enumeration and each type's fields one definition (issue 38 item 4).

``docs/trace.md`` is the contract: every type its table names is a member of
:class:`loopact.events.EventType` and every member is documented there; every field a type's
definition names is named in that type's row. The enumeration is ``str``-valued, so an event's
JSON form (its trace line) is the same as when types were bare strings.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from pydantic import ConfigDict, TypeAdapter, ValidationError
from tests.agent.helpers import call, make_agent
from typing_extensions import is_typeddict

from loopact.agent import Bounds
from loopact.events import LIVE_ONLY_TYPES, Event, EventBus, EventType, payloads
from loopact.events.payloads import PAYLOADS, ToolCallPayload, ToolResultPayload
from loopact.llm.messages import Image
from loopact.tools.base import ToolContext, ToolResult, tool

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


# ----------------------------------------------------------- what a run really emits


def _strict_definitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every definition refuses unknown fields and values of another kind (for this test)."""
    for value in vars(payloads).values():
        if is_typeddict(value):
            monkeypatch.setattr(
                value, "__pydantic_config__", ConfigDict(extra="forbid", strict=True), raising=False
            )


def _problems(events: list[Event]) -> list[str]:
    """Each event whose fields do not match its type's definition, with pydantic's reasons."""
    problems = []
    for event in events:
        try:
            TypeAdapter(PAYLOADS[event.type]).validate_python(event.data)
        except ValidationError as exc:
            problems.append(f"{event.type}: {exc}")
    return problems


@tool
async def look(ctx: ToolContext) -> ToolResult:
    """Look around: reports progress and shows the frame it used."""
    ctx.progress("turning the camera")
    frame = Image(_jpeg(), "image/jpeg", 8, 6)
    ctx.show_image(frame, "what the camera saw")
    return ToolResult.success({"seen": "a red ball"}, images=[frame], confidence=0.9)


def _jpeg() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 6), (200, 10, 10)).save(out, "JPEG")
    return out.getvalue()


async def _robot_state() -> dict[str, Any]:
    return {"x_m": 0.5, "y_m": 0.0, "yaw_rad": 0.1, "frame": "odom"}


async def test_the_events_of_a_run_match_their_definitions(
    scripted_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _strict_definitions(monkeypatch)
    server = scripted_server(
        [
            {"error": {"status": 503, "message": "busy"}},
            {"tool_calls": [call("look", {}, "l1")]},
            {"tool_calls": [call("file_write", {"path": "n.txt", "content": "hi"}, "w1")]},
            {"text": "I saw a red ball and wrote a note."},
            {"tool_calls": [call("look", {}, "l2")]},  # the second task trips max_rounds
            {"text": "bounded"},
        ]
    )
    fast = Bounds(backoff_base_s=0.01, backoff_max_s=0.05)
    agent, rec = make_agent(
        server, tmp_path, tools=[look], bounds=fast, state_provider=_robot_state
    )
    task = asyncio.ensure_future(agent.run_task("look around and write a note"))
    asked = await rec.wait_for(lambda e: e.type == EventType.CONFIRM_REQUEST)
    agent.answer_confirmation(asked.data["id"], True, "web")
    assert (await task).status == "completed"
    await agent.close()
    bounded, rec2 = make_agent(server, tmp_path, tools=[look], bounds=Bounds(max_rounds=1))
    assert (await bounded.run_task("look again")).status == "bounded"
    await bounded.close()
    events = rec.events + rec2.events
    seen = {e.type for e in events}
    assert {
        EventType.TASK_START, EventType.MODEL_REQUEST, EventType.MODEL_RETRY,
        EventType.MODEL_RESPONSE, EventType.TEXT_DELTA, EventType.TOOL_CALL,
        EventType.TOOL_PROGRESS, EventType.TOOL_IMAGE, EventType.TOOL_RESULT,
        EventType.CONFIRM_REQUEST, EventType.CONFIRM_RESPONSE, EventType.REPLY,
        EventType.ROBOT_STATE, EventType.BOUND, EventType.TASK_END,
    } <= seen  # fmt: skip
    assert _problems(events) == []


async def test_the_events_of_a_plan_match_their_definitions(
    scripted_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _strict_definitions(monkeypatch)
    steps = [{"id": 1, "description": "look", "tool": "look", "parameters": {}}]
    plan = "```json\n" + json.dumps({"steps": steps}) + "\n```"
    server = scripted_server([{"text": plan}])
    agent, rec = make_agent(server, tmp_path, tools=[look], mode="plan")
    assert (await agent.run_task("look")).status == "completed"
    await agent.close()
    assert {EventType.PLAN, EventType.STEP_START, EventType.STEP_END} <= {
        e.type for e in rec.events
    }
    assert _problems(rec.events) == []


def test_a_field_outside_the_definition_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    _strict_definitions(monkeypatch)
    good = Event(EventType.TASK_END, "t1", {"status": "completed", "rounds": 2})
    extra = Event(EventType.TASK_END, "t1", {"status": "completed", "rounds": 2, "x": 1})
    wrong = Event(EventType.TASK_END, "t1", {"status": "completed", "rounds": "2"})
    assert _problems([good]) == []
    assert len(_problems([extra, wrong])) == 2


def test_mypy_checks_the_fields_where_an_event_is_built(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    # the events package alone (and the masker it uses): the whole of loopact is slow to check
    src = ROOT / "src" / "loopact"
    package = tmp_path / "stubs" / "loopact"
    shutil.copytree(src / "events", package / "events", ignore=shutil.ignore_patterns("__py*"))
    shutil.copy(src / "redact.py", package / "redact.py")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "py.typed").write_text("", encoding="utf-8")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from loopact.events import EventBus, EventType\n"
        "bus = EventBus()\n"
        "bus.emit(EventType.TOOL_CALL, 't', id='c', name='n', arguments={})\n"  # right
        "bus.emit(EventType.TOOL_CALL, 't', id='c', name='n')\n"  # line 4: no arguments
        "bus.emit(EventType.TASK_END, 't', status='completed', rounds='2')\n"  # 5: a str
        "bus.emit(EventType.REPLY, 't', text='hi', extra=1)\n"  # 6: unknown field
        "bus.emit('reply', 't', text='hi')\n",  # 7: a bare string
        encoding="utf-8",
    )
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nmypy_path = {tmp_path / 'stubs'}\n", encoding="utf-8")
    out, _err, status = api.run(
        [str(probe), "--strict", "--config-file", str(config), "--cache-dir", str(tmp_path / "c")]
    )
    assert status == 1, out
    lines = sorted({int(m) for m in re.findall(r"probe\.py:(\d+): error", out)})
    assert lines == [4, 5, 6, 7], out
