"""The device layer on the simulated board (issue 19 acceptance 4 and its bad inputs, SPEC C9).

The model's behaviour comes from the scripted model server; what the board did is read from
the simulated driver (its pin levels and write log), never from what a tool claims.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.agent import Bounds
from loopact.agent.tools import make_send_message_tool
from loopact.app.devices import attach_board
from loopact.config import load_config
from loopact.devices import Board, SimDriver, load_board, open_board
from loopact.devices.events import BoardEvents
from loopact.devices.linux import LinuxDriver
from loopact.errors import ConfigError, ToolError
from loopact.nodes.inputs import InputHub
from loopact.nodes.local import LocalConnector

LED_PIN, BUTTON_PIN = 17, 27


def _sim(board: Board) -> SimDriver:
    assert isinstance(board.driver, SimDriver)
    return board.driver


async def test_model_reads_temperature_lights_led_after_confirmation_refused_reserved_pin(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 4, first part (task mode, confirmation answered like the terminal does)."""
    server = scripted_server(
        [
            {"tool_calls": [call("device_read", {"device": "temperature"}, "r1")]},
            {
                "tool_calls": [call("device_write", {"device": "status_led", "value": 1}, "w1")],
                "expect": {"contains": "24.5"},
            },
            {
                "tool_calls": [call("device_write", {"device": "gpio2", "value": 1}, "w2")],
                "expect": {"contains": "level"},
            },
            {
                "text": "It is 24.5 degC, the LED is on; pin 2 is reserved.",
                "expect": {"contains": "reserved"},
            },
        ]
    )
    cfg, _ = load_config(None, env={}, cwd=tmp_path)
    agent, rec = make_agent(server, tmp_path)
    async with AsyncExitStack() as stack:
        board = await attach_board(cfg, agent, stack)
        assert board is not None
        sim = _sim(board)

        def allow(event: Any) -> None:
            if event.type == "confirm_request":
                agent.answer_confirmation(event.data["id"], True, "test")

        agent.bus.subscribe(allow)
        outcome = await asyncio.wait_for(agent.run_task("temperature? then LED on, and pin 2"), 30)
        await agent.close()
        assert outcome.status == "completed"
        results = {e.data["id"]: e.data for e in rec.of("tool_result")}
        assert results["r1"]["data"] == {"quantity": "temperature", "value": 24.5, "unit": "degC"}
        requests = [e.data for e in rec.of("confirm_request")]
        assert [r["name"] for r in requests] == ["device_write", "device_write"]
        assert results["w1"]["ok"] and sim.levels[LED_PIN] == 1  # ground truth: the pin
        assert not results["w2"]["ok"]
        assert (
            "pin 2 is reserved" in results["w2"]["error"] and "I2C1 SDA" in results["w2"]["error"]
        )
        assert sim.levels[2] == 0 and ("gpio", (2, 1)) not in sim.writes


async def test_led_stays_off_when_the_confirmation_is_denied(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("device_write", {"device": "status_led", "value": "on"}, "w1")]},
            {"text": "You said no."},
        ]
    )
    cfg, _ = load_config(None, env={}, cwd=tmp_path)
    agent, rec = make_agent(server, tmp_path)
    async with AsyncExitStack() as stack:
        board = await attach_board(cfg, agent, stack)
        assert board is not None
        agent.bus.subscribe(
            lambda e: e.type == "confirm_request" and agent.answer_confirmation(e.data["id"], False)
        )
        await asyncio.wait_for(agent.run_task("LED on"), 30)
        await agent.close()
        assert _sim(board).levels[LED_PIN] == 0
        assert not rec.of("tool_result")[0].data["ok"]


async def test_gpio_edge_wakes_a_continuous_mode_agent(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 4, last part: nobody writes; a button press reaches the idle agent as an
    input event and it answers with send_message."""
    server = scripted_server(
        [
            {
                "tool_calls": [call("send_message", {"text": "Someone pressed the button."}, "m1")],
                "expect": {"contains": "rising"},
            },
            {"text": ""},
        ]
    )
    cfg, _ = load_config(None, env={}, cwd=tmp_path)
    agent, rec = make_agent(server, tmp_path, mode="continuous")
    agent.registry.add(make_send_message_tool(agent))
    async with AsyncExitStack() as stack:
        board = await attach_board(cfg, agent, stack)
        assert board is not None
        runner = asyncio.ensure_future(agent.run())
        try:
            # the input node announces itself; once the hub knows it, press the button
            await rec.wait_for(
                lambda e: e.type == "node_added" and e.data["name"] == "board_events", 10
            )
            await asyncio.to_thread(_sim(board).press, BUTTON_PIN)
            message = await rec.wait_for(lambda e: e.type == "message", 20)
            # the wake-up's task ends after the model's closing turn (both turns consumed)
            end = await rec.wait_for(lambda e: e.type == "task_end", 20)
        finally:
            await agent.close()
            runner.cancel()
    assert message.data["text"] == "Someone pressed the button."
    assert end.data["status"] == "completed"
    body = server.requests[0].body["messages"]
    user = " ".join(str(m["content"]) for m in body if m["role"] == "user")
    assert "button" in user and "rising" in user
    assert agent.history and not [
        m for m in agent.history if "pressed" in str(m.content) and m.role == "user"
    ]


async def test_sensor_threshold_is_reported_once_per_crossing() -> None:
    board = open_board("sim")
    connector = LocalConnector()
    await connector.start()
    woken: list[int] = []
    hub = InputHub(connector, "loopact", on_new=lambda: woken.append(1))
    await hub.start()
    events = BoardEvents(board, connector, "loopact", poll_s=0.02)
    await events.start()
    try:
        sim = _sim(board)
        for _ in range(200):  # the hub discovers the input (heartbeat) first
            if "board_events" in hub.inputs:
                break
            await asyncio.sleep(0.01)
        sim.set_temperature(31.0)
        for _ in range(200):
            if woken:
                break
            await asyncio.sleep(0.01)
        for _ in range(5):  # several more polls while it stays hot
            await asyncio.sleep(0.03)
        snapshot = hub.take_snapshot()
        assert snapshot is not None
        text = str(snapshot.content)
        assert text.count('"event": "above"') == 1 and '"threshold": 30.0' in text
    finally:
        await events.stop()
        await hub.stop()
        await connector.shutdown()
        await board.close()


async def test_bad_inputs_are_clear_results_and_change_nothing() -> None:
    board = open_board("sim")
    sim = _sim(board)
    try:
        cases = [
            (board.write("gpio99", 1), "pin 99 does not exist"),
            (board.write("gpio14", 1), "pin 14 is reserved"),
            (board.write("fan", 400), "duty 400 % is out of range (0-100 %)"),
            (board.control("fan", "set", value=-1), "out of range"),
            (board.write("knob", 1), "knob is an input"),
            (board.write("button", 1), "button is an input"),
            (board.write("status_led", 7), "out of range"),
            (board.write("dac0", 5.0), "takes 0-3.3 V"),
            (board.write("i2c1", [1], address=0x50, register=0), "0x50 is reserved"),
            (board.read("i2c1", address=0x21, register=0), "no device acknowledged at 0x21"),
            (board.write("i2c1", [300], address=0x48, register=1), "integers 0-255"),
            (board.read("toaster"), "no device 'toaster'"),
            (board.read("dac0"), "dac0 is a dac output, written, not read: use device_write"),
            (board.read("spi0"), "read it with device_control(action='transfer')"),
            (board.control("status_led", "explode"), "actions: on, off, brightness, blink"),
        ]
        for coro, message in cases:
            with pytest.raises(ToolError) as info:
                await coro
            assert message in str(info.value)
        assert sim.writes == []
        pwm = await board.write("fan", 40)
        assert pwm == {"frequency_hz": 25000.0, "duty_pct": 40.0} and sim.pwm[(0, 0)] == (
            25000.0,
            40.0,
        )
        knob = await board.read("knob")
        assert knob["raw"] == round(0.42 * 4095) and 1.38 < knob["volts"] < 1.39
        assert (await board.control("spi0", "transfer", data=[1, 2, 3]))["received"] == [1, 2, 3]
    finally:
        await board.close()


async def test_a_device_that_times_out_is_a_clear_result() -> None:
    spec = load_board("sim")
    spec = spec.model_copy(
        update={"simulation": {**spec.simulation, "delay_s": {"temperature": 5}}}
    )
    devices = dict(spec.devices)
    devices["temperature"] = devices["temperature"].model_copy(update={"timeout_s": 0.2})
    spec = spec.model_copy(update={"devices": devices})
    board = Board(spec, SimDriver(spec))
    try:
        with pytest.raises(ToolError, match="temperature did not answer within 0.2 s"):
            await board.read("temperature")
        assert (await board.read("knob"))["raw"] > 0  # the board goes on
    finally:
        await board.close()


async def test_devices_that_never_answer_do_not_stall_the_others() -> None:
    """More hung reads than the board has driver threads (a bus that never answers): each
    times out, is abandoned on a daemon thread, and frees its slot, so other devices are
    still read at once, and the hung threads cannot block exit (issue 22 item 8, SPEC C9)."""
    spec = load_board("sim")
    spec = spec.model_copy(
        update={"simulation": {**spec.simulation, "delay_s": {"temperature": 30}}}
    )
    devices = dict(spec.devices)
    devices["temperature"] = devices["temperature"].model_copy(update={"timeout_s": 0.1})
    devices["knob"] = devices["knob"].model_copy(update={"timeout_s": 2.0})
    spec = spec.model_copy(update={"devices": devices})
    board = Board(spec, SimDriver(spec))
    try:
        for _ in range(6):  # the board runs 4 driver calls at once
            with pytest.raises(ToolError, match="temperature did not answer within 0.1 s"):
                await board.read("temperature")
        assert (await board.read("knob"))["raw"] > 0
    finally:
        await board.close()
    hung = [t for t in threading.enumerate() if t.name.startswith("loopact-board")]
    assert hung and all(t.daemon for t in hung)


def test_board_files_and_cli_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="built-in boards: sim"):
        load_board(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: b\ngpio_pins: [1]\ndevices:\n  led: {class: led, pin: 5}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="pin 5 is not in gpio_pins") as whole_board:
        load_board(bad)
    assert f"board file {bad}: Value error, device led" in str(whole_board.value)  # no ": :"
    cfg, _ = load_config(None, env={}, cwd=tmp_path, overrides={"board": {"kind": "linux"}})
    assert cfg.board.kind == "linux"


def test_linux_pwm_and_adc_over_a_sysfs_tree(tmp_path: Path) -> None:
    """The sysfs PWM and IIO drivers against a sysfs-shaped folder (no hardware here)."""
    pwm = tmp_path / "class" / "pwm" / "pwmchip0"
    (pwm / "pwm0").mkdir(parents=True)
    for name in ("period", "duty_cycle", "enable"):
        (pwm / "pwm0" / name).write_text("0", encoding="ascii")
    iio = tmp_path / "bus" / "iio" / "devices" / "iio:device0"
    iio.mkdir(parents=True)
    (iio / "in_voltage0_raw").write_text("2048\n", encoding="ascii")
    driver = LinuxDriver(sysfs_root=tmp_path)
    driver.pwm_set(0, 0, 1000.0, 25.0)
    assert (pwm / "pwm0" / "period").read_text() == "1000000"
    assert (pwm / "pwm0" / "duty_cycle").read_text() == "250000"
    assert driver.pwm_get(0, 0) == (1000.0, 25.0)
    assert driver.adc_read(0) == 2048
    from loopact.devices.driver import DriverError

    with pytest.raises(DriverError, match="no PWM chip"):
        driver.pwm_set(1, 0, 1000.0, 10.0)


class _NoEdges(SimDriver):
    """A driver that cannot watch edges (as Linux without gpiod or /dev/gpiochip0)."""

    def watch_edges(self, pin: int, edge: str, callback: Any) -> None:
        from loopact.errors import DriverError

        raise DriverError("the Linux gpiod driver needs the Python package gpiod")


async def test_an_input_the_driver_cannot_watch_costs_only_its_edge_events(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 19 bad input: one device the driver cannot watch never stops the board (it
    stopped ``loopact run --board linux`` at start, leaking the input node's heartbeat)."""
    spec = load_board("sim")
    board = Board(spec, _NoEdges(spec))
    connector = LocalConnector()
    await connector.start()
    events = BoardEvents(board, connector, "loopact", poll_s=0.02)
    try:
        await events.start()
        assert events.unwatched == {
            "button": "the Linux gpiod driver needs the Python package gpiod"
        }
        assert "no edge events from button: the Linux gpiod driver" in caplog.text
        assert (await board.read("temperature"))["value"] == 24.5  # the rest works
    finally:
        await events.stop()
        await connector.shutdown()
        await board.close()


@pytest.mark.parametrize("kind", ["linux", "none"])
def test_the_board_flag(scripted_server: Any, tmp_path: Path, kind: str) -> None:
    """``loopact run --board linux`` starts on any machine (devices it cannot reach are clear
    results); ``--board none`` offers no device tools."""
    from tests.test_cli import once_args, run_cli

    from loopact.trace import read_trace

    turns: list[dict[str, Any]] = [{"text": "No board."}]
    if kind == "linux":
        turns = [
            {
                "tool_calls": [call("device_list", {}, "l1")],
                "expect": {"tools": ["device_list", "device_info", "device_read"]},
            },
            {"text": "Listed."},
        ]
    server = scripted_server(turns)
    args = once_args(server, tmp_path, "list the devices", "--board", kind, "--no-memory")
    proc = run_cli([*args, "--no-web"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Task was destroyed" not in proc.stderr
    offered = {t["function"]["name"] for t in server.requests[0].body.get("tools") or []}
    if kind == "none":
        assert not {n for n in offered if n.startswith("device_")}, offered
        return
    events = list(read_trace(tmp_path / "t.jsonl"))
    listed = next(e for e in events if e["type"] == "tool_result")
    assert listed["ok"] and "button" in {d["name"] for d in listed["data"]}


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
async def test_a_cancelled_device_call_stays_cancelled_when_the_driver_answers_meanwhile(
    turns: int,
) -> None:
    """A cancellation that arrives as the driver call finishes is never swallowed (it was,
    through asyncio.wait_for before 3.12: the board-events poller then outlived its stop(),
    which hung, and a preempted task would go on after a device call)."""
    import threading

    board = open_board("sim")
    go = threading.Event()
    _, dev = board.device("knob")
    try:
        before = set(threading.enumerate())
        task = asyncio.ensure_future(board.call("knob", dev, lambda: go.wait(5)))
        await asyncio.sleep(0)  # the task starts the driver call and waits for it
        await asyncio.sleep(0)
        (worker,) = [t for t in set(threading.enumerate()) - before if "board" in t.name]
        go.set()
        worker.join(5)  # the driver answered and handed its result to the loop: now cancel
        assert not worker.is_alive()
        for _ in range(turns):  # the result travels through the loop's callbacks meanwhile
            await asyncio.sleep(0)
        if task.cancel():  # not finished yet: it must end cancelled, not with the reading
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            assert task.result() is True
    finally:
        await board.close()


async def test_out_of_range_reads_and_blinks_are_refused_with_the_range_never_clamped(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Audit B finding 9: length 100000000 silently read 32 bytes, blink period_s 0 silently
    blinked at 1 s, address -1 was reported as '0x-1', and "0x50" (as models write it) was
    refused as 'not of type integer'."""
    calls = [
        ("device_read", {"device": "i2c1", "address": 72, "reg": 0, "length": 100000000}),
        ("device_read", {"device": "i2c1", "address": 72, "reg": 0, "length": 0}),
        ("device_read", {"device": "i2c1", "address": -1, "reg": 0}),
        ("device_read", {"device": "i2c1", "address": "0x48", "reg": "0x00", "length": 2}),
        ("device_control", {"device": "status_led", "action": "blink", "period_s": 0}),
        ("device_control", {"device": "status_led", "action": "blink", "count": -1}),
    ]
    server = scripted_server(
        [{"tool_calls": [call(name, args, f"c{i}")]} for i, (name, args) in enumerate(calls)]
        + [{"text": "done"}]
    )
    cfg, _ = load_config(None, env={}, cwd=tmp_path)
    bounds = Bounds(max_rounds=10, max_calls_read_only=10, backoff_base_s=0.01)
    agent, rec = make_agent(server, tmp_path, bounds=bounds)
    async with AsyncExitStack() as stack:
        board = await attach_board(cfg, agent, stack)
        assert board is not None
        sim = _sim(board)
        agent.bus.subscribe(
            lambda e: (
                e.type == "confirm_request"
                and agent.answer_confirmation(e.data["id"], True, "test")
            )
        )
        outcome = await asyncio.wait_for(agent.run_task("read and blink"), 30)
        await agent.close()
        assert outcome.status == "completed"
        results = {e.data["id"]: e.data for e in rec.of("tool_result")}
        assert results["c0"]["error"] == "I2C read length 100000000 out of range (1-32 bytes)"
        assert results["c1"]["error"] == "I2C read length 0 out of range (1-32 bytes)"
        assert results["c2"]["error"] == "I2C address -1 out of range (0x03-0x77)"
        assert results["c3"]["ok"], results["c3"]
        assert results["c3"]["data"]["address"] == "0x48"
        assert len(results["c3"]["data"]["data"]) == 2
        assert results["c4"]["error"] == "refused: blink period 0 s out of range (0.05-60 s)"
        assert "blink count -1 out of range" in results["c5"]["error"]
        assert sim.writes == [] and sim.levels[LED_PIN] == 0 and not board._blinks
