"""Tests of the tool registry: validation and guarded execution (SPEC A1, A2, B7, C1, C2)."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from loopact.errors import (
    EmergencyStopError,
    RobotError,
    ToolArgumentError,
    ToolError,
)
from loopact.llm.messages import ToolCall
from loopact.tools.base import Tool, ToolContext, ToolResult, tool
from loopact.tools.registry import ToolRegistry

WAIT_S = 5.0  # upper bound for every wait on an event: a broken test fails instead of hanging


def _ctx(tmp_path: Path, call_id: str = "c1") -> ToolContext:
    return ToolContext(task_id="t1", call_id=call_id, workspace=tmp_path)


def _call(name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments or {}, **kw)


@tool(safety="motion")
async def move_forward(distance_m: float, speed_mps: float = 0.2) -> dict[str, float]:
    """Drive straight ahead.

    Args:
        distance_m: How far, in metres.
        speed_mps: Speed in metres per second.
    """
    return {"distance_m": distance_m, "speed_mps": speed_mps}


class Point(BaseModel):
    x_m: float
    y_m: float


@tool
async def shapes(
    count: int,
    label: str = "",
    scale: float | None = None,
    values: list[float] | None = None,
    origin: Point | None = None,
    waypoints: list[Point] | None = None,
) -> str:
    """Exercise nested schemas."""
    return "ok"


class CustomTool(Tool):
    """A hand-written Tool subclass returning a plain value (wrapped by the registry)."""

    name = "move_forward"
    description = "Another tool with a clashing name."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return "plain value"  # type: ignore[return-value]


# ------------------------------------------------------------------------ collection
def test_collection_protocol_and_stable_specs() -> None:
    @tool
    def zeta() -> str:
        """Z."""
        return "z"

    @tool
    def alpha() -> str:
        """A."""
        return "a"

    reg = ToolRegistry([zeta, move_forward, alpha])
    assert len(reg) == 3
    assert "alpha" in reg and "nope" not in reg
    assert reg.get("zeta") is zeta
    assert reg.get("nope") is None
    assert reg.names == ["alpha", "move_forward", "zeta"]
    assert [s.name for s in reg.specs()] == ["zeta", "move_forward", "alpha"]  # insertion order
    assert [t.name for t in reg] == ["zeta", "move_forward", "alpha"]
    reg.remove("move_forward")
    assert reg.names == ["alpha", "zeta"]
    with pytest.raises(KeyError, match="nope"):
        reg.remove("nope")
    reg.add(move_forward)  # can come back after removal (heartbeat resumed, SPEC C2)
    assert [s.name for s in reg.specs()] == ["zeta", "alpha", "move_forward"]


def test_duplicate_name_error_names_both_tools() -> None:
    reg = ToolRegistry([move_forward])
    with pytest.raises(ValueError) as info:
        reg.add(CustomTool())
    msg = str(info.value)
    assert "duplicate tool name 'move_forward'" in msg
    assert "CustomTool" in msg
    assert "FunctionTool" in msg
    assert reg.get("move_forward") is move_forward


def test_invalid_schema_is_refused_at_add() -> None:
    broken = CustomTool()
    broken.name = "broken"
    broken.parameters = {"type": "objekt"}
    with pytest.raises(ValueError, match="broken.*invalid parameter schema"):
        ToolRegistry([broken])


@pytest.mark.parametrize(
    "ref", ["https://example.com/point.json", "#/$defs/missing", "other.json#/x"]
)
def test_a_schema_whose_ref_points_outside_it_is_refused_at_add(ref: str) -> None:
    """A node's or MCP server's schema with a dangling ``$ref`` would fail only when called."""
    remote = CustomTool()
    remote.name = "remote"
    remote.parameters = {"type": "object", "properties": {"p": {"$ref": ref}}}
    with pytest.raises(ValueError, match=f"remote.*\\$ref '{re.escape(ref)}' points outside"):
        ToolRegistry([remote])


def test_refs_within_the_schema_are_accepted_and_used() -> None:
    local = CustomTool()
    local.name = "local"
    local.parameters = {
        "type": "object",
        "$defs": {"metres": {"type": "number"}},
        "properties": {"d": {"$ref": "#/$defs/metres"}},
        "default": {"$ref": "not-a-schema-only-data"},
    }
    reg = ToolRegistry([local])
    assert reg.validate(_call("local", {"d": 1.5})) == {"d": 1.5}
    with pytest.raises(ToolArgumentError, match="d"):
        reg.validate(_call("local", {"d": "far"}))


def test_a_reference_that_cannot_be_resolved_at_call_time_is_a_tool_error() -> None:
    """``$dynamicRef`` is resolved only while validating: a clear error, never a crash."""
    dyn = CustomTool()
    dyn.name = "dyn"
    dyn.parameters = {
        "type": "object",
        "properties": {"p": {"$dynamicRef": "https://example.com/meta.json#node"}},
    }
    reg = ToolRegistry([dyn])
    with pytest.raises(ToolError, match="dyn' cannot be called: its parameter schema refers"):
        reg.validate(_call("dyn", {"p": 1}))


# ------------------------------------------------------------------------ validation
def test_unknown_tool_lists_available_tools() -> None:
    reg = ToolRegistry([move_forward, shapes])
    with pytest.raises(ToolError) as info:
        reg.validate(_call("fly"))
    assert not isinstance(info.value, ToolArgumentError)
    assert str(info.value) == "unknown tool 'fly'; available tools: move_forward, shapes"


def test_unparseable_arguments_error_has_hint() -> None:
    reg = ToolRegistry([move_forward])
    call = _call("move_forward", raw_arguments="{distance_m: ", error="arguments are truncated")
    with pytest.raises(ToolArgumentError) as info:
        reg.validate(call)
    assert str(info.value) == (
        "arguments are truncated. Call move_forward again with its arguments as one JSON "
        "object with keys: distance_m, speed_mps"
    )


def test_bad_type_names_the_path() -> None:
    reg = ToolRegistry([move_forward])
    with pytest.raises(ToolArgumentError) as info:
        reg.validate(_call("move_forward", {"distance_m": "far"}))
    assert str(info.value) == (
        "invalid arguments for move_forward: distance_m: 'far' is not of type 'number'"
    )


def test_every_failing_path_is_named() -> None:
    reg = ToolRegistry([shapes])
    args = {
        "count": "many",
        "values": [1.0, "x"],
        "waypoints": [{"x_m": 1, "y_m": 2}, {"x_m": 1}],
        "scale": "big",
        "colour": "red",
    }
    with pytest.raises(ToolArgumentError) as info:
        reg.validate(_call("shapes", args))
    msg = str(info.value)
    assert msg.startswith("invalid arguments for shapes: ")
    assert "count: 'many' is not of type 'integer'" in msg
    assert "scale: 'big' is not of type 'number' or 'null'" in msg
    assert "Additional properties are not allowed ('colour' was unexpected)" in msg
    assert "allowed keys: count, label, scale, values, origin, waypoints" in msg
    # Inside Optional[...] (anyOf [X, null]) the errors of X are reported at their own paths.
    assert "values.1: 'x' is not of type 'number'" in msg
    assert "waypoints.1: 'y_m' is a required property" in msg
    assert "not valid under any of the given schemas" not in msg


def test_nested_model_path() -> None:
    reg = ToolRegistry([shapes])
    with pytest.raises(ToolArgumentError) as info:
        reg.validate(_call("shapes", {"count": 1, "origin": {"x_m": "left", "y_m": 0}}))
    assert str(info.value) == (
        "invalid arguments for shapes: origin.x_m: 'left' is not of type 'number'"
    )


def test_missing_required_argument() -> None:
    reg = ToolRegistry([move_forward])
    with pytest.raises(ToolArgumentError, match="'distance_m' is a required property"):
        reg.validate(_call("move_forward", {}))


def test_non_object_arguments_are_refused() -> None:
    reg = ToolRegistry([move_forward])
    call = ToolCall(id="c1", name="move_forward", arguments=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ToolArgumentError, match="expected a JSON object, got list"):
        reg.validate(call)


def test_numeric_strings_are_normalised() -> None:
    reg = ToolRegistry([move_forward, shapes])
    call = _call("move_forward", {"distance_m": "1.5", "speed_mps": " 2 "})
    args = reg.validate(call)
    assert args == {"distance_m": 1.5, "speed_mps": 2}
    assert call.arguments == {"distance_m": "1.5", "speed_mps": " 2 "}  # not mutated

    args = reg.validate(
        _call(
            "shapes",
            {
                "count": "3",
                "label": "7",
                "scale": "0.5",
                "values": ["1e2", 4],
                "origin": {"x_m": "-1.25", "y_m": 0},
                "waypoints": [{"x_m": "1", "y_m": "2.5"}],
            },
        )
    )
    assert args["count"] == 3 and isinstance(args["count"], int)
    assert args["label"] == "7"  # a string field keeps its string
    assert args["scale"] == 0.5  # through anyOf [number, null]
    assert args["values"] == [100.0, 4]  # array items
    assert args["origin"] == {"x_m": -1.25, "y_m": 0}  # through $ref
    assert args["waypoints"] == [{"x_m": 1, "y_m": 2.5}]


def test_integer_valued_float_becomes_int() -> None:
    reg = ToolRegistry([shapes])
    args = reg.validate(_call("shapes", {"count": 2.0}))
    assert args["count"] == 2 and type(args["count"]) is int
    args = reg.validate(_call("shapes", {"count": "2.0"}))
    assert type(args["count"]) is int
    # A float that is not integer-valued is not rounded: it is an error.
    with pytest.raises(ToolArgumentError, match="count: 2.5 is not of type 'integer'"):
        reg.validate(_call("shapes", {"count": 2.5}))
    with pytest.raises(ToolArgumentError, match="count: 1.5 is not of type 'integer'"):
        reg.validate(_call("shapes", {"count": "1.5"}))


def test_hexadecimal_strings_become_ints_for_integer_fields_only() -> None:
    """Models write I2C addresses as "0x50" (audit B finding 9): an integer field takes it,
    a number field does not guess (see test_normalisation_does_not_guess), nor does strict."""
    reg = ToolRegistry([shapes])
    for text, number in (("0x50", 80), (" 0X1f ", 31), ("-0x10", -16)):
        args = reg.validate(_call("shapes", {"count": text}))
        assert args["count"] == number and type(args["count"]) is int, text
    for bad in ("0x", "0xZZ", "x50", "0x1.5"):
        with pytest.raises(ToolArgumentError, match="is not of type 'integer'"):
            reg.validate(_call("shapes", {"count": bad}))
    with pytest.raises(ToolArgumentError, match="'0x50' is not of type 'integer'"):
        reg.validate(_call("shapes", {"count": "0x50"}), strict=True)
    assert reg.validate(_call("shapes", {"count": 1, "label": "0x50"}))["label"] == "0x50"


def test_text_values_become_the_booleans_objects_and_arrays_the_schema_asks_for() -> None:
    """Calls written in a model's own markup carry every value as text (issue 39 item 2):
    "true" for a boolean, JSON text for an object or an array; a string field keeps it."""

    @tool
    def configure(enabled: bool, tags: list[str], limits: dict[str, float], label: str = "") -> str:
        """Configure."""
        return "ok"

    reg = ToolRegistry([configure])
    args = reg.validate(
        _call(
            "configure",
            {"enabled": " True ", "tags": '["a", "b"]', "limits": '{"x": 1}', "label": "[1]"},
        )
    )
    assert args == {"enabled": True, "tags": ["a", "b"], "limits": {"x": 1}, "label": "[1]"}
    for bad in ({"tags": '{"a": 1}'}, {"tags": "[1,"}, {"enabled": "yes"}):
        with pytest.raises(ToolArgumentError, match="is not of type"):
            reg.validate(_call("configure", {"enabled": True, "tags": [], "limits": {}, **bad}))
    with pytest.raises(ToolArgumentError, match="'true' is not of type 'boolean'"):
        reg.validate(_call("configure", {"enabled": "true", "tags": [], "limits": {}}), strict=True)


def test_a_call_that_could_not_be_read_is_told_so_not_unknown_tool() -> None:
    """A nameless call with a parse error: the parse error wins over the empty-name lookup
    (issue 39 item 2; before: "unknown tool ''")."""
    reg = ToolRegistry([move_forward])
    call = ToolCall(id="c1", name="", error="your tool call could not be read (x)")
    with pytest.raises(ToolArgumentError) as info:
        reg.check(call)
    assert str(info.value) == (
        "your tool call could not be read (x). Available tools: move_forward"
    )
    with pytest.raises(ToolError, match="unknown tool ''"):
        reg.check(ToolCall(id="c2", name=""))


def test_strict_validation_takes_the_arguments_as_sent() -> None:
    """strict (the MCP server, docs/mcp.md): a program's "1" for a number is its error, also
    nested; 2.0 still counts as the integer 2, as JSON Schema says."""
    reg = ToolRegistry([move_forward, shapes])
    with pytest.raises(ToolArgumentError, match="distance_m: '1' is not of type 'number'"):
        reg.validate(_call("move_forward", {"distance_m": "1"}), strict=True)
    with pytest.raises(ToolArgumentError, match="'-1.25' is not of type 'number'"):
        reg.validate(_call("shapes", {"origin": {"x_m": "-1.25", "y_m": 0}}), strict=True)
    args = reg.validate(_call("shapes", {"count": 2.0, "label": "7"}), strict=True)
    assert type(args["count"]) is int and args["label"] == "7"


def test_normalisation_does_not_guess() -> None:
    reg = ToolRegistry([move_forward])
    for bad in ("1.5m", "nan", "inf", "", "one", "0x10", "1,5"):
        with pytest.raises(ToolArgumentError, match="distance_m: "):
            reg.validate(_call("move_forward", {"distance_m": bad}))
    with pytest.raises(ToolArgumentError, match="True is not of type 'number'"):
        reg.validate(_call("move_forward", {"distance_m": True}))


# ------------------------------------------------------------------------ execution
async def test_execute_success_and_wrapping(tmp_path: Path) -> None:
    reg = ToolRegistry([move_forward])
    result = await reg.execute(_call("move_forward", {"distance_m": "1"}), _ctx(tmp_path), 5)
    assert result == ToolResult(ok=True, data={"distance_m": 1.0, "speed_mps": 0.2})

    custom = CustomTool()
    custom.name = "custom"
    reg.add(custom)
    result = await reg.execute(_call("custom"), _ctx(tmp_path), 5)
    assert result.ok and result.data == "plain value"


async def test_execute_turns_validation_errors_into_results(tmp_path: Path) -> None:
    reg = ToolRegistry([move_forward])
    unknown = await reg.execute(_call("fly"), _ctx(tmp_path), 5)
    assert not unknown.ok
    assert unknown.error == "unknown tool 'fly'; available tools: move_forward"
    assert unknown.metadata["error_kind"] == "unknown_tool"

    bad = await reg.execute(_call("move_forward", {"distance_m": "far"}), _ctx(tmp_path), 5)
    assert not bad.ok
    assert bad.error == (
        "invalid arguments for move_forward: distance_m: 'far' is not of type 'number'"
    )
    assert bad.metadata["error_kind"] == "arguments"

    unparsed = await reg.execute(
        _call("move_forward", error="arguments are not valid JSON"), _ctx(tmp_path), 5
    )
    assert not unparsed.ok
    assert unparsed.error is not None
    assert unparsed.error.startswith("arguments are not valid JSON. Call move_forward again")


async def test_timeout_cancels_the_tool(tmp_path: Path) -> None:
    started = asyncio.Event()
    saw_cancel = asyncio.Event()

    @tool
    async def slow() -> str:
        """Never finishes by itself."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.set()
            raise
        return "unreachable"

    reg = ToolRegistry([slow])
    result = await asyncio.wait_for(reg.execute(_call("slow"), _ctx(tmp_path), 0.05), WAIT_S)
    assert started.is_set()
    assert saw_cancel.is_set()
    assert not result.ok
    assert result.error == "tool slow timed out after 0.05 s and was cancelled"
    assert result.metadata["error_kind"] == "timeout"


async def test_tool_timeout_overrides_default(tmp_path: Path) -> None:
    saw_cancel = asyncio.Event()

    @tool(timeout_s=0.02)
    async def slow() -> str:
        """Never finishes by itself."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.set()
            raise
        return "unreachable"

    reg = ToolRegistry([slow])
    result = await asyncio.wait_for(reg.execute(_call("slow"), _ctx(tmp_path), 60), WAIT_S)
    assert result.error == "tool slow timed out after 0.02 s and was cancelled"
    assert saw_cancel.is_set()


async def test_exception_becomes_failed_result_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    async def boom(x: int) -> str:
        """Raise."""
        raise ValueError(f"bad value {x}")

    reg = ToolRegistry([boom])
    with caplog.at_level(logging.WARNING, logger="loopact.tools.registry"):
        result = await reg.execute(_call("boom", {"x": 3}), _ctx(tmp_path), 5)
    assert not result.ok
    assert result.error == "tool boom raised ValueError: bad value 3"
    assert result.metadata["error_kind"] == "exception"
    records = [r for r in caplog.records if r.name == "loopact.tools.registry"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].getMessage() == "tool boom raised ValueError: bad value 3"
    assert not records[0].exc_info  # traceback only at DEBUG

    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="loopact.tools.registry"):
        await reg.execute(_call("boom", {"x": 4}), _ctx(tmp_path), 5)
    records = [r for r in caplog.records if r.name == "loopact.tools.registry"]
    assert records[0].exc_info is not None


async def test_sync_tool_exception_becomes_failed_result(tmp_path: Path) -> None:
    @tool
    def sync_boom() -> str:
        """Raise from a worker thread."""
        raise KeyError("missing")

    reg = ToolRegistry([sync_boom])
    result = await reg.execute(_call("sync_boom"), _ctx(tmp_path), 5)
    assert result.error == "tool sync_boom raised KeyError: 'missing'"


async def test_tool_error_message_reaches_model(tmp_path: Path) -> None:
    @tool
    async def grip() -> str:
        """Fail on purpose."""
        raise ToolError("nothing to grip")

    reg = ToolRegistry([grip])
    result = await reg.execute(_call("grip"), _ctx(tmp_path), 5)
    assert result == ToolResult.failure("nothing to grip", error_kind="tool_error")


async def test_tool_raising_timeout_itself_is_not_reported_as_our_timeout(
    tmp_path: Path,
) -> None:
    @tool
    async def fetch() -> str:
        """Fail with the tool's own timeout."""
        raise asyncio.TimeoutError("camera did not answer")

    reg = ToolRegistry([fetch])
    result = await reg.execute(_call("fetch"), _ctx(tmp_path), 30)
    assert result.error is not None
    assert result.error.startswith("tool fetch raised TimeoutError")
    assert "camera did not answer" in result.error
    assert result.metadata["error_kind"] == "exception"


async def test_robot_and_safety_errors_are_marked(tmp_path: Path) -> None:
    @tool
    async def link() -> str:
        """Lose the link."""
        raise RobotError("base link lost")

    @tool
    async def estop() -> str:
        """Hit the e-stop."""
        raise EmergencyStopError("emergency stop latched")

    reg = ToolRegistry([link, estop])
    r1 = await reg.execute(_call("link"), _ctx(tmp_path), 5)
    r2 = await reg.execute(_call("estop"), _ctx(tmp_path), 5)
    assert r1.metadata["error_kind"] == "robot"
    assert r1.error == "tool link raised RobotError: base link lost"
    assert r2.metadata["error_kind"] == "safety"


async def test_cancelling_execute_cancels_the_tool(tmp_path: Path) -> None:
    started = asyncio.Event()
    saw_cancel = asyncio.Event()

    @tool
    async def drive() -> str:
        """Drive until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.set()
            raise
        return "unreachable"

    reg = ToolRegistry([drive])
    task = asyncio.ensure_future(reg.execute(_call("drive"), _ctx(tmp_path), 60))
    await asyncio.wait_for(started.wait(), WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT_S)
    assert saw_cancel.is_set()
    assert task.cancelled()


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 4])
async def test_a_cancel_as_the_tool_finishes_is_never_swallowed(tmp_path: Path, turns: int) -> None:
    """A caller cancelled while the tool's result is on its way ends cancelled, never with
    the result (asyncio.wait_for before 3.12 returned it: a preempted task went on)."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    started = asyncio.Event()

    @tool
    async def look() -> str:
        """Return what the future gets."""
        started.set()
        return await answer

    reg = ToolRegistry([look])
    task = asyncio.ensure_future(reg.execute(_call("look"), _ctx(tmp_path), 60))
    await asyncio.wait_for(started.wait(), WAIT_S)
    answer.set_result("seen")
    for _ in range(turns):  # the result travels through the loop's callbacks meanwhile
        await asyncio.sleep(0)
    if task.cancel():  # not finished yet: it must end cancelled
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        assert task.result().data == "seen"


async def _overlap(tmp_path: Path, reentrant: bool) -> tuple[int, list[str]]:
    gate = asyncio.Event()
    entered = asyncio.Queue[int]()
    active = 0
    max_active = 0

    @tool(reentrant=reentrant)
    async def arm(n: int) -> str:
        """Hold the arm until the gate opens."""
        nonlocal active, max_active
        active += 1
        max_active = max(max_active, active)
        entered.put_nowait(n)
        await gate.wait()
        active -= 1
        return f"done {n}"

    reg = ToolRegistry([arm])
    tasks = [
        asyncio.ensure_future(reg.execute(_call("arm", {"n": n}), _ctx(tmp_path), 30))
        for n in (1, 2)
    ]
    first = await asyncio.wait_for(entered.get(), WAIT_S)
    assert first == 1
    if reentrant:
        assert await asyncio.wait_for(entered.get(), WAIT_S) == 2
    else:
        for _ in range(20):  # let the loop run; the second call must stay queued
            await asyncio.sleep(0)
        assert entered.empty()
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), WAIT_S)
    return max_active, [r.data for r in results]


async def test_non_reentrant_tool_calls_queue(tmp_path: Path) -> None:
    max_active, data = await _overlap(tmp_path, reentrant=False)
    assert max_active == 1
    assert data == ["done 1", "done 2"]


async def test_reentrant_tool_calls_overlap(tmp_path: Path) -> None:
    max_active, data = await _overlap(tmp_path, reentrant=True)
    assert max_active == 2
    assert data == ["done 1", "done 2"]


async def test_context_reaches_the_tool(tmp_path: Path) -> None:
    @tool
    async def who(ctx: ToolContext) -> str:
        """Report the call id."""
        ctx.progress("half way")
        return f"{ctx.task_id}/{ctx.call_id}"

    reg = ToolRegistry([who])
    result = await reg.execute(_call("who"), _ctx(tmp_path, call_id="call-9"), 5)
    assert result.data == "t1/call-9"
