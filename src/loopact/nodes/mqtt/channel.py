"""``send_message(channel="mqtt", to=TOPIC, text=...)``: messages on MQTT topics (C6, issue 17).

``topic=TOPIC`` works as well as ``to=TOPIC`` (issue 17 names it ``topic``).

:class:`MqttChannel` is one more :class:`~loopact.tools.builtin.messages.MessageChannel`: it
publishes the text as one UTF-8 message with QoS 1 on the topic ``to`` (which must be on
``messages.mqtt.allow_to``, MQTT filters or ``*`` wildcards), over a broker connection of its
own (``mqtt.*`` settings and credentials), and answers once the broker acknowledged it. The node
protocol's topics (under ``mqtt.prefix``) are refused whatever the allow-list says.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from loopact._compat import wait_within
from loopact.errors import ConfigError, NodeError, ToolError
from loopact.nodes.mqtt.link import MqttLink, new_client_id
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.tools.base import ToolContext
from loopact.tools.builtin.messages import MessageChannel

ACK_TIMEOUT_S = 5.0
"""How long a message waits for the broker's acknowledgement, seconds."""


class MqttChannel(MessageChannel):
    """Publish ``send_message`` texts on allowed MQTT topics.

    Args:
        settings: ``settings()`` gives the broker settings (called at the first message).
        allow_to: Allowed topics (MQTT ``+``/``#`` filters or ``*`` wildcards).
        protocol_prefix: The node protocol's prefix, never published to.
    """

    name = "mqtt"
    description = "an MQTT topic (a device, a dashboard, another robot); `to` is the topic"
    topic_recipient = True

    def __init__(
        self,
        settings: Callable[[], MqttSettings],
        allow_to: Sequence[str],
        protocol_prefix: str = "loopact",
    ) -> None:
        super().__init__(allow_to=list(allow_to), timeout_s=ACK_TIMEOUT_S + 5.0)
        self._settings = settings
        self.protocol_prefix = protocol_prefix
        self.link: MqttLink | None = None

    def allows(self, to: str) -> bool:
        """``to`` matches an allowed MQTT filter (or ``*`` pattern) and is not a protocol topic."""
        import paho.mqtt.client as mqtt

        topic = to.strip()
        p = self.protocol_prefix
        if not topic or "+" in topic or "#" in topic or (p and topic.startswith(p + "/")):
            return False
        filters = [f for f in self.allow_to or () if "*" not in f]
        return super().allows(topic) or any(mqtt.topic_matches_sub(f, topic) for f in filters)

    async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
        """Publish ``text`` on ``to`` with QoS 1 and wait for the broker's acknowledgement.

        Raises:
            ToolError: The broker is unreachable, refused the login, or did not acknowledge.
        """
        assert to is not None  # check_recipient() ran
        try:
            if self.link is None:
                link = MqttLink(self._settings(), new_client_id("messages"), clean_session=True)
                await link.start(require=True)
                self.link = link
            info = self.link.publish(to, text.encode("utf-8"), 1, False)
        except (ConfigError, NodeError) as exc:
            await self.close()
            raise ToolError(f"MQTT: {exc}") from None
        if info is not None:
            with contextlib.suppress(Exception):
                await wait_within(
                    asyncio.to_thread(info.wait_for_publish, ACK_TIMEOUT_S), ACK_TIMEOUT_S + 1
                )
        if info is None or not info.is_published():
            raise ToolError(f"the MQTT broker did not acknowledge the message on {to} in time")
        return f"published on {to}"

    async def close(self) -> None:
        """Disconnect."""
        link, self.link = self.link, None
        if link is not None:
            await link.stop()
