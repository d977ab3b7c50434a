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
import base64
import binascii
import json
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from loopact.channels.agent_port import EventSource
from loopact.channels.web.texts import said
from loopact.events import LIVE_ONLY_TYPES, Event, EventType
from loopact.events.payloads import ToolImagePayload

log = logging.getLogger(__name__)

#: Events that may be dropped first when a client lags.
DELTA_TYPES = frozenset({EventType.TEXT_DELTA, EventType.REASONING_DELTA})

#: Live-only events the console still shows.
_FORWARDED_LIVE = frozenset({"text_delta"})

#: Events the hub follows even with no page connected (open confirmations).
_TRACKED = frozenset({EventType.CONFIRM_REQUEST, EventType.CONFIRM_RESPONSE, EventType.TASK_END})


def forwarded(event_type: str) -> bool:
    """True if the console forwards events of this type (trace events plus ``text_delta``)."""
    return event_type not in LIVE_ONLY_TYPES or event_type in _FORWARDED_LIVE


def encode_event(event: Event) -> str:
    """The JSON text sent to pages: ``event.to_json()``, plus ``said`` (the event's sentence
    in every language, :func:`~loopact.channels.web.texts.said`) for tool calls and typed
    tool outcomes (issue 42 item 4); non-JSON values become strings."""
    data = event.to_json()
    sentence = said(event)
    if sentence is not None:
        data["said"] = sentence
    return json.dumps(data, ensure_ascii=False, default=str)


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
    """Subscribes to the agent's bus and fans events out to the connected pages.

    With no page connected an event costs one type check and a place in the recent-history
    ring (no encoding, no queueing). A page that connects (or reloads) first gets the recent
    history (the last ``history_size`` trace events: the conversation, tool calls and
    results), then the confirmation requests still open (SPEC C5), so it can still answer
    with Allow / Deny.

    Args:
        bus: The agent's :class:`~loopact.events.EventBus` (anything with ``subscribe``).
        queue_size: Per-client queue bound (events).
        max_open_confirmations: Most unanswered confirmation requests remembered.
        history_size: Recent trace events (not text deltas) replayed to a new page.
    """

    def __init__(
        self,
        bus: EventSource,
        queue_size: int = 1000,
        max_open_confirmations: int = 50,
        history_size: int = 200,
    ) -> None:
        self._queue_size = queue_size
        self._max_open = max_open_confirmations
        self._history: deque[Event] = deque(maxlen=history_size)
        self._clients: set[ClientQueue] = set()
        self._open: OrderedDict[str, tuple[str | None, str]] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_id: int | None = None
        try:
            self._bind_loop()
        except RuntimeError:
            pass  # bound on the first connect
        self._unsubscribe: Callable[[], None] | None = bus.subscribe(self._on_event)

    def _bind_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()

    @property
    def n_clients(self) -> int:
        """Number of connected clients."""
        return len(self._clients)

    @property
    def open_confirmations(self) -> list[str]:
        """Ids of confirmation requests not answered yet (as far as the events tell)."""
        return list(self._open)

    def connect(self) -> ClientQueue:
        """Register a new client (call on the loop thread) and return its queue.

        The queue starts with the open confirmation requests.
        """
        if self._loop is None:
            self._bind_loop()
        queue = ClientQueue(self._queue_size)
        for past in list(self._history):  # a copy: worker threads may append
            if past.type not in (EventType.CONFIRM_REQUEST, EventType.CONFIRM_RESPONSE):
                queue.put(past.type, encode_event(past))
        for _task_id, text in self._open.values():
            queue.put(EventType.CONFIRM_REQUEST, text)
        self._clients.add(queue)
        return queue

    def disconnect(self, queue: ClientQueue) -> None:
        """Forget a client."""
        self._clients.discard(queue)

    def close(self) -> None:
        """Drop every client and unsubscribe from the bus."""
        self._clients.clear()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, event: Event) -> None:
        if not forwarded(event.type):
            return
        if event.type not in LIVE_ONLY_TYPES:
            self._history.append(event)
        if not self._clients and event.type not in _TRACKED:
            return  # nobody is watching: no encoding, no queueing
        text = encode_event(event)
        request_id = event.data.get("id")
        args = (event.type, event.task_id, request_id, text)
        if self._loop is None or threading.get_ident() == self._thread_id:
            self._dispatch(*args)
        else:
            # An event emitted from a worker thread: hand it to the loop (never block it).
            self._loop.call_soon_threadsafe(self._dispatch, *args)

    def _dispatch(self, event_type: str, task_id: str | None, request_id: Any, text: str) -> None:
        if event_type == EventType.CONFIRM_REQUEST and isinstance(request_id, str):
            self._open[request_id] = (task_id, text)
            while len(self._open) > self._max_open:
                self._open.popitem(last=False)
        elif event_type == EventType.CONFIRM_RESPONSE and isinstance(request_id, str):
            self._open.pop(request_id, None)
        elif event_type == EventType.TASK_END:
            for key in [k for k, (t, _text) in self._open.items() if t == task_id]:
                del self._open[key]
        for queue in list(self._clients):
            queue.put(event_type, text)


def dropped_notice(n: int) -> str:
    """The message telling a page that ``n`` events were dropped because it lagged."""
    notice: dict[str, Any] = {"type": "dropped", "task_id": None, "n": n}
    return json.dumps(notice)


class ShownImages:
    """The images tools showed people (``tool_image`` events, SPEC F6), for the console.

    Keeps the decoded JPEG of the last ``keep`` events, by tool call id and number.

    Args:
        bus: The agent's event bus.
        keep: How many images are kept.
    """

    def __init__(self, bus: EventSource, keep: int = 32) -> None:
        self._keep = keep
        self._images: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._unsubscribe = bus.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.type != EventType.TOOL_IMAGE:
            return
        shown = event.payload(ToolImagePayload)
        try:
            data = base64.b64decode(shown.get("data_b64", ""), validate=True)
            key = (str(shown["id"]), int(shown["n"]))
        except (KeyError, TypeError, ValueError, binascii.Error):
            log.debug("tool_image event without a decodable image")
            return
        self._images[key] = data
        while len(self._images) > self._keep:
            self._images.popitem(last=False)

    def get(self, call_id: str, n: int) -> bytes | None:
        """The JPEG bytes, or None when unknown or no longer kept."""
        return self._images.get((call_id, n))

    def close(self) -> None:
        """Stop following the bus."""
        self._unsubscribe()
