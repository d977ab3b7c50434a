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
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopact.agent import Agent
from loopact.channels.ros2_text import Ros2TextChannel
from loopact.nodes.connector import Connector
from loopact.nodes.discovery import ToolDiscovery
from loopact.nodes.input import InputNode, InputSource
from loopact.nodes.inputs import InputHub, make_input_tools

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
        await self.discovery.stop()
        await self.hub.stop()
        for name in self.input_tools:
            if name in self.registry:
                self.registry.remove(name)


async def attach_nodes(
    agent: Agent,
    connector: Connector,
    agent_name: str = "loopact",
    *,
    text_channel: bool = True,
    seewhat: bool | None = None,
    settle_s: float = 0.0,
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
    """
    await connector.start()
    discovery = ToolDiscovery(connector, agent.registry, agent_name, bus=agent.bus)
    hub = InputHub(connector, agent_name, bus=agent.bus, on_new=agent.wake)
    await discovery.start()
    await hub.start()
    agent.add_input_source(hub.take_snapshot)
    want_seewhat = ("seewhat" not in agent.registry) if seewhat is None else seewhat
    added: list[str] = []
    for t in make_input_tools(hub, seewhat=want_seewhat):
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
    if settle_s > 0:
        await asyncio.sleep(settle_s)
    return NodeAttachment(discovery, hub, channel, added, agent.registry, builtin)


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
