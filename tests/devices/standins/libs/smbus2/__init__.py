"""Stand-in of ``smbus2`` (issue 46 item 1) over the simulated kernel.

The part of the real API (smbus2/smbus2.py, smbus2.pyi) loopact may use, with its names,
signatures and checks: ``SMBus(bus=None, force=False)`` opens ``/dev/i2c-<bus>`` (or a path),
``read_i2c_block_data`` / ``write_i2c_block_data`` refuse more than 32 bytes with the real
``ValueError`` messages, byte reads and writes, ``close()``. An address no device acknowledges
fails as the ioctl does (``OSError`` ``EREMOTEIO``).
"""

from __future__ import annotations

import errno

from tests.devices.standins.kernel import KERNEL, I2cDevice, os_error

__all__ = ["I2C_SMBUS_BLOCK_MAX", "SMBus"]

I2C_SMBUS_BLOCK_MAX = 32


class SMBus:
    """An I2C bus opened through i2c-dev."""

    def __init__(self, bus: int | str | None = None, force: bool = False) -> None:
        self.fd: int | None = None
        self.funcs = 0
        self.address: int | None = None
        self.force = force
        self.pec = 0
        self._path = ""
        if bus is not None:
            self.open(bus)

    def __enter__(self) -> SMBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, bus: int | str) -> None:
        """Open ``/dev/i2c-<bus>`` (an int) or the path ``bus`` (a str)."""
        if isinstance(bus, int):
            path = f"/dev/i2c-{bus}"
        elif isinstance(bus, str):
            path = bus
        else:
            raise TypeError(f"Unexpected type(bus)={type(bus)}")
        if path not in KERNEL.i2c:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        self._path = path
        self.fd = 3

    def close(self) -> None:
        """Close the i2c connection."""
        self.fd = None
        self._path = ""

    def _device(self, i2c_addr: int) -> I2cDevice:
        if self.fd is None:
            raise TypeError("argument must be an int, or have a fileno() method.")
        self.address = i2c_addr
        dev = KERNEL.i2c[self._path].get(i2c_addr)
        if dev is None:
            raise os_error(errno.EREMOTEIO)  # nobody acknowledged the address
        return dev

    def read_byte_data(self, i2c_addr: int, register: int, force: bool | None = None) -> int:
        """Read a single byte from a designated register."""
        return self._device(i2c_addr).registers[register]

    def write_byte_data(
        self, i2c_addr: int, register: int, value: int, force: bool | None = None
    ) -> None:
        """Write a byte to a given register."""
        dev = self._device(i2c_addr)
        dev.registers[register] = value
        dev.writes.append((register, bytes([value])))

    def read_i2c_block_data(
        self, i2c_addr: int, register: int, length: int, force: bool | None = None
    ) -> list[int]:
        """Read a block of byte data from a given register."""
        if length > I2C_SMBUS_BLOCK_MAX:
            raise ValueError(f"Desired block length over {I2C_SMBUS_BLOCK_MAX} bytes")
        regs = self._device(i2c_addr).registers
        return [regs[(register + i) % 256] for i in range(length)]

    def write_i2c_block_data(
        self, i2c_addr: int, register: int, data: list[int], force: bool | None = None
    ) -> None:
        """Write a block of byte data to a given register."""
        length = len(data)
        if length > I2C_SMBUS_BLOCK_MAX:
            raise ValueError(f"Data length cannot exceed {I2C_SMBUS_BLOCK_MAX} bytes")
        dev = self._device(i2c_addr)
        for i, b in enumerate(data):
            dev.registers[(register + i) % 256] = b & 0xFF
        dev.writes.append((register, bytes(b & 0xFF for b in data)))
