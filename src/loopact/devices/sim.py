"""The simulated board (SPEC C9, issue 19): devices that answer like real ones.

Built from a :class:`~loopact.devices.board.BoardSpec`: GPIO lines hold their levels, an LED
is a GPIO line, a PWM output keeps frequency and duty, the ADC reads a potentiometer
(``simulation.knob``, 0-1 of full scale), the DAC keeps its count, a TMP102 on I2C answers
register 0 (temperature, 12 bits, 0.0625 degC per count, big-endian, left-justified) and
register 1 (configuration) like the real chip, other addresses NACK (an ``OSError`` with
errno 121 on Linux, a :class:`DriverError` here), and SPI is a loopback. Tests drive the
world through :meth:`SimDriver.press`, :meth:`SimDriver.release`, :meth:`SimDriver.set_temperature`
and :meth:`SimDriver.set_knob`; ``simulation.delay_s`` (device name -> seconds) makes a
device answer slowly, to test timeouts.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from loopact.devices.board import BoardSpec
from loopact.devices.driver import Driver, DriverError, EdgeCallback

TMP102_LSB_C = 0.0625


class SimDriver(Driver):
    """An in-memory board.

    Args:
        spec: The board description (its ``simulation`` section sets initial values).
    """

    kind = "sim"

    def __init__(self, spec: BoardSpec) -> None:
        sim: dict[str, Any] = dict(spec.simulation)
        self.spec = spec
        self.levels: dict[int, int] = dict.fromkeys(spec.gpio_pins, 0)
        self.pwm: dict[tuple[int, int], tuple[float, float]] = {}
        self.dac: dict[int, int] = {}
        self.temperature_c = float(sim.get("temperature_c", 24.5))
        self.knob = float(sim.get("knob", 0.5))
        self.delay_s: dict[str, float] = {
            str(k): float(v) for k, v in (sim.get("delay_s") or {}).items()
        }
        self.tmp102: dict[tuple[int, int], dict[int, bytes]] = {}
        for dev in spec.devices.values():
            if dev.device_class == "sensor" and dev.address is not None:
                self.tmp102[(dev.bus, dev.address)] = {1: b"\x60\xa0"}
        self._watchers: dict[int, list[tuple[str, EdgeCallback]]] = {}
        self._lock = threading.Lock()
        self.writes: list[tuple[str, Any]] = []  # what was written, for graders

    # ---- the world (tests) ------------------------------------------------------------------
    def press(self, pin: int) -> None:
        """Drive input ``pin`` high (a button pressed): rising edge."""
        self._set_input(pin, 1)

    def release(self, pin: int) -> None:
        """Drive input ``pin`` low: falling edge."""
        self._set_input(pin, 0)

    def set_temperature(self, celsius: float) -> None:
        """What the TMP102 measures from now on, in degrees Celsius."""
        self.temperature_c = celsius

    def set_knob(self, fraction: float) -> None:
        """The potentiometer position, 0 (one end) to 1 (the other)."""
        self.knob = min(1.0, max(0.0, fraction))

    def _set_input(self, pin: int, level: int) -> None:
        with self._lock:
            old = self.levels.get(pin, 0)
            self.levels[pin] = level
            watchers = list(self._watchers.get(pin, ()))
        if old == level:
            return
        kind = "rising" if level else "falling"
        for edge, cb in watchers:
            if edge in ("both", kind):
                cb(pin, kind, level)

    def slow(self, device: str) -> None:
        """Sleep ``simulation.delay_s[device]`` (a device that answers late)."""
        delay = self.delay_s.get(device)
        if delay:
            time.sleep(delay)

    # ---- Driver ----------------------------------------------------------------------------
    def gpio_read(self, pin: int) -> int:
        """See :meth:`Driver.gpio_read`."""
        with self._lock:
            return self.levels.get(pin, 0)

    def gpio_write(self, pin: int, level: int) -> None:
        """See :meth:`Driver.gpio_write`."""
        with self._lock:
            self.levels[pin] = level
            self.writes.append(("gpio", (pin, level)))

    def pwm_set(self, chip: int, channel: int, frequency_hz: float, duty_pct: float) -> None:
        """See :meth:`Driver.pwm_set`."""
        self.pwm[(chip, channel)] = (frequency_hz, duty_pct)
        self.writes.append(("pwm", (chip, channel, frequency_hz, duty_pct)))

    def pwm_get(self, chip: int, channel: int) -> tuple[float, float]:
        """See :meth:`Driver.pwm_get`."""
        return self.pwm.get((chip, channel), (0.0, 0.0))

    def adc_read(self, channel: int) -> int:
        """The potentiometer on channel 0 (12 bits); other channels read 0."""
        return round(self.knob * 4095) if channel == 0 else 0

    def dac_write(self, channel: int, raw: int) -> None:
        """See :meth:`Driver.dac_write`."""
        self.dac[channel] = raw
        self.writes.append(("dac", (channel, raw)))

    def i2c_read(self, bus: int, address: int, register: int, length: int) -> bytes:
        """A TMP102 answers; any other address does not acknowledge."""
        regs = self.tmp102.get((bus, address))
        if regs is None:
            raise DriverError(f"no device acknowledged at 0x{address:02x} on I2C bus {bus}")
        if register == 0:
            counts = round(self.temperature_c / TMP102_LSB_C) & 0xFFF
            data = bytes([(counts >> 4) & 0xFF, (counts & 0xF) << 4])
        else:
            data = regs.get(register, b"\x00\x00")
        return (data * (length // len(data) + 1))[:length]

    def i2c_write(self, bus: int, address: int, register: int, data: bytes) -> None:
        """A TMP102 keeps written registers (not the read-only temperature register)."""
        regs = self.tmp102.get((bus, address))
        if regs is None:
            raise DriverError(f"no device acknowledged at 0x{address:02x} on I2C bus {bus}")
        if register != 0:
            regs[register] = bytes(data)
        self.writes.append(("i2c", (bus, address, register, bytes(data))))

    def spi_transfer(self, bus: int, cs: int, data: bytes, speed_hz: int) -> bytes:
        """Loopback: MISO wired to MOSI."""
        return bytes(data)

    def watch_edges(self, pin: int, edge: str, callback: EdgeCallback) -> None:
        """See :meth:`Driver.watch_edges`."""
        with self._lock:
            self._watchers.setdefault(pin, []).append((edge, callback))
