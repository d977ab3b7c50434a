"""Issue 41, acceptance 1: a foreign e-stop over ROS 2, each part in its own process (SPEC X3, D1).

``loopact sim --ros2`` (the simulator and the base-side governor), ``loopact run --robot ros2``
(the agent, driven through its ROS 2 text channel), and another team's node in plain rclpy
(``plain_estop_node.py``) that latches the e-stop while the robot drives. The model is the
scripted server over real HTTP; the robot is graded by the simulator's ground-truth log.

Before issue 41 the tool waited for its deadline and said ``stopped_by: "deadline"``, and the
next motion waited too; the reset token travelled in clear and could be replayed.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.ros2.conftest import Proc, Topic, events_topic
from tests.ros2.test_e2e import odom_topic
from tests.ros2.test_estop_reset import _send_until, _status

from loopact.nodes.ros2.connector import Ros2Connector
from loopact.robot.estop import estop_proof
from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.ros2_e2e

SECRET = "operator-secret-0123456789"


async def _agent_ready(conn: Ros2Connector, agent: str, proc: Proc) -> None:
    from tests.ros2.test_e2e import agent_ready

    await agent_ready(conn, proc, topics=(f"/{agent}/text_input", f"/{agent}/text_output"))


def _motions(events: Topic) -> list[dict[str, Any]]:
    return [e for e in events.items if e["type"] == "tool_result" and e["name"] == "move_forward"]


async def _named_publisher(ros: Any, topic: str, node_name: str, timeout: float = 30) -> None:
    """Wait until this process's ROS graph knows ``node_name`` as a publisher on ``topic``."""
    end = time.monotonic() + timeout
    while not any(e.node_name == node_name for e in ros.node.get_publishers_info_by_topic(topic)):
        assert time.monotonic() < end, f"{node_name} never appeared on {topic}"
        await asyncio.sleep(0.05)


async def test_a_foreign_estop_ends_the_motion_at_once_and_only_a_fresh_proof_releases_it(
    ros_env: dict[str, str], spawn: Any, ros: Ros2Connector, scripted_server: Any, tmp_path: Path
) -> None:
    agent = f"headless{os.getpid()}"
    poses = tmp_path / "poses.jsonl"
    sim = Proc(
        ["-m", "loopact.cli", "sim", "--ros2", "--agent-name", agent, "--sim-log", str(poses)],
        {**ros_env, "LOOPACT_ESTOP_TOKEN": SECRET},
        tmp_path / "sim.log",
    )
    try:
        sim.wait_output("ROS 2 robot up", timeout=60)
        server = scripted_server(
            [
                {"tool_calls": [call("move_forward", {"distance_m": 1.5})]},
                {"tool_calls": [call("move_forward", {"distance_m": 0.3}, id="again")]},
                {"text": "The emergency stop is latched."},
                {"tool_calls": [call("move_forward", {"distance_m": 0.3}, id="after")]},
                {"text": "Moved."},
            ]
        )
        status = _status(ros, agent)
        events = events_topic(ros, agent)
        odom = odom_topic(ros)
        bot = spawn(
            "run", "--robot", "ros2", "--agent-name", agent, "--base-url", server.base_url,
            "--model", "scripted", "--api-key", "sk-test", "--no-web", "--no-memory",
            log="agent",
        )  # fmt: skip
        await _agent_ready(ros, agent, bot)
        guard = Proc(
            [str(Path(__file__).parent / "plain_estop_node.py"), agent],
            ros_env,
            tmp_path / "guard.log",
        )
        try:
            # the base names the latch's source from the ROS graph: a guard that fires before
            # discovery has its name reads "?" (seen under load); a real guard runs long before
            await _named_publisher(ros, f"/{agent}/base/emergency_stop", "bumper_guard")
            await ros.publish(f"/{agent}/text_input", "drive forward 1.5 metres")
            await events.wait_for(lambda e: e["type"] == "task_end", timeout=90)
            ended = time.monotonic()
            guard.wait_output("LATCHED", timeout=20)
        finally:
            guard.stop()
        # the base is at rest before the operator resets (the simulator's odometry is truth)
        await odom.wait_for(lambda o: o[0] > ended + 0.3 and abs(o[3]) < 0.002, timeout=20)
        stopped, refused = _motions(events)
        # the result names the emergency stop (not the deadline), and where the robot is
        assert stopped["ok"] is False
        assert stopped["metadata"]["achieved"]["stopped_by"] == "emergency_stop", stopped
        assert 0.02 < stopped["metadata"]["achieved"]["distance_m"] < 1.4, stopped
        assert "pose" in stopped["data"]
        # the next motion is refused at once, with that reason
        assert refused["ok"] is False
        assert refused["metadata"]["achieved"]["stopped_by"] == "emergency_stop", refused
        assert refused["metadata"]["achieved"]["distance_m"] == 0.0
        assert "emergency stop" in refused["error"]
        start, end = (
            next(e["ts"] for e in events.items if e["type"] == t and e.get("id") == "again")
            for t in ("tool_call", "tool_result")
        )
        assert end - start < 3.0, "refused at once, not after a deadline"  # guards a hang only
        # the base says who latched it and the nonce to prove against
        latched = await status.wait_for(lambda s: s.get("emergency_stop") is True)
        assert "bumper_guard" in latched["estop"]["source"]
        nonce = latched["estop"]["nonce"]
        # a reset with the right proof re-enables motion
        estop_topic = f"/{agent}/base/emergency_stop"
        reset = json.dumps(
            {"command": "reset", "nonce": nonce, "proof": estop_proof(SECRET, nonce), "by": "alice"}
        )
        released = await _send_until(
            ros, estop_topic, reset, status, lambda s: s.get("event") == "estop_reset"
        )
        assert released["emergency_stop"] is False
        assert released["last_reset"]["by"] == "alice" and released["last_reset"]["via"] == "proof"
        assert released["estop"]["nonce"] != nonce  # spent
        await ros.publish(f"/{agent}/text_input", "now move forward 0.3 m")
        await events.wait_for(lambda e: e["type"] == "reply" and e["text"] == "Moved.", 90)
        after = _motions(events)[-1]
        assert after["ok"] is True, after
        # a replayed proof (the one seen on the wire) does not release a new latch
        await _send_until(ros, estop_topic, "stop", status, lambda s: s["emergency_stop"])
        replayed = await _send_until(
            ros,
            estop_topic,
            reset,
            status,
            lambda s: (s.get("last_reset_refused") or {}).get("reason") == "replayed proof",
        )
        assert replayed["emergency_stop"] is True
        assert replayed["estop"]["resets_refused"] >= 1
        assert "replayed proof" in sim.output() and SECRET not in sim.output()
    finally:
        sim.stop()
    # ground truth: the simulator's own log
    lines = list(read_sim_log(poses))
    since = latched["estop"]["since"]
    reset_at = released["last_reset"]["time"]
    held = [p for p in lines if since <= p["wall_s"] <= reset_at]
    assert held, "no pose between the latch and the reset"
    at_latch, at_rest = held[0]["x_m"], held[-1]["x_m"]
    assert at_rest - at_latch < 0.06, (at_latch, at_rest)  # braked, no further
    assert 0.02 < at_rest < 1.4  # it had moved, and stopped well short of 1.5 m
    assert abs(lines[-1]["x_m"] - at_rest - 0.3) < 0.05  # the motion after the reset: 0.3 m
