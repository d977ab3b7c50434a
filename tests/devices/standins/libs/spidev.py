"""Stand-in of ``spidev`` (py-spidev, issue 46 item 1) over the simulated kernel.

The real C module's API loopact may use: ``SpiDev([bus], [client])``, ``open(bus, device)``
of ``/dev/spidev<bus>.<device>`` (an ``OSError`` when it is missing), the ``mode``,
``bits_per_word`` and ``max_speed_hz`` attributes (read from the device at open),
``xfer2(values, speed_hz=0, delay_usecs=0, bits_per_word=0)`` (chip select held for the whole
transfer; an empty list is a ``TypeError``, more than 4096 values an ``OverflowError``; a zero
speed means ``max_speed_hz``), ``close()``.
"""

from __future__ import annotations

import errno
from typing import Any

from tests.devices.standins.kernel import KERNEL, SpiDevice

SPIDEV_MAXPATH = 4096
_LIST0 = "Empty argument list."
_LISTMAX = "Argument list size exceeds %d bytes."


class SpiDev:
    """An SPI device node."""

    def __init__(self, bus: int | None = None, client: int | None = None) -> None:
        self.mode = 0
        self.bits_per_word = 0
        self.max_speed_hz = 0
        self._dev: SpiDevice | None = None
        if bus is not None and client is not None:
            self.open(bus, client)

    def open(self, bus: int, device: int) -> None:
        """Connect to ``/dev/spidev<bus>.<device>``."""
        path = f"/dev/spidev{bus}.{device}"
        dev = KERNEL.spi.get(path)
        if dev is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        self._dev = dev
        self.mode = 0
        self.bits_per_word = 8
        self.max_speed_hz = dev.max_speed_hz

    def close(self) -> None:
        """Disconnect from the device."""
        self._dev = None

    def xfer2(
        self,
        values: Any,
        speed_hz: int = 0,
        delay_usecs: int = 0,
        bits_per_word: int = 0,
    ) -> Any:
        """Perform an SPI transaction; chip select is held active between blocks."""
        seq = list(values)
        if not seq:
            raise TypeError(_LIST0)
        if len(seq) > SPIDEV_MAXPATH:
            raise OverflowError(_LISTMAX % SPIDEV_MAXPATH)
        if self._dev is None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        sent = bytes(int(v) & 0xFF for v in seq)
        self._dev.transfers.append((sent, speed_hz or self.max_speed_hz))
        got = list(self._dev.respond(sent))
        return tuple(got) if isinstance(values, tuple) else got
