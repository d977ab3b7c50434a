"""The device layer (SPEC C9, issue 19): the pins and buses of the board loopact runs on.

One generic interface (:class:`~loopact.devices.service.Board`: list, info, read, write,
control) over GPIO, LED, PWM, ADC, DAC, I2C, SPI and sensors, behind a
:class:`~loopact.devices.driver.Driver`: the simulated board (default) or the Linux drivers.
The tools are in :mod:`loopact.devices.tools`, input events in :mod:`loopact.devices.events`.
"""

from __future__ import annotations

from pathlib import Path

from loopact.devices.board import BoardSpec, load_board
from loopact.devices.driver import Driver
from loopact.devices.service import Board
from loopact.devices.sim import SimDriver
from loopact.errors import DriverError

__all__ = ["Board", "BoardSpec", "Driver", "DriverError", "SimDriver", "load_board", "open_board"]


def open_board(kind: str = "sim", file: str | Path | None = None) -> Board:
    """A board of ``kind`` (``sim`` or ``linux``) described by ``file`` (default: the sim board).

    Raises:
        ConfigError: The board file cannot be used.
    """
    spec = load_board(file or "sim")
    if kind == "linux":
        from loopact.devices.linux import LinuxDriver, line_configs

        return Board(spec, LinuxDriver(lines=line_configs(spec)))
    return Board(spec, SimDriver(spec))
