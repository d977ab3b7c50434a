"""MQTT in a run (issue 17; SPEC C4, C7, X4): the connector, the robot served over it, the tools.

- :func:`mqtt_settings`: the broker and credentials of ``cfg.mqtt`` as
  :class:`~loopact.nodes.mqtt.settings.MqttSettings` (the password is handed over, never logged);
- :func:`open_mqtt_connector`: a started :class:`~loopact.nodes.mqtt.MqttConnector` whose link
  changes become ``mqtt_link`` events (the trace shows every reconnect);
- :func:`serve_robot_tools`: the in-process robot's tools served as MQTT output nodes next to
  the robot and its governor, so the agent drives the robot through tools over the broker;
- :func:`attach_mqtt_tools`: the model's MQTT tools and rules (``mqtt_connect`` ...), whose
  rule matches are injected into the agent as accumulate-mode input and wake a
  continuous-mode agent (``agent.add_input_source`` + ``agent.wake``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AsyncExitStack
from pathlib import Path

from loopact.agent import Agent
from loopact.config import Config
from loopact.events import EventBus, EventType
from loopact.nodes.mqtt.connector import MqttConnector
from loopact.nodes.mqtt.link import LinkState, StateCallback
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.nodes.output import OutputNode
from loopact.tools.base import Tool
from loopact.tools.registry import ToolRegistry

logger = logging.getLogger(__name__)


def mqtt_settings(cfg: Config, broker: str | None = None) -> MqttSettings:
    """The broker settings of ``cfg.mqtt`` (``broker`` overrides ``mqtt.broker``).

    Raises:
        ConfigError: The broker URL is malformed (``mqtt.broker``).
    """
    m = cfg.mqtt
    settings = MqttSettings(
        broker=broker or m.broker,
        username=m.username,
        password=m.password_text,
        ca_file=m.tls.ca_file,
        cert_file=m.tls.cert_file,
        key_file=m.tls.key_file,
        tls_insecure=m.tls.insecure,
        keepalive_s=m.keepalive_s,
    )
    _ = settings.address  # validates the URL now, naming mqtt.broker
    return settings


def link_events(bus: EventBus, settings: MqttSettings, client: str) -> StateCallback:
    """A link listener that emits ``mqtt_link {state, broker, client, detail}`` events."""
    broker = str(settings.address)

    def on_link(state: LinkState, detail: str) -> None:
        bus.emit(
            EventType.MQTT_LINK, None, state=state, broker=broker, client=client, detail=detail
        )

    return on_link


async def open_mqtt_connector(
    cfg: Config, stack: AsyncExitStack, bus: EventBus | None, role: str
) -> MqttConnector:
    """A started connector for the node protocol; ``stack`` shuts it down.

    Raises:
        ConfigError: Bad broker URL, refused login or unusable TLS files.
    """
    settings = mqtt_settings(cfg)
    connector = MqttConnector(
        settings,
        prefix=cfg.mqtt.prefix,
        role=role,
        client_id=cfg.mqtt.client_id,
        on_link=link_events(bus, settings, "nodes") if bus is not None else None,
    )
    stack.push_async_callback(connector.shutdown)
    await connector.start()
    return connector


def node_connector(config: Path | None, broker: str | None, node_file: Path) -> MqttConnector:
    """The connector of ``loopact node FILE --transport mqtt`` (config ``mqtt.*``, env, flag).

    Raises:
        ConfigError: The config file or the broker URL is wrong.
    """
    from loopact.config import load_config
    from loopact.nodes.runner import node_name_for

    cfg, _ = load_config(
        config, overrides={"mqtt": {"broker": broker}}, flag_names={"mqtt.broker": "--broker"}
    )
    return MqttConnector(
        mqtt_settings(cfg),
        prefix=cfg.mqtt.prefix,
        role=node_name_for(node_file).removeprefix("loopact_"),
        client_id=cfg.mqtt.client_id,
    )


async def serve_robot_tools(
    tools: list[Tool], connector: MqttConnector, agent_name: str, stack: AsyncExitStack
) -> list[str]:
    """Serve the robot's tools as output nodes of ``agent_name`` (the governor stays here).

    Returns:
        The served tool names.
    """
    nodes = [OutputNode(t, connector, agent_name) for t in tools]
    for node in nodes:
        await node.start()
        stack.push_async_callback(node.stop)
    return [n.tool.name for n in nodes]


async def wait_discovered(registry: ToolRegistry, names: list[str], timeout_s: float) -> bool:
    """Wait until every tool of ``names`` is in ``registry`` (True) or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while not all(n in registry for n in names):
        if time.monotonic() > deadline:
            missing = [n for n in names if n not in registry]
            logger.warning("tools not discovered over MQTT in time: %s", ", ".join(missing))
            return False
        await asyncio.sleep(0.02)
    return True


async def attach_mqtt_tools(cfg: Config, agent: Agent, stack: AsyncExitStack) -> list[str]:
    """Add the MQTT tools and configured rule subscriptions to ``agent`` (SPEC C7).

    Returns:
        The names of the tools added.

    Raises:
        ConfigError: A rule in ``mqtt.subscriptions`` cannot be parsed, or the broker refused
            the login.
    """
    from loopact.nodes.mqtt.tools import MqttTools, ToolsPolicy

    m = cfg.mqtt
    policy = ToolsPolicy(
        broker=m.broker,
        brokers=tuple(m.brokers),
        allow_subscribe=tuple(m.allow_subscribe),
        allow_publish=tuple(m.allow_publish),
        protocol_prefix=m.prefix,
        min_interval_s=m.min_publish_interval_s,
        max_publish_bytes=m.max_publish_bytes,
        history_per_topic=m.history_per_topic,
        retained=m.retained,
    )
    tools = MqttTools(
        policy,
        settings=lambda url: mqtt_settings(cfg, url),
        on_link=lambda settings: link_events(agent.bus, settings, "tools"),
        on_inject=agent.wake,
    )
    stack.push_async_callback(tools.close)
    agent.add_input_source(tools.take_snapshot)
    for sub in m.subscriptions:
        await tools.add_configured(sub.topic, sub.mode, list(sub.rules), sub.retained)
    names = []
    for tool in tools.tools():
        if tool.name in agent.registry:
            continue
        agent.registry.add(tool)
        names.append(tool.name)
    return names
