"""Linux drivers for real boards (SPEC C9, issue 19): ``loopact run --board linux``.

- GPIO: the character device through ``gpiod`` (libgpiod 2 Python bindings, LGPL-2.1+;
  ``pip install gpiod``), one request per line, edge events read on a watcher thread.
- PWM: sysfs (``/sys/class/pwm/pwmchipN/pwmM/{period,duty_cycle,enable}``, nanoseconds).
- ADC: IIO sysfs (``/sys/bus/iio/devices/iio:device0/in_voltageN_raw``).
- DAC: IIO sysfs (``out_voltageN_raw``).
- I2C: ``smbus2`` (MIT) register reads and writes.
- SPI: ``spidev`` (MIT) full-duplex transfers.

Libraries are imported when first used, so a board without SPI needs no ``spidev``; a
missing library or device node is a :class:`DriverError` that says what to install or which
node is missing. ``sysfs_root`` moves the sysfs tree (tests use a temporary folder).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from loopact.devices.driver import Driver, EdgeCallback
from loopact.errors import DriverError


def _need(module: str, package: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise DriverError(
            f"the Linux {module} driver needs the Python package {package} (pip install {package})"
        ) from None


class LinuxDriver(Driver):
    """Real pins and buses (see the module docstring).

    Args:
        gpio_chip: The GPIO character device, e.g. ``/dev/gpiochip0``.
        sysfs_root: Root of the sysfs tree (``/sys``).
        iio_device: The IIO device folder name for ADC and DAC (``iio:device0``).
    """

    kind = "linux"

    def __init__(
        self,
        gpio_chip: str = "/dev/gpiochip0",
        sysfs_root: Path = Path("/sys"),
        iio_device: str = "iio:device0",
    ) -> None:
        self.gpio_chip = gpio_chip
        self.sysfs = sysfs_root
        self.iio = sysfs_root / "bus" / "iio" / "devices" / iio_device
        self._lines: dict[int, Any] = {}
        self._buses: dict[int, Any] = {}
        self._spi: dict[tuple[int, int], Any] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    # ---- GPIO (gpiod) -----------------------------------------------------------------------
    def _line(self, pin: int, output: bool, edge: str = "none") -> Any:
        gpiod = _need("gpiod", "gpiod")
        with self._lock:
            req = self._lines.get(pin)
            if req is not None and edge == "none":
                return req
            from gpiod.line import Direction, Edge, Value

            settings = gpiod.LineSettings(
                direction=Direction.OUTPUT if output else Direction.INPUT,
                output_value=Value.INACTIVE,
                edge_detection={
                    "rising": Edge.RISING,
                    "falling": Edge.FALLING,
                    "both": Edge.BOTH,
                }.get(edge, Edge.NONE),
            )
            try:
                req = gpiod.request_lines(
                    self.gpio_chip, consumer="loopact", config={pin: settings}
                )
            except OSError as exc:
                raise DriverError(
                    f"cannot request GPIO line {pin} on {self.gpio_chip}: {exc}"
                ) from None
            self._lines[pin] = req
            return req

    def gpio_read(self, pin: int) -> int:
        """See :meth:`Driver.gpio_read`."""
        req = self._line(pin, output=False)
        return 1 if req.get_value(pin).value else 0

    def gpio_write(self, pin: int, level: int) -> None:
        """See :meth:`Driver.gpio_write`."""
        from_value = _need("gpiod", "gpiod")
        req = self._line(pin, output=True)
        value = from_value.line.Value.ACTIVE if level else from_value.line.Value.INACTIVE
        req.set_value(pin, value)

    def watch_edges(self, pin: int, edge: str, callback: EdgeCallback) -> None:
        """Read edge events of ``pin`` on a daemon thread (stopped by :meth:`close`)."""
        req = self._line(pin, output=False, edge=edge)

        def run() -> None:
            import datetime

            while not self._stop.is_set():
                if not req.wait_edge_events(datetime.timedelta(milliseconds=200)):
                    continue
                for ev in req.read_edge_events():
                    rising = "RISING" in str(ev.event_type)
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
        if bus not in self._buses:
            try:
                self._buses[bus] = smbus2.SMBus(bus)
            except OSError as exc:
                raise DriverError(f"cannot open /dev/i2c-{bus}: {exc.strerror or exc}") from None
        return self._buses[bus]

    def i2c_read(self, bus: int, address: int, register: int, length: int) -> bytes:
        """See :meth:`Driver.i2c_read`."""
        return bytes(self._bus(bus).read_i2c_block_data(address, register, length))

    def i2c_write(self, bus: int, address: int, register: int, data: bytes) -> None:
        """See :meth:`Driver.i2c_write`."""
        self._bus(bus).write_i2c_block_data(address, register, list(data))

    def spi_transfer(self, bus: int, cs: int, data: bytes, speed_hz: int) -> bytes:
        """See :meth:`Driver.spi_transfer`."""
        spidev = _need("spidev", "spidev")
        dev = self._spi.get((bus, cs))
        if dev is None:
            dev = spidev.SpiDev()
            try:
                dev.open(bus, cs)
            except OSError as exc:
                raise DriverError(
                    f"cannot open /dev/spidev{bus}.{cs}: {exc.strerror or exc}"
                ) from None
            self._spi[(bus, cs)] = dev
        dev.max_speed_hz = speed_hz
        return bytes(dev.xfer2(list(data)))

    def close(self) -> None:
        """Release every line, bus and thread."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=1.0)
        for obj in [*self._lines.values(), *self._buses.values(), *self._spi.values()]:
            try:
                obj.close()
            except Exception:
                pass


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
