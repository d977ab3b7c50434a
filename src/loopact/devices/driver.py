"""The driver interface under the device layer (SPEC C9, issue 19).

A driver does raw hardware access and nothing else: no names, no ranges, no permissions (the
:class:`~loopact.devices.service.Board` above it checks those). Every method is blocking and
is called in a worker thread with a timeout, so a bus that hangs cannot stall the agent.
Units: frequencies in hertz, duty in percent (0-100), raw ADC/DAC counts, bytes as ints.
Drivers: :class:`~loopact.devices.sim.SimDriver` (the simulated board, default) and
:class:`~loopact.devices.linux.LinuxDriver` (gpiod, sysfs PWM, IIO ADC, smbus2, spidev).
"""

from __future__ import annotations

import abc
from collections.abc import Callable

from loopact.errors import DriverError as DriverError  # the error drivers raise

EdgeCallback = Callable[[int, str, int], None]
"""``(pin, "rising" | "falling", new_level)``; called from a driver thread."""


class Driver(abc.ABC):
    """Raw access to a board's pins and buses."""

    kind: str = "abstract"

    @abc.abstractmethod
    def gpio_read(self, pin: int) -> int:
        """The level of ``pin`` (0 or 1)."""

    @abc.abstractmethod
    def gpio_write(self, pin: int, level: int) -> None:
        """Drive ``pin`` to ``level`` (0 or 1)."""

    @abc.abstractmethod
    def pwm_set(self, chip: int, channel: int, frequency_hz: float, duty_pct: float) -> None:
        """Set and enable a PWM output (``duty_pct`` 0 = off)."""

    @abc.abstractmethod
    def pwm_get(self, chip: int, channel: int) -> tuple[float, float]:
        """``(frequency_hz, duty_pct)`` of a PWM output."""

    @abc.abstractmethod
    def adc_read(self, channel: int) -> int:
        """The raw count of an ADC channel."""

    @abc.abstractmethod
    def dac_write(self, channel: int, raw: int) -> None:
        """Set a DAC channel to a raw count."""

    @abc.abstractmethod
    def i2c_read(self, bus: int, address: int, register: int, length: int) -> bytes:
        """Read ``length`` bytes from ``register`` of the device at ``address``."""

    @abc.abstractmethod
    def i2c_write(self, bus: int, address: int, register: int, data: bytes) -> None:
        """Write ``data`` to ``register`` of the device at ``address``."""

    @abc.abstractmethod
    def spi_transfer(self, bus: int, cs: int, data: bytes, speed_hz: int) -> bytes:
        """A full-duplex transfer: send ``data``, return as many bytes received."""

    def watch_edges(self, pin: int, edge: str, callback: EdgeCallback) -> None:  # noqa: B027
        """Call ``callback`` on edges of an input ``pin`` (``rising``, ``falling``, ``both``)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release lines, buses and threads."""
