"""Issue 41, acceptance 2 over ROS 2 text: the agent in its own process (``loopact run --robot
none --transport ros2``, ``confirm.channels: [ros2]``); the test is another participant that
answers confirmations on ``/<agent>/text_input`` and reads ``/<agent>/text_output``. Before
issue 41 the operator's ``y`` became a new instruction "y" and preempted the task."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.channels.test_confirm_channels import SCRIPT, check_outcome
from tests.ros2.conftest import Topic, events_topic

from loopact.nodes.ros2.connector import Ros2Connector

pytestmark = pytest.mark.ros2_e2e


async def test_ros2_text_answers_y_and_n_and_an_unrelated_line_preempts(
    spawn: Any, ros: Ros2Connector, scripted_server: Any, tmp_path: Path
) -> None:
    from tests.ros2.test_e2e import agent_ready

    agent = f"confirm{os.getpid()}"
    server = scripted_server(SCRIPT)
    config = tmp_path / "c.yaml"
    config.write_text("confirm:\n  channels: [ros2]\n")
    events = events_topic(ros, agent)
    proc = spawn(
        "run", "--robot", "none", "--transport", "ros2", "--agent-name", agent,
        "--config", str(config), "--workspace", str(tmp_path / "ws"), "--base-url",
        server.base_url, "--model", "scripted", "--api-key", "sk-test", "--no-web",
        "--no-memory", log="agent",
    )  # fmt: skip
    await agent_ready(ros, proc, topics=(f"/{agent}/text_input", f"/{agent}/text_output"))

    async def say(text: str) -> None:
        await ros.publish(f"/{agent}/text_input", text)

    async def nth(topic: Topic, kind: str, n: int) -> dict[str, Any]:
        await topic.wait_for(
            lambda e: e["type"] == kind and len([x for x in topic.items if x["type"] == kind]) > n,
            timeout=30,
        )
        return [x for x in topic.items if x["type"] == kind][n]  # type: ignore[no-any-return]

    await say("write yes.txt")
    await nth(events, "confirm_request", 0)
    await say("y")
    await nth(events, "reply", 0)
    await say("write no.txt")
    await nth(events, "confirm_request", 1)
    await say("n")
    await nth(events, "reply", 1)
    await say("write late.txt")
    await nth(events, "confirm_request", 2)
    await say("what time is it?")
    await nth(events, "reply", 2)
    await nth(events, "task_end", 3)  # the reply may arrive before its task's end
    starts = [(e["text"], e["source"]) for e in events.items if e["type"] == "task_start"]
    assert all(source == "ros2" for _, source in starts)
    ends = [e["status"] for e in events.items if e["type"] == "task_end"]
    check_outcome(tmp_path / "ws", starts, ends)
