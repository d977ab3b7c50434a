"""The transport-neutral connector interface nodes talk through (SPEC C4, X4).

A node (an output node serving a tool, an input node publishing a sensor) is written once
against :class:`Connector` and runs unchanged in-process (:mod:`loopact.nodes.local`), as a
ROS 2 node (:mod:`loopact.nodes.ros2.connector`) or over an MQTT broker
(:mod:`loopact.nodes.mqtt.connector`):

- :meth:`Connector.publish` / :meth:`Connector.subscribe`: messages on named topics (``/a/b/c``
  paths; an MQTT connector maps them to ``a/b/c``). A *latched* topic keeps its last message for
  late subscribers (ROS 2 transient local, MQTT retained).
- :meth:`Connector.subscribe_pattern`: every topic ``prefix + <one segment> + suffix``, present
  and future (ROS 2: graph polling; MQTT: a ``+`` wildcard).
- :meth:`Connector.serve`: a long call (ROS 2 action, MQTT request/response topics) with
  progress and cancellation; :meth:`Connector.start_call` starts one and returns a
  :class:`CallHandle` to await or cancel; :meth:`Connector.call` does both.
- :meth:`Connector.forget_endpoint`: drop cached client state for an endpoint (a restarted node).
- :meth:`Connector.shutdown`.

Payloads are ``str`` (text or JSON) or :class:`ImageData` (RGB pixels). Callbacks always run
on the connector's asyncio event loop, never on a transport thread.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

PayloadKind = Literal["string", "image"]


@dataclass(frozen=True)
class ImageData:
    """An RGB image payload (``sensor_msgs/Image`` ``rgb8`` on ROS 2).

    Attributes:
        rgb: ``HxWx3`` uint8 array, RGB order.
        stamp_s: Capture time in seconds (the publisher's clock; ROS header stamp).
        frame_id: The camera frame.
    """

    rgb: npt.NDArray[np.uint8]
    stamp_s: float = 0.0
    frame_id: str = "camera"


Payload = str | ImageData
Callback = Callable[[Payload], None]
TopicCallback = Callable[[str, Payload], None]
ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class CallReply:
    """What a long call returned.

    Attributes:
        output_json: The serialised result (see :mod:`loopact.nodes.protocol`).
        exit_code: 0 on success.
        cancelled: True when the call ended because it was cancelled.
    """

    output_json: str
    exit_code: int
    cancelled: bool = False


Handler = Callable[[str, float, ProgressFn], Coroutine[Any, Any, CallReply]]
"""A served call: ``(input_json, timeout_s, progress) -> CallReply``; cancelled on cancel."""


class CallHandle(Protocol):
    """A started long call."""

    @property
    def endpoint(self) -> str:
        """The endpoint called."""
        ...

    async def result(self) -> CallReply:
        """Wait for the reply.

        Raises:
            NodeError: The call was rejected or the transport failed.
        """
        ...

    async def cancel(self) -> None:
        """Ask the server to cancel the call (returns without waiting for it to stop)."""
        ...


class Subscription(Protocol):
    """A live subscription; :meth:`close` ends it."""

    def close(self) -> None:
        """Stop receiving."""
        ...


class Connector(abc.ABC):
    """Transport-neutral messaging verbs (see the module docstring).

    Attributes:
        transport: ``local``, ``ros2`` or ``mqtt``.
    """

    transport: str = "abstract"

    @abc.abstractmethod
    async def start(self) -> None:
        """Bring the transport up (idempotent); binds callbacks to the running loop.

        Raises:
            NodeError: The transport is unavailable (e.g. rclpy missing).
        """

    def wire_topic(self, topic: str) -> str:
        """``topic`` (a neutral ``/a/b`` path) as it is named on this transport, for log
        lines and events: itself on ROS 2; ``<prefix>/a/b`` on MQTT."""
        return topic

    @abc.abstractmethod
    async def publish(self, topic: str, payload: Payload, *, latched: bool = False) -> None:
        """Publish one message on ``topic`` (a latched topic keeps it for late subscribers)."""

    @abc.abstractmethod
    def subscribe(
        self,
        topic: str,
        kind: PayloadKind,
        callback: Callback,
        *,
        latched: bool = False,
        depth: int = 10,
    ) -> Subscription:
        """Call ``callback(payload)`` on the event loop for each message on ``topic``.

        Args:
            topic: Full topic path.
            kind: ``string`` or ``image``.
            callback: Runs on the event loop; must not block.
            latched: Also receive the last message published before subscribing.
            depth: Messages buffered per subscriber before the oldest are dropped (bounds
                memory under a flood).
        """

    @abc.abstractmethod
    def subscribe_pattern(
        self,
        prefix: str,
        suffix: str,
        kind: PayloadKind,
        callback: TopicCallback,
        *,
        latched: bool = False,
    ) -> Subscription:
        """Subscribe to every topic ``prefix + <segment> + suffix``, including future ones.

        ``callback(topic, payload)`` runs on the event loop.
        """

    @abc.abstractmethod
    def serve(self, endpoint: str, handler: Handler, *, instance: str = "") -> Subscription:
        """Serve long calls on ``endpoint`` with ``handler`` (cancelled on a cancel request).

        ``instance`` is the serving node's instance id (its heartbeat's): a transport that can
        address one node (MQTT) ignores calls meant for another node with the same name.
        """

    @abc.abstractmethod
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
        """Start a long call.

        Args:
            endpoint: The served endpoint.
            input_json: Arguments as JSON text.
            timeout_s: The callee's time limit in seconds (passed along).
            progress: Called on the event loop with each progress text.
            connect_timeout_s: How long to wait for the server to be reachable.
            instance: The node instance meant ("" for any): over MQTT only that node runs the
                call (the ROS 2 and in-process transports have one server per endpoint).

        Raises:
            NodeError: No server answered within ``connect_timeout_s`` or it rejected the call.
        """

    async def call(
        self,
        endpoint: str,
        input_json: str,
        timeout_s: float,
        progress: ProgressFn | None = None,
        *,
        instance: str = "",
    ) -> CallReply:
        """Start a call and wait for its reply; cancels the remote call if cancelled."""
        handle = await self.start_call(endpoint, input_json, timeout_s, progress, instance=instance)
        try:
            return await handle.result()
        except asyncio.CancelledError:
            await asyncio.shield(handle.cancel())
            raise

    def advertise(self, topic: str, kind: PayloadKind, *, latched: bool = False) -> None:  # noqa: B027
        """Announce that this side will publish on ``topic`` (optional; lets a transport match
        subscribers before the first message, so early messages are not lost)."""

    def subscriber_count(self, topic: str) -> int | None:
        """How many subscribers ``topic`` has (None: the transport cannot tell)."""
        return None

    def forget_endpoint(self, endpoint: str) -> None:  # noqa: B027 - optional hook
        """Drop cached client state for ``endpoint`` so the next call reconnects (C2)."""

    @abc.abstractmethod
    async def shutdown(self) -> None:
        """Close every subscription, server and client; idempotent."""
