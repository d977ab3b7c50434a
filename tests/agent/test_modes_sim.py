"""Plan (SPEC A4) and action-text (A5) tasks driving the MuJoCo robot, graded by the simulator.

Real provider code against the scripted model server, the real simulator on a simulated clock,
the real safety governor and robot tools; what the robot did is read from the simulator's own
state, never from what a tool or the model said.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.session import RobotSession
from loopact.sim.simulator import SimState
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        yield session
    finally:
        await session.close()


def truth(session: RobotSession) -> SimState:
    """The simulator's own state of the robot (ground truth)."""
    state: SimState = session.robot.sim.state()  # type: ignore[attr-defined]
    return state


def robot_agent(
    server: Any, session: RobotSession, tmp_path: Path, **options: Any
) -> tuple[Agent, Recorder]:
    model = OpenAIChatModel("scripted", server.base_url, "sk-test-secret")
    opts = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
        system_prompt="Drive the robot.",
        workspace=tmp_path,
        stop_hooks=(session.stop,),
        state_provider=session.state,
        **options,
    )
    agent = Agent(model, ToolRegistry(session.tools), opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def plan_text(steps: list[dict[str, Any]]) -> str:
    return json.dumps({"steps": steps})


async def test_a_plan_with_more_steps_of_one_tool_than_its_call_limit_runs_them_all(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """A checked plan is bounded by its step limit (A4), not by the per-tool call limit of the
    ReAct loop guard (A3, 10 for a motion): twelve 10-degree turns all run, instead of the
    robot stopping at 100 degrees with "turn_left was already called 10 times"."""
    steps = [
        {"id": n, "description": "turn", "tool": "turn_left", "parameters": {"angle_deg": 10}}
        for n in range(1, 13)
    ]
    server = scripted_server([{"text": plan_text(steps)}])
    agent, rec = robot_agent(server, robot, tmp_path, mode="plan")
    outcome = await agent.run_task("turn left 120 degrees in 10 degree steps")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert [e.data["ok"] for e in rec.of("step_end")] == [True] * 12
    assert math.degrees(truth(robot).yaw_rad) == pytest.approx(120.0, abs=6.0)
