"""Issue 41, acceptance 4: a joystick-style node takes over from ``move_forward`` over ROS 2.

``loopact sim --ros2`` (the simulator and the base-side governor), ``loopact run --robot ros2``
(the agent, in task mode, driven through its text channel) and a teleop node in plain rclpy
(``plain_joystick_node.py``) that holds a stick for 2 s while the agent drives, then lets go.
The governor gives the base to the operator at once, the agent's task ends "taken over by the
operator", the deadman hands the base back 0.5 s after the last command and the agent is told
(an ``input`` from the operator). Graded by the simulator's ground-truth log: the agent's
straight motion, then the operator's turn, the deadman's brake, rest, and the agent's own
motion again.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.ros2.conftest import Proc, Topic, events_topic
from tests.ros2.test_estop_reset import _status

from loopact.nodes.ros2.connector import Ros2Connector
from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.ros2_e2e


def _motion(conn: Ros2Connector) -> Topic:
    """``(unix time, linear m/s, angular rad/s)`` of every odometry message (the simulator's)."""
    from loopact.nodes.ros2.interfaces import ros_types

    topic = Topic()
    conn.subscribe_msg(
        ros_types("nav_msgs.msg", "Odometry"),
        "odom",
        conn.qos(depth=50),
        topic,
        convert=lambda m: (time.time(), m.twist.twist.linear.x, m.twist.twist.angular.z),
    )
    return topic


async def test_a_joystick_takes_over_drives_and_hands_back(
    ros_env: dict[str, str], spawn: Any, ros: Ros2Connector, scripted_server: Any, tmp_path: Path
) -> None:
    from tests.ros2.test_e2e import agent_ready

    agent = f"teleop{os.getpid()}"
    poses = tmp_path / "poses.jsonl"
    sim = Proc(
        ["-m", "loopact.cli", "sim", "--ros2", "--agent-name", agent, "--sim-log", str(poses)],
        ros_env,
        tmp_path / "sim.log",
    )
    try:
        sim.wait_output("ROS 2 robot up", timeout=60)
        server = scripted_server(
            [
                {"tool_calls": [call("move_forward", {"distance_m": 1.5})]},
                {
                    "tool_calls": [call("move_backward", {"distance_m": 0.2})],
                    "expect": {"last_user_contains": "let go"},  # told, in the next task
                },
                {"text": "Backed up."},
            ]
        )
        events = events_topic(ros, agent)
        status = _status(ros, agent)
        odom = _motion(ros)
        bot = spawn(
            "run", "--robot", "ros2", "--agent-name", agent, "--base-url", server.base_url,
            "--model", "scripted", "--api-key", "sk-test", "--no-web", "--no-memory",
            log="agent",
        )  # fmt: skip
        await agent_ready(ros, bot, topics=(f"/{agent}/text_input", f"/{agent}/text_output"))
        stick = Proc(
            [str(Path(__file__).parent / "plain_joystick_node.py"), agent],
            ros_env,
            tmp_path / "joystick.log",
        )
        try:
            await ros.publish(f"/{agent}/text_input", "drive forward 1.5 metres")
            ended = await events.wait_for(lambda e: e["type"] == "task_end", timeout=60)
            assert ended["status"] == "preempted"
            assert ended["reason"] == "taken over by the operator"
            took = await status.wait_for(lambda s: s.get("event") == "takeover", timeout=20)
            assert "joystick_teleop" in took["operator"]["base"]["who"]
            assert took["last_halt"]["cause"] == "taken_over"
            stick.wait_output("HANDED BACK", timeout=30)
        finally:
            stick.stop()
        back = await status.wait_for(lambda s: s.get("event") == "handback", timeout=20)
        assert back["operator"] == {}
        told = await events.wait_for(
            lambda e: e["type"] == "input" and e["source"] == "operator", timeout=20
        )
        assert "let go" in told["text"]
        let_go = float(stick.output().split("LET GO ")[1].split()[0])
        # at rest (the simulator's odometry is truth), then the base is the agent's again
        await odom.wait_for(lambda o: o[0] > let_go + 1.3 and abs(o[1]) + abs(o[2]) < 0.003, 20)
        asked = time.time()
        await ros.publish(f"/{agent}/text_input", "back up 0.2 m")
        await events.wait_for(lambda e: e.get("text") == "Backed up.", timeout=60)
        backed = [e for e in events.items if e.get("name") == "move_backward"]
        assert backed[-1]["type"] == "tool_result" and backed[-1]["ok"] is True, backed
    finally:
        sim.stop()
    lines = list(read_sim_log(poses))
    took_at = next(p for p in lines if abs(p["yaw_deg"]) > 2.0)["wall_s"]
    forward = [p for p in lines if p["wall_s"] < took_at]
    turning = [p for p in lines if took_at <= p["wall_s"] <= let_go]
    braking = [p for p in lines if let_go + 0.7 <= p["wall_s"] <= let_go + 0.8]
    rest = [p for p in lines if let_go + 1.0 <= p["wall_s"] <= asked]  # braked by then
    assert forward[-1]["x_m"] > 0.02  # the agent's motion: straight ahead ...
    assert abs(forward[-1]["yaw_deg"]) <= 2.0
    assert forward[-1]["x_m"] < 1.4  # ... cut short by the takeover
    turned = turning[-1]["yaw_deg"] - turning[0]["yaw_deg"]
    assert turned > math.degrees(0.8 * 1.0), turned  # the operator's stick, turning left
    # the deadman (0.5 s) zeroed the base: by 0.7 s it turns at under half the stick's rate
    rate = (braking[-1]["yaw_deg"] - braking[0]["yaw_deg"]) / (
        braking[-1]["wall_s"] - braking[0]["wall_s"]
    )
    assert rate < 0.5 * math.degrees(0.8), rate
    assert rest, "no pose after the deadman"
    assert max(p["yaw_deg"] for p in rest) - min(p["yaw_deg"] for p in rest) < 0.3
    assert max(p["x_m"] for p in rest) - min(p["x_m"] for p in rest) < 0.005
    moved = math.hypot(lines[-1]["x_m"] - rest[-1]["x_m"], lines[-1]["y_m"] - rest[-1]["y_m"])
    assert abs(moved - 0.2) < 0.03  # the agent's own motion after the hand-back
