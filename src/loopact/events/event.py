"""One structured event (SPEC A8): its type, its task, its fields, its time."""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from loopact.events.kinds import EventType
from loopact.events.payloads import PAYLOADS

P = TypeVar("P")


@dataclass(frozen=True)
class Event:
    """One structured event.

    Attributes:
        type: Event type (``task_start``, ``tool_call``, ...; see ``docs/trace.md``).
        task_id: The command id of the task, or None for events outside a task.
        data: The type's fields (JSON-able; :mod:`loopact.events.payloads` defines them).
        ts: Unix time in seconds.
    """

    type: EventType
    task_id: str | None
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """The trace-line dict: ``ts``, ``type``, ``task_id`` then the type's fields."""
        return {"ts": self.ts, "type": self.type, "task_id": self.task_id, **self.data}

    def payload(self, kind: builtins.type[P]) -> P:
        """The fields as their typed definition ``kind``, e.g.
        ``ev.payload(ToolResultPayload)`` for a ``tool_result`` event.

        Raises:
            TypeError: ``kind`` is not the definition of this event's type (reading a
                ``tool_call`` as a tool result is a bug of the reader).
        """
        wanted = PAYLOADS.get(self.type)
        if wanted is not kind:
            raise TypeError(
                f"a {self.type!s} event read as {getattr(kind, '__name__', kind)}; "
                f"its fields are {getattr(wanted, '__name__', 'not defined')}"
            )
        return cast(P, self.data)
