"""The event bus (SPEC A8): every event to every subscriber, synchronously, in order."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from loopact.events.emit import TypedEmit
from loopact.events.event import Event
from loopact.events.kinds import EventType
from loopact.redact import Redactor

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]


class EventBus(TypedEmit):
    """Fan-out of events to subscribers, synchronously and in order.

    Every event is masked on its way in: known secrets (the model's API key, added by the
    agent) become ``***`` in all its fields, so no subscriber (trace, terminal, web console,
    ROS 2 text channel) ever sees one (:class:`~loopact.redact.Redactor`, issue 21 item 5).

    Events are built with :meth:`emit` (``bus.emit(EventType.TOOL_CALL, task_id, id=...,
    name=..., arguments=...)``), typed per event type (:class:`~loopact.events.emit.TypedEmit`).

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

    def _emit_event(self, type: EventType, task_id: str | None, data: dict[str, Any]) -> Event:
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
