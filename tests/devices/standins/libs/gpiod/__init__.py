"""Stand-in of ``gpiod``, libgpiod 2's Python bindings (issue 46 item 1), over the simulated
kernel of :mod:`tests.devices.standins.kernel`.

The public API loopact may use, with the real one's names, signatures and behaviour
(bindings/python/gpiod: ``request_lines``, ``LineSettings``, ``LineRequest``, ``EdgeEvent``,
``RequestReleasedError``, ``gpiod.line``): a request holds its lines until ``release()`` (there
is no ``close()``); ``get_value`` returns a :class:`~gpiod.line.Value`; ``wait_edge_events``
takes a ``timedelta`` or seconds; ``reconfigure_lines`` resets lines it is given no settings
for to the defaults, as the real one does. Failures are the kernel's ``OSError``s.
"""

from __future__ import annotations

import dataclasses
import errno
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from tests.devices.standins.kernel import KERNEL, Chip, Line, monotonic_ns, os_error

from . import line
from .line import Bias, Clock, Direction, Drive, Edge, Value

__all__ = [
    "ChipClosedError",
    "EdgeEvent",
    "LineRequest",
    "LineSettings",
    "RequestReleasedError",
    "api_version",
    "line",
    "request_lines",
]

api_version = "2.2.0-loopact-standin"


class ChipClosedError(Exception):
    """Error raised when an already closed chip is used."""


class RequestReleasedError(Exception):
    """Error raised when a released request is used."""

    def __init__(self) -> None:
        super().__init__("GPIO request has been released")


@dataclass(repr=False)
class LineSettings:
    """Stores a set of line properties."""

    direction: Direction = Direction.AS_IS
    edge_detection: Edge = Edge.NONE
    bias: Bias = Bias.AS_IS
    drive: Drive = Drive.PUSH_PULL
    active_low: bool = False
    debounce_period: timedelta = timedelta()
    event_clock: Clock = Clock.MONOTONIC
    output_value: Value = Value.INACTIVE


@dataclass(frozen=True, init=False, repr=False)
class EdgeEvent:
    """Immutable object containing data about a single edge event."""

    class Type(Enum):
        RISING_EDGE = 1
        FALLING_EDGE = 2

    event_type: Type
    timestamp_ns: int
    line_offset: int
    global_seqno: int
    line_seqno: int

    def __init__(
        self,
        event_type: int,
        timestamp_ns: int,
        line_offset: int,
        global_seqno: int,
        line_seqno: int,
    ) -> None:
        object.__setattr__(self, "event_type", EdgeEvent.Type(event_type))
        object.__setattr__(self, "timestamp_ns", timestamp_ns)
        object.__setattr__(self, "line_offset", line_offset)
        object.__setattr__(self, "global_seqno", global_seqno)
        object.__setattr__(self, "line_seqno", line_seqno)


_BIAS = {
    Bias.AS_IS: "as-is",
    Bias.DISABLED: "disabled",
    Bias.PULL_UP: "pull-up",
    Bias.PULL_DOWN: "pull-down",
}
_EDGE = {Edge.NONE: "none", Edge.RISING: "rising", Edge.FALLING: "falling", Edge.BOTH: "both"}


def _validate(settings: LineSettings) -> None:
    """gpio_v2_line_flags_validate: the combinations the kernel refuses (``EINVAL``)."""
    if settings.edge_detection != Edge.NONE and settings.direction != Direction.INPUT:
        raise os_error(errno.EINVAL)  # edge detection requires explicit input
    if settings.bias not in (Bias.AS_IS,) and settings.direction == Direction.AS_IS:
        raise os_error(errno.EINVAL)  # bias requires explicit direction
    if settings.bias == Bias.UNKNOWN:
        raise os_error(errno.EINVAL)
    if settings.drive != Drive.PUSH_PULL and settings.direction != Direction.OUTPUT:
        raise os_error(errno.EINVAL)  # drive requires explicit output direction


def _apply(kline: Line, settings: LineSettings) -> None:
    if settings.direction == Direction.OUTPUT:
        kline.direction = "output"
        kline.out_value = 1 if settings.output_value == Value.ACTIVE else 0
    elif settings.direction == Direction.INPUT:
        kline.direction = "input"
    if settings.bias != Bias.AS_IS:
        kline.bias = _BIAS[settings.bias]
    kline.edge = _EDGE[settings.edge_detection]


class LineRequest:
    """Stores the context of a set of requested GPIO lines."""

    def __init__(self, chip: Chip, offsets: list[int], consumer: str, buffer_size: int) -> None:
        self._chip: Chip | None = chip
        self._offsets = offsets
        self._events: deque[EdgeEvent] = deque(maxlen=buffer_size)
        self._line_seqno: dict[int, int] = {}
        self._consumer = consumer

    def __bool__(self) -> bool:
        return self._chip is not None

    def __enter__(self) -> LineRequest:
        self._check_released()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _check_released(self) -> Chip:
        if self._chip is None:
            raise RequestReleasedError()
        return self._chip

    def kernel_event(self, kline: Line, kind: str, seqno: int) -> None:
        """Called by the simulated kernel, holding the chip's condition."""
        n = self._line_seqno.get(kline.offset, 0) + 1
        self._line_seqno[kline.offset] = n
        etype = 1 if kind == "rising" else 2
        self._events.append(EdgeEvent(etype, monotonic_ns(), kline.offset, seqno, n))

    def release(self) -> None:
        """Release this request and free all associated resources."""
        chip = self._check_released()
        with chip.cond:
            for offset in self._offsets:
                kline = chip.line(offset)
                kline.owner = None
                kline.consumer = ""
                kline.edge = "none"
            chip.cond.notify_all()
        self._chip = None

    def get_value(self, line: int | str) -> Value:
        """Get a single GPIO line value."""
        return self.get_values([line])[0]

    def get_values(self, lines: Iterable[int | str] | None = None) -> list[Value]:
        """Get values of a set of GPIO lines."""
        chip = self._check_released()
        wanted = list(lines or self._offsets)
        with chip.cond:
            out = []
            for offset in wanted:
                if not isinstance(offset, int) or offset not in self._offsets:
                    raise os_error(errno.EINVAL)
                out.append(Value.ACTIVE if chip.line(offset).level() else Value.INACTIVE)
            return out

    def set_value(self, line: int | str, value: Value) -> None:
        """Set the value of a single GPIO line."""
        self.set_values({line: value})

    def set_values(self, values: dict[int | str, Value]) -> None:
        """Set the values of a subset of GPIO lines (``EPERM`` for a line not an output)."""
        chip = self._check_released()
        with chip.cond:
            for offset, value in values.items():
                if not isinstance(offset, int) or offset not in self._offsets:
                    raise os_error(errno.EINVAL)
                kline = chip.line(offset)
                if kline.direction != "output":
                    raise os_error(errno.EPERM)
                kline.out_value = 1 if value == Value.ACTIVE else 0

    def reconfigure_lines(self, config: dict[Any, LineSettings | None]) -> None:
        """Reconfigure requested lines (those given no settings get the defaults)."""
        chip = self._check_released()
        given: dict[int, LineSettings | None] = {}
        for lines, settings in config.items():
            for offset in [lines] if isinstance(lines, (int, str)) else lines:
                given[offset] = settings
        resolved = {o: given.get(o) or LineSettings() for o in self._offsets}
        for settings in resolved.values():
            _validate(settings)
        with chip.cond:
            for offset, settings in resolved.items():
                _apply(chip.line(offset), settings)

    def wait_edge_events(self, timeout: timedelta | float | None = None) -> bool:
        """Wait for edge events on any of the requested lines; False on timeout."""
        chip = self._check_released()
        seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        with chip.cond:
            return chip.cond.wait_for(
                lambda: bool(self._events) or self._chip is None, timeout=seconds
            ) and bool(self._events)

    def read_edge_events(self, max_events: int | None = None) -> list[EdgeEvent]:
        """Read a number of edge events from a line request (blocks until there is one)."""
        chip = self._check_released()
        with chip.cond:
            chip.cond.wait_for(lambda: bool(self._events))
            out: list[EdgeEvent] = []
            while self._events and (max_events is None or len(out) < max_events):
                out.append(self._events.popleft())
            return out

    @property
    def offsets(self) -> list[int]:
        self._check_released()
        return list(self._offsets)

    @property
    def lines(self) -> list[int | str]:
        self._check_released()
        return list(self._offsets)

    @property
    def num_lines(self) -> int:
        self._check_released()
        return len(self._offsets)

    @property
    def chip_name(self) -> str:
        return self._check_released().path.rsplit("/", 1)[-1]


def request_lines(
    path: str,
    config: dict[Any, LineSettings | None],
    consumer: str | None = None,
    event_buffer_size: int | None = None,
    output_values: dict[int | str, Value] | None = None,
) -> LineRequest:
    """Open a GPIO chip pointed to by 'path', request lines according to the configuration
    arguments, close the chip and return the request object."""
    chip = KERNEL.chip(path)
    wanted: dict[int, LineSettings] = {}
    for lines, settings in config.items():
        for offset in [lines] if isinstance(lines, (int, str)) else lines:
            if not isinstance(offset, int):
                raise ValueError(f"unknown line name: {offset}")
            wanted[offset] = settings or LineSettings()
    for settings in wanted.values():
        _validate(settings)
    with chip.cond:
        for offset in wanted:
            if chip.line(offset).owner is not None:
                raise os_error(errno.EBUSY)
        req = LineRequest(chip, list(wanted), consumer or "?", event_buffer_size or 64)
        for offset, settings in wanted.items():
            kline = chip.line(offset)
            if output_values and offset in output_values:
                settings = dataclasses.replace(settings, output_value=output_values[offset])
            _apply(kline, settings)
            kline.owner = req
            kline.consumer = consumer or "?"
    return req
