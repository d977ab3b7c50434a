"""A simulated kernel under the library stand-ins (issue 46 item 1): GPIO chips (uAPI v2
rules), I2C buses (i2c-dev, SMBus block transfers) and SPI devices (spidev).

The rules are the kernel's (drivers/gpio/gpiolib-cdev.c, drivers/i2c/i2c-dev.c,
drivers/spi/spidev.c): a line is requested by one request at a time (``EBUSY``); edge
detection needs an input (``EINVAL``); a bias needs an explicit direction (``EINVAL``); only
an output can be set (``EPERM``); an address no device acknowledges is ``EREMOTEIO``; a node
that does not exist is ``ENOENT``. Tests drive what the outside world does (a button pressed,
a sensor's temperature) and read what the board did (a line's direction, bias and level).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def os_error(code: int, path: str | None = None) -> OSError:
    """An ``OSError`` as a failed system call raises it."""
    if path is None:
        return OSError(code, os.strerror(code))
    return OSError(code, os.strerror(code), path)


@dataclass
class Line:
    """One GPIO line as the kernel sees it."""

    offset: int
    direction: str = "input"  # the hardware's direction: input or output
    bias: str = "as-is"
    edge: str = "none"
    out_value: int = 0
    external: int | None = None  # what the outside world drives; None: floating
    owner: object | None = None  # the request holding it; "other" for another program
    consumer: str = ""

    def level(self) -> int:
        """The physical level: the driven value of an output, else the input level."""
        if self.direction == "output":
            return self.out_value
        if self.external is not None:
            return self.external
        return 1 if self.bias == "pull-up" else 0


@dataclass
class Chip:
    """A GPIO chip with ``num_lines`` lines."""

    path: str
    num_lines: int = 32
    lines: dict[int, Line] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)
    seqno: int = 0

    def line(self, offset: int) -> Line:
        """Line ``offset`` (``EINVAL`` when the chip has no such line)."""
        if not 0 <= offset < self.num_lines:
            raise os_error(errno.EINVAL)
        return self.lines.setdefault(offset, Line(offset))

    def drive(self, offset: int, level: int | None) -> None:
        """The outside world drives line ``offset`` to ``level`` (None: lets it float).

        An input with edge detection gets an edge event for the change it asked for."""
        with self.cond:
            line = self.line(offset)
            before = line.level()
            line.external = level
            after = line.level()
            if line.direction != "input" or line.owner is None or before == after:
                return
            kind = "rising" if after else "falling"
            if line.edge in ("both", kind):
                self.seqno += 1
                line.owner.kernel_event(line, kind, self.seqno)  # type: ignore[attr-defined]
                self.cond.notify_all()


@dataclass
class I2cDevice:
    """A device on an I2C bus: 256 byte registers; ``on_write`` sees every block write."""

    registers: bytearray = field(default_factory=lambda: bytearray(256))
    writes: list[tuple[int, bytes]] = field(default_factory=list)

    def set_temperature(self, celsius: float) -> None:
        """A TMP102: register 0 holds the temperature, 12 bits left-justified, 1/16 degC."""
        counts = round(celsius * 16) & 0xFFF
        self.registers[0] = counts >> 4
        self.registers[1] = (counts & 0xF) << 4


@dataclass
class SpiDevice:
    """An SPI device node; by default MISO echoes MOSI (a loopback)."""

    max_speed_hz: int = 500_000
    respond: Callable[[bytes], bytes] = bytes
    transfers: list[tuple[bytes, int]] = field(default_factory=list)  # (sent, speed used)


class Kernel:
    """Every simulated device node, by path."""

    def __init__(self) -> None:
        self.chips: dict[str, Chip] = {}
        self.i2c: dict[str, dict[int, I2cDevice]] = {}
        self.spi: dict[str, SpiDevice] = {}
        self.lock = threading.Lock()

    def add_chip(self, path: str = "/dev/gpiochip0", num_lines: int = 32) -> Chip:
        chip = Chip(path, num_lines)
        self.chips[path] = chip
        return chip

    def add_i2c_bus(self, bus: int) -> dict[int, I2cDevice]:
        return self.i2c.setdefault(f"/dev/i2c-{bus}", {})

    def add_spi(self, bus: int, cs: int, **kwargs: Any) -> SpiDevice:
        dev = SpiDevice(**kwargs)
        self.spi[f"/dev/spidev{bus}.{cs}"] = dev
        return dev

    def chip(self, path: str) -> Chip:
        try:
            return self.chips[path]
        except KeyError:
            raise os_error(errno.ENOENT, path) from None


KERNEL = Kernel()
"""The kernel the stand-ins use; tests replace its contents (the ``kernel`` fixture)."""


def monotonic_ns() -> int:
    return time.monotonic_ns()
