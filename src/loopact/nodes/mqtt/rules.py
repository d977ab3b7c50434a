"""MQTT rules and history: what reaches the agent and what stays local (SPEC C7).

A rule is one condition on a message, written as people write it::

    temperature > 30            # a number in a JSON payload ({"temperature": 31.5})
    data.level >= 0.8           # a nested field
    payload > 30                # the payload itself is a number ("31.5")
    payload contains "alarm"    # text anywhere in the payload (case-insensitive)
    state == "open"             # a field equal to a string (== and != also take numbers)

Operators: ``>``, ``>=``, ``<``, ``<=``, ``==``, ``!=``, ``contains``. A field name that is
not in a JSON payload matches a bare-number payload when it is the topic's last level
(``temperature > 30`` on ``home/kitchen/temperature`` with payload ``31.5``). A message
a rule cannot read (not JSON, no such field, not a number) simply does not match.

:class:`History` keeps the newest messages of each topic (bounded per topic and in topics).

A *retained* message is one the broker kept and sends on subscribing: it was published
before, perhaps long before (issue 39 item 8). MQTT 3.1.1 carries no publish time, so its age
is known only when a JSON payload says when it was published (:data:`TIME_FIELDS`: Unix
seconds or milliseconds, or ISO 8601 with a time zone); :meth:`MqttMessage.to_dict` marks it.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

_RULE_RE = re.compile(
    r"^\s*(?P<field>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*"
    r"(?P<op>>=|<=|==|!=|>|<|contains\b)\s*(?P<value>.+?)\s*$",
    re.IGNORECASE,
)
MAX_TEXT_CHARS = 2000
"""Payload text kept per message (history, receive, injection); longer is cut."""

TIME_FIELDS = ("timestamp", "ts", "time", "stamp_s", "published_at")
"""Top-level fields of a JSON payload read as its publish time (the first one present)."""

_EARLIEST_TS = 946_684_800.0  # 2000-01-01: a smaller number is no Unix time


def payload_time(text: str, now: float) -> float | None:
    """When a JSON payload says it was published (Unix seconds), or None.

    Args:
        text: The payload text.
        now: The time now (Unix seconds): a time more than a day ahead is not believed.
    """
    if not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    value = next((obj[k] for k in TIME_FIELDS if isinstance(obj, dict) and k in obj), None)
    ts: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        ts = float(value) / 1000.0 if value > 1e11 else float(value)
    elif isinstance(value, str):
        try:
            when = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if when.tzinfo is None:  # a local time of an unknown zone: no age
            return None
        ts = when.timestamp()
    if ts is None or not _EARLIEST_TS <= ts <= now + 86_400:
        return None
    return ts


@dataclass(frozen=True)
class MqttMessage:
    """One received message.

    Attributes:
        topic: Its topic.
        text: The payload as text (UTF-8; binary shown as ``<N bytes of binary data>``;
            cut to :data:`MAX_TEXT_CHARS`).
        size_bytes: The payload's size.
        ts: Arrival time, Unix seconds.
        retained: Whether the broker sent it as a retained message (published earlier).
        published_ts: When a retained message was published, from its payload
            (:func:`payload_time`), Unix seconds; None when unknown.
    """

    topic: str
    text: str
    size_bytes: int
    ts: float
    retained: bool = False
    published_ts: float | None = None

    @classmethod
    def from_payload(cls, topic: str, payload: bytes, retained: bool = False) -> MqttMessage:
        """Decode ``payload`` (never raises)."""
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            text = f"<{len(payload)} bytes of binary data>"
        now = time.time()
        published = payload_time(text, now) if retained else None
        if len(text) > MAX_TEXT_CHARS:
            text = text[:MAX_TEXT_CHARS] + " [...cut]"
        return cls(topic, text, len(payload), now, retained, published)

    @property
    def age_s(self) -> float | None:
        """Seconds between its publication and its arrival (0 for a live message; None for a
        retained one whose payload does not say when it was published)."""
        if not self.retained:
            return 0.0
        return None if self.published_ts is None else max(0.0, self.ts - self.published_ts)

    def describe_age(self) -> str:
        """``retained, published 2.0 h ago`` or ``retained, age unknown`` ("" when live)."""
        if not self.retained:
            return ""
        age = self.age_s
        if age is None:
            return "retained, age unknown"
        if age < 120:
            return f"retained, published {age:.0f} s ago"
        if age < 7200:
            return f"retained, published {age / 60:.0f} min ago"
        return f"retained, published {age / 3600:.1f} h ago"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for tool results: ``time`` is when it was published (a live message:
        when it arrived; a retained one: from its payload, else None), ``retained`` and
        ``age_s`` mark a retained message, ``received`` says when it arrived."""
        clock = time.strftime("%H:%M:%S", time.localtime(self.ts))
        out: dict[str, Any] = {
            "topic": self.topic,
            "payload": self.text,
            "time": clock,
            "bytes": self.size_bytes,
        }
        if self.retained:
            age = self.age_s
            published = self.published_ts
            out["time"] = (
                None if published is None else time.strftime("%H:%M:%S", time.localtime(published))
            )
            out.update(retained=True, age_s=None if age is None else round(age, 1), received=clock)
            out["note"] = self.describe_age() + ": kept by the broker from before the subscription"
        return out


@dataclass(frozen=True)
class Rule:
    """A parsed rule (see the module docstring).

    Attributes:
        text: The rule as written.
        field: ``payload`` or a dotted field path.
        op: The operator.
        value: A number or a string.
    """

    text: str
    field: str
    op: str
    value: float | str

    def matches(self, message: MqttMessage) -> bool:
        """Whether ``message`` satisfies the rule (False when it cannot be read)."""
        if self.op == "contains":
            subject = self._subject(message, as_text=True)
            return subject is not None and str(self.value).lower() in str(subject).lower()
        subject = self._subject(message, as_text=isinstance(self.value, str))
        if subject is None:
            return False
        if isinstance(self.value, str):
            equal = str(subject) == self.value
            return equal if self.op == "==" else (not equal if self.op == "!=" else False)
        number = _number(subject)
        if number is None:
            return False
        v = self.value
        return {
            ">": number > v,
            ">=": number >= v,
            "<": number < v,
            "<=": number <= v,
            "==": number == v,
            "!=": number != v,
        }[self.op]

    def _subject(self, message: MqttMessage, *, as_text: bool) -> Any:
        text = message.text
        if self.field == "payload":
            return text if as_text else text.strip()
        try:
            obj: Any = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for part in self.field.split("."):
                if not isinstance(obj, dict) or part not in obj:
                    return None
                obj = obj[part]
            return json.dumps(obj) if as_text and isinstance(obj, (dict, list)) else obj
        # a bare value on a topic named like the field: home/kitchen/temperature -> 31.5
        if message.topic.rsplit("/", 1)[-1] == self.field:
            return text.strip()
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def parse_rule(text: str) -> Rule:
    """Parse one rule.

    Raises:
        ValueError: It does not have the form ``field op value`` (the message shows examples).
    """
    match = _RULE_RE.match(text or "")
    if match is None:
        raise ValueError(
            f"rule {text!r} must look like 'temperature > 30', 'payload contains \"alarm\"' "
            "or 'state == \"open\"' (operators > >= < <= == != contains)"
        )
    field, op, raw = match.group("field"), match.group("op").lower(), match.group("value")
    value: float | str
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        value = raw[1:-1]
    else:
        number = _number(raw)
        if number is None:
            if op in (">", ">=", "<", "<="):
                raise ValueError(f"rule {text!r}: {op} needs a number, got {raw}")
            value = raw
        else:
            value = number
    if op == "contains":
        value = str(value if not isinstance(value, float) else raw)
    return Rule(text.strip(), field, op, value)


def parse_rules(texts: list[str]) -> tuple[Rule, ...]:
    """Parse several rules (see :func:`parse_rule`)."""
    return tuple(parse_rule(t) for t in texts)


class History:
    """The newest messages of each topic (SPEC C7 ``mqtt_history``).

    Args:
        per_topic: Messages kept per topic.
        max_topics: Topics kept; the one heard from longest ago is forgotten first.
    """

    def __init__(self, per_topic: int = 100, max_topics: int = 1000) -> None:
        self.per_topic = per_topic
        self.max_topics = max_topics
        self._topics: OrderedDict[str, deque[MqttMessage]] = OrderedDict()
        self.total = 0

    def add(self, message: MqttMessage) -> None:
        """Record one message."""
        items = self._topics.pop(message.topic, None)
        if items is None:
            items = deque(maxlen=self.per_topic)
        items.append(message)
        self._topics[message.topic] = items
        self.total += 1
        while len(self._topics) > self.max_topics:
            self._topics.popitem(last=False)

    def query(self, topic_filter: str = "", limit: int = 20) -> list[MqttMessage]:
        """The newest ``limit`` messages of topics matching ``topic_filter`` ("" for all), oldest
        first."""
        import paho.mqtt.client as mqtt

        found = [
            m
            for t, items in self._topics.items()
            if not topic_filter or mqtt.topic_matches_sub(topic_filter, t)
            for m in items
        ]
        found.sort(key=lambda m: m.ts)
        return found[-max(1, limit) :]

    def topics(self) -> list[str]:
        """Topics with history, most recent last."""
        return list(self._topics)
