"""The repeat guard never serves a stale camera reading (SPEC A3; issue 39 item 1).

The moving-target scenario on the real MuJoCo robot, the real provider code against the
scripted model server: ``detect_objects``, ``wait``, ``detect_objects``. The ball's bearing
in each answer is graded by the simulator's own state at the moment the answer came back,
never by what the tool said.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.events import Event
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.session import RobotSession
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=2.0, scenario="moving-target")
    try:
        yield session
    finally:
        await session.close()


def _true_ball(session: RobotSession) -> tuple[tuple[float, float], float]:
    """The ball's true position (metres) and its bearing from the robot's heading (degrees,
    left positive), from the simulator's state."""
    st = session.robot.sim.state()  # type: ignore[attr-defined]
    x, y = st.movers["cyan_ball"]
    bearing = math.degrees(math.atan2(y - st.y_m, x - st.x_m) - st.yaw_rad)
    return (x, y), bearing


async def test_detect_wait_detect_sees_where_the_ball_is_now(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Before: the second detect_objects was answered with the first one's boxes, "result
    unchanged, answer now", although the ball had moved about a metre."""
    server = scripted_server(
        [
            {"tool_calls": [call("detect_objects", {"color": "cyan"}, "a")]},
            {"tool_calls": [call("wait", {"seconds": 2.0}, "w")]},
            {"tool_calls": [call("detect_objects", {"color": "cyan"}, "c")]},
            {"text": "The ball moved."},
        ]
    )
    model = OpenAIChatModel("scripted", server.base_url, "sk-test-secret")
    registry = ToolRegistry([*make_builtin_tools(tmp_path), *robot.tools])
    opts = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=60),
        system_prompt="Watch the ball.",
        workspace=tmp_path,
        stop_hooks=(robot.stop,),
    )
    agent = Agent(model, registry, opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    truth: dict[tuple[str, str], tuple[tuple[float, float], float]] = {}

    def at_call_and_result(ev: Event) -> None:  # the frame is taken between the two
        if ev.type in ("tool_call", "tool_result") and ev.data["id"] in ("a", "c"):
            truth[(ev.data["id"], ev.type)] = _true_ball(robot)

    agent.bus.subscribe(at_call_and_result)
    outcome = await agent.run_task("where is the cyan ball now, and a moment later?")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    seen = {}
    for key in ("a", "c"):
        assert results[key]["ok"] is True, results[key]
        cyan = [o for o in results[key]["data"] if o["color"] == "cyan"]
        assert len(cyan) == 1, results[key]["data"]
        seen[key] = cyan[0]["bearing_deg"]
        low, high = sorted((truth[(key, "tool_call")][1], truth[(key, "tool_result")][1]))
        assert low - 2.0 <= seen[key] <= high + 2.0, (key, seen, truth)
    moved = math.dist(truth[("a", "tool_result")][0], truth[("c", "tool_call")][0])
    assert moved > 0.5  # the ball really moved between the two readings
    assert abs(seen["c"] - seen["a"]) > 10.0
    assert "repeat_of" not in results["c"]["metadata"]
