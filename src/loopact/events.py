"""Structured events (SPEC A8): what channels display and the trace records.

Every stage of the agent (task start, model request and response, tool call and result,
confirmation, reply, error, task end, robot state) is one :class:`Event`. The event bus hands
each event to every subscriber synchronously, in order; a subscriber that needs to do slow
work (a web socket, a ROS 2 topic) copies the event into its own queue. A subscriber that
raises is reported once through logging and never breaks the agent.

The JSON form of an event is one trace line (``docs/trace.md``)::

    {"ts": 1764510000.123, "type": "tool_call", "task_id": "t3", "id": "call_1", ...}
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopact.redact import Redactor

log = logging.getLogger(__name__)

#: Event types that are only for live display and are not written to traces.
LIVE_ONLY_TYPES = frozenset({"text_delta", "reasoning_delta"})


@dataclass(frozen=True)
class Event:
    """One structured event.

    Attributes:
        type: Event type (``task_start``, ``tool_call``, ...; see ``docs/trace.md``).
        task_id: The command id of the task, or None for events outside a task.
        data: The type's fields (JSON-able).
        ts: Unix time in seconds.
    """

    type: str
    task_id: str | None
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """The trace-line dict: ``ts``, ``type``, ``task_id`` then the type's fields."""
        return {"ts": self.ts, "type": self.type, "task_id": self.task_id, **self.data}


Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers, synchronously and in order.

    Every event is masked on its way in: known secrets (the model's API key, added by the
    agent) become ``***`` in all its fields, so no subscriber (trace, terminal, web console,
    ROS 2 text channel) ever sees one (:class:`~loopact.redact.Redactor`, issue 21 item 5).

    Args:
        redactor: The masker to use; a new one (knowing no secret yet) if None.
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._subscribers: list[Subscriber] = []
        self._failed: set[int] = set()
        self.redactor = redactor or Redactor()

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Add ``fn``; returns a function that removes it again."""
        self._subscribers.append(fn)

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

        return unsubscribe

    def emit(self, type: str, task_id: str | None = None, **data: Any) -> Event:
        """Build an event and hand it to every subscriber; returns the event (masked)."""
        event = Event(type=type, task_id=task_id, data=self.redactor.value(data))
        self.publish(event)
        return event

    def publish(self, event: Event) -> None:
        """Hand an existing event to every subscriber (masked, see the class docstring)."""
        data = self.redactor.value(event.data)
        if data is not event.data:
            event = dataclasses.replace(event, data=data)
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:
                if id(fn) not in self._failed:
                    self._failed.add(id(fn))
                    log.exception("event subscriber %r failed; it keeps receiving events", fn)
