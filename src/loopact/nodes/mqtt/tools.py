"""The model's MQTT tools and rules (SPEC C7; docs/mqtt.md).

``mqtt_connect``, ``mqtt_disconnect``, ``mqtt_publish``, ``mqtt_subscribe``, ``mqtt_receive``
and ``mqtt_history`` talk to the devices of a site through one MQTT client of their own (not
the node protocol's). What the operator configures bounds what the model can do:

- **brokers**: ``mqtt.broker`` and those listed in ``mqtt.brokers``; the credentials come from
  the configuration only, never from the model;
- **topic allow-lists** ``mqtt.allow_subscribe`` / ``mqtt.allow_publish`` (MQTT filters);
  the node protocol's own topics (under ``mqtt.prefix``) are never the tools' to publish to or
  subscribe to, so the model cannot call a motion tool around the governor and confirmations;
- ``mqtt_publish`` is a **write** tool (confirmed by a person unless allowed), at most one
  publish per topic every ``mqtt.min_publish_interval_s`` (at least 0.1 s: a faster call waits
  for its turn), payloads up to ``mqtt.max_publish_bytes``.

Each subscription has a mode: ``inject`` hands every message to the agent; ``filter`` (the
default) keeps routine data in the history and hands over only the messages a rule matches
(:mod:`loopact.nodes.mqtt.rules`). Handed-over messages are accumulate-mode input: one
snapshot user message at the next round boundary (:meth:`MqttTools.take_snapshot`), and
``on_inject`` (``agent.wake``) wakes a continuous-mode agent. A retained message (the broker's
copy of one published before the subscription, perhaps long before) is marked as such with its
age where its payload says it, and by default rules and inject mode skip it
(``mqtt.retained: skip``; issue 39 item 8): a stale alarm is not a live event. It is in the
history and ``mqtt_receive`` either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loopact._compat import wait_within
from loopact.errors import ConfigError, NodeError
from loopact.llm.messages import Message
from loopact.nodes.mqtt.link import MqttLink, StateCallback, new_client_id
from loopact.nodes.mqtt.rules import History, MqttMessage, Rule, parse_rules
from loopact.nodes.mqtt.settings import MqttSettings, parse_broker
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool

logger = logging.getLogger(__name__)

Mode = Literal["filter", "inject"]
Retained = Literal["skip", "inject"]
MAX_UNREAD = 1000
"""Messages waiting for ``mqtt_receive``; the oldest are dropped beyond this."""
MAX_PENDING = 100
"""Messages waiting to be injected; the oldest are dropped (and counted) beyond this."""
MAX_SUBSCRIPTIONS = 100


@dataclass(frozen=True)
class ToolsPolicy:
    """What the operator allows the MQTT tools (config ``mqtt.*``).

    Attributes:
        broker: The default broker URL.
        brokers: Other broker URLs ``mqtt_connect`` may use.
        allow_subscribe: Filters a subscription must lie within.
        allow_publish: Filters a published topic must match.
        protocol_prefix: The node protocol's prefix (never published to or read by the tools).
        min_interval_s: Seconds between two publishes on one topic (at least 0.1).
        max_publish_bytes: Largest payload ``mqtt_publish`` sends.
        history_per_topic: Messages kept per topic for ``mqtt_history``.
        retained: What rules and inject mode do with retained messages: ``skip`` them or
            ``inject`` them (marked retained, with their age where known).
    """

    broker: str = "mqtt://127.0.0.1:1883"
    brokers: tuple[str, ...] = ()
    allow_subscribe: tuple[str, ...] = ("#",)
    allow_publish: tuple[str, ...] = ("#",)
    protocol_prefix: str = "loopact"
    min_interval_s: float = 0.1
    max_publish_bytes: int = 65_536
    history_per_topic: int = 100
    retained: Retained = "skip"

    def in_protocol(self, topic: str) -> bool:
        """Whether ``topic`` (or filter) is under the node protocol's prefix."""
        p = self.protocol_prefix
        return bool(p) and (topic == p or topic.startswith(p + "/"))


def filter_within(inner: str, outer: str) -> bool:
    """Whether every topic matching filter ``inner`` also matches filter ``outer``."""
    a, b = inner.split("/"), outer.split("/")
    for i, level in enumerate(a):
        if i >= len(b):
            return False
        if b[i] == "#":
            return True
        if level == "#":
            return False
        if b[i] == "+":
            continue
        if level == "+" or level != b[i]:
            return False
    return len(a) == len(b) or (len(b) == len(a) + 1 and b[-1] == "#")


def check_filter(topic_filter: str) -> str | None:
    """Why ``topic_filter`` is not a valid MQTT subscription filter (None when it is)."""
    if not topic_filter or len(topic_filter) > 1024:
        return "a topic filter must have 1 to 1024 characters"
    levels = topic_filter.split("/")
    for i, level in enumerate(levels):
        if "#" in level and (level != "#" or i != len(levels) - 1):
            return "'#' must be a whole last level (sensors/#)"
        if "+" in level and level != "+":
            return "'+' must be a whole level (sensors/+/temperature)"
    return None


@dataclass
class _ToolSub:
    filter: str
    mode: Mode
    rules: tuple[Rule, ...]
    retained: Retained = "skip"
    link_sub: Any = None
    received: int = 0
    injected: int = 0


@dataclass
class _Pending:
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_PENDING))
    dropped: int = 0


class MqttTools:
    """State of the MQTT tools of one agent (see the module docstring).

    Args:
        policy: What the operator allows.
        settings: ``settings(url)`` gives the broker settings (credentials from the config)
            for an allowed broker URL (None: the default broker).
        on_link: ``on_link(settings)`` gives a listener for link changes (trace events).
        on_inject: Called when a message is handed to the agent (``agent.wake``).
    """

    def __init__(
        self,
        policy: ToolsPolicy,
        settings: Callable[[str | None], MqttSettings],
        on_link: Callable[[MqttSettings], StateCallback] | None = None,
        on_inject: Callable[[], None] | None = None,
    ) -> None:
        self.policy = policy
        self._settings = settings
        self._on_link = on_link
        self.on_inject = on_inject
        self.link: MqttLink | None = None
        self.subs: dict[str, _ToolSub] = {}
        self.history = History(policy.history_per_topic)
        self.unread: deque[MqttMessage] = deque(maxlen=MAX_UNREAD)
        self.pending = _Pending()
        self._arrived = asyncio.Event()
        self._last_publish: dict[str, float] = {}
        self._publish_turn: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ connection
    async def connect(self, broker: str | None = None) -> MqttLink:
        """Connect to ``broker`` (default: the configured one); reuses a live connection.

        Raises:
            ConfigError: The broker is not allowed, its URL is malformed, or it refused the login.
            NodeError: The broker did not answer in time.
        """
        url = self._allowed_broker(broker)
        if self.link is not None:
            if str(self.link.address) == str(parse_broker(url)):
                return self.link
            await self.disconnect()
        settings = self._settings(url)
        link = MqttLink(
            settings,
            new_client_id("tools"),
            on_state=self._on_link(settings) if self._on_link else None,
        )
        try:
            await link.start(require=True)
        except (ConfigError, NodeError):
            await link.stop()
            raise
        self.link = link
        for sub in self.subs.values():
            sub.link_sub = link.subscribe(sub.filter, self._deliver, depth=1000)
        return link

    def _allowed_broker(self, broker: str | None) -> str:
        if not broker or str(parse_broker(broker, "broker")) == str(
            parse_broker(self.policy.broker)
        ):
            return self.policy.broker
        wanted = str(parse_broker(broker, "broker"))
        for allowed in self.policy.brokers:
            if str(parse_broker(allowed, "mqtt.brokers")) == wanted:
                return allowed
        raise ConfigError(
            f"broker {wanted} is not allowed: use the configured broker "
            f"{parse_broker(self.policy.broker)} or one listed in mqtt.brokers",
            key="mqtt.brokers",
        )

    async def disconnect(self) -> None:
        """Close the connection; subscriptions are forgotten, history is kept."""
        link, self.link = self.link, None
        self.subs.clear()
        if link is not None:
            await link.stop()

    async def close(self) -> None:
        """Disconnect (end of the run)."""
        await self.disconnect()

    # ------------------------------------------------------------------ receiving
    def _deliver(self, topic: str, payload: bytes, retained: bool) -> None:
        if self.policy.in_protocol(topic):
            return
        import paho.mqtt.client as mqtt

        message = MqttMessage.from_payload(topic, payload, retained)
        self.history.add(message)
        self.unread.append(message)
        self._arrived.set()
        for sub in self.subs.values():
            if not mqtt.topic_matches_sub(sub.filter, topic):
                continue
            sub.received += 1
            if message.retained and sub.retained == "skip":
                continue  # published before: not a live event (history and receive have it)
            if sub.mode == "inject":
                self._inject(message, None)
                sub.injected += 1
                return
            rule = next((r for r in sub.rules if r.matches(message)), None)
            if rule is not None:
                self._inject(message, rule)
                sub.injected += 1
                return

    def _inject(self, message: MqttMessage, rule: Rule | None) -> None:
        if len(self.pending.lines) == MAX_PENDING:
            self.pending.dropped += 1
        why = f" (rule: {rule.text})" if rule is not None else ""
        age = f" [{message.describe_age()}]" if message.retained else ""
        self.pending.lines.append(f"{message.topic}: {message.text}{why}{age}")
        if self.on_inject is not None:
            try:
                self.on_inject()
            except Exception:
                logger.exception("MQTT inject listener failed")

    def take_snapshot(self) -> Message | None:
        """One user message with every message handed over since the last call, or None."""
        pending = self.pending
        if not pending.lines and not pending.dropped:
            return None
        lines = ["[mqtt messages]"]
        if pending.dropped:
            lines.append(f"({pending.dropped} older messages dropped: a flood)")
        lines.extend(pending.lines)
        pending.lines.clear()
        pending.dropped = 0
        return Message.user("\n".join(lines))

    # ------------------------------------------------------------------ verbs
    async def subscribe(
        self,
        topic: str,
        mode: Mode = "filter",
        rules: list[str] | None = None,
        retained: Retained | None = None,
    ) -> _ToolSub:
        """Subscribe ``topic`` (a filter) in ``mode`` with ``rules``; ``retained`` (None: the
        policy's) says whether rules and inject mode skip retained messages.

        Raises:
            ValueError: A bad filter, mode or rule, or a filter outside ``allow_subscribe``.
            ConfigError / NodeError: See :meth:`connect`.
        """
        problem = check_filter(topic)
        if problem:
            raise ValueError(f"topic {topic!r}: {problem}")
        if mode not in ("filter", "inject"):
            raise ValueError(f"mode {mode!r} must be filter or inject")
        if self.policy.in_protocol(topic):
            raise ValueError(
                f"topic {topic!r} is the node protocol's ({self.policy.protocol_prefix}/...); "
                "its tools and sensors reach the agent by themselves"
            )
        if not any(filter_within(topic, allowed) for allowed in self.policy.allow_subscribe):
            raise ValueError(
                f"topic {topic!r} is outside mqtt.allow_subscribe "
                f"({', '.join(self.policy.allow_subscribe) or 'empty'})"
            )
        parsed = parse_rules(list(rules or []))
        if topic not in self.subs and len(self.subs) >= MAX_SUBSCRIPTIONS:
            raise ValueError(f"at most {MAX_SUBSCRIPTIONS} subscriptions")
        link = await self.connect(None) if self.link is None else self.link
        old = self.subs.get(topic)
        sub = _ToolSub(topic, mode, parsed, retained or self.policy.retained)
        # in place before the broker sends the retained messages that come with the SUBACK
        self.subs[topic] = sub
        if old is not None and old.link_sub is not None:
            sub.link_sub = old.link_sub
        else:
            sub.link_sub = link.subscribe(topic, self._deliver, depth=1000)
            with contextlib.suppress(NodeError):
                await link.acked(sub.link_sub, 2.0)
        return sub

    async def add_configured(
        self, topic: str, mode: str, rules: list[str], retained: Retained | None = None
    ) -> None:
        """A subscription from ``mqtt.subscriptions`` (the broker may come later).

        Raises:
            ConfigError: A bad filter or rule (the key is named), or a refused login.
        """
        try:
            parse_rules(rules)
            if self.link is None:
                settings = self._settings(None)
                self.link = MqttLink(
                    settings,
                    new_client_id("tools"),
                    on_state=self._on_link(settings) if self._on_link else None,
                )
                await self.link.start()
            await self.subscribe(topic, mode, rules, retained)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ConfigError(
                f"mqtt.subscriptions ({topic}): {exc}", key="mqtt.subscriptions"
            ) from None

    async def publish(self, topic: str, payload: str, retain: bool, qos: int) -> dict[str, Any]:
        """Publish after the per-topic interval (see the module docstring).

        Calls on one topic take turns (first come, first served); each hands its message to
        the client no sooner than ``min_interval_s`` after the previous one on that topic was
        handed over (monotonic clock, taken right before each hand-over). Returns
        ``{topic, bytes, acknowledged, waited_ms, since_previous_ms}``: ``waited_ms`` is how
        long this call waited for its turn, ``since_previous_ms`` (rounded down; None for the
        first publish on the topic) how long after the previous publish it went out.

        Raises:
            ValueError: A bad topic, QoS or payload size, or a topic outside ``allow_publish``.
            ConfigError / NodeError: See :meth:`connect`.
        """
        if not topic or "+" in topic or "#" in topic or len(topic) > 1024:
            raise ValueError(f"topic {topic!r}: a topic to publish to has no wildcards")
        if self.policy.in_protocol(topic):
            raise ValueError(
                f"topic {topic!r} is the node protocol's ({self.policy.protocol_prefix}/...): "
                "call the tools themselves instead"
            )
        import paho.mqtt.client as mqtt

        if not any(mqtt.topic_matches_sub(a, topic) for a in self.policy.allow_publish):
            raise ValueError(
                f"topic {topic!r} is outside mqtt.allow_publish "
                f"({', '.join(self.policy.allow_publish) or 'empty'})"
            )
        if qos not in (0, 1):
            raise ValueError("qos must be 0 or 1")
        data = payload.encode("utf-8")
        if len(data) > self.policy.max_publish_bytes:
            raise ValueError(
                f"payload of {len(data)} bytes is over the limit of "
                f"{self.policy.max_publish_bytes} (mqtt.max_publish_bytes)"
            )
        link = await self.connect(None) if self.link is None else self.link
        called = time.monotonic()
        async with self._publish_turn.setdefault(topic, asyncio.Lock()):
            previous = self._last_publish.get(topic)
            if previous is not None:
                left = previous + self.policy.min_interval_s - time.monotonic()
                if left > 0:  # asyncio's timers fire at most its clock resolution (1 ns) early
                    await asyncio.sleep(left)
            sent = time.monotonic()
            info = link.publish(topic, data, qos, retain)
            self._last_publish[topic] = sent
        if info is not None and qos == 1:
            with contextlib.suppress(Exception):
                await wait_within(asyncio.to_thread(info.wait_for_publish, 2.0), 3.0)
        return {
            "topic": topic,
            "bytes": len(data),
            "acknowledged": bool(info is not None and info.is_published()),
            "waited_ms": round((sent - called) * 1000),
            "since_previous_ms": None if previous is None else _floor_ms(sent - previous),
        }

    async def receive(self, topic: str, timeout_s: float, max_messages: int) -> list[MqttMessage]:
        """Unread messages matching ``topic`` ("" for any); waits up to ``timeout_s`` for one."""
        import paho.mqtt.client as mqtt

        def take() -> list[MqttMessage]:
            picked = [
                m for m in self.unread if not topic or mqtt.topic_matches_sub(topic, m.topic)
            ][: max(1, max_messages)]
            for m in picked:
                self.unread.remove(m)
            return picked

        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            got = take()
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got
            self._arrived.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(self._arrived.wait(), left)

    # ------------------------------------------------------------------ tools
    def tools(self) -> list[Tool]:
        """The six MQTT tools bound to this state."""
        return make_mqtt_tools(self)


def _floor_ms(seconds: float) -> int:
    """Whole milliseconds, rounded down after rounding to a microsecond (so the float noise of
    ``previous + interval - previous`` does not turn 100 ms into 99)."""
    return int(round(seconds * 1e3, 3))


def _failed(exc: Exception) -> ToolResult:
    return ToolResult.failure(str(exc))


def make_mqtt_tools(state: MqttTools) -> list[Tool]:
    """``mqtt_connect``, ``mqtt_disconnect``, ``mqtt_publish``, ``mqtt_subscribe``,
    ``mqtt_receive``, ``mqtt_history`` (SPEC C7), in that order."""
    return _link_tools(state) + _message_tools(state)


def _link_tools(state: MqttTools) -> list[Tool]:
    """The tools that act on the broker: ``mqtt_connect``, ``mqtt_disconnect``, ``mqtt_publish``."""

    @tool(safety=SafetyClass.IDEMPOTENT, timeout_s=15)
    async def mqtt_connect(broker: str = "") -> ToolResult:
        """Connect to the MQTT broker (the configured one unless another allowed one is given).

        Args:
            broker: mqtt://host:port of an allowed broker; empty for the configured one.
        """
        try:
            link = await state.connect(broker or None)
        except (ConfigError, NodeError) as exc:
            return _failed(exc)
        return ToolResult.success(f"connected to {link.address}", broker=str(link.address))

    @tool(safety=SafetyClass.IDEMPOTENT, timeout_s=10)
    async def mqtt_disconnect() -> ToolResult:
        """Disconnect from the MQTT broker (subscriptions end; history is kept)."""
        was = state.link is not None
        await state.disconnect()
        return ToolResult.success("disconnected" if was else "was not connected")

    @tool(safety=SafetyClass.WRITE, timeout_s=15)
    async def mqtt_publish(
        topic: str, payload: str, retain: bool = False, qos: int = 1
    ) -> ToolResult:
        """Publish a message on an MQTT topic (e.g. a command to a device).

        Args:
            topic: The topic, without wildcards (e.g. home/lamp/set).
            payload: The message text (JSON text for structured data).
            retain: Ask the broker to keep it for later subscribers.
            qos: 0 (at most once) or 1 (at least once).
        """
        try:
            facts = await state.publish(topic, payload, retain, qos)
        except (ValueError, ConfigError, NodeError) as exc:
            return _failed(exc)
        return ToolResult.success(f"published {facts['bytes']} bytes on {topic}", **facts)

    return [mqtt_connect, mqtt_disconnect, mqtt_publish]


def _message_tools(state: MqttTools) -> list[Tool]:
    """The tools that read what arrives: ``mqtt_subscribe``, ``mqtt_receive``, ``mqtt_history``."""

    @tool(safety=SafetyClass.IDEMPOTENT, timeout_s=15)
    async def mqtt_subscribe(
        topic: str, mode: str = "filter", rules: list[str] | None = None
    ) -> ToolResult:
        """Subscribe to MQTT topics; messages go to the history, mqtt_receive, and, in inject
        mode or when a rule matches, to you as they arrive.

        Args:
            topic: A topic filter (sensors/+/temperature, home/#).
            mode: filter (only rule matches reach you; the rest is history) or inject (all).
            rules: Conditions such as "temperature > 30" or 'payload contains "alarm"'.
        """
        try:
            sub = await state.subscribe(topic, mode, rules)  # type: ignore[arg-type]
        except (ValueError, ConfigError, NodeError) as exc:
            return _failed(exc)
        return ToolResult.success(
            f"subscribed to {topic} ({sub.mode})", rules=[r.text for r in sub.rules]
        )

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=35, reentrant=True)
    async def mqtt_receive(
        topic: str = "", timeout_s: float = 5.0, max_messages: int = 10
    ) -> ToolResult:
        """Read messages received since the last read (waits up to timeout_s for one).

        Args:
            topic: Only messages on topics matching this filter; empty for all.
            timeout_s: Seconds to wait when nothing is there yet (0 to 30).
            max_messages: At most this many (1 to 100).
        """
        if state.link is None:
            return ToolResult.failure("not connected: call mqtt_subscribe first")
        got = await state.receive(topic, min(max(timeout_s, 0.0), 30.0), min(max_messages, 100))
        return ToolResult.success([m.to_dict() for m in got], count=len(got))

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=5, reentrant=True)
    async def mqtt_history(topic: str = "", limit: int = 20) -> ToolResult:
        """The newest messages received on topics matching a filter (routine data included).

        Args:
            topic: A topic filter; empty for every topic.
            limit: At most this many messages (1 to 200), oldest first.
        """
        found = state.history.query(topic, min(max(limit, 1), 200))
        return ToolResult.success(
            [m.to_dict() for m in found], count=len(found), topics=len(state.history.topics())
        )

    return [mqtt_subscribe, mqtt_receive, mqtt_history]
