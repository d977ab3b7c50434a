"""Structured events (SPEC A8): what channels display and the trace records.

Every stage of the agent (task start, model request and response, tool call and result,
confirmation, reply, error, task end, robot state) is one :class:`Event`. The event bus hands
each event to every subscriber synchronously, in order; a subscriber that needs to do slow
work (a web socket, a ROS 2 topic) copies the event into its own queue. A subscriber that
raises is reported once through logging and never breaks the agent.

Every event type is a member of :class:`EventType` (:mod:`loopact.events.kinds`), and each
type's fields have one typed definition (:mod:`loopact.events.payloads`), checked where events
are built (:meth:`EventBus.emit`) and read (:meth:`Event.payload`).

The JSON form of an event is one trace line (``docs/trace.md``)::

    {"ts": 1764510000.123, "type": "tool_call", "task_id": "t3", "id": "call_1", ...}
"""

from __future__ import annotations

from loopact.events.bus import EventBus, Subscriber
from loopact.events.event import Event
from loopact.events.kinds import LIVE_ONLY_TYPES, EventType

__all__ = ["LIVE_ONLY_TYPES", "Event", "EventBus", "EventType", "Subscriber"]
