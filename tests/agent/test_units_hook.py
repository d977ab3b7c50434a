"""Unit-aware argument normalisation in the loop (SPEC B7, issue 6; loopact.tools.units)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.llm.base import Capabilities
from loopact.llm.messages import ToolOutcome
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


async def test_a_length_given_to_a_speed_is_refused_and_the_model_chooses_again(
    scripted_server: Any, tmp_path: Path
) -> None:
    ran: list[tuple[str, float]] = []

    @tool(safety=SafetyClass.MOTION)
    async def move_forward(distance_m: float) -> ToolResult:
        """Drive straight ahead.

        Args:
            distance_m: How far, in metres.
        """
        ran.append(("move_forward", distance_m))
        return ToolResult.success({"moved_m": distance_m})

    @tool(safety=SafetyClass.MOTION)
    async def drive(linear_mps: float, duration_s: float) -> ToolResult:
        """Drive at a velocity for a time.

        Args:
            linear_mps: Speed in metres per second.
            duration_s: How long, in seconds.
        """
        ran.append(("drive", linear_mps))
        return ToolResult.success({})

    server = scripted_server(
        [
            {"tool_calls": [call("drive", {"linear_mps": 0.3, "duration_s": 1})]},
            {
                "tool_calls": [call("move_forward", {"distance_m": 0.3})],
                "expect": {"contains": "Call a function that takes a length: move_forward"},
            },
            {"text": "Moved 0.3 m."},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws", tools=[move_forward, drive], auto_approve=True)
    outcome = await agent.run_task("drive ahead 0.3 m")
    await agent.close()

    assert outcome.status == "completed"
    assert ran == [("move_forward", 0.3)]  # drive never ran
    refused = rec.of("tool_result")[0].data
    assert refused["name"] == "drive" and refused["ok"] is False
    assert refused["metadata"]["error_kind"] == "units"
    assert refused["error"] == (
        'Not run: "0.3 m" is a length, but drive.linear_mps is a speed. '
        "Call a function that takes a length: move_forward(distance_m)."
    )


async def test_a_pan_against_the_users_direction_word_runs_flipped(
    scripted_server: Any, tmp_path: Path
) -> None:
    received: list[float] = []

    @tool(safety=SafetyClass.MOTION, directions={"pan_deg": ("left", "right")})
    async def servo_move(pan_deg: float) -> ToolResult:
        """Turn the camera head.

        Args:
            pan_deg: Pan in degrees, left positive.
        """
        received.append(pan_deg)
        return ToolResult.success({"pan_deg": pan_deg})

    server = scripted_server(
        [
            {"tool_calls": [call("servo_move", {"pan_deg": 45})]},
            {"text": "Looking right.", "expect": {"contains": "left positive"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws", tools=[servo_move], auto_approve=True)
    outcome = await agent.run_task("look right 45 degrees")
    await agent.close()

    assert outcome.status == "completed"
    assert received == [-45]
    assert rec.of("tool_call")[0].data["arguments"] == {"pan_deg": 45}
    assert rec.of("tool_result")[0].data["metadata"]["normalized"] == {
        "pan_deg": {"from": 45, "to": -45, "because": "right", "convention": "left positive"}
    }


async def test_text_call_models_see_the_refusal_through_the_typed_outcome(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 14: the agent's tool messages carry a typed outcome, so the OpenAI adapter's
    small-model rules (a refused-for-units result is followed by a required call, and goes
    back as a bare result block) work without parsing the result text."""

    @tool(safety=SafetyClass.MOTION)
    async def move_forward(distance_m: float) -> ToolResult:
        """Drive straight ahead.

        Args:
            distance_m: How far, in metres.
        """
        return ToolResult.success({"moved_m": distance_m})

    @tool(safety=SafetyClass.MOTION)
    async def drive(linear_mps: float, duration_s: float) -> ToolResult:
        """Drive at a velocity for a time.

        Args:
            linear_mps: Speed in metres per second.
            duration_s: How long, in seconds.
        """
        return ToolResult.success({})

    drive_call = '{"name": "drive", "arguments": {"linear_mps": 0.3, "duration_s": 1}}'
    move_call = '{"name": "move_forward", "arguments": {"distance_m": 0.3}}'
    server = scripted_server([{"text": drive_call}, {"text": move_call}, {"text": "Moved 0.3 m."}])
    caps = Capabilities(
        native_tool_calls=False, constrained_decoding=True, parallel_tool_calls=False
    )
    agent, _ = make_agent(
        server, tmp_path / "ws", tools=[move_forward, drive], auto_approve=True, capabilities=caps
    )
    outcome = await agent.run_task("drive ahead 0.3 m")
    await agent.close()
    assert outcome.reply == "Moved 0.3 m."
    refused = next(m for m in agent.history if m.role == "tool" and m.name == "drive")
    assert refused.outcome == ToolOutcome(False, "units")
    first, after_refusal, after_move = (r.json() for r in server.requests)
    assert first["grammar"].startswith("root ::= call\n")  # first round of the task
    assert after_refusal["grammar"].startswith("root ::= call\n")  # refused: choose again
    assert after_refusal["messages"][-1]["content"].endswith("Call one of those functions instead.")
    assert after_move["grammar"].startswith("root ::= answer | call\n")  # words are free again
