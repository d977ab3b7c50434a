"""The device tools (SPEC C9, C5; issue 19): ``device_list``, ``device_info``, ``device_read``
(read-only class) and ``device_write``, ``device_control`` (write class: they run only after
the user's confirmation, or with the tool in ``confirm.allow``). Refusals and failures of the
:class:`~loopact.devices.service.Board` are failed results that say why."""

from __future__ import annotations

from typing import Any

from loopact.devices.service import Board
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool


def make_device_tools(board: Board) -> list[Tool]:
    """The five device tools over ``board``."""
    names = ", ".join(board.spec.devices)

    @tool(safety=SafetyClass.READ_ONLY, reentrant=True)
    def device_list() -> list[dict[str, Any]]:
        """List the board's devices (GPIO, LED, PWM, ADC, DAC, I2C, SPI, sensors)."""
        return board.list_devices()

    @tool(safety=SafetyClass.READ_ONLY, reentrant=True)
    def device_info(device: str) -> dict[str, Any]:
        """Describe one device: class, pin or bus, ranges, units.

        Args:
            device: A device name from device_list, or a raw pin as 'gpio<N>'.
        """
        return board.info(device)

    @tool(safety=SafetyClass.READ_ONLY, reentrant=True, timeout_s=15)
    async def device_read(
        device: str, address: int | None = None, reg: int | None = None, length: int = 1
    ) -> ToolResult:
        """Read a device: a pin level, an ADC voltage, a sensor reading with its unit, PWM
        settings, or bytes from an I2C register.

        Args:
            device: A device name, or 'gpio<N>' for a raw pin.
            address: I2C only: the device address, e.g. 72 (0x48).
            reg: I2C only: the register number (0-255).
            length: I2C only: how many bytes (1-32).
        """
        return ToolResult.success(await board.read(device, address, reg, length), device=device)

    @tool(safety=SafetyClass.WRITE, timeout_s=15)
    async def device_write(
        device: str,
        value: float | bool | str | list[int],
        address: int | None = None,
        reg: int | None = None,
    ) -> ToolResult:
        """Write a device: 1/0 (on/off) to a pin or LED, duty in percent (0-100) to a PWM
        output, volts to a DAC, or a list of bytes to an I2C register.

        Args:
            device: A device name, or 'gpio<N>' for a raw pin.
            value: The level, duty_pct, volts, or bytes.
            address: I2C only: the device address.
            reg: I2C only: the register number (0-255).
        """
        return ToolResult.success(await board.write(device, value, address, reg), device=device)

    @tool(safety=SafetyClass.WRITE, timeout_s=15)
    async def device_control(
        device: str,
        action: str,
        value: float | None = None,
        data: list[int] | None = None,
        frequency_hz: float | None = None,
        period_s: float | None = None,
        count: int | None = None,
    ) -> ToolResult:
        """Control a device: LED on/off/brightness (value = %)/blink (period_s, count), PWM
        set (value = duty %, frequency_hz)/off, SPI transfer (data = bytes).

        Args:
            device: A device name.
            action: on, off, brightness, blink, set or transfer.
            value: Brightness or duty in percent.
            data: Bytes to send over SPI.
            frequency_hz: PWM frequency in hertz.
            period_s: Blink period in seconds.
            count: Blinks (0 or omitted: until the next write).
        """
        result = await board.control(device, action, value, data, frequency_hz, period_s, count)
        return ToolResult.success(result, device=device, action=action)

    for t in (device_list, device_info, device_read, device_write, device_control):
        t.description += f" Devices: {names}."
    return [device_list, device_info, device_read, device_write, device_control]
