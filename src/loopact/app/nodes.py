"""Attach hot-pluggable nodes and the ROS 2 text channel to an agent (SPEC C2, C3, C4, F3).

Composition: the nodes (``loopact.nodes``) and the text channel (``loopact.channels``) are
parts that know nothing of each other; this is where they meet the agent.

::

    nodes = await attach_nodes(agent, connector, "loopact")
    ...
    await nodes.close()

Starts :class:`~loopact.nodes.discovery.ToolDiscovery` on ``agent.registry``, an
:class:`~loopact.nodes.inputs.InputHub` whose snapshots the agent injects at round boundaries
(``agent.add_input_source``) and whose accumulate-mode arrivals wake a continuous-mode agent
(``agent.wake``, SPEC A7), the built-in inputs ``system_status`` (latest, every 10 s) and
``messages`` (accumulate text), the input tools (``read_input``; ``seewhat`` from a camera
input when the robot has no camera of its own) and, optionally, the text channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopact.agent import Agent
from loopact.app.robot import Body
from loopact.channels.ros2_text import Ros2TextChannel
from loopact.config import Config
from loopact.events import EventBus
from loopact.nodes.connector import Connector
from loopact.nodes.discovery import NodeTrust, ToolDiscovery
from loopact.nodes.input import InputNode, InputSource
from loopact.nodes.inputs import InputHub, make_input_tools
from loopact.nodes.protocol import SHARED_AGENT
from loopact.tools.base import SafetyClass
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)


@dataclass
class NodeAttachment:
    """What :func:`attach_nodes` started.

    Attributes:
        discovery: Tool discovery.
        hub: Input hub.
        channel: The text channel, if started.
        input_tools: Names of the input tools added to the registry.
    """

    discovery: ToolDiscovery
    hub: InputHub
    channel: Ros2TextChannel | None
    input_tools: list[str]
    registry: Any
    builtin: list[tuple[InputNode, asyncio.Task[None] | None]] = field(default_factory=list)
    shared: list[ToolDiscovery | InputHub] = field(default_factory=list)

    async def close(self) -> None:
        """Stop everything that was started (the connector is the caller's)."""
        for node, task in self.builtin:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await node.stop()
        if self.channel is not None:
            with contextlib.suppress(Exception):
                await self.channel.stop()
        for watch in self.shared:
            await watch.stop()
        await self.discovery.stop()
        await self.hub.stop()
        for name in self.input_tools:
            if name in self.registry:
                self.registry.remove(name)


def node_trust(cfg: Config, own: list[str] | None = None) -> NodeTrust:
    """The operator's trust in nodes from ``nodes.trust`` and ``nodes.safety`` (issue 21).

    Args:
        cfg: The configuration.
        own: Names of tools this run serves as nodes itself (the simulator's over MQTT):
            their announced classes are loopact's own and are used.
    """
    return NodeTrust(
        trusted=(*cfg.nodes.trust, *(own or [])),
        grants={name: SafetyClass(c) for name, c in cfg.nodes.safety.items()},
    )


async def open_nodes_connector(
    cfg: Config, body: Body, stack: AsyncExitStack, bus: EventBus
) -> Connector | None:
    """The transport of the run's nodes (``nodes.transport``; SPEC C4); ``stack`` closes it.

    ``auto`` is the robot's ROS 2 connector when the robot is on ROS 2, else none; ``ros2``
    and ``mqtt`` open one (``mqtt``: :func:`loopact.app.mqtt.open_mqtt_connector`).

    Raises:
        ConfigError: A bad ``mqtt.*`` setting or a refused login.
        NodeError: ROS 2 is unavailable.
    """
    transport = cfg.nodes.transport
    if transport == "auto":
        return body.connector
    if transport == "none":
        return None
    if transport == "ros2":
        if body.connector is not None:
            return body.connector
        from loopact.nodes.ros2.connector import Ros2Connector

        ros = Ros2Connector(f"{cfg.agent.name}_agent")
        stack.push_async_callback(ros.shutdown)
        await ros.start()
        return ros
    from loopact.app.mqtt import open_mqtt_connector

    return await open_mqtt_connector(cfg, stack, bus, f"agent-{cfg.agent.name}")


async def attach_nodes(
    agent: Agent,
    connector: Connector,
    agent_name: str = "loopact",
    *,
    text_channel: bool = True,
    seewhat: bool | None = None,
    settle_s: float = 0.0,
    shared: bool = False,
    trust: NodeTrust | None = None,
    gate: ImageGate | None = None,
) -> NodeAttachment:
    """Discover tools and inputs for ``agent`` over ``connector``.

    Args:
        agent: The agent whose registry, input sources and bus the nodes join.
        connector: The transport (started here if needed).
        agent_name: Topic prefix.
        text_channel: Also start the ROS 2 text channel (F3).
        seewhat: Add a ``seewhat`` that reads camera inputs; default: only when the registry
            has no ``seewhat`` yet.
        settle_s: Seconds to wait afterwards so running nodes are discovered (``--once``).
        shared: Also discover the fleet's shared nodes (``/_shared/...``, SPEC X4); a shared
            tool whose name the agent already has is reported and not offered.
        trust: The safety class each node's tool gets (issue 21; :func:`node_trust` from
            the config); None: every remote tool is a write tool.
        gate: The image gate of node results and input images (SPEC G1); None: default limits.
    """
    await connector.start()
    gate = gate or ImageGate()
    discovery = ToolDiscovery(
        connector, agent.registry, agent_name, bus=agent.bus, trust=trust, gate=gate
    )
    hub = InputHub(connector, agent_name, bus=agent.bus, on_new=agent.wake)
    await discovery.start()
    await hub.start()
    agent.add_input_source(functools.partial(hub.take_snapshot, gate))
    want_seewhat = ("seewhat" not in agent.registry) if seewhat is None else seewhat
    added: list[str] = []
    for t in make_input_tools(hub, gate, seewhat=want_seewhat):
        if t.name in agent.registry:
            logger.info("input tool %s not added: a tool with that name exists", t.name)
            continue
        agent.registry.add(t)
        added.append(t.name)
    builtin = await _start_builtin_inputs(connector, agent_name, agent.options.workspace)
    channel = None
    if text_channel:
        channel = Ros2TextChannel(agent, connector, agent_name)
        await channel.start()
    extra: list[ToolDiscovery | InputHub] = []
    if shared:
        extra = [
            ToolDiscovery(
                connector, agent.registry, SHARED_AGENT, bus=agent.bus, trust=trust, gate=gate
            ),
            InputHub(connector, SHARED_AGENT, bus=agent.bus, on_new=agent.wake),
        ]
        for watch in extra:
            await watch.start()
        agent.add_input_source(functools.partial(extra[1].take_snapshot, gate))  # type: ignore[union-attr]
    if settle_s > 0:
        await asyncio.sleep(settle_s)
    return NodeAttachment(discovery, hub, channel, added, agent.registry, builtin, extra)


async def _start_builtin_inputs(
    connector: Connector, agent_name: str, workspace: Path
) -> list[tuple[InputNode, asyncio.Task[None] | None]]:
    """The built-in inputs (SPEC C3, C6): ``system_status`` (latest, every 10 s) and
    ``messages`` (accumulate text: any node may publish ``std_msgs/String`` on
    ``/<agent>/input/messages`` to have it injected)."""
    from loopact.tools.builtin.system import system_status_data

    async def status() -> dict[str, Any]:
        return await system_status_data(workspace)

    source = InputSource(
        status, "system_status", "this machine's status", "latest", "json", period_s=10.0
    )
    status_node = InputNode(
        "system_status", connector, agent_name, source.description, "latest", "json"
    )
    messages = InputNode(
        "messages",
        connector,
        agent_name,
        "text messages from people and other nodes",
        "accumulate",
        "text",
    )
    await status_node.start()
    await messages.start()
    task = asyncio.get_running_loop().create_task(
        source.run(status_node), name="loopact-input-system-status"
    )
    return [(status_node, task), (messages, None)]
