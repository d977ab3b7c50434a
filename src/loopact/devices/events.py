"""Board events as an input node (SPEC C3, C9; issue 19): GPIO edges and sensor thresholds.

:class:`BoardEvents` publishes one JSON message per event on the accumulate-mode input
``board_events`` (``/<agent>/input/board_events``), so the agent's
:class:`~loopact.nodes.inputs.InputHub` injects it and wakes a continuous-mode agent
(``on_new=agent.wake``, issue 14's mechanism). Events::

    {"device": "button", "event": "rising", "level": 1, "ts": 1764510000.1}
    {"device": "temperature", "event": "above", "value": 31.2, "unit": "degC",
     "threshold": 30.0, "ts": ...}

Edges come from the driver (a thread) and are handed to the event loop thread-safely;
thresholds are polled every ``poll_s`` and reported once per crossing (with 0.5 units of
hysteresis), never once per poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from loopact.devices.service import Board
from loopact.errors import DriverError, ToolError
from loopact.nodes.connector import Connector
from loopact.nodes.input import InputNode

log = logging.getLogger(__name__)

INPUT_NAME = "board_events"
HYSTERESIS = 0.5


class BoardEvents:
    """Publish a board's GPIO edges and sensor threshold crossings as input events.

    Args:
        board: The board.
        connector: The transport the agent's input hub listens on.
        agent: The agent name (topic prefix).
        poll_s: Seconds between threshold checks.
    """

    def __init__(self, board: Board, connector: Connector, agent: str, poll_s: float = 1.0) -> None:
        self.board = board
        self.node = InputNode(
            INPUT_NAME,
            connector,
            agent,
            f"events of board {board.spec.name}: GPIO edges and sensor thresholds",
            mode="accumulate",
            kind="json",
        )
        self.poll_s = poll_s
        self._tasks: set[asyncio.Task[None]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._state: dict[str, str] = {}
        self._stopped = False
        self.unwatched: dict[str, str] = {}
        """Input devices whose edges the driver could not watch, with the reason."""

    async def start(self) -> None:
        """Start the input node, edge watches and the threshold poller.

        An input the driver cannot watch (a missing library or GPIO chip) is logged and kept
        in :attr:`unwatched`; the other devices and the run go on.
        """
        await self.node.start()
        loop = asyncio.get_running_loop()
        spec_name = self.board.spec.name
        for name, dev in self.board.spec.devices.items():
            if dev.device_class == "gpio" and dev.direction == "in" and dev.edge != "none":
                assert dev.pin is not None

                def on_edge(pin: int, kind: str, level: int, name: str = name) -> None:
                    event = {"device": name, "event": kind, "level": level, "ts": time.time()}
                    loop.call_soon_threadsafe(self._emit, event)

                try:
                    self.board.driver.watch_edges(dev.pin, dev.edge, on_edge)
                except (DriverError, OSError) as exc:
                    # one device the driver cannot watch (no gpiod, no /dev/gpiochip0) costs
                    # its edge events, never the board or the run (issue 19 bad input)
                    self.unwatched[name] = str(exc)
                    log.warning("board %s: no edge events from %s: %s", spec_name, name, exc)
        if any(
            d.device_class == "sensor"
            and (d.threshold_above is not None or d.threshold_below is not None)
            for d in self.board.spec.devices.values()
        ):
            self._poller = loop.create_task(self._poll(), name="loopact-board-thresholds")

    def _emit(self, event: dict[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(self._publish(event))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _publish(self, event: dict[str, Any]) -> None:
        try:
            await self.node.publish(event)
        except Exception as exc:  # a transport failure must not stop the board
            log.warning("board event %s not published: %s", event.get("device"), exc)

    async def _poll(self) -> None:
        while not self._stopped:  # also ends a poller whose cancellation a callee swallowed
            for name, dev in self.board.spec.devices.items():
                if dev.device_class != "sensor":
                    continue
                above, below = dev.threshold_above, dev.threshold_below
                if above is None and below is None:
                    continue
                try:
                    value = float((await self.board.read(name))["value"])
                except ToolError as exc:
                    log.debug("threshold poll of %s failed: %s", name, exc)
                    continue
                state = self._state.get(name, "normal")
                new = state
                if above is not None and value > above:
                    new = "above"
                elif below is not None and value < below:
                    new = "below"
                elif (above is None or value < above - HYSTERESIS) and (
                    below is None or value > below + HYSTERESIS
                ):
                    new = "normal"
                if new != state:
                    self._state[name] = new
                    limit = above if new == "above" else below
                    await self._publish(
                        {
                            "device": name,
                            "event": new,
                            "value": value,
                            "unit": dev.unit,
                            "threshold": limit,
                            "ts": time.time(),
                        }
                    )
            await asyncio.sleep(self.poll_s)

    async def stop(self) -> None:
        """Stop polling and the input node."""
        self._stopped = True
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        for task in list(self._tasks):
            task.cancel()
        await self.node.stop()
