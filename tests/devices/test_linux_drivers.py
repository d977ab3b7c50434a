"""The Linux drivers behind ``--board linux`` (issue 46 item 1, SPEC C9) against stand-ins of
gpiod (libgpiod 2), smbus2 and spidev, each with the real library's API over a simulated
kernel that keeps the kernel's rules (tests/devices/standins). What the board did is read from
the simulated kernel (a line's direction, bias and level; the bytes on a bus), never from what
a tool result claims.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.devices.standins.kernel import KERNEL, Chip, I2cDevice

from loopact.devices import Board, open_board
from loopact.devices.events import INPUT_NAME, BoardEvents
from loopact.devices.linux import LinuxDriver
from loopact.errors import ConfigError, DriverError, ToolError
from loopact.nodes.inputs import InputHub
from loopact.nodes.local import LocalConnector

LIBS = Path(__file__).with_name("standins") / "libs"
MODULES = ("gpiod", "gpiod.line", "smbus2", "spidev")

BOARD = """
name: test-board
gpio_pins: [4, 5, 6, 17, 22, 27]
reserved:
  pins: {}
devices:
  status_led: {class: led, pin: 17}
  relay: {class: gpio, pin: 22, direction: out}
  button: {class: gpio, pin: 27, direction: in, bias: pull-up, edge: both}
  door: {class: gpio, pin: 6, direction: in, bias: pull-down}
  temperature: {class: sensor, sensor: tmp102, bus: 1, address: 0x48}
  i2c1: {class: i2c, bus: 1}
  i2c3: {class: i2c, bus: 3}
  spi0: {class: spi, bus: 0, cs: 0, max_speed_hz: 250000}
  spi1: {class: spi, bus: 1, cs: 0}
"""


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Chip]:
    """The stand-in libraries importable as ``gpiod``, ``smbus2``, ``spidev``, over a fresh
    simulated kernel: one GPIO chip, I2C bus 1 with a TMP102 at 0x48, SPI device 0.0."""
    monkeypatch.syspath_prepend(str(LIBS))
    saved = {name: sys.modules.pop(name) for name in MODULES if name in sys.modules}
    KERNEL.chips.clear()
    KERNEL.i2c.clear()
    KERNEL.spi.clear()
    chip = KERNEL.add_chip("/dev/gpiochip0")
    tmp102 = I2cDevice()
    tmp102.set_temperature(23.5)
    KERNEL.add_i2c_bus(1)[0x48] = tmp102
    KERNEL.add_spi(0, 0)
    yield chip
    for name in MODULES:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


@pytest.fixture
def board(kernel: Chip, tmp_path: Path) -> Iterator[Board]:
    path = tmp_path / "board.yaml"
    path.write_text(BOARD)
    b = open_board("linux", path)
    assert isinstance(b.driver, LinuxDriver)
    yield b
    b.driver.close()


async def test_reading_an_output_first_keeps_it_an_output_that_can_be_written(
    board: Board, kernel: Chip
) -> None:
    """The bug of issue 46: a read requested the relay's line as an input and cached it, so
    the next write failed (the kernel sets only outputs: EPERM). Reading it first must not
    switch it either: it is taken as it is until the first write."""
    kernel.line(22).direction, kernel.line(22).out_value = "output", 1  # the relay was on
    assert await board.read("relay") == {"level": 1}
    assert kernel.line(22).direction == "output" and kernel.line(22).out_value == 1
    assert await board.write("relay", 0) == {"level": 0}
    assert kernel.line(22).level() == 0
    assert await board.write("relay", 1) == {"level": 1}
    assert (kernel.line(22).direction, kernel.line(22).level()) == ("output", 1)
    assert await board.read("relay") == {"level": 1}  # an output reads back what it drives
    await board.write("status_led", 1)
    assert (kernel.line(17).direction, kernel.line(17).level()) == ("output", 1)
    assert kernel.line(22).consumer == "loopact"


async def test_an_input_line_gets_its_bias_and_reads_the_outside_world(
    board: Board, kernel: Chip
) -> None:
    assert await board.read("button") == {"level": 1}  # floating, pulled up
    line = kernel.line(27)
    assert (line.direction, line.bias) == ("input", "pull-up")
    kernel.drive(27, 0)  # pressed: shorted to ground
    assert await board.read("button") == {"level": 0}
    assert await board.read("door") == {"level": 0}
    assert (kernel.line(6).direction, kernel.line(6).bias) == ("input", "pull-down")
    with pytest.raises(ToolError, match="input"):
        await board.write("door", 1)  # refused by the board before the driver sees it
    with pytest.raises(DriverError, match="input in the board file"):
        board.driver.gpio_write(6, 1)  # and by the driver, should anything call it


async def test_a_raw_pin_follows_the_verb(board: Board, kernel: Chip) -> None:
    kernel.drive(5, 1)
    assert await board.read("gpio5") == {"level": 1}  # taken as it is: an input here
    assert kernel.line(5).direction == "input"
    assert await board.write("gpio5", 0) == {"level": 0}  # now an output driving 0
    assert (kernel.line(5).direction, kernel.line(5).out_value) == ("output", 0)
    assert await board.write("gpio4", 1) == {"level": 1}
    assert (kernel.line(4).direction, kernel.line(4).level()) == ("output", 1)


async def test_edge_events_of_a_pulled_up_button_reach_the_agent_as_inputs(
    board: Board, kernel: Chip
) -> None:
    """Read first, then watched: the line is reconfigured for edges, never requested twice
    (the kernel answers a second request of a line with EBUSY)."""
    assert await board.read("button") == {"level": 1}
    connector = LocalConnector()
    await connector.start()
    arrived = asyncio.Event()
    hub = InputHub(connector, "loopact", on_new=arrived.set)
    await hub.start()
    events = BoardEvents(board, connector, "loopact", poll_s=60)
    try:
        await events.start()
        assert events.unwatched == {}
        assert kernel.line(27).edge == "both"
        got: list[dict[str, Any]] = []

        async def next_event() -> dict[str, Any]:
            await asyncio.wait_for(arrived.wait(), 5)  # the input hub got the event
            arrived.clear()
            snapshot = hub.take_snapshot()
            assert snapshot is not None and INPUT_NAME in snapshot.text
            return {"text": snapshot.text}

        kernel.drive(27, 0)  # pressed
        got.append(await next_event())
        kernel.drive(27, None)  # released: the pull-up brings it back to 1
        got.append(await next_event())
        assert '"event": "falling"' in got[0]["text"] and '"level": 0' in got[0]["text"]
        assert '"event": "rising"' in got[1]["text"] and '"level": 1' in got[1]["text"]
        assert await board.read("button") == {"level": 1}  # still readable while watched
    finally:
        await events.stop()
        await hub.stop()
        await connector.shutdown()


async def test_close_releases_every_line(board: Board, kernel: Chip) -> None:
    """gpiod's LineRequest is released with release() (it has no close()): the lines were
    never given back before."""
    await board.write("relay", 1)
    await board.read("button")
    assert {kernel.line(22).owner is not None, kernel.line(27).owner is not None} == {True}
    await board.close()
    assert kernel.line(22).owner is None and kernel.line(27).owner is None


async def test_a_line_used_by_another_program_is_a_clear_error(board: Board, kernel: Chip) -> None:
    kernel.line(22).owner, kernel.line(22).consumer = "other", "lightd"
    with pytest.raises(ToolError, match="used by another program"):
        await board.write("relay", 1)


async def test_i2c_through_smbus2(board: Board, kernel: Chip) -> None:
    assert await board.read("temperature") == {
        "quantity": "temperature",
        "value": 23.5,
        "unit": "degC",
    }
    got = await board.write("i2c1", [1, 2, 3], address=0x48, register=4)
    assert got["written"] == [1, 2, 3]
    assert KERNEL.i2c["/dev/i2c-1"][0x48].writes == [(4, b"\x01\x02\x03")]
    read = await board.read("i2c1", address=0x48, register=4, length=3)
    assert read["data"] == [1, 2, 3]
    with pytest.raises(ToolError, match="no device acknowledged at 0x21"):
        await board.read("i2c1", address=0x21, register=0)
    with pytest.raises(ToolError, match="1-32 bytes, not 40"):
        await board.write("i2c1", list(range(40)), address=0x48, register=0)
    with pytest.raises(ToolError, match="cannot open /dev/i2c-3"):
        await board.read("i2c3", address=0x48, register=0)


async def test_spi_through_spidev(board: Board, kernel: Chip) -> None:
    got = await board.control("spi0", "transfer", data=[0x9F, 0, 0])
    assert got == {"sent": [0x9F, 0, 0], "received": [0x9F, 0, 0]}  # a loopback device
    assert KERNEL.spi["/dev/spidev0.0"].transfers == [(b"\x9f\x00\x00", 250_000)]
    with pytest.raises(ToolError, match=r"cannot open /dev/spidev1\.0"):
        await board.control("spi1", "transfer", data=[1])


def test_kernel_rules_hold_for_edges_and_outputs(kernel: Chip) -> None:
    """The driver never asks for what the kernel refuses: edges on an output line."""
    driver = LinuxDriver(lines={})
    driver.gpio_write(4, 1)
    with pytest.raises(DriverError, match="output"):
        driver.watch_edges(4, "rising", lambda *a: None)
    driver.close()


def test_edge_on_an_output_is_refused_in_the_board_file(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text("name: b\ndevices:\n  x: {class: gpio, pin: 4, direction: out, edge: both}\n")
    with pytest.raises(ConfigError, match="`edge` needs an input pin"):
        open_board("linux", path)
