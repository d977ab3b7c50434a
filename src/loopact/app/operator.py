"""The operator's panel in a run: the emergency stop and teleop on every channel (issue 41).

:func:`attach_operator` joins the robot's :class:`~loopact.robot.panel.OperatorPanel` to the
run once the agent exists:

- the in-process governor's latch gets the operator's reset secret (``robot.estop.reset_token``
  / ``LOOPACT_ESTOP_TOKEN``), so a proof releases it from any channel;
- the latch's state is part of the agent's status (``/status``, the web console's
  ``/api/status``: ``estop``);
- an operator's takeover ends the running task in task mode ("taken over by the operator";
  continuous mode goes on) and the hand-back is told to the agent as an input (it wakes a
  continuous-mode agent, which resumes its task);
- over MQTT the robot's panel topics are served next to its governor
  (:mod:`loopact.robot.panel_topics`: its own and the fleet's e-stop, the state, teleop with
  ``mqtt.teleop``).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from loopact.agent import Agent
from loopact.app.robot import Body
from loopact.config import Config
from loopact.events import Event, EventType
from loopact.i18n import t
from loopact.nodes.connector import Connector
from loopact.robot.estop import EstopReset
from loopact.robot.operator import OperatorHold
from loopact.robot.panel import LocalPanel

logger = logging.getLogger(__name__)

TAKEN_OVER = "taken over by the operator"
"""Why a task ends when an operator takes the robot over (the ``task_end`` ``reason``)."""

PANEL_DECISIONS = frozenset(
    {"emergency_stop", "estop_reset", "estop_reset_refused", "takeover", "handback"}
)
"""Governor decisions that change what the panel shows."""


async def attach_operator(
    cfg: Config, agent: Agent, body: Body, connector: Connector | None, stack: AsyncExitStack
) -> None:
    """Join the robot's panel to the run (see the module docstring); ``stack`` undoes it.

    Raises:
        ConfigError: ``robot.estop.reset_token`` is too short or has spaces.
    """
    session = body.session
    if session is None:
        return
    panel = session.panel
    assert panel is not None
    if isinstance(panel, LocalPanel):  # the governor is here: it checks the proofs
        session.governor.estop = EstopReset.from_config(cfg.robot.estop).latch()
    agent.add_status("estop", panel.state)
    listener = operator_listener(agent, cfg.agent.lang)
    listeners = session.governor.operator.listeners
    listeners.append(listener)
    stack.callback(_discard, listeners, listener)
    if connector is not None and connector.transport == "mqtt":
        from loopact.robot.panel_topics import PanelTopics

        topics = PanelTopics(connector, cfg.agent.name, panel, teleop=cfg.mqtt.teleop)
        await topics.start()
        stack.push_async_callback(topics.stop)
        stack.callback(agent.bus.subscribe(_republish(topics)))


def operator_listener(agent: Agent, lang: str) -> Any:
    """The agent's side of a takeover and a hand-back (see the module docstring)."""

    def told(hold: OperatorHold, event: str) -> None:
        if event == "takeover":
            if agent.interrupt(TAKEN_OVER):
                logger.warning("the running task ended: %s (%s)", TAKEN_OVER, hold.who)
            return
        held_s = max(0.0, hold.last_s - hold.since_s)
        agent.inject(t("operator.handed_back", lang, who=hold.who, held_s=held_s), "operator")
        agent.wake()

    return told


def _discard(items: list[Any], item: Any) -> None:
    if item in items:
        items.remove(item)


def _republish(topics: Any) -> Any:
    """Publish the panel's state on the broker whenever a governor decision changed it."""
    pending: set[asyncio.Future[None]] = set()

    def on_event(ev: Event) -> None:
        if ev.type == EventType.GOVERNOR and ev.data.get("decision") in PANEL_DECISIONS:
            fut = asyncio.ensure_future(topics.publish_state())
            pending.add(fut)
            fut.add_done_callback(pending.discard)

    return on_event
