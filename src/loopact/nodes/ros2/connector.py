"""The ROS 2 connector (rclpy): nodes across processes and machines (SPEC C4, X4).

It owns one rclpy context and node, waits for ready callbacks in its own thread and runs them in
a small thread pool (:class:`~loopact.nodes.ros2.spin.SpinThread`, which says why not rclpy's
``MultiThreadedExecutor``), and hands every message and result to the asyncio loop with
``call_soon_threadsafe`` (no ``spin_once`` polling). Shutdown follows the order that keeps
rclpy from aborting: ``executor.shutdown()``, join the spin thread, ``node.destroy_node()``,
``rclpy.shutdown()``.

Mapping of the neutral verbs: string payloads are ``std_msgs/String``, images
``sensor_msgs/Image`` (``rgb8``); latched topics use reliable + transient local, depth 1; long
calls are the ``loopact_interfaces/action/ExecuteTool`` action (cancellable, with feedback;
both sides in :mod:`loopact.nodes.ros2.actions`); :meth:`Ros2Connector.subscribe_pattern`
polls the ROS graph (5 Hz) for new matching topics.

rclpy comes from a sourced ROS 2 installation (Humble, Jazzy, Kilted) or from the Kilted wheels
(``pip install 'loopact[ros2]'`` then ``make ros2``). Before the first context starts, the
connector sets ``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA`` unless already set (with it, 640x480
images at 30 Hz arrive reliably between processes) and ``FASTDDS_DEFAULT_PROFILES_FILE`` to
``fastdds_discovery.xml`` (participants announced every 0.5 s: a new node is found in well
under a second instead of up to 3 s).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from loopact.errors import NodeError
from loopact.nodes.connector import (
    Callback,
    CallHandle,
    CallReply,
    Connector,
    Handler,
    ImageData,
    Payload,
    PayloadKind,
    ProgressFn,
    Subscription,
    TopicCallback,
)
from loopact.nodes.ros2.actions import RosCall, send_goal, serve_execute_tool
from loopact.nodes.ros2.convert import image_to_msg, msg_to_image
from loopact.nodes.ros2.interfaces import INSTALL_HINT, ros_module, ros_types
from loopact.nodes.ros2.spin import SpinThread

logger = logging.getLogger(__name__)

_MAX_PATTERN_TOPICS = 512
_GRAPH_POLL_S = 0.2


def ros_available() -> bool:
    """True when rclpy and the loopact_interfaces package import."""
    try:
        ros_module("loopact_interfaces.action")
        ros_module("rclpy")
    except ImportError:
        return False
    return True


@dataclass(eq=False)
class _RosSub:
    owner: Ros2Connector
    handle: Any
    closed: bool = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.owner._destroy_sub(self.handle)


@dataclass(eq=False)
class _PatternWatch:
    owner: Ros2Connector
    prefix: str
    suffix: str
    kind: PayloadKind
    callback: TopicCallback
    latched: bool
    children: dict[str, Subscription]
    closed: bool = False

    def matches(self, topic: str) -> bool:
        if not (topic.startswith(self.prefix) and topic.endswith(self.suffix)):
            return False
        middle = topic[len(self.prefix) : len(topic) - len(self.suffix)]
        return bool(middle) and "/" not in middle

    def close(self) -> None:
        self.closed = True
        for sub in self.children.values():
            sub.close()
        self.children.clear()
        with contextlib.suppress(ValueError):
            self.owner._patterns.remove(self)


class Ros2Connector(Connector):
    """ROS 2 transport (see the module docstring).

    Args:
        node_name: The rclpy node's name.
        namespace: The node's namespace ("" for none).
        domain_id: ``ROS_DOMAIN_ID`` override (None: the environment's).
        num_threads: Executor threads (each running served call holds one).
        large_data: Set ``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA`` if unset.
        fast_discovery: Use loopact's Fast DDS participant profile (announcements every 0.5 s)
            unless ``FASTDDS_DEFAULT_PROFILES_FILE`` is set.

    Attributes:
        node: The rclpy node (after :meth:`start`), for ROS-specific users such as
            :class:`~loopact.robot.ros2_robot.Ros2Robot`.
    """

    transport = "ros2"

    def __init__(
        self,
        node_name: str = "loopact",
        namespace: str = "",
        domain_id: int | None = None,
        num_threads: int = 8,
        large_data: bool = True,
        fast_discovery: bool = True,
    ) -> None:
        self.node_name = node_name
        self.namespace = namespace
        self.domain_id = domain_id
        self.num_threads = num_threads
        self.large_data = large_data
        self.fast_discovery = fast_discovery
        self.node: Any = None
        self._context: Any = None
        self._executor: Any = None
        self._spinner: SpinThread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._publishers: dict[tuple[str, str, bool], Any] = {}
        self._clients: dict[str, Any] = {}
        self._patterns: list[_PatternWatch] = []
        self._graph_task: asyncio.Task[None] | None = None
        self._running: dict[bytes, concurrent.futures.Future[CallReply]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._group: Any = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Create the context, node and executor thread (idempotent).

        Raises:
            NodeError: rclpy or loopact_interfaces is missing, or rclpy failed to start.
        """
        if self.node is not None:
            return
        if self._closed:
            raise NodeError("the ROS 2 connector was shut down")
        self._loop = asyncio.get_running_loop()
        if self.large_data:
            os.environ.setdefault("FASTDDS_BUILTIN_TRANSPORTS", "LARGE_DATA")
        if self.fast_discovery:
            profile = resources.files("loopact.nodes.ros2").joinpath("fastdds_discovery.xml")
            os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(profile))
        try:
            rclpy = ros_module("rclpy")
            ReentrantCallbackGroup = ros_types("rclpy.callback_groups", "ReentrantCallbackGroup")
            SingleThreadedExecutor = ros_types("rclpy.executors", "SingleThreadedExecutor")
            Node = ros_types("rclpy.node", "Node")
            SignalHandlerOptions = ros_types("rclpy.signals", "SignalHandlerOptions")
        except ImportError:
            raise NodeError(INSTALL_HINT) from None
        try:
            ctx = rclpy.Context()
            rclpy.init(
                context=ctx,
                domain_id=self.domain_id,
                signal_handler_options=SignalHandlerOptions.NO,
            )
            self._context = ctx
            self.node = Node(self.node_name, namespace=self.namespace or None, context=ctx)
            self._group = ReentrantCallbackGroup()
            self._executor = SingleThreadedExecutor(context=ctx)
            self._executor.add_node(self.node)
            # wakes the spin thread's wait so that deferred work runs at once (_on_spin_thread)
            wake = self.node.create_guard_condition(lambda: None, self._group)
            spinner = SpinThread(self._executor, wake, self.num_threads, lambda: self._closed)
        except Exception as exc:
            raise NodeError(f"could not start ROS 2: {exc}") from exc
        self._spinner = spinner
        spinner.start()
        self._graph_task = self._loop.create_task(self._watch_graph(), name="loopact-ros2-graph")
        logger.info("ROS 2 node %s started", self.node_name)

    async def shutdown(self) -> None:
        """Stop in the safe order: executor, spin thread, node, context (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._graph_task is not None:
            self._graph_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._graph_task
        for fut in list(self._running.values()):
            fut.cancel()
        if self.node is None:
            return
        await asyncio.to_thread(self._shutdown_sync)

    def _shutdown_sync(self) -> None:
        rclpy = ros_module("rclpy")

        with contextlib.suppress(Exception):
            self._executor.shutdown(timeout_sec=2.0)
        if self._spinner is not None:
            self._spinner.join()
        with contextlib.suppress(Exception):
            self.node.destroy_node()
        with contextlib.suppress(Exception):
            rclpy.shutdown(context=self._context)

    # ------------------------------------------------------------------ helpers
    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the asyncio loop (from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._closed:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn, *args)

    async def _await(self, rclpy_future: Any) -> Any:
        """Await an rclpy future from asyncio (its callback hops to the loop)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()

        def settle(_f: Any) -> None:
            def apply() -> None:
                if fut.done():
                    return
                exc = rclpy_future.exception()
                if exc is not None:
                    fut.set_exception(exc)
                elif rclpy_future.cancelled():
                    fut.set_exception(NodeError("the ROS 2 request was cancelled"))
                else:
                    fut.set_result(rclpy_future.result())

            self._post(apply)

        rclpy_future.add_done_callback(settle)
        return await fut

    def _on_spin_thread(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the spin thread between two waits (now, when it is not running)."""
        if self._spinner is None:
            fn()
        else:
            self._spinner.between_waits(fn)

    def _destroy_sub(self, handle: Any) -> None:
        if self.node is None or self._closed:
            return
        node = self.node

        def destroy() -> None:
            with contextlib.suppress(Exception):
                node.destroy_subscription(handle)

        self._on_spin_thread(destroy)

    def _destroy_action(self, entity: Any) -> None:
        if self.node is None or self._closed:
            return

        def destroy() -> None:
            with contextlib.suppress(Exception):
                entity.destroy()

        self._on_spin_thread(destroy)

    @staticmethod
    def qos(latched: bool = False, depth: int = 10, reliable: bool = True) -> Any:
        """A QoS profile: latched = reliable + transient local, depth 1."""
        DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy = ros_types(
            "rclpy.qos", "DurabilityPolicy", "HistoryPolicy", "QoSProfile", "ReliabilityPolicy"
        )

        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=1 if latched else max(1, depth),
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE),
        )

    def _require_node(self) -> Any:
        if self.node is None:
            raise NodeError("the ROS 2 connector is not started (await connector.start())")
        return self.node

    # ------------------------------------------------------------------ generic ROS access
    def publisher(self, msg_type: Any, topic: str, qos: Any) -> Any:
        """A raw rclpy publisher (ROS-specific users: robot, base node)."""
        return self._require_node().create_publisher(msg_type, topic, qos)

    def subscribe_msg(
        self,
        msg_type: Any,
        topic: str,
        qos: Any,
        callback: Callable[..., None],
        convert: Callable[[Any], Any] | None = None,
        with_publisher: bool = False,
    ) -> Subscription:
        """Subscribe with a raw ROS type; ``convert`` runs on the executor thread, ``callback``
        on the event loop with its result (a conversion error drops the message, logged once).

        With ``with_publisher`` the callback gets ``(result, publisher)``: the publishing
        node as ``namespace/name`` from the ROS graph (found by the message's publisher gid;
        ``"?"`` when it is not known). Names are what nodes call themselves: for logging who
        did something, not for deciding whether they may (issue 21).
        """
        node = self._require_node()
        warned = [False]

        def converted(msg: Any) -> tuple[bool, Any]:
            if convert is None:
                return True, msg
            try:
                return True, convert(msg)
            except Exception as exc:
                if not warned[0]:
                    warned[0] = True
                    logger.warning("dropping messages on %s: %s", topic, exc)
                return False, None

        def on_msg(msg: Any) -> None:
            ok, value = converted(msg)
            if ok:
                self._post(callback, value)

        def on_msg_info(msg: Any, info: Any) -> None:
            ok, value = converted(msg)
            if ok:
                self._post(callback, value, self._publisher_name(node, topic, info))

        handler = on_msg_info if with_publisher else on_msg
        handle = node.create_subscription(msg_type, topic, handler, qos, callback_group=self._group)
        return _RosSub(self, handle)

    @staticmethod
    def _publisher_name(node: Any, topic: str, info: Any) -> str:
        """``namespace/name`` of the node whose publisher has the gid in ``info`` (or "?")."""
        try:
            gid = list(bytes((info.get("publisher_gid") or {}).get("data") or b""))
            for endpoint in node.get_publishers_info_by_topic(node.resolve_topic_name(topic)):
                if list(endpoint.endpoint_gid) == gid:
                    if endpoint.node_name.startswith("_NODE_NAME_UNKNOWN_"):
                        break  # the graph knows the endpoint before its node's name
                    return f"{endpoint.node_namespace.rstrip('/')}/{endpoint.node_name}"
        except Exception as exc:  # the graph query is best effort
            logger.debug("publisher lookup on %s failed: %r", topic, exc)
        return "?"

    # ------------------------------------------------------------------ neutral verbs
    def advertise(self, topic: str, kind: PayloadKind, *, latched: bool = False) -> None:
        """Create the publisher now so subscribers match before the first message."""
        self._publisher_for(topic, kind, latched)

    def _publisher_for(self, topic: str, kind: str, latched: bool) -> Any:
        key = (topic, kind, latched)
        pub = self._publishers.get(key)
        if pub is None:
            msg_type = (
                ros_types("sensor_msgs.msg", "Image")
                if kind == "image"
                else ros_types("std_msgs.msg", "String")
            )
            pub = self.publisher(msg_type, topic, self.qos(latched, depth=10))
            self._publishers[key] = pub
        return pub

    def subscriber_count(self, topic: str) -> int | None:
        """Matched subscribers of our publisher on ``topic`` (0 before the first match)."""
        for (t, _kind, _latched), pub in self._publishers.items():
            if t == topic:
                return int(pub.get_subscription_count())
        return 0

    async def publish(self, topic: str, payload: Payload, *, latched: bool = False) -> None:
        """See :meth:`Connector.publish`."""
        if self._closed:
            return
        RosImage = ros_types("sensor_msgs.msg", "Image")
        String = ros_types("std_msgs.msg", "String")

        kind = "image" if isinstance(payload, ImageData) else "string"
        pub = self._publisher_for(topic, kind, latched)
        if isinstance(payload, ImageData):
            pub.publish(image_to_msg(payload, RosImage))
        else:
            pub.publish(String(data=payload))

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
        if kind == "image":
            RosImage = ros_types("sensor_msgs.msg", "Image")

            return self.subscribe_msg(
                RosImage, topic, self.qos(latched, depth), callback, convert=msg_to_image
            )
        String = ros_types("std_msgs.msg", "String")

        return self.subscribe_msg(
            String, topic, self.qos(latched, depth), callback, convert=lambda m: str(m.data)
        )

    def subscribe_pattern(
        self,
        prefix: str,
        suffix: str,
        kind: PayloadKind,
        callback: TopicCallback,
        *,
        latched: bool = False,
    ) -> Subscription:
        """See :meth:`Connector.subscribe_pattern` (graph polled every 0.2 s)."""
        self._require_node()
        watch = _PatternWatch(self, prefix, suffix, kind, callback, latched, {})
        self._patterns.append(watch)
        self._scan_graph()
        return watch

    def _scan_graph(self) -> None:
        if not self._patterns or self.node is None:
            return
        try:
            topics = self.node.get_topic_names_and_types()
        except Exception as exc:
            logger.debug("graph query failed: %r", exc)
            return
        for watch in list(self._patterns):
            for topic, _types in topics:
                if topic in watch.children or not watch.matches(topic):
                    continue
                if len(watch.children) >= _MAX_PATTERN_TOPICS:
                    logger.warning(
                        "more than %d topics match %s*; ignoring the rest",
                        _MAX_PATTERN_TOPICS,
                        watch.prefix,
                    )
                    break

                def cb(payload: Payload, topic: str = topic, watch: _PatternWatch = watch) -> None:
                    if not watch.closed:
                        watch.callback(topic, payload)

                watch.children[topic] = self.subscribe(
                    topic, watch.kind, cb, latched=watch.latched, depth=1 if watch.latched else 10
                )

    async def _watch_graph(self) -> None:
        while True:
            await asyncio.sleep(_GRAPH_POLL_S)
            self._scan_graph()

    # ------------------------------------------------------------------ long calls
    def serve(self, endpoint: str, handler: Handler, *, instance: str = "") -> Subscription:
        """Serve ``ExecuteTool`` goals on ``endpoint`` (see :meth:`Connector.serve` and
        :func:`~loopact.nodes.ros2.actions.serve_execute_tool`)."""
        node = self._require_node()
        assert self._loop is not None
        return serve_execute_tool(
            node,
            endpoint,
            handler,
            loop=self._loop,
            group=self._group,
            running=self._running,
            destroy=self._destroy_action,
        )

    def action_client(self, action_type: Any, name: str) -> Any:
        """A raw rclpy action client on this node (ROS-specific users: the Nav2 backend,
        issue 40); its callbacks run on the executor thread: hand results over with
        :meth:`ros_result` and :meth:`post`. Destroy it with :meth:`destroy_action`."""
        ActionClient = ros_types("rclpy.action", "ActionClient")
        return ActionClient(self._require_node(), action_type, name, callback_group=self._group)

    def action_server(
        self,
        action_type: Any,
        name: str,
        execute: Callable[[Any], Any],
        cancel: Callable[[Any], Any] | None = None,
    ) -> Any:
        """A raw rclpy action server on this node (ROS-specific servers: the simulated arm's
        controllers, issue 43). ``execute(goal_handle)`` runs on an executor thread and may
        block until the goal ends; every goal is accepted, every cancel request too unless
        ``cancel`` says otherwise. Destroy it with :meth:`destroy_action`."""
        ActionServer, CancelResponse = ros_types("rclpy.action", "ActionServer", "CancelResponse")
        return ActionServer(
            self._require_node(),
            action_type,
            name,
            execute_callback=execute,
            cancel_callback=cancel or (lambda _goal: CancelResponse.ACCEPT),
            callback_group=self._group,
        )

    def destroy_action(self, entity: Any) -> None:
        """Destroy an action client or server between two executor waits."""
        self._destroy_action(entity)

    async def ros_result(self, rclpy_future: Any) -> Any:
        """Await an rclpy future (a goal, a result, a cancel) from asyncio."""
        return await self._await(rclpy_future)

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the connector's asyncio loop, from any thread."""
        self._post(fn, *args)

    def forget_endpoint(self, endpoint: str) -> None:
        """Destroy the cached action client; the next call creates a fresh one (C2)."""
        client = self._clients.pop(endpoint, None)
        if client is not None:
            self._destroy_action(client)

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
        """Send an ``ExecuteTool`` goal (see :meth:`Connector.start_call`; ROS 2 actions cannot
        address one of two servers, so ``instance`` is unused: docs/ros2.md, Limits)."""
        node = self._require_node()
        ExecuteTool = ros_types("loopact_interfaces.action", "ExecuteTool")
        ActionClient = ros_types("rclpy.action", "ActionClient")

        client = self._clients.get(endpoint)
        if client is None:
            client = ActionClient(node, ExecuteTool, endpoint, callback_group=self._group)
            self._clients[endpoint] = client
        deadline = time.monotonic() + connect_timeout_s
        while not client.server_is_ready():
            if time.monotonic() > deadline:
                raise NodeError(
                    f"no node serves {endpoint} (no action server within {connect_timeout_s:g} s)"
                )
            await asyncio.sleep(0.02)
        goal = ExecuteTool.Goal(input_json=input_json, timeout_sec=float(timeout_s))

        def on_feedback(msg: Any) -> None:
            if progress is not None:
                self._post(progress, str(msg.feedback.progress))

        try:
            goal_handle = await send_goal(
                self._await, client, goal, connect_timeout_s + 3.0, on_feedback
            )
        except asyncio.TimeoutError:
            raise NodeError(f"{endpoint}: the node did not accept the call in time") from None
        if not goal_handle.accepted:
            raise NodeError(f"{endpoint}: the node rejected the call")
        return RosCall(self._await, endpoint, goal_handle)
