"""Tests of the ``@tool`` decorator and schema generation (SPEC C1)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Literal

import pytest

from loopact.errors import ToolArgumentError, ToolError
from loopact.tools.base import (
    FunctionTool,
    SafetyClass,
    ToolContext,
    ToolResult,
    as_result,
    tool,
)


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="task-1", call_id="call-1", workspace=tmp_path)


@tool(safety="motion", timeout_s=30)
async def move_forward(
    distance_m: float,
    ctx: ToolContext,
    speed_mps: float = 0.2,
    mode: Literal["smooth", "fast"] = "smooth",
) -> ToolResult:
    """Drive straight ahead.

    Stops early when an obstacle is close.

    Args:
        distance_m: How far to drive, in metres.
        speed_mps: Speed in metres per second.
        mode: Driving style.
    """
    return ToolResult.success(
        {"distance_m": distance_m, "speed_mps": speed_mps, "mode": mode}, task=ctx.task_id
    )


def test_schema_from_hints_and_google_docstring() -> None:
    params = move_forward.parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False  # extra="forbid"
    props = params["properties"]
    assert set(props) == {"distance_m", "speed_mps", "mode"}  # ToolContext param excluded
    assert "ctx" not in props
    assert props["distance_m"] == {"type": "number", "description": "How far to drive, in metres."}
    assert props["speed_mps"]["default"] == 0.2
    assert props["speed_mps"]["description"] == "Speed in metres per second."
    assert props["mode"]["enum"] == ["smooth", "fast"]
    assert props["mode"]["default"] == "smooth"
    assert params["required"] == ["distance_m"]
    # pydantic's titles are stripped: they cost tokens and say nothing.
    assert "title" not in params
    assert all("title" not in p for p in props.values())


def test_tool_metadata_from_decorator() -> None:
    assert isinstance(move_forward, FunctionTool)
    assert move_forward.name == "move_forward"
    assert move_forward.description == (
        "Drive straight ahead.\n\nStops early when an obstacle is close."
    )
    assert move_forward.safety is SafetyClass.MOTION
    assert move_forward.safety.changes_state
    assert move_forward.timeout_s == 30
    assert move_forward.reentrant is False
    spec = move_forward.spec()
    assert spec.name == "move_forward"
    assert spec.openai()["function"]["parameters"] is move_forward.parameters


def test_explicit_name_and_description_override_docstring() -> None:
    @tool(name="turn", description="Turn in place.", safety=SafetyClass.MOTION, reentrant=True)
    def rotate(angle_deg: float) -> str:
        """Something else entirely."""
        return f"{angle_deg}"

    assert rotate.name == "turn"
    assert rotate.description == "Turn in place."
    assert rotate.reentrant is True


def test_no_docstring_falls_back_to_name() -> None:
    @tool
    def take_photo() -> str:
        return "ok"

    assert take_photo.description == "take photo"
    assert take_photo.parameters["properties"] == {}


async def test_async_tool_gets_context_and_parsed_arguments(tmp_path: Path) -> None:
    result = await move_forward.invoke({"distance_m": 1, "mode": "fast"}, _ctx(tmp_path))
    assert result.ok
    assert result.data == {"distance_m": 1.0, "speed_mps": 0.2, "mode": "fast"}
    assert isinstance(result.data["distance_m"], float)
    assert result.metadata == {"task": "task-1"}


async def test_sync_tool_runs_in_a_worker_thread(tmp_path: Path) -> None:
    loop_thread = threading.get_ident()

    @tool
    def where() -> int:
        """Report the thread id."""
        return threading.get_ident()

    result = await where.invoke({}, _ctx(tmp_path))
    assert result.ok
    assert isinstance(result.data, int)
    assert result.data != loop_thread


async def test_sync_tool_does_not_block_the_event_loop(tmp_path: Path) -> None:
    release = threading.Event()

    @tool
    def blocker() -> str:
        """Block until released."""
        assert release.wait(5), "never released"
        return "released"

    task = asyncio.ensure_future(blocker.invoke({}, _ctx(tmp_path)))
    # The loop still runs while the tool blocks its thread: we can release it from here.
    await asyncio.sleep(0)
    assert not task.done()
    release.set()
    result = await asyncio.wait_for(task, 5)
    assert result.data == "released"


async def test_plain_return_values_are_wrapped(tmp_path: Path) -> None:
    @tool
    async def answer() -> dict[str, int]:
        """Return a dict."""
        return {"x": 1}

    result = await answer.invoke({}, _ctx(tmp_path))
    assert result == ToolResult(ok=True, data={"x": 1})
    same = ToolResult.failure("nope", reason="r")
    assert as_result(same) is same


async def test_tool_error_propagates_from_invoke(tmp_path: Path) -> None:
    @tool
    async def fails() -> str:
        """Always fail."""
        raise ToolError("the gripper is empty")

    with pytest.raises(ToolError, match="the gripper is empty"):
        await fails.invoke({}, _ctx(tmp_path))


async def test_parse_arguments_rejects_wrong_types(tmp_path: Path) -> None:
    with pytest.raises(ToolArgumentError, match="distance_m"):
        await move_forward.invoke({"distance_m": "far"}, _ctx(tmp_path))
    with pytest.raises(ToolArgumentError, match="unknown: Extra inputs are not permitted"):
        move_forward.parse_arguments({"distance_m": 1, "unknown": 2})


async def test_direct_call_uses_throwaway_context() -> None:
    result = await move_forward(distance_m=0.5)
    assert result.ok
    assert result.metadata == {"task": "direct"}


def test_bad_definitions_are_refused() -> None:
    with pytest.raises(ValueError, match="must match"):
        FunctionTool(lambda: None, name="bad name!")

    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        return str(x)

    with pytest.raises(ValueError, match="needs a type hint"):
        FunctionTool(untyped)

    def star(*args: int) -> str:
        return ""

    with pytest.raises(ValueError, match=r"\*args"):
        FunctionTool(star)


def test_result_to_dict() -> None:
    result = ToolResult.success([1, 2], path="a.txt")
    assert result.to_dict() == {
        "ok": True,
        "data": [1, 2],
        "metadata": {"path": "a.txt"},
        "error": None,
        "n_images": 0,
    }
    failed = ToolResult.failure("broken")
    assert failed.ok is False
    assert failed.error == "broken"


def test_a_typed_outcome_is_the_models_text_in_english() -> None:
    """Issue 38: a result's outcome is a phrase; the model reads it in English (``data.result``
    where it stood, or ``error``), people in their own language."""
    from loopact.i18n import Phrase

    pose = Phrase("motion.pose", x_m=0.5, y_m=-0.25, yaw_deg=-90.0)
    said = ToolResult.success({"x_m": 0.5, "result": pose, "frame": "odom"})
    assert said.outcome == pose
    assert said.data == {
        "x_m": 0.5,
        "result": "the robot is at x=0.50 m, y=-0.25 m, heading -90.0 degrees",
        "frame": "odom",
    }
    assert list(said.data) == ["x_m", "result", "frame"]  # where it stood
    appended = ToolResult.said(pose, {"x_m": 0.5}, note="n")
    assert list(appended.data) == ["x_m", "result"] and appended.metadata == {"note": "n"}
    assert ToolResult.said(Phrase("motion.stopped")).data == {"result": "stopped"}
    failed = ToolResult.failure(Phrase("head.too_slow"))
    assert failed.error == "the head did not reach its target in time"
    assert failed.outcome is not None and failed.outcome.text("zh") == "云台没有及时到达目标位置"
    plain = ToolResult.success({"result": "grabbed the cup"})
    assert plain.outcome is None and plain.data == {"result": "grabbed the cup"}
