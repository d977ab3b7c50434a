"""The operator's panel on a broker's topics: the emergency stop of one robot and of the whole
fleet, and teleop (issue 41; SPEC X3, X4).

Served next to the governor of a robot whose agent talks MQTT (``loopact run --robot sim
--transport mqtt``), over the transport-neutral connector (``<p>`` is ``mqtt.prefix``):

- ``<p>/<agent>/estop``: ``stop`` or any other text latches (garbage too); ``reset NONCE
  PROOF`` or ``{"command": "reset", "nonce", "proof", "by"}`` with the operator's proof
  releases;
- ``<p>/_fleet/estop``: any text latches **every** robot on the broker (a reset here is
  refused: reset each robot on its own topic, with a proof of its own nonce);
- ``<p>/<agent>/estop/state`` (JSON, retained): the latch on every change: ``latched``,
  ``source``, ``reason``, ``nonce`` (prove against it), ``resets_refused``, ...;
- ``<p>/<agent>/teleop``, only with ``mqtt.teleop: true``: ``{"linear_mps", "angular_dps",
  "by"}``, the operator's drive command (0.5 s deadman).

Retained messages on the command topics are ignored: a stop counts when it is sent, not when a
robot that starts later finds an old one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import Any

from loopact.errors import SafetyError
from loopact.nodes.connector import Connector, Payload, Subscription
from loopact.robot.estop import parse_estop_message
from loopact.robot.interface import Twist
from loopact.robot.panel import OperatorPanel

logger = logging.getLogger(__name__)

FLEET = "_fleet"
"""The topic level of the fleet-wide emergency stop (agent names start with a letter)."""

MAX_MESSAGE_CHARS = 4096
"""Longer messages are cut before they are read (a stop is still a stop)."""


def panel_topics(agent: str) -> dict[str, str]:
    """The neutral topics of :class:`PanelTopics` for ``agent``."""
    return {
        "estop": f"/{agent}/estop",
        "fleet": f"/{FLEET}/estop",
        "state": f"/{agent}/estop/state",
        "teleop": f"/{agent}/teleop",
    }


class PanelTopics:
    """Serve one robot's :class:`~loopact.robot.panel.OperatorPanel` on a connector.

    Args:
        connector: The transport (MQTT).
        agent: The agent name (topic prefix).
        panel: The robot's panel.
        teleop: Also take teleop commands (``mqtt.teleop``).
    """

    def __init__(
        self, connector: Connector, agent: str, panel: OperatorPanel, teleop: bool = False
    ) -> None:
        self.connector = connector
        self.agent = agent
        self.panel = panel
        self.teleop = teleop
        self.topics = panel_topics(agent)
        self.received = 0
        self._subs: list[Subscription] = []
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(maxsize=200)
        self._worker: asyncio.Task[None] | None = None
        self._published: str | None = None
        self._stops: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        """Subscribe, publish the state, start handling."""
        c = self.connector
        await c.start()
        self._subs = [
            c.subscribe(self.topics["estop"], "string", self._on("estop"), depth=100),
            c.subscribe(self.topics["fleet"], "string", self._on("fleet"), depth=100),
        ]
        if self.teleop:
            self._subs.append(
                c.subscribe(self.topics["teleop"], "string", self._on("teleop"), depth=100)
            )
        self._worker = asyncio.get_running_loop().create_task(
            self._serve(), name="loopact-panel-topics"
        )
        await self.publish_state()

    async def stop(self) -> None:
        """Unsubscribe and stop handling."""
        for sub in self._subs:
            sub.close()
        self._subs.clear()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    def _on(self, kind: str) -> Any:
        def deliver(payload: Payload) -> None:
            text = payload if isinstance(payload, str) else ""
            self.received += 1
            if kind != "teleop":
                # a stop acts at once, before any queued message: safety first
                request = parse_estop_message(text[:MAX_MESSAGE_CHARS])
                if request.command != "reset":
                    fut = asyncio.ensure_future(self._stop(kind, request.reason, request.by))
                    self._stops.add(fut)
                    fut.add_done_callback(self._stops.discard)
                    return
            try:
                self._queue.put_nowait((kind, text[:MAX_MESSAGE_CHARS]))
            except asyncio.QueueFull:
                logger.warning("panel topics: too many messages, one on %s dropped", kind)

        return deliver

    async def _stop(self, kind: str, reason: str | None, by: str | None) -> None:
        source = "mqtt fleet" if kind == "fleet" else "mqtt"
        if by:
            source = f"{source} ({by})"
        try:
            await self.panel.latch(source, reason or f"emergency stop from {source}")
        except Exception:
            logger.exception("emergency stop from %s could not be applied", source)
        await self.publish_state()

    async def _serve(self) -> None:
        while True:
            kind, text = await self._queue.get()
            try:
                if kind == "teleop":
                    await self._teleop(text)
                elif kind == "fleet":
                    logger.warning(
                        "a reset on the fleet e-stop topic is refused: reset each robot on "
                        "%s with a proof of its own nonce",
                        self.topics["estop"],
                    )
                else:
                    await self._reset(text)
            except Exception:
                logger.exception("panel topic message on %s failed", kind)

    async def _reset(self, text: str) -> None:
        request = parse_estop_message(text)
        by = request.by or "mqtt"
        result = await self.panel.reset(request.nonce, request.proof, by, "mqtt", request.token)
        logger.info("emergency stop reset over MQTT: %s", result.reason)
        await self.publish_state()

    async def _teleop(self, text: str) -> None:
        try:
            body = json.loads(text)
            lin = float(body.get("linear_mps", 0.0))
            ang = math.radians(float(body.get("angular_dps", 0.0)))
            who = str(body.get("by") or "mqtt")[:64]
        except (ValueError, TypeError, AttributeError, RecursionError):
            logger.warning("teleop over MQTT: not {linear_mps, angular_dps, by} JSON; ignored")
            return
        try:
            await self.panel.teleop(Twist(lin, ang), who, "mqtt teleop")
        except SafetyError as exc:
            logger.warning("teleop over MQTT refused: %s", exc)

    async def publish_state(self) -> None:
        """Publish the panel's state (retained) when it changed."""
        state = json.dumps(self.panel.state(), default=str, sort_keys=True)
        if state == self._published:
            return
        self._published = state
        try:
            await self.connector.publish(self.topics["state"], state, latched=True)
        except Exception as exc:
            logger.warning("e-stop state not published: %s", exc)
