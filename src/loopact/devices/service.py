"""The device layer's generic interface (SPEC C9, issue 19): list, info, read, write, control.

:class:`Board` sits between the tools and a :class:`~loopact.devices.driver.Driver`. It
resolves a target by device name, or a raw pin as ``gpio<N>``; checks every write before the
driver sees it: a pin that does not exist, a pin or I2C address the board file marks
reserved, a read-only device (an input pin, an ADC, a sensor), a value out of range (a GPIO
level other than 0/1, PWM duty outside 0-100 %, a DAC voltage outside 0-vref, a byte outside
0-255), all refused with a message naming the target and what is allowed; and runs every
driver call in its own worker thread with the device's ``timeout_s``, so a device that hangs
gives a clear result and the agent goes on. LED brightness below 100 % and blinking are done
in software (a blink runs as an asyncio task, cancelled by the next write).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar

from loopact._compat import wait_within
from loopact.devices.board import BoardSpec, DeviceSpec
from loopact.devices.driver import Driver
from loopact.errors import DriverError, ToolError
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

T = TypeVar("T")
_RAW_PIN = re.compile(r"^(?:gpio|pin)(\d{1,4})$", re.IGNORECASE)
READ_ONLY_CLASSES = frozenset({"adc", "sensor"})
MAX_I2C_READ_BYTES = 32
"""The most bytes one ``device_read`` of an I2C register returns (an SMBus block)."""


def _level(value: Any, target: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in ("on", "high", "true", "1"):
        return 1
    if isinstance(value, str) and value.strip().lower() in ("off", "low", "false", "0"):
        return 0
    raise ToolError(f"{target}: value {value!r} out of range; a pin takes 0/1 (or on/off)")


class Board:
    """A board's devices behind one interface (see the module docstring).

    Args:
        spec: The board description.
        driver: Raw access (simulated or Linux).
    """

    def __init__(self, spec: BoardSpec, driver: Driver) -> None:
        self.spec = spec
        self.driver = driver
        # Daemon threads: a driver call that never returns (a hung bus) is abandoned at its
        # timeout, frees its slot and never blocks exit (issue 22 item 8).
        self._blocking = BlockingExecutor(max_workers=4, max_stuck=16, name="loopact-board")
        self._blinks: dict[str, asyncio.Task[None]] = {}
        self.led_brightness: dict[str, float] = {}

    # ---- lookup -----------------------------------------------------------------------------
    def device(self, name: str) -> tuple[str, DeviceSpec]:
        """``(name, spec)`` of a named device or a raw pin ``gpio<N>``.

        Raises:
            ToolError: No such device or pin (the message lists what exists).
        """
        key = name.strip()
        dev = self.spec.devices.get(key)
        if dev is not None:
            return key, dev
        m = _RAW_PIN.match(key)
        if m is not None:
            pin = int(m.group(1))
            if pin not in self.spec.gpio_pins:
                raise ToolError(
                    f"pin {pin} does not exist on {self.spec.name}; GPIO pins: "
                    + ", ".join(map(str, self.spec.gpio_pins))
                )
            user = next((n for n, d in self.spec.devices.items() if d.pin == pin), None)
            if user is not None:
                return user, self.spec.devices[user]
            return f"gpio{pin}", DeviceSpec.model_validate({"class": "gpio", "pin": pin})
        raise ToolError(
            f"no device {name!r} on {self.spec.name}; devices: "
            + ", ".join(self.spec.devices)
            + " (or a raw pin as gpio<N>)"
        )

    def check_writable(self, name: str, dev: DeviceSpec) -> None:
        """Refuse writes to reserved pins and addresses and to read-only devices.

        Raises:
            ToolError: The target may not be written (the message says why).
        """
        reserved = self.spec.reserved
        if dev.pin is not None and dev.pin in reserved.pins:
            raise ToolError(
                f"refused: pin {dev.pin} is reserved on {self.spec.name} "
                f"({reserved.pins[dev.pin]}); it is never written"
            )
        if dev.device_class in READ_ONLY_CLASSES or (
            dev.device_class == "gpio" and dev.direction == "in"
        ):
            raise ToolError(
                f"refused: {name} is an input ({dev.device_class}); it can only be read"
            )

    async def call(self, name: str, dev: DeviceSpec, fn: Callable[[], T]) -> T:
        """Run a driver call in the board's threads with the device's timeout.

        Raises:
            ToolError: The driver failed or the device did not answer in time.
        """
        try:
            return await wait_within(self._blocking.run(fn), dev.timeout_s)
        except asyncio.TimeoutError:
            raise ToolError(
                f"{name} did not answer within {dev.timeout_s:g} s (device timeout); "
                "nothing was changed that it did not confirm"
            ) from None
        except DriverError as exc:
            raise ToolError(f"{name}: {exc}") from None
        except OSError as exc:
            raise ToolError(f"{name}: {exc.strerror or exc}") from None

    # ---- verbs ------------------------------------------------------------------------------
    def list_devices(self) -> list[dict[str, Any]]:
        """One line per device: name, class, description, whether it can be written."""
        return [
            {
                "name": n,
                "class": d.device_class,
                "description": d.description,
                "writable": d.device_class not in READ_ONLY_CLASSES
                and not (d.device_class == "gpio" and d.direction == "in"),
            }
            for n, d in self.spec.devices.items()
        ]

    def info(self, name: str) -> dict[str, Any]:
        """Everything the board file says about a device (and the reserved targets)."""
        key, dev = self.device(name)
        data = {"name": key, **dev.model_dump(by_alias=True, exclude_defaults=True)}
        data["class"] = dev.device_class
        if dev.device_class == "i2c":
            data["reserved_addresses"] = {
                f"0x{a:02x}": w for a, w in self.spec.reserved.i2c_addresses.items()
            }
        return data

    async def read(
        self, name: str, address: int | None = None, register: int | None = None, length: int = 1
    ) -> dict[str, Any]:
        """Read a device: a level, a PWM setting, volts, a sensor reading or I2C bytes.

        Raises:
            ToolError: Unknown device, wrong arguments, driver failure or timeout.
        """
        key, dev = self.device(name)
        d, cls = self.driver, dev.device_class
        sim = getattr(d, "slow", None)

        def slowly(fn: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                if callable(sim):
                    sim(key)  # the simulated board's slow devices (timeouts in tests)
                return fn()

            return run

        if cls in ("gpio", "led"):
            pin = dev.pin
            assert pin is not None
            level = await self.call(key, dev, slowly(lambda: d.gpio_read(pin)))
            out: dict[str, Any] = {"level": level}
            if cls == "led":
                out = {
                    "on": bool(level),
                    "brightness_pct": self.led_brightness.get(key, 100.0 if level else 0.0),
                    "blinking": key in self._blinks,
                }
            return out
        if cls == "pwm":
            f, duty = await self.call(key, dev, lambda: d.pwm_get(dev.chip, dev.channel))
            return {"frequency_hz": f, "duty_pct": duty}
        if cls == "adc":
            raw = await self.call(key, dev, slowly(lambda: d.adc_read(dev.channel)))
            full = (1 << dev.bits) - 1
            return {
                "raw": raw,
                "volts": round(raw / full * dev.vref_v, 4),
                "fraction": round(raw / full, 4),
            }
        if cls == "sensor":
            assert dev.address is not None
            raw_b = await self.call(
                key, dev, slowly(lambda: d.i2c_read(dev.bus, dev.address or 0, 0, 2))
            )
            counts = (raw_b[0] << 4) | (raw_b[1] >> 4)
            if counts & 0x800:
                counts -= 1 << 12
            return {"quantity": dev.quantity, "value": round(counts * 0.0625, 3), "unit": dev.unit}
        if cls == "i2c":
            if address is None or register is None:
                raise ToolError(f"{key}: reading I2C needs address and register")
            self._check_i2c(address, register)
            if not 1 <= length <= MAX_I2C_READ_BYTES:
                raise ToolError(
                    f"I2C read length {length} out of range (1-{MAX_I2C_READ_BYTES} bytes)"
                )
            data = await self.call(key, dev, lambda: d.i2c_read(dev.bus, address, register, length))
            return {"address": _hex(address), "register": register, "data": list(data)}
        if cls == "spi":
            raise ToolError(f"{key} is an SPI bus: read it with device_control(action='transfer')")
        raise ToolError(f"{key} is a {cls} output, written, not read: use device_write")

    def _check_i2c(self, address: int, register: int, writing: bool = False) -> None:
        if not 0x03 <= address <= 0x77:
            raise ToolError(f"I2C address {_hex(address)} out of range (0x03-0x77)")
        if not 0 <= register <= 255:
            raise ToolError(f"I2C register {register} out of range (0-255)")
        why = self.spec.reserved.i2c_addresses.get(address)
        if writing and why is not None:
            raise ToolError(
                f"refused: I2C address 0x{address:02x} is reserved ({why}); never written"
            )

    async def write(
        self, name: str, value: Any, address: int | None = None, register: int | None = None
    ) -> dict[str, Any]:
        """Write a device: a level, a PWM duty in %, a DAC voltage or I2C bytes.

        Raises:
            ToolError: Unknown or reserved target, read-only device, value out of range,
                driver failure or timeout.
        """
        key, dev = self.device(name)
        cls, d = dev.device_class, self.driver
        if cls == "i2c":
            if address is None or register is None:
                raise ToolError(f"{key}: writing I2C needs address, register and value (bytes)")
            self._check_i2c(address, register, writing=True)
            data = _bytes(value, key)
            await self.call(key, dev, lambda: d.i2c_write(dev.bus, address, register, data))
            return {"address": _hex(address), "register": register, "written": list(data)}
        self.check_writable(key, dev)
        if cls in ("gpio", "led"):
            level = _level(value, key)
            self._stop_blink(key)
            pin = dev.pin
            assert pin is not None
            await self.call(key, dev, lambda: d.gpio_write(pin, level))
            if cls == "led":
                self.led_brightness[key] = 100.0 if level else 0.0
            return {"level": level}
        if cls == "pwm":
            duty = _number(value, key)
            if not 0 <= duty <= 100:
                raise ToolError(f"refused: {key} duty {duty:g} % is out of range (0-100 %)")
            await self.call(
                key, dev, lambda: d.pwm_set(dev.chip, dev.channel, dev.frequency_hz, duty)
            )
            return {"frequency_hz": dev.frequency_hz, "duty_pct": duty}
        if cls == "dac":
            volts = _number(value, key)
            if not 0 <= volts <= dev.vref_v:
                raise ToolError(f"refused: {key} takes 0-{dev.vref_v:g} V; got {volts:g} V")
            raw = round(volts / dev.vref_v * ((1 << dev.bits) - 1))
            await self.call(key, dev, lambda: d.dac_write(dev.channel, raw))
            return {"volts": volts, "raw": raw}
        raise ToolError(f"{key} is a {cls} device: use device_control (transfer)")

    async def control(
        self,
        name: str,
        action: str,
        value: float | None = None,
        data: list[int] | None = None,
        frequency_hz: float | None = None,
        period_s: float | None = None,
        count: int | None = None,
    ) -> dict[str, Any]:
        """Actions beyond a plain write: LED on/off/brightness/blink, PWM set/off, SPI transfer.

        Raises:
            ToolError: Unknown action for the device class (the message lists them), or any
                refusal of :meth:`write`.
        """
        key, dev = self.device(name)
        cls, act = dev.device_class, action.strip().lower()
        actions = {
            "led": "on, off, brightness, blink",
            "pwm": "set, off",
            "spi": "transfer",
            "gpio": "on, off",
        }.get(cls, "none (read it with device_read)")
        if cls in ("led", "gpio") and act in ("on", "off"):
            return await self.write(key, act)
        if cls == "led" and act == "brightness":
            pct = _number(value, key)
            if not 0 <= pct <= 100:
                raise ToolError(f"refused: {key} brightness {pct:g} % is out of range (0-100 %)")
            result = await self.write(key, 1 if pct > 0 else 0)
            self.led_brightness[key] = pct
            return {**result, "brightness_pct": pct}
        if cls == "led" and act == "blink":
            self.check_writable(key, dev)
            period = 1.0 if period_s is None else float(period_s)  # 0 is refused, not 1 s
            if not 0.05 <= period <= 60:
                raise ToolError(f"refused: blink period {period:g} s out of range (0.05-60 s)")
            times = 0 if count is None else int(count)
            if times < 0:
                raise ToolError(
                    f"refused: blink count {times} out of range (0 = until the "
                    "next write, or 1 or more)"
                )
            self._stop_blink(key)
            self._blinks[key] = asyncio.get_running_loop().create_task(
                self._blink(key, dev, period, times), name=f"loopact-blink-{key}"
            )
            return {"blinking": True, "period_s": period, "count": times or "until the next write"}
        if cls == "pwm" and act in ("set", "off"):
            if act == "off":
                value = 0.0
            if frequency_hz is not None and not 0 < frequency_hz <= 10_000_000:
                raise ToolError(f"refused: {key} frequency {frequency_hz:g} Hz out of range")
            duty = _number(value, key)
            if not 0 <= duty <= 100:
                raise ToolError(f"refused: {key} duty {duty:g} % is out of range (0-100 %)")
            self.check_writable(key, dev)
            freq = frequency_hz or dev.frequency_hz
            await self.call(
                key, dev, lambda: self.driver.pwm_set(dev.chip, dev.channel, freq, duty)
            )
            return {"frequency_hz": freq, "duty_pct": duty}
        if cls == "spi" and act == "transfer":
            payload = _bytes(data if data is not None else value, key)
            got = await self.call(
                key,
                dev,
                lambda: self.driver.spi_transfer(dev.bus, dev.cs, payload, dev.max_speed_hz),
            )
            return {"sent": list(payload), "received": list(got)}
        raise ToolError(f"{key} ({cls}) has no action {action!r}; actions: {actions}")

    async def _blink(self, key: str, dev: DeviceSpec, period: float, count: int) -> None:
        pin = dev.pin
        assert pin is not None
        n = 0
        try:
            while count == 0 or n < count:
                for level in (1, 0):
                    await self.call(key, dev, lambda lv=level: self.driver.gpio_write(pin, lv))  # type: ignore[misc]
                    await asyncio.sleep(period / 2)
                n += 1
        except ToolError as exc:
            log.warning("blinking %s stopped: %s", key, exc)
        finally:
            self._blinks.pop(key, None)

    def _stop_blink(self, key: str) -> None:
        task = self._blinks.pop(key, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        """Stop blinking, release the driver, abandon hung driver threads."""
        for task in list(self._blinks.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            self.driver.close()


def _hex(address: int) -> str:
    """An I2C address as written in datasheets (``0x48``); a negative one as it was given."""
    return f"0x{address:02x}" if address >= 0 else str(address)


def _number(value: Any, target: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"{target}: value must be a number, got {value!r}")
    return float(value)


def _bytes(value: Any, target: str) -> bytes:
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > 256:
        raise ToolError(f"{target}: give 1-256 bytes as a list of integers 0-255")
    if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in items):
        raise ToolError(f"{target}: bytes must be integers 0-255, got {value!r}")
    return bytes(items)
