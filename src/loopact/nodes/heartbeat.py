"""The heartbeat-watch lifecycle shared by tool discovery and the input hub (SPEC C2, C3, C4).

:class:`HeartbeatWatch` subscribes ``/<agent>/<kind>/*/info`` (latched), runs a reaper task
that calls :meth:`HeartbeatWatch.check` periodically so silent nodes are dropped, reports each
distinct heartbeat error once (log line and ``node_error`` event) and, on :meth:`stop`, cancels
the reaper, closes the subscription and lets the subclass release what it found.
:class:`~loopact.nodes.discovery.ToolDiscovery` (``output``) and
:class:`~loopact.nodes.inputs.InputHub` (``input``) fill in the rest.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from typing import Any, ClassVar

from loopact.events import Event, EventBus, EventType
from loopact.nodes.connector import Connector, Payload, Subscription


class HeartbeatWatch(abc.ABC):
    """Watch the heartbeats of one kind of node and drop the silent ones (SPEC C4).

    Subclasses set the class constants and implement :meth:`_on_heartbeat`, :meth:`check` and
    :meth:`_release`.

    Args:
        connector: The transport the nodes use.
        agent: The agent name (topic prefix).
        bus: Where to emit events (None: log only).
        drop_after_s: Heartbeat silence after which a node is dropped, seconds.
    """

    _kind: ClassVar[str]
    """The kind segment of the topic prefix: ``output`` or ``input``."""
    _logger: ClassVar[logging.Logger]
    """The subclass module's logger (log lines keep their module's name)."""
    _error_log: ClassVar[str]
    """Log format for a heartbeat error, with two ``%s``: topic and message."""
    _check_failed_log: ClassVar[str]
    """Log message when a periodic :meth:`check` raises."""
    _reaper_name: ClassVar[str]
    """The asyncio task name of the reaper."""
    _reap_period_s: ClassVar[float]
    """Seconds between two :meth:`check` calls of the reaper."""

    def __init__(
        self,
        connector: Connector,
        agent: str,
        bus: EventBus | None,
        drop_after_s: float,
    ) -> None:
        self.connector = connector
        self.agent = agent
        self.bus = bus
        self.drop_after_s = drop_after_s
        self._errors: dict[str, str] = {}
        self._sub: Subscription | None = None
        self._reaper: asyncio.Task[None] | None = None

    @property
    def prefix(self) -> str:
        """``/<agent>/<kind>/`` (``kind`` is ``output`` or ``input``)."""
        return f"/{self.agent}/{self._kind}/"

    async def start(self) -> None:
        """Subscribe to every heartbeat of this kind and start the drop timer."""
        await self.connector.start()
        self._sub = self.connector.subscribe_pattern(
            self.prefix, "/info", "string", self._on_heartbeat, latched=True
        )
        self._reaper = asyncio.get_running_loop().create_task(self._reap(), name=self._reaper_name)

    async def stop(self) -> None:
        """Stop watching: cancel the drop timer, unsubscribe, release every node found."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        if self._sub is not None:
            self._sub.close()
        self._release()

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self._reap_period_s)
            try:
                self.check()
            except Exception:
                self._logger.exception(self._check_failed_log)

    def _emit(self, type_: EventType, **data: Any) -> None:
        if self.bus is not None:
            self.bus.publish(Event(type_, None, data))

    def _report_error(self, topic: str, message: str) -> None:
        if self._errors.get(topic) == message:
            return  # reported already; a node repeats its heartbeat every 0.5 s
        self._errors[topic] = message
        wire = self.connector.wire_topic(topic)  # as the user sees it on the broker / graph
        self._logger.warning(self._error_log, wire, message)
        self._emit(EventType.NODE_ERROR, topic=wire, message=message)

    @abc.abstractmethod
    def _on_heartbeat(self, topic: str, payload: Payload) -> None:
        """Handle one heartbeat on ``<prefix><name>/info`` (called by the transport)."""

    @abc.abstractmethod
    def check(self, now: float | None = None) -> None:
        """Drop nodes silent for ``drop_after_s`` (``now``: monotonic seconds, None: now)."""

    @abc.abstractmethod
    def _release(self) -> None:
        """Forget every node found (called by :meth:`stop` after unsubscribing)."""
