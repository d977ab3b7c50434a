"""An input node: a sensor that publishes data for the agent (SPEC C3, C4, X4).

Written once, it runs in-process or as a ROS 2 node::

    cam = InputNode("front_camera", connector, mode="latest", kind="image")
    await cam.start()                 # heartbeat every 0.5 s
    await cam.publish(rgb_array)      # HxWx3 uint8 -> sensor_msgs/Image rgb8

For ``loopact node FILE.py``, decorate a function with :func:`input_source`: a plain function
is polled every ``period_s``; an async generator publishes each value it yields.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopact._compat import wait_within
from loopact.errors import ProtocolError, ToolError
from loopact.nodes.connector import Connector, ImageData
from loopact.nodes.protocol import (
    DEFAULT_AGENT_NAME,
    HEARTBEAT_PERIOD_S,
    InputInfo,
    InputKind,
    InputMode,
    check_agent_name,
    check_name,
    input_data_topic,
    input_info_topic,
)
from loopact.tools.blocking import BlockingExecutor

logger = logging.getLogger(__name__)

MAX_HELD = 200
"""Accumulate-mode messages an input node holds while no agent listens (oldest dropped)."""


class InputNode:
    """Publish one input (sensor) with its heartbeat.

    Args:
        name: Input name (topic segment).
        connector: The transport.
        agent: The agent name (topic prefix).
        description: What it is, for the model.
        mode: ``accumulate`` or ``latest`` (SPEC C3).
        kind: ``text``, ``image`` or ``json``.
        inject: Inject latest-mode data into snapshots too.
        heartbeat_period_s: Seconds between heartbeats.

    Raises:
        ProtocolError: Bad name, mode or kind.
    """

    def __init__(
        self,
        name: str,
        connector: Connector,
        agent: str = DEFAULT_AGENT_NAME,
        description: str = "",
        mode: InputMode = "latest",
        kind: InputKind = "text",
        inject: bool = False,
        heartbeat_period_s: float = HEARTBEAT_PERIOD_S,
    ) -> None:
        check_name(name, "input name")
        check_agent_name(agent)
        if mode not in ("accumulate", "latest"):
            raise ProtocolError(f"mode {mode!r} must be accumulate or latest")
        if kind not in ("text", "image", "json"):
            raise ProtocolError(f"kind {kind!r} must be text, image or json")
        from loopact.nodes.output import new_instance_id

        self.info = InputInfo(name, description, mode, kind, inject, new_instance_id())
        self.connector = connector
        self.agent = agent
        self.period_s = heartbeat_period_s
        self.published = 0
        self.held_dropped = 0
        self._held: deque[str | ImageData] = deque(maxlen=MAX_HELD)
        self._heartbeat: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """The input name."""
        return self.info.name

    @property
    def data_topic(self) -> str:
        """``/<agent>/input/<name>``."""
        return input_data_topic(self.agent, self.info.name)

    async def start(self) -> None:
        """Start the heartbeat (and announce the data topic)."""
        await self.connector.start()
        self.connector.advertise(
            self.data_topic, "image" if self.info.kind == "image" else "string"
        )
        self._heartbeat = asyncio.get_running_loop().create_task(
            self._beat(), name=f"loopact-input-heartbeat-{self.info.name}"
        )

    async def stop(self) -> None:
        """Stop the heartbeat."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None

    async def _beat(self) -> None:
        topic = input_info_topic(self.agent, self.info.name)
        text = self.info.to_json()
        next_beat = 0.0
        while True:
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + self.period_s
                try:
                    await self.connector.publish(topic, text, latched=True)
                except Exception as exc:
                    logger.warning("heartbeat of input %s failed: %s", self.info.name, exc)
            await self._flush_held()
            await asyncio.sleep(0.05 if self._held else self.period_s)

    async def _flush_held(self) -> None:
        """Send accumulate-mode data held while nobody listened, once someone does."""
        if self._held and self.connector.subscriber_count(self.data_topic) != 0:
            while self._held:
                await self.connector.publish(self.data_topic, self._held.popleft())
                self.published += 1

    async def publish(self, value: Any, stamp_s: float | None = None) -> None:
        """Publish one reading.

        Args:
            value: ``str`` for text; anything JSON-able for json; for image an ``HxWx3`` uint8
                RGB array or an :class:`ImageData`.
            stamp_s: Capture time for images (default: now, Unix seconds).

        Raises:
            ProtocolError: The value does not fit the input's kind.
        """
        kind = self.info.kind
        if kind == "image":
            if isinstance(value, ImageData):
                payload: str | ImageData = value
            else:
                arr = np.asarray(value)
                if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
                    raise ProtocolError(
                        f"input {self.info.name}: an image must be an HxWx3 uint8 RGB array, "
                        f"got dtype {arr.dtype} shape {arr.shape}"
                    )
                payload = ImageData(arr, time.time() if stamp_s is None else stamp_s)
        elif kind == "json":
            payload = json.dumps(value, ensure_ascii=False, default=str)
        else:
            if not isinstance(value, str):
                raise ProtocolError(f"input {self.info.name}: text must be a str")
            payload = value
        if self.info.mode == "accumulate" and (
            self._held or self.connector.subscriber_count(self.data_topic) == 0
        ):
            # Nobody listens yet (the agent has not discovered this input): hold the data,
            # bounded, so that accumulate-mode messages are not lost at start-up (SPEC C3).
            if len(self._held) == self._held.maxlen:
                self.held_dropped += 1
            self._held.append(payload)
            return
        await self.connector.publish(self.data_topic, payload)
        self.published += 1


@dataclass
class InputSource:
    """A user function that produces input data (for ``loopact node FILE.py``).

    Attributes:
        fn: A plain or async function returning one value (polled every ``period_s``; None
            means nothing new), or an async generator yielding values.
        name: Input name.
        description: What it is.
        mode: ``accumulate`` or ``latest``.
        kind: ``text``, ``image`` or ``json``.
        inject: Inject latest-mode data into snapshots.
        period_s: Polling period in seconds for plain functions.
        timeout_s: Longest wait for one poll of the function, in seconds; a poll that takes
            longer is abandoned (a plain function's thread runs on as a daemon, so it neither
            holds a worker of the default pool nor blocks exit: SPEC A2, issue 22 item 8) and
            the next poll follows after ``period_s``.
    """

    fn: Callable[[], Any]
    name: str
    description: str = ""
    mode: InputMode = "latest"
    kind: InputKind = "text"
    inject: bool = False
    period_s: float = 1.0
    timeout_s: float = 30.0
    _blocking: BlockingExecutor = field(
        default_factory=lambda: BlockingExecutor(max_workers=1, max_stuck=4, name="loopact-input"),
        repr=False,
    )

    async def run(self, node: InputNode) -> None:
        """Publish the function's values on ``node`` until cancelled (errors are logged)."""
        if inspect.isasyncgenfunction(self.fn):
            gen: AsyncIterator[Any] = self.fn()
            async for value in gen:
                await self._publish(node, value)
            return
        while True:
            await self._publish(node, await self.poll())
            await asyncio.sleep(self.period_s)

    async def poll(self) -> Any:
        """One value of the function, or None when it failed or took over ``timeout_s``.

        A plain function runs on a daemon thread of its own (:class:`BlockingExecutor`), never
        on asyncio's default executor: a poll stuck in a hung device read would hold a worker
        of that pool for good and keep ``loopact node`` from exiting on Ctrl-C.
        """
        try:
            if inspect.iscoroutinefunction(self.fn):
                return await wait_within(self.fn(), self.timeout_s)
            return await wait_within(self._blocking.run(self.fn), self.timeout_s)
        except asyncio.TimeoutError:
            logger.warning(
                "input %s: the source function did not return within %g s; abandoned it",
                self.name,
                self.timeout_s,
            )
        except ToolError as exc:  # too many earlier polls are still stuck
            logger.warning("input %s: %s", self.name, exc)
        except Exception as exc:
            logger.warning("input %s: the source function failed: %r", self.name, exc)
        return None

    async def _publish(self, node: InputNode, value: Any) -> None:
        if value is None:
            return
        try:
            await node.publish(value)
        except ProtocolError as exc:
            logger.warning("%s", exc)


def input_source(
    *,
    name: str | None = None,
    description: str | None = None,
    mode: InputMode = "latest",
    kind: InputKind = "text",
    inject: bool = False,
    period_s: float = 1.0,
    timeout_s: float = 30.0,
) -> Callable[[Callable[[], Any]], InputSource]:
    """Declare an input for ``loopact node FILE.py`` (SPEC C3).

    Args:
        name: Input name (default: the function name).
        description: Default: the docstring's first line.
        mode: ``accumulate`` or ``latest``.
        kind: ``text``, ``image`` or ``json``.
        inject: Inject latest-mode data into snapshots.
        period_s: Polling period in seconds (plain functions).
        timeout_s: Longest wait for one poll, in seconds; a poll that takes longer is
            abandoned and logged (:attr:`InputSource.timeout_s`).
    """

    def wrap(fn: Callable[[], Any]) -> InputSource:
        doc = (inspect.getdoc(fn) or "").strip().splitlines()
        return InputSource(
            fn=fn,
            name=check_name(name or fn.__name__, "input name"),
            description=description if description is not None else (doc[0] if doc else ""),
            mode=mode,
            kind=kind,
            inject=inject,
            period_s=period_s,
            timeout_s=timeout_s,
        )

    return wrap
