"""``send_message(channel, to, text)``: messages to people over configured channels (SPEC C6, A7).

A *message channel* is one way of reaching people: the console (the chat every loopact
channel shows: terminal, web, ROS 2 text), email over SMTP (:mod:`loopact.tools.builtin.smtp`),
a ROS 2 topic (:class:`loopact.nodes.topic_channel.TopicChannel`), MQTT (its own engineer's
module). Each is a :class:`MessageChannel` with a name, a one-line description for the model
and, when it sends to recipients, an allow-list of them. :func:`make_send_message_tool` builds
the one ``send_message`` tool over a :class:`MessageChannels` collection.

Adding a channel (MQTT, a chat service) is a subclass and one ``channels.add(...)`` where the
run is composed (``loopact.app.messages``)::

    class MqttChannel(MessageChannel):
        name = "mqtt"
        description = "publish on an MQTT topic; `to` is the topic"

        async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
            await client.publish(to, text, qos=1)
            return f"published on {to}"

    channels.add(MqttChannel(allow_to=["robots/alerts"]))

The base class parses the recipient (:meth:`MessageChannel.parse_recipient`: strictly one
plain address on the email channel) and checks the parsed recipient against ``allow_to``
before :meth:`MessageChannel.deliver` runs with exactly that recipient, so every channel
refuses the same way: a failed result naming the recipient, the channel
and the allowed recipients, and nothing is sent. An empty text, an unknown channel or a
missing recipient are failed results too; a delivery that fails (server refused, timeout)
is a failed result that says what the other side answered.
"""

from __future__ import annotations

import abc
import asyncio
import fnmatch
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from loopact._compat import wait_within
from loopact.errors import ToolArgumentError, ToolError
from loopact.events import EventBus, EventType
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 20_000
"""``send_message`` refuses longer texts (characters)."""

DELIVERY_TIMEOUT_S = 30.0
"""Default time a channel may take to deliver one message, in seconds."""


class MessageChannel(abc.ABC):
    """One way of reaching people (SPEC C6).

    Subclasses set :attr:`name` and :attr:`description` and implement :meth:`deliver`.

    Args:
        allow_to: Recipients this channel may send to; entries may hold ``*`` wildcards
            (``*@example.com``). None for a channel without recipients (the console).
        timeout_s: Longest time one delivery may take, in seconds.

    Attributes:
        name: The ``channel`` value the model gives (``email``).
        description: What ``to`` is on this channel, for the model.
    """

    name: str = "channel"
    description: str = ""
    topic_recipient: bool = False
    """True when ``to`` is a topic (MQTT, ROS 2): ``send_message`` then also takes it as
    ``topic`` (issue 17 writes ``send_message(channel="mqtt", topic=...)``)."""

    def __init__(
        self, allow_to: Sequence[str] | None = None, timeout_s: float = DELIVERY_TIMEOUT_S
    ) -> None:
        self.allow_to: tuple[str, ...] | None = None if allow_to is None else tuple(allow_to)
        self.timeout_s = timeout_s

    @property
    def needs_recipient(self) -> bool:
        """True when messages go to a recipient (``to``) that must be on the allow-list."""
        return self.allow_to is not None

    def parse_recipient(self, to: str) -> str:
        """The one recipient ``to`` names, as it will be delivered to (SPEC C6).

        The allow-list is matched against what this returns and :meth:`deliver` gets exactly
        that, so a channel whose recipients have a grammar (an e-mail address) parses them
        here, strictly, and refuses anything that is not one plain recipient (issue 39 item
        11). The default takes ``to`` as it is, without the surrounding spaces.

        Raises:
            ToolArgumentError: ``to`` is not one recipient of this channel (the message says
                what is wrong with it).
        """
        return to.strip()

    def allows(self, to: str) -> bool:
        """Whether ``to`` parses as one recipient that is on the allow-list
        (case-insensitive; ``*`` wildcards)."""
        if self.allow_to is None:
            return True
        try:
            wanted = self.parse_recipient(to).lower()
        except ToolArgumentError:
            return False
        return any(fnmatch.fnmatchcase(wanted, entry.strip().lower()) for entry in self.allow_to)

    def check_recipient(self, to: str | None) -> str | None:
        """The recipient to deliver to: ``to`` parsed by :meth:`parse_recipient`, after the
        allow-list check of the parsed recipient.

        Raises:
            ToolArgumentError: A recipient is needed and missing, does not parse as one
                recipient, or is not allowed (the message names the allowed recipients).
        """
        if not self.needs_recipient:
            return None
        allowed = ", ".join(self.allow_to or ()) or "(none)"
        if to is None or not to.strip():
            raise ToolArgumentError(
                f"send_message on channel {self.name!r} needs `to`; allowed recipients: {allowed}"
            )
        try:
            recipient = self.parse_recipient(to)
        except ToolArgumentError as exc:
            raise ToolArgumentError(
                f"{exc}; nothing was sent. Allowed recipients: {allowed}"
            ) from None
        if not self.allows(recipient):
            raise ToolArgumentError(
                f"recipient {to!r} is not allowed on channel {self.name!r}; nothing was sent. "
                f"Allowed recipients: {allowed}"
            )
        return recipient

    @abc.abstractmethod
    async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
        """Send ``text`` to the allowed recipient ``to`` (None on recipient-less channels).

        Returns:
            A short receipt for the model ("sent to ops@example.com").

        Raises:
            ToolError: The delivery failed; the message says what the other side answered.
        """

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections (called when the run ends)."""


class ConsoleChannel(MessageChannel):
    """The chat every loopact channel shows (terminal, web, ROS 2 text): a ``message`` event.

    Args:
        bus: Where the ``message {text, source: "agent"}`` event goes.
    """

    name = "console"
    description = "the chat with the people watching this agent (terminal, web console)"

    def __init__(self, bus: EventBus) -> None:
        super().__init__(allow_to=None)
        self.bus = bus

    async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
        """Emit the ``message`` event (SPEC A7)."""
        self.bus.emit(EventType.MESSAGE, ctx.task_id, text=text, source="agent")
        return "delivered"


class MessageChannels:
    """The configured channels, by name, in the order they were added.

    Args:
        channels: Channels to add.

    Raises:
        ValueError: Two channels share a name.
    """

    def __init__(self, channels: Iterable[MessageChannel] = ()) -> None:
        self._channels: dict[str, MessageChannel] = {}
        for channel in channels:
            self.add(channel)

    def add(self, channel: MessageChannel) -> None:
        """Add ``channel``.

        Raises:
            ValueError: A channel with that name exists.
        """
        if channel.name in self._channels:
            raise ValueError(f"duplicate message channel {channel.name!r}")
        self._channels[channel.name] = channel

    def get(self, name: str) -> MessageChannel | None:
        """The channel called ``name``, or None."""
        return self._channels.get(name)

    @property
    def names(self) -> list[str]:
        """Channel names in the order they were added."""
        return list(self._channels)

    def __iter__(self) -> Iterator[MessageChannel]:
        return iter(list(self._channels.values()))

    def __len__(self) -> int:
        return len(self._channels)

    async def close(self) -> None:
        """Close every channel (errors are logged, never raised)."""
        for channel in self:
            try:
                await channel.close()
            except Exception as exc:
                log.warning("closing message channel %s failed: %s", channel.name, exc)


class SendMessageTool(Tool):
    """``send_message(channel, to, text)`` over a :class:`MessageChannels` (SPEC C6, A7).

    ``channel`` defaults to the first channel (``console`` when present), so the
    continuous-mode form ``send_message(text)`` keeps working; ``to`` is needed on channels
    with recipients. The schema lists the configured channels and their allow-lists, so the
    model sees where it may send.

    Safety class ``idempotent``: it asks no confirmation; the per-channel allow-lists are
    the authorisation (a recipient off the list is refused, nothing sent).

    Args:
        channels: The channels; at least one.

    Raises:
        ValueError: ``channels`` is empty.
    """

    name = "send_message"
    safety = SafetyClass.IDEMPOTENT
    reentrant = True

    def __init__(self, channels: MessageChannels) -> None:
        if not len(channels):
            raise ValueError("send_message needs at least one message channel")
        self.channels = channels
        self.description = (
            "Send a message to people (acknowledge, ask, report)."
            if channels.names == ["console"]
            else "Send a message to people over a channel: " + _channel_lines(channels)
        )
        self.timeout_s = max(c.timeout_s for c in channels) + 5.0
        default = channels.names[0]
        self.parameters = {
            "type": "object",
            "properties": {
                "channel": {
                    "type": "string",
                    "enum": channels.names,
                    "default": default,
                    "description": f"Where to send it (default {default}).",
                },
                "to": {
                    "type": ["string", "null"],
                    "default": None,
                    "description": _to_description(channels),
                },
                "text": {"type": "string", "description": "The message, short and plain."},
            },
            "required": ["text"],
            "additionalProperties": False,
        }
        topics = [c.name for c in channels if c.topic_recipient]
        if topics:
            self.parameters["properties"]["topic"] = {
                "type": ["string", "null"],
                "default": None,
                "description": f"The topic on {' or '.join(topics)}; the same as `to`.",
            }
        self.examples = _examples(channels)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Check the arguments and the recipient, then deliver.

        Raises:
            ToolError: Empty or too long text, unknown channel, refused recipient, or a
                failed delivery (the registry turns it into a failed result).
        """
        text = str(arguments.get("text") or "")
        name = str(arguments.get("channel") or self.channels.names[0])
        raw_to = arguments.get("to")
        to = None if raw_to is None else str(raw_to)
        topic = arguments.get("topic")
        if topic is not None:
            to = _topic_as_to(str(topic), to, self.channels.get(name), name)
        if not text.strip():
            raise ToolArgumentError("send_message needs some text")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ToolArgumentError(
                f"the message is {len(text)} characters; send_message sends at most "
                f"{MAX_MESSAGE_CHARS} (write a document and send a short note instead)"
            )
        channel = self.channels.get(name)
        if channel is None:
            raise ToolArgumentError(
                f"unknown channel {name!r}; configured channels: {', '.join(self.channels.names)}"
            )
        recipient = channel.check_recipient(to)
        try:
            receipt = await wait_within(channel.deliver(recipient, text, ctx), channel.timeout_s)
        except asyncio.TimeoutError:
            raise ToolError(
                f"channel {name!r} did not deliver within {channel.timeout_s:g} s; "
                "the message may not have been sent"
            ) from None
        return ToolResult.success(receipt, channel=name, to=recipient, chars=len(text))


def _topic_as_to(topic: str, to: str | None, channel: MessageChannel | None, name: str) -> str:
    """``topic`` as the recipient of a topic channel (issue 17's spelling of ``to``).

    Raises:
        ToolArgumentError: The channel's recipients are not topics, or ``to`` names another.
    """
    if channel is not None and not channel.topic_recipient:
        raise ToolArgumentError(
            f"`topic` is for the topic channels; channel {name!r} takes its recipient as `to`"
        )
    if to is not None and to.strip() and to.strip() != topic.strip():
        raise ToolArgumentError(f"`to` ({to!r}) and `topic` ({topic!r}) differ; give one")
    return topic


_EXAMPLE_REQUESTS = {
    "mqtt": "tell the fleet on the MQTT topic {to} that the battery is low",
    "ros2": "post on the ROS 2 topic {to} that the battery is low",
    "email": "email {to} that the battery is low",
}
"""How each channel's example request is worded; other channels get a generic sentence."""


def _examples(channels: MessageChannels) -> tuple[tuple[str, dict[str, Any]], ...]:
    """One example per channel with recipients: its first allowed recipient without
    wildcards, so that the example call is one the allow-list accepts (a model that writes
    calls as text copies the example's ``channel`` and ``to``; issue 20). ``text`` comes
    first, as the call grammar writes required keys first: with ``channel`` first the 0.5B
    brain wrote ``{"text": ...}`` and stopped (console). The console needs none:
    ``send_message(text)`` is the default."""
    out: list[tuple[str, dict[str, Any]]] = []
    for c in channels:
        to = next((r for r in c.allow_to or () if not any(w in r for w in "*+#?[")), None)
        if to is None:
            continue
        wording = _EXAMPLE_REQUESTS.get(
            c.name, f"send {{to}} a message on {c.name} that the battery is low"
        )
        text = "Battery low: I need to recharge soon."
        out.append((wording.replace("{to}", to), {"text": text, "channel": c.name, "to": to}))
    return tuple(out)


def _to_description(channels: MessageChannels) -> str:
    """``to``'s description with each channel's allowed recipients in its first sentence: the
    compact catalogue shows only that sentence of an argument and cuts the tool's description
    short, where the allow-lists are (issue 20)."""
    text = "The recipient on that channel (not needed for console)"
    lists = [f"{c.name}: one of {', '.join(c.allow_to)}" for c in channels if c.allow_to]
    return text + (": " + "; ".join(lists) if lists else "") + "."


def _channel_lines(channels: MessageChannels) -> str:
    parts = []
    for c in channels:
        line = f"{c.name} ({c.description})"
        if c.allow_to is not None:
            line += f", to one of: {', '.join(c.allow_to) or '(none)'}"
        parts.append(line)
    return "; ".join(parts) + "."


def make_send_message_tool(channels: Iterable[MessageChannel]) -> SendMessageTool:
    """The ``send_message`` tool over ``channels`` (the first is the default channel).

    Args:
        channels: The channels, e.g. ``[ConsoleChannel(bus), EmailChannel(...)]``.

    Raises:
        ValueError: No channel, or two with the same name.
    """
    return SendMessageTool(MessageChannels(channels))
