"""send_message(channel="ros2") publishes std_msgs/String on an allowed ROS 2 topic (issue 19)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.ros2.conftest import Topic

from loopact.app.messages import open_message_channels
from loopact.config import load_config
from loopact.events import EventBus
from loopact.tools.base import ToolContext
from loopact.tools.builtin.messages import ConsoleChannel, make_send_message_tool


async def test_message_reaches_a_ros2_subscriber_and_other_topics_are_refused(
    ros: Any, tmp_path: Path
) -> None:
    inbox = Topic()
    ros.subscribe("/ops/chat", "string", inbox)
    path = tmp_path / "loopact.yaml"
    path.write_text("messages:\n  ros2:\n    allow_to: [/ops/chat]\n", encoding="utf-8")
    cfg, _ = load_config(path, env={})
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    async with AsyncExitStack() as stack:
        channels = await open_message_channels(cfg, stack)  # opens its own ROS 2 node
        tool = make_send_message_tool([ConsoleChannel(EventBus()), *channels])
        result = await tool.invoke(
            {"channel": "ros2", "to": "/ops/chat", "text": "battery low: 15 %"}, ctx
        )
        assert result.ok and result.data == "published on /ops/chat"
        assert await inbox.wait_for(lambda m: m == "battery low: 15 %")
        with pytest.raises(Exception, match="'/cmd_vel' is not allowed on channel 'ros2'"):
            await tool.invoke({"channel": "ros2", "to": "/cmd_vel", "text": "x"}, ctx)
