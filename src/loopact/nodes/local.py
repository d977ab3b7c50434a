"""The in-process connector: nodes and agent in one Python process (SPEC C4, default).

Messages are delivered through the event loop (``call_soon``), so a publisher never runs a
subscriber's code inside its own call, exactly as with a real transport. Each subscriber has a
bounded buffer (``depth``): under a flood the oldest undelivered messages are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field

from loopact.errors import NodeError
from loopact.nodes.connector import (
    Callback,
    CallHandle,
    CallReply,
    Connector,
    Handler,
    Payload,
    PayloadKind,
    ProgressFn,
    Subscription,
    TopicCallback,
)

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class _Sub:
    topic: str
    kind: PayloadKind
    callback: Callback
    depth: int
    owner: LocalConnector
    queue: deque[Payload] = field(default_factory=deque)
    scheduled: bool = False
    closed: bool = False
    dropped: int = 0

    def push(self, payload: Payload, loop: asyncio.AbstractEventLoop) -> None:
        if self.closed:
            return
        if len(self.queue) >= self.depth:
            self.queue.popleft()
            self.dropped += 1
        self.queue.append(payload)
        if not self.scheduled:
            self.scheduled = True
            loop.call_soon(self._drain)

    def _drain(self) -> None:
        self.scheduled = False
        while self.queue and not self.closed:
            payload = self.queue.popleft()
            try:
                self.callback(payload)
            except Exception:
                logger.exception("subscriber of %s failed", self.topic)

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        self.owner.bus.subs.get(self.topic, set()).discard(self)


@dataclass(eq=False)
class _PatternSub:
    prefix: str
    suffix: str
    kind: PayloadKind
    callback: TopicCallback
    latched: bool
    owner: LocalConnector
    children: dict[str, _Sub] = field(default_factory=dict)
    closed: bool = False

    def matches(self, topic: str) -> bool:
        if not (topic.startswith(self.prefix) and topic.endswith(self.suffix)):
            return False
        middle = topic[len(self.prefix) : len(topic) - len(self.suffix)]
        return bool(middle) and "/" not in middle

    def attach(self, topic: str) -> None:
        if self.closed or topic in self.children or not self.matches(topic):
            return

        def cb(payload: Payload, topic: str = topic) -> None:
            self.callback(topic, payload)

        self.children[topic] = self.owner._subscribe(topic, self.kind, cb, self.latched, 10)

    def close(self) -> None:
        self.closed = True
        for sub in self.children.values():
            sub.close()
        self.children.clear()
        self.owner.bus.patterns.discard(self)


@dataclass(eq=False)
class _Served:
    endpoint: str
    handler: Handler
    owner: LocalConnector

    def close(self) -> None:
        if self.owner.bus.servers.get(self.endpoint) is self:
            del self.owner.bus.servers[self.endpoint]


class LocalBus:
    """The shared in-process message space several :class:`LocalConnector` s talk over."""

    def __init__(self) -> None:
        self.subs: dict[str, set[_Sub]] = {}
        self.patterns: set[_PatternSub] = set()
        self.latched: dict[str, Payload] = {}
        self.servers: dict[str, _Served] = {}
        self.topics: set[str] = set()


class _LocalCall:
    def __init__(self, endpoint: str, task: asyncio.Task[CallReply]) -> None:
        self._endpoint = endpoint
        self._task = task

    @property
    def endpoint(self) -> str:
        return self._endpoint

    async def result(self) -> CallReply:
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if self._task.cancelled():
                return CallReply("", 1, cancelled=True)
            raise

    async def cancel(self) -> None:
        self._task.cancel()


class LocalConnector(Connector):
    """In-process connector (SPEC C4 default).

    Args:
        bus: The message space to join; connectors built on one bus see each other. A new
            private bus when None.
    """

    transport = "local"

    def __init__(self, bus: LocalBus | None = None) -> None:
        self.bus = bus or LocalBus()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owned: list[_Sub | _PatternSub | _Served] = []
        self._calls: set[asyncio.Task[CallReply]] = set()
        self._closed = False

    async def start(self) -> None:
        """Bind to the running loop."""
        self._loop = asyncio.get_running_loop()

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    async def publish(self, topic: str, payload: Payload, *, latched: bool = False) -> None:
        """Deliver ``payload`` to every subscriber of ``topic`` (on the next loop turn)."""
        if self._closed:
            return
        loop = self._get_loop()
        bus = self.bus
        if topic not in bus.topics:
            bus.topics.add(topic)
            for pattern in list(bus.patterns):
                pattern.attach(topic)
        if latched:
            bus.latched[topic] = payload
        for sub in list(bus.subs.get(topic, ())):
            sub.push(payload, loop)

    def _subscribe(
        self, topic: str, kind: PayloadKind, callback: Callback, latched: bool, depth: int
    ) -> _Sub:
        sub = _Sub(topic, kind, callback, max(1, depth), self)
        self.bus.subs.setdefault(topic, set()).add(sub)
        if latched and topic in self.bus.latched:
            sub.push(self.bus.latched[topic], self._get_loop())
        return sub

    def subscribe(
        self,
        topic: str,
        kind: PayloadKind,
        callback: Callback,
        *,
        latched: bool = False,
        depth: int = 10,
    ) -> Subscription:
        """See :meth:`Connector.subscribe`."""
        sub = self._subscribe(topic, kind, callback, latched, depth)
        self._owned.append(sub)
        return sub

    def subscribe_pattern(
        self,
        prefix: str,
        suffix: str,
        kind: PayloadKind,
        callback: TopicCallback,
        *,
        latched: bool = False,
    ) -> Subscription:
        """See :meth:`Connector.subscribe_pattern`."""
        pattern = _PatternSub(prefix, suffix, kind, callback, latched, self)
        self.bus.patterns.add(pattern)
        for topic in sorted(self.bus.topics):
            pattern.attach(topic)
        self._owned.append(pattern)
        return pattern

    def subscriber_count(self, topic: str) -> int | None:
        """Subscribers of ``topic`` on the shared bus."""
        return len(self.bus.subs.get(topic, ()))

    def forget_latched(self, topic: str) -> None:
        """Drop a latched message (a node that stopped)."""
        self.bus.latched.pop(topic, None)

    def serve(self, endpoint: str, handler: Handler, *, instance: str = "") -> Subscription:
        """See :meth:`Connector.serve`. A second server on a served endpoint is refused (the
        first stays, as the agent's discovery keeps the first node: SPEC C2); it is logged.
        """
        served = _Served(endpoint, handler, self)
        if endpoint in self.bus.servers:
            logger.warning("%s is already served; the second server is ignored", endpoint)
            return served
        self.bus.servers[endpoint] = served
        self._owned.append(served)
        return served

    async def start_call(
        self,
        endpoint: str,
        input_json: str,
        timeout_s: float,
        progress: ProgressFn | None = None,
        *,
        connect_timeout_s: float = 2.0,
        instance: str = "",
    ) -> CallHandle:
        """See :meth:`Connector.start_call` (one server per endpoint: ``instance`` unused)."""
        served = self.bus.servers.get(endpoint)
        if served is None:
            raise NodeError(f"no node serves {endpoint}")
        task: asyncio.Task[CallReply] = self._get_loop().create_task(
            served.handler(input_json, timeout_s, progress or (lambda _t: None)),
            name=f"loopact-local-call{endpoint}",
        )
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        return _LocalCall(endpoint, task)

    async def shutdown(self) -> None:
        """Close everything this connector opened; cancel its running calls."""
        if self._closed:
            return
        self._closed = True
        for item in self._owned:
            item.close()
        self._owned.clear()
        for task in list(self._calls):
            task.cancel()
        for task in list(self._calls):
            with contextlib.suppress(BaseException):
                await task
