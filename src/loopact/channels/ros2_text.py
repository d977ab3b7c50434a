"""The ROS 2 text channel (SPEC F3): instructions in, the agent's events out.

- ``/<agent>/text_input`` (``std_msgs/String``): each message is an instruction for
  :meth:`Agent.submit <loopact.agent.runtime.Agent.submit>`; a message that is only ``/stop``
  (or another stop word) stops the robot and the task at once (SPEC A6). While a confirmation
  is pending, a short yes/no (``y``, ``n``, ``yes``, ``no``, 是, 否, 好, 不) answers the oldest
  one, and ``{"confirm": ID, "allow": true}`` answers the request ``ID`` at any time — when
  ``confirm.channels`` lists this channel (``ros2``, ``mqtt``); otherwise the answer is
  refused and told (``confirm_refused``), never taken as an instruction (issue 41).
- ``/<agent>/text_output`` (``std_msgs/String``): every trace event (progress, tool calls and
  results, replies, errors) as one JSON object per message, the same lines a trace file holds
  (live-only deltas are left out).

Works over any :class:`~loopact.nodes.connector.Connector`; an instruction is traced with
``source: "mqtt"`` over MQTT, ``"ros2"`` otherwise (``task_start``). Over MQTT the channel is
on only with ``mqtt.text_channel`` (issue 39 item 17, docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from typing import Any

from loopact.agent.confirm import parse_answer
from loopact.channels.agent_port import AgentPort
from loopact.events import LIVE_ONLY_TYPES, Event
from loopact.nodes.connector import Connector, Payload, Subscription
from loopact.nodes.protocol import DEFAULT_AGENT_NAME, check_name

logger = logging.getLogger(__name__)

MAX_INPUT_CHARS = 20_000
"""Longer instructions are cut (memory bound)."""

MAX_QUEUED_EVENTS = 1000
"""Events waiting to be published; the oldest are dropped beyond this."""


def text_input_topic(agent: str) -> str:
    """``/<agent>/text_input``."""
    return f"/{agent}/text_input"


def text_output_topic(agent: str) -> str:
    """``/<agent>/text_output``."""
    return f"/{agent}/text_output"


class Ros2TextChannel:
    """Bridge an agent to the two text topics (SPEC F3).

    Args:
        agent: The agent (``submit``, ``stop``, ``bus``).
        connector: The transport (ROS 2 in production; local in tests).
        agent_name: Topic prefix.
    """

    def __init__(
        self, agent: AgentPort, connector: Connector, agent_name: str = DEFAULT_AGENT_NAME
    ) -> None:
        check_name(agent_name, "agent name")
        self.agent = agent
        self.connector = connector
        self.agent_name = agent_name
        self._sub: Subscription | None = None
        self._unsubscribe: Any = None
        self._queue: deque[str] = deque(maxlen=MAX_QUEUED_EVENTS)
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self.source = "mqtt" if connector.transport == "mqtt" else "ros2"

    async def start(self) -> None:
        """Subscribe to the input topic and publish the agent's events."""
        await self.connector.start()
        self._sub = self.connector.subscribe(
            text_input_topic(self.agent_name), "string", self._on_input, depth=50
        )
        # Create the output publisher now, so UIs match it before the first event.
        self.connector.advertise(text_output_topic(self.agent_name), "string")
        self._unsubscribe = self.agent.bus.subscribe(self._on_event)
        self._pump = asyncio.get_running_loop().create_task(
            self._publish_loop(), name="loopact-ros2-text-out"
        )

    async def stop(self) -> None:
        """Stop both directions."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._sub is not None:
            self._sub.close()
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump

    def _on_input(self, payload: Payload) -> None:
        if not isinstance(payload, str):
            return
        text = payload.strip()[:MAX_INPUT_CHARS]
        if not text:
            return
        try:
            if self._answer(text):
                return
            self.agent.submit(text, source=self.source)
        except Exception:
            logger.exception("could not submit an instruction from %s", self.source)

    def _answer(self, text: str) -> bool:
        """A confirmation answer (issue 41): True when ``text`` was one (answered, or refused
        and told); a yes/no word with nothing pending is an instruction as before."""
        said = parse_answer(text)
        if said is None:
            return False
        request_id, allow = said
        if request_id is None:
            pending = self.agent.broker.pending
            if not pending:
                return False
            request_id = pending[0]
        self.agent.answer_confirmation(request_id, allow, self.source)
        return True

    def _on_event(self, event: Event) -> None:
        if event.type in LIVE_ONLY_TYPES:
            return
        try:
            line = json.dumps(event.to_json(), ensure_ascii=False, default=_jsonable)
        except (TypeError, ValueError) as exc:
            line = json.dumps(
                {
                    "ts": event.ts,
                    "type": event.type,
                    "task_id": event.task_id,
                    "error": f"event not serialisable: {exc}",
                }
            )
        self._queue.append(line)
        self._wake.set()

    async def _publish_loop(self) -> None:
        topic = text_output_topic(self.agent_name)
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                line = self._queue.popleft()
                try:
                    await self.connector.publish(topic, line)
                except Exception as exc:
                    logger.warning("could not publish on %s: %s", topic, exc)


def _jsonable(value: Any) -> Any:
    summary = getattr(value, "summary", None)
    if callable(summary):
        with contextlib.suppress(Exception):
            return summary()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)
