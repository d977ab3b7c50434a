"""The board of a run (issue 19, SPEC C9, C3): device tools and board events for the agent.

:func:`attach_board` opens the board ``board.kind`` names, adds the five device tools to the
registry and publishes GPIO edges and sensor thresholds as the accumulate-mode input
``board_events``. With a robot on ROS 2 the events go over its connector, where the nodes'
input hub already listens; otherwise an in-process connector and an
:class:`~loopact.nodes.inputs.InputHub` whose arrivals wake a continuous-mode agent
(``on_new=agent.wake``, the mechanism of issue 14) are started here.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from loopact.agent import Agent
from loopact.config import Config
from loopact.devices import Board, open_board
from loopact.devices.events import BoardEvents
from loopact.devices.tools import make_device_tools
from loopact.nodes.connector import Connector


async def attach_board(
    cfg: Config, agent: Agent, stack: AsyncExitStack, connector: Connector | None = None
) -> Board | None:
    """Open the configured board; ``stack`` closes it. None with ``board.kind: none``.

    Args:
        cfg: The configuration (``board``, ``agent.name``).
        agent: Its registry gets the device tools; its input sources the board events.
        stack: Closes everything opened here.
        connector: The run's connector when nodes are attached to it already (ROS 2).

    Raises:
        ConfigError: The board file cannot be used.
    """
    if cfg.board.kind == "none":
        return None
    board = open_board(cfg.board.kind, cfg.board.file)
    stack.push_async_callback(board.close)
    for tool in make_device_tools(board):
        agent.registry.add(tool)
    if connector is None:
        from loopact.nodes.inputs import InputHub
        from loopact.nodes.local import LocalConnector

        connector = LocalConnector()
        await connector.start()
        stack.push_async_callback(connector.shutdown)
        hub = InputHub(connector, cfg.agent.name, bus=agent.bus, on_new=agent.wake)
        await hub.start()
        stack.push_async_callback(hub.stop)
        agent.add_input_source(hub.take_snapshot)
    events = BoardEvents(board, connector, cfg.agent.name, cfg.board.poll_s)
    await events.start()
    stack.push_async_callback(events.stop)
    return board
