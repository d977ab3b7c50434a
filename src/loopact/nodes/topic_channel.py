"""A message channel that publishes on a topic of any connector (SPEC C4, C6; issue 19).

``send_message(channel="ros2", to="/ops/chat", text=...)`` publishes ``text`` as one string
message (``std_msgs/String`` on ROS 2) on the topic ``to``, which must be on the channel's
allow-list. Written against :class:`~loopact.nodes.connector.Connector`, so the same class
serves any transport that implements the connector verbs (ROS 2, in-process, MQTT).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from loopact.errors import ToolError
from loopact.nodes.connector import Connector
from loopact.tools.base import ToolContext
from loopact.tools.builtin.messages import MessageChannel

logger = logging.getLogger(__name__)


class TopicChannel(MessageChannel):
    """Publish messages on allowed topics of ``connector``.

    Args:
        name: The channel name the model gives (``ros2``).
        connector: The transport (started on the first message).
        allow_to: Topics (full paths such as ``/ops/chat``; ``*`` wildcards) that may be used.
        timeout_s: Longest time one publish may take, in seconds.
        match_timeout_s: How long a first message on a topic waits for a subscriber to be
            matched (discovery), in seconds.
    """

    def __init__(
        self,
        name: str,
        connector: Connector,
        allow_to: Sequence[str],
        timeout_s: float = 5.0,
        match_timeout_s: float = 2.0,
    ) -> None:
        super().__init__(allow_to=list(allow_to), timeout_s=timeout_s)
        self.match_timeout_s = match_timeout_s
        self.name = name
        self.description = f"a {connector.transport} topic; `to` is the topic name"
        self.topic_recipient = True
        self.connector = connector
        self._advertised: set[str] = set()

    async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
        """Publish ``text`` on the topic ``to``.

        Raises:
            ToolError: The transport failed.
        """
        assert to is not None  # check_recipient() ran
        try:
            await self.connector.start()
            if to not in self._advertised:
                self.connector.advertise(to, "string")
                self._advertised.add(to)
            listeners = await self._wait_for_subscriber(to)
            await self.connector.publish(to, text)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"publishing on {to} failed: {exc}") from None
        if listeners == 0:
            return f"published on {to}, but nobody subscribes to it yet"
        return f"published on {to}"

    async def _wait_for_subscriber(self, topic: str) -> int | None:
        """Give discovery up to ``match_timeout_s`` to match a subscriber to a new publisher:
        a message published before that is lost (volatile QoS). None: cannot tell."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.match_timeout_s
        while True:
            count = self.connector.subscriber_count(topic)
            if count is None or count > 0 or loop.time() >= end:
                return count
            await asyncio.sleep(0.02)
