"""The message channels of ``send_message`` from the configuration (issue 19, SPEC C6).

:func:`open_message_channels` builds one channel per configured ``messages.*`` section
(``email``: SMTP, ``ros2``: a ROS 2 topic, ``mqtt``: an MQTT topic); the console channel is
added by :func:`loopact.agent.tools.make_send_message_tool` itself. A new channel is one more
``if`` here that appends its :class:`~loopact.tools.builtin.messages.MessageChannel`.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from loopact.config import Config
from loopact.tools.builtin.messages import MessageChannel

if TYPE_CHECKING:
    from loopact.nodes.connector import Connector


async def open_message_channels(
    cfg: Config, stack: AsyncExitStack, connector: Connector | None = None
) -> list[MessageChannel]:
    """The configured channels beyond the console; ``stack`` closes them.

    Args:
        cfg: The configuration (``messages``).
        stack: Closes the channels (and a ROS 2 connector opened here) at the end of the run.
        connector: The run's ROS 2 connector when the robot is on ROS 2; otherwise the
            ``ros2`` channel opens its own node.

    Returns:
        The channels, in the order ``email``, ``ros2``, ``mqtt``.

    Raises:
        NodeError: ``messages.ros2`` is set but ROS 2 is unavailable.
    """
    channels: list[MessageChannel] = []
    email = cfg.messages.email
    if email is not None:
        from loopact.tools.builtin.smtp import EmailChannel, SmtpSettings

        settings = SmtpSettings(
            host=email.host,
            port=email.port,
            starttls=email.starttls,
            username=email.username,
            password=email.password(),
            from_addr=email.from_addr,
            ca_file=email.ca_file.expanduser() if email.ca_file else None,
            timeout_s=email.timeout_s,
            subject=email.subject,
        )
        channels.append(EmailChannel(settings, email.allow_to))
    ros2 = cfg.messages.ros2
    if ros2 is not None:
        from loopact.nodes.topic_channel import TopicChannel

        if connector is None:
            from loopact.nodes.ros2.connector import Ros2Connector

            connector = Ros2Connector(f"{cfg.agent.name}_messages")
            stack.push_async_callback(connector.shutdown)
        channels.append(TopicChannel("ros2", connector, ros2.allow_to))
    mqtt = cfg.messages.mqtt
    if mqtt is not None:
        # issue 17: raw MQTT topics on mqtt.broker, with the mqtt.* credentials
        from loopact.app.mqtt import mqtt_settings
        from loopact.nodes.mqtt.channel import MqttChannel

        mqtt_settings(cfg)  # a malformed mqtt.broker is a ConfigError now, not at the first message
        channels.append(MqttChannel(lambda: mqtt_settings(cfg), mqtt.allow_to, cfg.mqtt.prefix))
    for channel in channels:
        stack.push_async_callback(channel.close)
    return channels
