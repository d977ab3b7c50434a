"""``robot.recentre_on_stop`` (issue 46 item 8, SPEC A6): a stopped or preempted task brings the
camera back to centre. Graded by the simulator's head joints, never by a tool's words."""

from __future__ import annotations

import asyncio
import math
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.app.memory import OpenedMemory
from loopact.app.robot import open_body
from loopact.app.run import agent_options
from loopact.config import load_config

pytestmark = pytest.mark.sim


async def _head_deg(body: Any) -> tuple[float, float]:
    head = await body.session.robot.get_head()
    return math.degrees(head.pan_rad), math.degrees(head.tilt_rad)


@pytest.mark.parametrize("recentre", [True, False])
async def test_a_preempted_task_recentres_the_camera_when_asked(
    scripted_server: Any, tmp_path: Path, recentre: bool
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("servo_move", {"pan_deg": 30, "tilt_deg": 0}, "look")]},
            {"tool_calls": [call("wait", {"seconds": 60}, "w")]},  # preempted while it waits
            {"text": "Hello."},
        ]
    )
    overrides = {"robot": {"recentre_on_stop": recentre, "sim_speed": 4.0}}
    cfg, _ = load_config(None, overrides=overrides, env={}, cwd=tmp_path)
    async with AsyncExitStack() as stack:
        body = await open_body(cfg, stack)
        assert body.session is not None
        opts = agent_options(cfg, body, OpenedMemory(None, None, None), tmp_path)
        assert len(opts.after_stop_hooks) == (1 if recentre else 0)
        stopped = asyncio.Event()
        reasons: list[str] = []

        async def signal(reason: str) -> None:  # runs after the run's own hooks
            reasons.append(reason)
            stopped.set()

        agent, rec = make_agent(
            server,
            tmp_path,
            tools=body.session.tools,
            stop_hooks=opts.stop_hooks,
            after_stop_hooks=(*opts.after_stop_hooks, signal),
        )
        stack.push_async_callback(agent.close)
        runner = asyncio.ensure_future(agent.run())
        stack.callback(runner.cancel)
        first = agent.submit("turn the camera to the left")
        await rec.wait_for(lambda e: e.type == "tool_result" and e.task_id == first)
        pan, tilt = await _head_deg(body)
        assert abs(pan - 30) < 2 and abs(tilt) < 2
        await rec.wait_for(lambda e: e.type == "tool_call" and e.data["name"] == "wait")
        second = agent.submit("say hello")  # preempts the first task
        await asyncio.wait_for(stopped.wait(), 20)
        await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second)
        # only the preemption of a running task: a command that found the agent idle did not
        assert reasons == ["new command from terminal"]
        pan, tilt = await _head_deg(body)
        home = body.session.profile.head
        if recentre:
            assert abs(pan - home.home_pan_deg) < 2 and abs(tilt - home.home_tilt_deg) < 2
        else:
            assert abs(pan - 30) < 2 and abs(tilt) < 2
