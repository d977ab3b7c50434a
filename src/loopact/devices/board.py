"""Board descriptions (SPEC C9, issue 19): the pins, buses and devices of a board, from YAML.

A board file names its GPIO pins, the pins and I2C addresses that are *reserved* (never
written: buses, the console UART, an ID EEPROM) and its devices, each of one class:

======== ==================================================================================
class    fields
======== ==================================================================================
gpio     ``pin``, ``direction`` (in / out), ``bias`` (as-is / pull-up / pull-down /
         disabled: the line's internal resistor, Linux only), ``edge`` (none / rising /
         falling / both: input events)
led      ``pin`` (on/off; brightness and blink in software)
pwm      ``chip``, ``channel``, ``frequency_hz`` (duty 0-100 %)
adc      ``channel``, ``vref_v``, ``bits``
dac      ``channel``, ``vref_v``, ``bits``
i2c      ``bus`` (register reads and writes at any unreserved address)
spi      ``bus``, ``cs``, ``max_speed_hz`` (full-duplex transfers)
sensor   ``sensor`` (``tmp102``), ``bus``, ``address``, ``quantity``, ``unit``,
         ``threshold_above`` / ``threshold_below`` (input events)
======== ==================================================================================

``boards/sim.yaml`` in this package is the simulated board used by default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from loopact.config.yaml_strict import safe_load_unique
from loopact.errors import ConfigError

DeviceClass = Literal["gpio", "led", "pwm", "adc", "dac", "i2c", "spi", "sensor"]
BOARDS_DIR = Path(__file__).with_name("boards")

_STRICT = pydantic.ConfigDict(extra="forbid", frozen=True)


class DeviceSpec(pydantic.BaseModel):
    """One device of a board (see the module docstring for the fields of each class)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    device_class: DeviceClass = pydantic.Field(alias="class")
    description: str = ""
    pin: int | None = pydantic.Field(None, ge=0)
    direction: Literal["in", "out"] = "out"
    bias: Literal["as-is", "pull-up", "pull-down", "disabled"] = "as-is"
    edge: Literal["none", "rising", "falling", "both"] = "none"
    chip: int = pydantic.Field(0, ge=0)
    channel: int = pydantic.Field(0, ge=0)
    frequency_hz: float = pydantic.Field(1000.0, gt=0, le=10_000_000)
    vref_v: float = pydantic.Field(3.3, gt=0)
    bits: int = pydantic.Field(12, ge=1, le=24)
    bus: int = pydantic.Field(1, ge=0)
    cs: int = pydantic.Field(0, ge=0)
    max_speed_hz: int = pydantic.Field(1_000_000, gt=0)
    sensor: Literal["tmp102"] = "tmp102"
    address: int | None = pydantic.Field(None, ge=0x03, le=0x77)
    quantity: str = "temperature"
    unit: str = "degC"
    threshold_above: float | None = None
    threshold_below: float | None = None
    timeout_s: float = pydantic.Field(2.0, gt=0)

    @pydantic.model_validator(mode="after")
    def _needs(self) -> DeviceSpec:
        if self.device_class in ("gpio", "led") and self.pin is None:
            raise ValueError(f"a {self.device_class} device needs `pin`")
        if self.edge != "none" and not (self.device_class == "gpio" and self.direction == "in"):
            raise ValueError("`edge` needs an input pin (class gpio, direction in)")
        if self.device_class == "sensor" and self.address is None:
            raise ValueError("a sensor needs `address` (its I2C address)")
        return self


class Reserved(pydantic.BaseModel):
    """Targets that are never written: pin -> why, I2C address -> why."""

    model_config = _STRICT
    pins: dict[int, str] = pydantic.Field(default_factory=dict)
    i2c_addresses: dict[int, str] = pydantic.Field(default_factory=dict)


class BoardSpec(pydantic.BaseModel):
    """A whole board file.

    Attributes:
        name: The board's name.
        gpio_pins: The GPIO line numbers that exist.
        reserved: Pins and I2C addresses that are refused for writes.
        devices: Device name -> spec.
        simulation: Initial values of the simulated board (``temperature_c``, ``knob``
            as a fraction 0-1, ``delay_s`` per device name for a device that answers slowly).
    """

    model_config = _STRICT
    name: str
    description: str = ""
    gpio_pins: list[int] = pydantic.Field(default_factory=list)
    reserved: Reserved = Reserved()
    devices: dict[str, DeviceSpec] = pydantic.Field(default_factory=dict)
    simulation: dict[str, Any] = pydantic.Field(default_factory=dict)

    @pydantic.model_validator(mode="after")
    def _pins_exist(self) -> BoardSpec:
        for name, dev in self.devices.items():
            if dev.pin is not None and self.gpio_pins and dev.pin not in self.gpio_pins:
                raise ValueError(f"device {name}: pin {dev.pin} is not in gpio_pins")
        return self


def load_board(source: str | Path) -> BoardSpec:
    """Load a board by name (``sim``: ``boards/sim.yaml``) or YAML path.

    Raises:
        ConfigError: Unknown name, unreadable file or a wrong key (``board.file``).
    """
    path = Path(source)
    if not path.suffix and (BOARDS_DIR / f"{source}.yaml").is_file():
        path = BOARDS_DIR / f"{source}.yaml"
    try:
        data = safe_load_unique(path.read_text(encoding="utf-8"))
    except OSError as exc:
        known = ", ".join(sorted(p.stem for p in BOARDS_DIR.glob("*.yaml")))
        raise ConfigError(
            f"board file {source} cannot be read ({exc.strerror or exc}); built-in boards: {known}",
            key="board.file",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"board file {path} is not valid YAML: {exc}", key="board.file") from None
    try:
        return BoardSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        at = f"{where}: " if where else ""  # a whole-board rule has no location
        raise ConfigError(f"board file {path}: {at}{err['msg']}", key="board.file") from None
