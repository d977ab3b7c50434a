"""Issue 4 acceptance over real ROS 2, each part in its own process (SPEC C2, C4, D1, X3, F3).

``loopact run --robot ros2`` (agent), ``loopact sim --ros2`` (simulator + base-side governor)
and ``loopact node my_tool.py`` (a user tool) talk over ROS 2; the model is the scripted server
over real HTTP; the test drives the agent through the ROS 2 text channel.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from loopact.nodes.ros2.connector import Ros2Connector

from .conftest import Topic, events_topic

pytestmark = pytest.mark.ros2_e2e  # also run alone by `make test-ros2-e2e`

MY_TOOL = (Path(__file__).parent.parent / "node_files" / "add_tool.py").read_text()


def odom_topic(conn: Ros2Connector) -> Topic:
    from loopact.nodes.ros2.interfaces import ros_types

    odometry = ros_types("nav_msgs.msg", "Odometry")
    topic = Topic()
    conn.subscribe_msg(
        odometry,
        "odom",
        conn.qos(depth=50),
        topic,
        convert=lambda m: (
            time.monotonic(),
            m.pose.pose.position.x,
            m.pose.pose.position.y,
            m.twist.twist.linear.x,
        ),
    )
    return topic


def run_agent(spawn: Any, server: Any, log: str) -> Any:
    return spawn(
        "run",
        "--robot",
        "ros2",
        "--base-url",
        server.base_url,
        "--model",
        "scripted",
        "--api-key",
        "sk-test",
        "--yes",
        "--no-web",
        "--no-memory",  # the user's memory folder is not the tests' to write
        log=log,
    )


async def agent_ready(
    conn: Ros2Connector,
    agent: Any,
    timeout: float = 60,
    topics: tuple[str, str] = ("/loopact/text_input", "/loopact/text_output"),
) -> None:
    """The agent's text channel is up: it listens on text_input and publishes text_output."""
    deadline = time.monotonic() + timeout
    while not (conn.node.count_subscribers(topics[0]) and conn.node.count_publishers(topics[1])):
        assert agent.popen.poll() is None, agent.output()[-2000:]
        assert time.monotonic() < deadline, agent.output()[-2000:]
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # let our subscription match the agent's publisher


async def say(conn: Ros2Connector, text: str) -> None:
    await conn.publish("/loopact/text_input", text)


async def test_node_tool_offered_called_dropped_and_move_forward_over_cmd_vel(
    sim_proc: Any, spawn: Any, ros: Ros2Connector, scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 1."""
    server = scripted_server(
        [
            {
                "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 40}}],
                "expect": {"tools": ["add", "move_forward", "seewhat"]},
            },
            {"text": "It is 42."},
            {"text": "Nothing else."},
            {"tool_calls": [{"name": "move_forward", "arguments": {"distance_m": 1.0}}]},
            {"text": "Moved one metre."},
        ]
    )
    events = events_topic(ros)
    odom = odom_topic(ros)
    tool_file = tmp_path / "my_tool.py"
    tool_file.write_text(MY_TOOL)
    agent = run_agent(spawn, server, "agent")
    await agent_ready(ros, agent)
    node = spawn("node", str(tool_file), log="node")
    added = await events.wait_for(
        lambda e: e["type"] == "node_added" and e.get("name") == "add", timeout=40
    )
    assert added["kind"] == "output"
    await say(ros, "what is 2 + 40?")
    await events.wait_for(lambda e: e["type"] == "task_end", timeout=30)
    result = next(e for e in events.items if e["type"] == "tool_result" and e["name"] == "add")
    assert result["ok"] is True and result["data"] == 42
    assert "42" in str(server.requests[1].body["messages"][-1]["content"])

    node.kill()  # a crash: no goodbye
    # dropped because its heartbeat stopped (the drop latency is bench/discovery.py's figure;
    # the timeout here only guards against a hang)
    removed = await events.wait_for(
        lambda e: e["type"] == "node_removed" and e.get("name") == "add", timeout=30
    )
    assert "no heartbeat" in removed["reason"]
    await say(ros, "anything else?")
    await events.wait_for(
        lambda e: e["type"] == "reply" and e.get("text") == "Nothing else.", timeout=30
    )
    offered = [t["function"]["name"] for t in server.requests[2].body["tools"]]
    assert "add" not in offered and "move_forward" in offered

    start = await odom.wait_for(lambda o: True, timeout=10)
    await say(ros, "move forward one metre")
    await events.wait_for(
        lambda e: e["type"] == "reply" and e.get("text") == "Moved one metre.", timeout=60
    )
    moved = next(
        e for e in events.items if e["type"] == "tool_result" and e["name"] == "move_forward"
    )
    assert moved["ok"] is True, (moved.get("error"), moved.get("data"), moved.get("metadata"))
    await asyncio.sleep(0.3)
    end = odom.items[-1]
    assert 0.9 <= end[1] - start[1] <= 1.1, (start, end)  # odometry confirms the metre
    assert abs(end[3]) < 0.02  # and the base stopped
    assert agent.popen.poll() is None  # the agent kept running throughout


async def test_killing_the_agent_while_moving_stops_the_robot(
    sim_proc: Any, spawn: Any, ros: Ros2Connector, scripted_server: Any
) -> None:
    """Acceptance 2: the base-side watchdog stops the base when the agent dies."""
    server = scripted_server(
        [
            {
                "tool_calls": [
                    {
                        "name": "drive",
                        "arguments": {"linear_mps": -0.2, "angular_dps": 0, "duration_s": 20},
                    }
                ]
            }
        ]
    )
    odom = odom_topic(ros)
    status = Topic()
    ros.subscribe("/loopact/base/status", "string", status)
    agent = run_agent(spawn, server, "agent")
    await agent_ready(ros, agent)
    await say(ros, "back up slowly")
    await odom.wait_for(lambda o: o[3] < -0.15, timeout=30)  # moving backwards
    agent.kill()
    killed = time.monotonic()
    # The base stops by itself (the 20 s drive would go on otherwise); how fast is
    # bench/discovery.py's figure: the timeout here only guards against a hang.
    stopped = await odom.wait_for(lambda o: o[0] > killed and abs(o[3]) < 0.02, timeout=15)
    print(f"\nagent killed while moving: base stopped after {stopped[0] - killed:.2f} s")
    halt = await status.wait_for(lambda s: '"watchdog"' in s, timeout=15)
    assert '"watchdog_trips": 0' not in halt  # it was the watchdog that stopped it
    assert len(server.requests) == 1  # the drive call was the only model turn


async def test_a_node_publishing_cmd_vel_directly_is_reported(
    sim_proc: Any, ros: Ros2Connector
) -> None:
    """Bad input: a publisher bypassing the governor is reported on the base status."""
    from loopact.nodes.ros2.interfaces import ros_types

    status = Topic()
    ros.subscribe("/loopact/base/status", "string", status)
    twist = ros_types("geometry_msgs.msg", "Twist")
    ros.publisher(twist, "cmd_vel", ros.qos())
    me = ros.node.get_name()
    report = await status.wait_for(lambda s: '"foreign_publisher"' in s and me in s, timeout=15)
    assert me in json.loads(report)["foreign_cmd_vel_publishers"][0]
    assert sim_proc.popen.poll() is None
