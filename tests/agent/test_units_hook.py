"""Unit-aware argument normalisation in the loop (SPEC B7, issue 6; loopact.tools.units)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.tools.base import SafetyClass, ToolResult, tool


async def test_centimetres_copied_into_a_metre_argument_run_as_metres(
    scripted_server: Any, tmp_path: Path
) -> None:
    received: list[float] = []

    @tool(safety=SafetyClass.MOTION)
    async def move_forward(distance_m: float) -> ToolResult:
        """Drive straight ahead.

        Args:
            distance_m: How far, in metres.
        """
        received.append(distance_m)
        return ToolResult.success({"moved_m": distance_m})

    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 50})]},
            {"text": "Moved 0.5 m.", "expect": {"contains": "normalized"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws", tools=[move_forward], auto_approve=True)
    outcome = await agent.run_task("move forward 50 centimeters")
    await agent.close()

    assert outcome.status == "completed"
    assert received == [0.5]
    # The trace keeps what the model sent; the result says what was converted.
    assert rec.of("tool_call")[0].data["arguments"] == {"distance_m": 50}
    meta = rec.of("tool_result")[0].data["metadata"]
    assert meta["normalized"] == {
        "distance_m": {"from": 50, "to": 0.5, "unit": "m", "because": "50 centimeters"}
    }


async def test_arguments_in_the_right_unit_are_left_alone(
    scripted_server: Any, tmp_path: Path
) -> None:
    received: list[float] = []

    @tool(safety=SafetyClass.MOTION)
    async def move_forward(distance_m: float) -> ToolResult:
        """Drive straight ahead.

        Args:
            distance_m: How far, in metres.
        """
        received.append(distance_m)
        return ToolResult.success({"moved_m": distance_m})

    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 0.5})]},
            {"text": "Moved 0.5 m."},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws", tools=[move_forward], auto_approve=True)
    outcome = await agent.run_task("move forward 50 centimeters")
    await agent.close()

    assert outcome.status == "completed"
    assert received == [0.5]
    assert "normalized" not in rec.of("tool_result")[0].data["metadata"]
