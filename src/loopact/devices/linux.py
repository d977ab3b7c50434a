"""Linux drivers for real boards (SPEC C9, issues 19 and 46): ``loopact run --board linux``.

- GPIO: the character device (``/dev/gpiochipN``, kernel GPIO uAPI v2) through ``gpiod``
  (libgpiod 2 Python bindings, LGPL-2.1+; ``pip install gpiod``): one request per line, edge
  events read on a watcher thread.
- PWM: sysfs (``/sys/class/pwm/pwmchipN/pwmM/{period,duty_cycle,enable}``, nanoseconds).
- ADC: IIO sysfs (``/sys/bus/iio/devices/iio:device0/in_voltageN_raw``).
- DAC: IIO sysfs (``out_voltageN_raw``).
- I2C: ``smbus2`` (MIT) register block reads and writes on ``/dev/i2c-N`` (i2c-dev), at most
  32 bytes each (an SMBus block).
- SPI: ``spidev`` (MIT) full-duplex transfers on ``/dev/spidevB.C``.

A GPIO line is requested the way the board file describes it (:class:`LineConfig`: direction,
bias, edge). A line is never requested twice (the kernel answers ``EBUSY``): a read reuses
the line's request whatever its direction (an output reads back the level it drives), a write
to a line that is not an output yet turns it into one with the written level as its first
value (no glitch), and edge watching reconfigures an input's request. An output-pin the board
file describes is first requested "as is" when it is read before any write, so that reading a
relay does not switch it. The kernel's rules hold: edge detection and bias need an explicit
direction (edges an input), and only outputs can be set.

Libraries are imported when first used, so a board without SPI needs no ``spidev``; a
missing library or device node is a :class:`DriverError` that says what to install or which
node is missing. ``sysfs_root`` moves the sysfs tree (tests use a temporary folder).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from loopact.devices.board import BoardSpec
from loopact.devices.driver import Driver, EdgeCallback
from loopact.errors import DriverError

log = logging.getLogger(__name__)

#: The most bytes one SMBus block read or write carries (``I2C_SMBUS_BLOCK_MAX``).
SMBUS_BLOCK_MAX = 32

Bias = Literal["as-is", "pull-up", "pull-down", "disabled"]
Edge = Literal["none", "rising", "falling", "both"]


@dataclass(frozen=True)
class LineConfig:
    """How the board file describes a GPIO line.

    Attributes:
        direction: ``in`` or ``out``; None for a line the board file does not describe (a
            raw ``gpio<N>``): it follows the verb (read: as it is, write: output).
        bias: The internal resistor: ``as-is`` (leave it), ``pull-up``, ``pull-down`` or
            ``disabled``.
        edge: Edge events the board wants of an input (``none`` for others).
    """

    direction: Literal["in", "out"] | None = None
    bias: Bias = "as-is"
    edge: Edge = "none"


def line_configs(spec: BoardSpec) -> dict[int, LineConfig]:
    """The GPIO lines a board file describes: gpio devices as given, LEDs as outputs."""
    out: dict[int, LineConfig] = {}
    for dev in spec.devices.values():
        if dev.pin is None:
            continue
        if dev.device_class == "gpio":
            out[dev.pin] = LineConfig(dev.direction, dev.bias, dev.edge)
        elif dev.device_class == "led":
            out[dev.pin] = LineConfig("out")
    return out


def _need(module: str, package: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise DriverError(
            f"the Linux {module} driver needs the Python package {package} (pip install {package})"
        ) from None


def _oserror(exc: OSError) -> str:
    return exc.strerror or str(exc)


@dataclass
class _Line:
    """A requested line: its request and how it is configured now."""

    request: Any
    direction: Literal["as-is", "in", "out"]
    edge: Edge


class LinuxDriver(Driver):
    """Real pins and buses (see the module docstring).

    Args:
        gpio_chip: The GPIO character device, e.g. ``/dev/gpiochip0``.
        sysfs_root: Root of the sysfs tree (``/sys``).
        iio_device: The IIO device folder name for ADC and DAC (``iio:device0``).
        lines: The GPIO lines the board file describes (:func:`line_configs`); a line not
            in it follows the verb.
    """

    kind = "linux"

    def __init__(
        self,
        gpio_chip: str = "/dev/gpiochip0",
        sysfs_root: Path = Path("/sys"),
        iio_device: str = "iio:device0",
        lines: Mapping[int, LineConfig] | None = None,
    ) -> None:
        self.gpio_chip = gpio_chip
        self.sysfs = sysfs_root
        self.iio = sysfs_root / "bus" / "iio" / "devices" / iio_device
        self.lines = dict(lines or {})
        self._lines: dict[int, _Line] = {}
        self._buses: dict[int, Any] = {}
        self._spi: dict[tuple[int, int], Any] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    # ---- GPIO (gpiod) -----------------------------------------------------------------------
    def _settings(self, pin: int, direction: str, edge: Edge, level: int) -> Any:
        """The ``gpiod.LineSettings`` of ``pin`` as ``direction`` (``as-is``/``in``/``out``)."""
        gpiod = _need("gpiod", "gpiod")
        from gpiod.line import Bias, Direction, Edge, Value

        bias = self.lines.get(pin, LineConfig()).bias
        return gpiod.LineSettings(
            direction={"in": Direction.INPUT, "out": Direction.OUTPUT}.get(
                direction, Direction.AS_IS
            ),
            # the kernel refuses a bias without an explicit direction (EINVAL)
            bias=Bias.AS_IS
            if direction == "as-is"
            else {
                "pull-up": Bias.PULL_UP,
                "pull-down": Bias.PULL_DOWN,
                "disabled": Bias.DISABLED,
            }.get(bias, Bias.AS_IS),
            edge_detection={
                "rising": Edge.RISING,
                "falling": Edge.FALLING,
                "both": Edge.BOTH,
            }.get(edge, Edge.NONE),
            output_value=Value.ACTIVE if level else Value.INACTIVE,
        )

    def _claim(
        self,
        pin: int,
        direction: Literal["as-is", "in", "out"],
        edge: Edge = "none",
        level: int = 0,
    ) -> Any:
        """The request of ``pin`` configured as asked: requested once, reconfigured after.

        Raises:
            DriverError: The library is missing, the line is busy or the kernel refused.
        """
        settings = self._settings(pin, direction, edge, level)
        with self._lock:
            line = self._lines.get(pin)
            try:
                if line is None:
                    gpiod = _need("gpiod", "gpiod")
                    req = gpiod.request_lines(
                        self.gpio_chip, consumer="loopact", config={pin: settings}
                    )
                    self._lines[pin] = _Line(req, direction, edge)
                    return req
                if (line.direction, line.edge) != (direction, edge):
                    line.request.reconfigure_lines({pin: settings})
                    line.direction, line.edge = direction, edge
                return line.request
            except OSError as exc:
                raise DriverError(self._gpio_error(pin, exc)) from None

    def _gpio_error(self, pin: int, exc: OSError) -> str:
        if exc.errno == errno.EBUSY:
            return (
                f"GPIO line {pin} on {self.gpio_chip} is used by another program or driver "
                "(busy); free it (gpioinfo shows its consumer)"
            )
        if exc.errno in (errno.ENOENT, errno.ENODEV):
            return f"no GPIO chip {self.gpio_chip}: {_oserror(exc)}"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return f"no permission for {self.gpio_chip} (add the user to the gpio group)"
        return f"GPIO line {pin} on {self.gpio_chip}: {_oserror(exc)}"

    def gpio_read(self, pin: int) -> int:
        """See :meth:`Driver.gpio_read`; an output reads back the level it drives."""
        line = self._lines.get(pin)
        if line is not None:
            req = line.request
        else:
            wanted = self.lines.get(pin, LineConfig()).direction
            req = self._claim(pin, "in" if wanted == "in" else "as-is")
        try:
            return 1 if req.get_value(pin).value else 0
        except OSError as exc:
            raise DriverError(self._gpio_error(pin, exc)) from None

    def gpio_write(self, pin: int, level: int) -> None:
        """See :meth:`Driver.gpio_write`: a line that is not an output becomes one, driving
        ``level`` from its first instant.

        Raises:
            DriverError: The board file makes the pin an input, or the kernel refused.
        """
        if self.lines.get(pin, LineConfig()).direction == "in":
            raise DriverError(f"GPIO line {pin} is an input in the board file; it is not driven")
        line = self._lines.get(pin)
        if line is None or line.direction != "out":
            self._claim(pin, "out", level=level)
            return
        gpiod = _need("gpiod", "gpiod")
        value = gpiod.line.Value.ACTIVE if level else gpiod.line.Value.INACTIVE
        try:
            line.request.set_value(pin, value)
        except OSError as exc:
            raise DriverError(self._gpio_error(pin, exc)) from None

    def watch_edges(self, pin: int, edge: str, callback: EdgeCallback) -> None:
        """Read edge events of the input ``pin`` on a daemon thread (stopped by :meth:`close`).

        Raises:
            DriverError: The line is an output, or the kernel cannot detect its edges.
        """
        if edge not in ("rising", "falling", "both"):
            raise DriverError(f"unknown edge {edge!r}: rising, falling or both")
        line = self._lines.get(pin)
        if (line is not None and line.direction == "out") or self.lines.get(
            pin, LineConfig()
        ).direction == "out":
            raise DriverError(f"GPIO line {pin} is an output: edges are watched on inputs")
        req = self._claim(pin, "in", cast(Edge, edge))
        gpiod = _need("gpiod", "gpiod")
        rising_type = gpiod.EdgeEvent.Type.RISING_EDGE

        def run() -> None:
            while not self._stop.is_set():
                try:
                    if not req.wait_edge_events(0.2):
                        continue
                    events = req.read_edge_events()
                except Exception as exc:  # released at close, or the chip went away
                    if not self._stop.is_set():
                        log.warning("GPIO line %d: edge events stopped: %s", pin, exc)
                    return
                for ev in events:
                    if ev.line_offset != pin:
                        continue
                    rising = ev.event_type == rising_type
                    callback(pin, "rising" if rising else "falling", 1 if rising else 0)

        thread = threading.Thread(target=run, name=f"loopact-gpio-{pin}", daemon=True)
        thread.start()
        self._threads.append(thread)

    # ---- sysfs PWM, IIO ---------------------------------------------------------------------
    def _pwm_dir(self, chip: int, channel: int) -> Path:
        chip_dir = self.sysfs / "class" / "pwm" / f"pwmchip{chip}"
        if not chip_dir.is_dir():
            raise DriverError(f"no PWM chip {chip_dir} (is the PWM overlay enabled?)")
        pwm = chip_dir / f"pwm{channel}"
        if not pwm.is_dir():
            _write(chip_dir / "export", str(channel))
        if not pwm.is_dir():
            raise DriverError(f"PWM channel {channel} of pwmchip{chip} could not be exported")
        return pwm

    def pwm_set(self, chip: int, channel: int, frequency_hz: float, duty_pct: float) -> None:
        """Period and duty in nanoseconds; duty 0 disables the output."""
        pwm = self._pwm_dir(chip, channel)
        period = round(1e9 / frequency_hz)
        _write(pwm / "duty_cycle", "0")  # never duty > period while the period changes
        _write(pwm / "period", str(period))
        _write(pwm / "duty_cycle", str(round(period * duty_pct / 100)))
        _write(pwm / "enable", "1" if duty_pct > 0 else "0")

    def pwm_get(self, chip: int, channel: int) -> tuple[float, float]:
        """See :meth:`Driver.pwm_get`."""
        pwm = self._pwm_dir(chip, channel)
        period = int(_read(pwm / "period") or 0)
        duty = int(_read(pwm / "duty_cycle") or 0)
        enabled = _read(pwm / "enable") == "1"
        if not period:
            return 0.0, 0.0
        return round(1e9 / period, 3), round(duty / period * 100, 3) if enabled else 0.0

    def adc_read(self, channel: int) -> int:
        """See :meth:`Driver.adc_read`."""
        return int(_read(self.iio / f"in_voltage{channel}_raw"))

    def dac_write(self, channel: int, raw: int) -> None:
        """See :meth:`Driver.dac_write`."""
        _write(self.iio / f"out_voltage{channel}_raw", str(raw))

    # ---- I2C, SPI ---------------------------------------------------------------------------
    def _bus(self, bus: int) -> Any:
        smbus2 = _need("smbus2", "smbus2")
        with self._lock:
            if bus not in self._buses:
                try:
                    self._buses[bus] = smbus2.SMBus(bus)
                except OSError as exc:
                    raise DriverError(
                        f"cannot open /dev/i2c-{bus}: {_oserror(exc)} (is i2c-dev loaded and "
                        "the bus enabled?)"
                    ) from None
            return self._buses[bus]

    def i2c_read(self, bus: int, address: int, register: int, length: int) -> bytes:
        """See :meth:`Driver.i2c_read` (an SMBus I2C block read, at most 32 bytes)."""
        if not 1 <= length <= SMBUS_BLOCK_MAX:
            raise DriverError(f"an I2C block read is 1-{SMBUS_BLOCK_MAX} bytes, not {length}")
        dev = self._bus(bus)
        try:
            return bytes(dev.read_i2c_block_data(address, register, length))
        except OSError as exc:
            raise DriverError(self._i2c_error(bus, address, exc)) from None

    def i2c_write(self, bus: int, address: int, register: int, data: bytes) -> None:
        """See :meth:`Driver.i2c_write` (an SMBus I2C block write, at most 32 bytes)."""
        if not 1 <= len(data) <= SMBUS_BLOCK_MAX:
            raise DriverError(
                f"an I2C block write carries 1-{SMBUS_BLOCK_MAX} bytes, not {len(data)}; "
                "write longer data register by register"
            )
        dev = self._bus(bus)
        try:
            dev.write_i2c_block_data(address, register, list(data))
        except OSError as exc:
            raise DriverError(self._i2c_error(bus, address, exc)) from None

    @staticmethod
    def _i2c_error(bus: int, address: int, exc: OSError) -> str:
        if exc.errno in (errno.EREMOTEIO, errno.ENXIO, errno.EIO):
            return f"no device acknowledged at 0x{address:02x} on I2C bus {bus}"
        if exc.errno == errno.EBUSY:
            return f"I2C address 0x{address:02x} on bus {bus} is held by a kernel driver"
        return f"I2C bus {bus}, address 0x{address:02x}: {_oserror(exc)}"

    def spi_transfer(self, bus: int, cs: int, data: bytes, speed_hz: int) -> bytes:
        """See :meth:`Driver.spi_transfer` (one ``xfer2``: chip select held throughout)."""
        spidev = _need("spidev", "spidev")
        with self._lock:
            dev = self._spi.get((bus, cs))
            if dev is None:
                dev = spidev.SpiDev()
                try:
                    dev.open(bus, cs)
                except OSError as exc:
                    raise DriverError(
                        f"cannot open /dev/spidev{bus}.{cs}: {_oserror(exc)} (is the SPI "
                        "bus enabled?)"
                    ) from None
                self._spi[(bus, cs)] = dev
        try:
            return bytes(dev.xfer2(list(data), speed_hz))
        except OSError as exc:
            raise DriverError(f"SPI transfer on /dev/spidev{bus}.{cs}: {_oserror(exc)}") from None

    def close(self) -> None:
        """Stop the edge watchers, release every line, close every bus."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=1.0)
        with self._lock:
            for line in self._lines.values():
                try:
                    line.request.release()  # gpiod's LineRequest has release(), not close()
                except Exception as exc:
                    log.debug("releasing a GPIO line failed: %s", exc)
            for obj in [*self._buses.values(), *self._spi.values()]:
                try:
                    obj.close()
                except Exception as exc:
                    log.debug("closing a bus failed: %s", exc)
            self._lines.clear()
            self._buses.clear()
            self._spi.clear()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError as exc:
        raise DriverError(f"cannot read {path}: {exc.strerror or exc}") from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="ascii")
    except OSError as exc:
        raise DriverError(f"cannot write {path}: {exc.strerror or exc}") from None
