"""Fan-out of agent events to web clients (SPEC A8, F2).

The event bus calls its subscribers synchronously on the agent's loop; a web socket is slow and
may stall, so every connected page gets its own bounded :class:`ClientQueue`. Putting into a
queue never blocks and never fails: when a slow client lags, the oldest text deltas are dropped
first (the ``reply`` event carries the full text anyway), then the oldest events.

The hub forwards exactly the events a trace records (everything but the live-only types) plus
``text_delta``, each as its :meth:`~loopact.events.Event.to_json` dict serialised once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from loopact.events import LIVE_ONLY_TYPES, Event

log = logging.getLogger(__name__)

#: Events that may be dropped first when a client lags.
DELTA_TYPES = frozenset({"text_delta", "reasoning_delta"})

#: Live-only events the console still shows.
_FORWARDED_LIVE = frozenset({"text_delta"})


class _Bus(Protocol):
    def subscribe(self, fn: Callable[[Event], None]) -> Callable[[], None]: ...


def forwarded(event_type: str) -> bool:
    """True if the console forwards events of this type (trace events plus ``text_delta``)."""
    return event_type not in LIVE_ONLY_TYPES or event_type in _FORWARDED_LIVE


def encode_event(event: Event) -> str:
    """The JSON text sent to pages: ``event.to_json()``; non-JSON values become strings."""
    return json.dumps(event.to_json(), ensure_ascii=False, default=str)


class ClientQueue:
    """A bounded queue of encoded events for one client.

    Args:
        maxlen: Most events held; beyond it the oldest delta (else the oldest event) is dropped.

    Attributes:
        dropped: How many events were dropped since the last :meth:`take_dropped`.
    """

    def __init__(self, maxlen: int = 1000) -> None:
        if maxlen < 1:
            raise ValueError(f"maxlen must be >= 1, got {maxlen}")
        self._maxlen = maxlen
        self._items: deque[tuple[str, str]] = deque()
        self._ready = asyncio.Event()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, event_type: str, text: str) -> None:
        """Add one encoded event; never blocks (call on the loop thread)."""
        if len(self._items) >= self._maxlen:
            self._drop_one()
        self._items.append((event_type, text))
        self._ready.set()

    def _drop_one(self) -> None:
        for i, (event_type, _text) in enumerate(self._items):
            if event_type in DELTA_TYPES:
                del self._items[i]
                self.dropped += 1
                return
        self._items.popleft()
        self.dropped += 1

    def take_dropped(self) -> int:
        """Return and reset the dropped count."""
        n, self.dropped = self.dropped, 0
        return n

    def get_nowait(self) -> str | None:
        """The oldest encoded event, or None when empty."""
        if not self._items:
            self._ready.clear()
            return None
        return self._items.popleft()[1]

    async def get(self) -> str:
        """Wait for and return the oldest encoded event."""
        while True:
            item = self.get_nowait()
            if item is not None:
                return item
            await self._ready.wait()


class EventHub:
    """Subscribes to the agent's bus while at least one client is connected.

    Args:
        bus: The agent's :class:`~loopact.events.EventBus` (anything with ``subscribe``).
        queue_size: Per-client queue bound (events).
    """

    def __init__(self, bus: _Bus, queue_size: int = 1000) -> None:
        self._bus = bus
        self._queue_size = queue_size
        self._clients: set[ClientQueue] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_id: int | None = None

    @property
    def n_clients(self) -> int:
        """Number of connected clients."""
        return len(self._clients)

    def connect(self) -> ClientQueue:
        """Register a new client (call on the loop thread) and return its queue."""
        queue = ClientQueue(self._queue_size)
        self._clients.add(queue)
        if self._unsubscribe is None:
            self._loop = asyncio.get_running_loop()
            self._thread_id = threading.get_ident()
            self._unsubscribe = self._bus.subscribe(self._on_event)
        return queue

    def disconnect(self, queue: ClientQueue) -> None:
        """Forget a client; the last one to leave unsubscribes from the bus."""
        self._clients.discard(queue)
        if not self._clients and self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def close(self) -> None:
        """Drop every client and unsubscribe."""
        self._clients.clear()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, event: Event) -> None:
        if not forwarded(event.type):
            return
        text = encode_event(event)
        if threading.get_ident() == self._thread_id or self._loop is None:
            self._dispatch(event.type, text)
        else:
            # An event emitted from a worker thread: hand it to the loop (never block it).
            self._loop.call_soon_threadsafe(self._dispatch, event.type, text)

    def _dispatch(self, event_type: str, text: str) -> None:
        for queue in list(self._clients):
            queue.put(event_type, text)


def dropped_notice(n: int) -> str:
    """The message telling a page that ``n`` events were dropped because it lagged."""
    notice: dict[str, Any] = {"type": "dropped", "task_id": None, "n": n}
    return json.dumps(notice)
