"""The simulator's camera fails while the agent serves (issue 20 reliability; SPEC D5, X3).

The real MuJoCo robot, its governor and tools, the real agent on the real OpenAI provider over
HTTP. The simulator's render worker (its GL camera) is shut down under the running robot, as a
GPU or driver fault would: every camera tool must fail with a clear result, motion that needs
no camera still works and ends stopped, the next command is served, and the robot's true pose
(simulator ground truth) shows it did not move forward blind.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


async def test_a_failed_camera_gives_clear_results_and_the_robot_serves_on(tmp_path: Path) -> None:
    from loopact.sim.session import open_sim

    session = await open_sim(speed=4.0)
    turns = [
        {
            "tool_calls": [call("seewhat", {}, "see")],
            "expect": {"tools": ["seewhat", "observe_surroundings", "turn_left"]},
        },
        {"tool_calls": [call("detect_objects", {"color": "red"}, "det")]},
        {"tool_calls": [call("move_forward", {"distance_m": 0.5}, "fwd")]},
        {"tool_calls": [call("turn_left", {"angle_deg": 90}, "turn")]},
        {
            "text": "My camera is broken; I turned left.",
            "expect": {"contains": "renderer is closed"},
        },
        {"text": "Still here.", "expect": {"contains": "what do you see"}},
    ]
    try:
        with ScriptedModelServer({"turns": turns}) as server:
            registry = ToolRegistry(make_builtin_tools(tmp_path))
            for t in session.tools:
                registry.add(t)
            model = OpenAIChatModel(model="scripted", base_url=server.base_url, api_key="sk-t")
            agent = Agent(
                model,
                registry,
                AgentOptions(
                    bounds=Bounds(backoff_base_s=0.01, max_rounds=6, task_timeout_s=120),
                    system_prompt="You are a test robot.",
                    workspace=tmp_path,
                    stop_hooks=(session.stop,),
                ),
            )
            rec = Recorder()
            agent.bus.subscribe(rec)
            # The fault: the simulator's camera (its render worker and GL contexts) goes away.
            await asyncio.to_thread(session.robot._renderer.close)  # type: ignore[attr-defined]
            try:
                first = await asyncio.wait_for(agent.run_task("what do you see, then turn"), 120)
                assert first.status == "completed", first
                assert first.reply == "My camera is broken; I turned left."
                results = {e.data["id"]: e.data for e in rec.of("tool_result")}
                assert set(results) == {"see", "det", "fwd", "turn"}, results
                for cid in ("see", "det"):
                    assert results[cid]["ok"] is False, results[cid]
                    assert "renderer is closed" in results[cid]["error"], results[cid]
                assert results["turn"]["ok"] is True, results["turn"]
                # Forward motion without depth: the governor gives it no forward speed.
                pose = await session.robot.get_pose()
                assert math.hypot(pose.x_m, pose.y_m) < 0.05, pose
                assert abs(math.degrees(pose.yaw_rad) - 90) < 10, pose
                assert session.governor.base_lease is None
                assert session.governor.last_twist.is_zero
                second = await asyncio.wait_for(agent.run_task("are you there?"), 60)
                assert second.status == "completed" and second.reply == "Still here."
            finally:
                await agent.close()
            server.assert_consumed()
    finally:
        await session.close()
