"""The agent driving the MuJoCo robot through the real OpenAI protocol (issue 3 acceptance).

Real provider code against the scripted model server, the real simulator on a simulated
clock (4x real time), the real safety governor and robot tools.
"""

from __future__ import annotations

import asyncio
import base64
import io
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.session import RobotSession
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        yield session
    finally:
        await session.close()


def robot_agent(
    server: Any, session: RobotSession, tmp_path: Path, **options: Any
) -> tuple[Agent, Recorder]:
    registry = ToolRegistry(session.tools)
    model = OpenAIChatModel("scripted", server.base_url, "k")
    opts = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
        system_prompt="Drive the robot.",
        workspace=tmp_path,
        stop_hooks=(session.stop,),
        state_provider=session.state,
        **options,
    )
    agent = Agent(model, registry, opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


async def run_one(
    server: Any, session: RobotSession, tmp_path: Path, text: str
) -> tuple[Recorder, Agent]:
    agent, rec = robot_agent(server, session, tmp_path)
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    return rec, agent


async def test_move_forward_one_metre(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 1.0})]},
            {"text": "Moved 1 m."},
        ]
    )
    rec, _ = await run_one(server, robot, tmp_path, "move forward one meter")
    state = rec.of("robot_state")[0].data
    assert abs(state["x_m"] - 1.0) <= 0.05 and abs(state["y_m"]) <= 0.05
    types = rec.types()
    assert types[-2:] == ["robot_state", "task_end"]
    achieved = rec.of("tool_result")[0].data["metadata"]["achieved"]
    assert achieved["stopped_by"] == "target"


async def test_turn_left_ninety(scripted_server: Any, robot: RobotSession, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("turn_left", {"angle_deg": 90})]},
            {"text": "Turned."},
        ]
    )
    rec, _ = await run_one(server, robot, tmp_path, "turn left 90 degrees")
    yaw = math.degrees(rec.of("robot_state")[0].data["yaw_rad"])
    assert abs(yaw - 90.0) <= 5.0


async def test_navigation_to_kitchen(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("navigation", {"waypoint": "kitchen"})]},
            {"text": "In the kitchen."},
        ]
    )
    rec, _ = await run_one(server, robot, tmp_path, "go to the kitchen")
    state = rec.of("robot_state")[0].data
    wp = robot.site.waypoints["kitchen"]
    assert math.hypot(state["x_m"] - wp.x_m, state["y_m"] - wp.y_m) <= 0.3


async def test_seewhat_sends_a_jpeg_to_the_model(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("seewhat", {})]},
            {"text": "I see a purple line."},
        ]
    )
    await run_one(server, robot, tmp_path, "what do you see?")
    messages = server.requests[1].body["messages"]
    parts = [
        p
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    ]
    assert len(parts) == 1
    url = parts[0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    img = PILImage.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert img.format == "JPEG" and img.mode == "RGB" and max(img.size) <= 1024


async def test_drive_at_fifty_mps_is_clamped_and_reported(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("drive", {"linear_mps": 50, "angular_dps": 0, "duration_s": 1})]},
            {"text": "Done."},
        ]
    )
    rec, _ = await run_one(server, robot, tmp_path, "drive fast")
    # the trace records the arguments as the model sent them, before clamping
    assert rec.of("tool_call")[0].data["arguments"]["linear_mps"] == 50
    meta = rec.of("tool_result")[0].data["metadata"]
    assert "clamped" in meta
    state = rec.of("robot_state")[0].data
    assert state["x_m"] <= robot.profile.limits.max_linear_mps * 1.0 + 0.05


async def test_drive_toward_a_wall_stops_short(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 10.0, "speed_mps": 0.4})]},
            {"text": "Stopped before the wall."},
        ]
    )
    rec, _ = await run_one(server, robot, tmp_path, "drive into the wall")
    result = rec.of("tool_result")[0].data
    assert result["metadata"]["achieved"]["stopped_by"] in ("obstacle", "geofence")
    x = rec.of("robot_state")[0].data["x_m"]
    assert x < 6.0 - 0.17  # the east wall at x = 6 m, robot radius 0.17 m: never touched


async def test_stop_during_long_move_zeroes_twist_before_next_request(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 3.0, "speed_mps": 0.2})]},
            {"text": "Hello."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    twist_at_request: list[float] = []

    def on_event(e: Any) -> None:
        if e.type == "model_request" and e.task_id == second_id[0]:
            twist_at_request.append(robot.governor.last_twist.linear_mps)

    second_id: list[str | None] = [None]
    agent.bus.subscribe(on_event)
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit("drive 3 m")
    await rec.wait_for(lambda e: e.type == "tool_call")
    for _ in range(200):  # wait (bounded) until the governor commands forward motion
        if robot.governor.last_twist.linear_mps > 0:
            break
        await asyncio.sleep(0.02)
    assert robot.governor.last_twist.linear_mps > 0  # it is moving
    second_id[0] = agent.submit("say hello")
    await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second_id[0], 60)
    await agent.close()
    runner.cancel()
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends[first] == "preempted"
    assert twist_at_request == [0.0]
    res = [e.data for e in rec.of("tool_result") if e.task_id == first]
    assert len(res) == 1 and res[0]["ok"] is False and "cancelled" in res[0]["error"]
    pose = await robot.state()
    assert pose["x_m"] < 2.0  # the 3 m drive did not go on after the stop


async def test_same_robot_task_over_three_protocols(scripted_server: Any, tmp_path: Path) -> None:
    """Issue 5 acceptance 1: "look around, then go to the red object" over each protocol."""
    from loopact.llm.anthropic import AnthropicModel
    from loopact.llm.dify import DifyModel

    turns = [
        {
            "text": "Looking around.",
            "tool_calls": [{"id": "c1", "name": "observe_surroundings", "arguments": {}}],
        },
        {
            "text": "The red cube is ahead on the right.",
            "tool_calls": [{"id": "c2", "name": "turn_right", "arguments": {"angle_deg": 30}}],
        },
        {
            "text": "Approaching.",
            "tool_calls": [{"id": "c3", "name": "move_forward", "arguments": {"distance_m": 1.5}}],
        },
        {"text": "I am near the red object.\nfinishtask()"},
    ]
    results: dict[str, Any] = {}
    for provider in ("openai", "anthropic", "dify"):
        session = await open_robot("sim", "sim", "sim_room", speed=4.0)
        try:
            server = scripted_server(turns)
            if provider == "openai":
                model: Any = OpenAIChatModel("m", server.base_url, "k")
            elif provider == "anthropic":
                model = AnthropicModel("m", base_url=server.root_url, api_key="k")
            else:
                model = DifyModel(base_url=server.base_url, api_key="k")
            agent = Agent(
                model,
                ToolRegistry(session.tools),
                AgentOptions(
                    bounds=Bounds(tool_timeout_s=120),
                    workspace=tmp_path,
                    state_provider=session.state,
                ),
            )
            rec = Recorder()
            agent.bus.subscribe(rec)
            outcome = await asyncio.wait_for(
                agent.run_task("look around, then go to the red object"), 180
            )
            await agent.close()
            assert outcome.status == "completed", (provider, outcome)
            calls = [(e.data["name"], e.data["arguments"]) for e in rec.of("tool_call")]
            achieved = [e.data["metadata"].get("achieved") for e in rec.of("tool_result")]
            st = rec.of("robot_state")[0].data
            results[provider] = (calls, (st["x_m"], st["y_m"], st["yaw_rad"]), achieved)
        finally:
            await session.close()
    base_calls, base_pose, _ = results["openai"]
    assert [c[0] for c in base_calls] == ["observe_surroundings", "turn_right", "move_forward"]
    for provider in ("anthropic", "dify"):
        calls, pose, achieved = results[provider]
        assert calls == base_calls, provider
        assert math.dist(pose[:2], base_pose[:2]) < 0.05, (provider, pose, base_pose, achieved)
        assert abs(pose[2] - base_pose[2]) < math.radians(3), provider
