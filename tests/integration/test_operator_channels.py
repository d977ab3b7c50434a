"""Issue 41: the operator's emergency stop and drive pad on the terminal, the web console and
MQTT, each through the real command in its own process (SPEC X3, F2, X4).

``loopact run --robot sim`` runs the simulator and its governor in one process; the test is
the operator: it types ``/estop`` and ``/estop reset PROOF`` on the run's stdin, calls the web
console's API over real HTTP (``docs/operator.md``: ``/api/estop``, ``/api/estop/reset``,
``/api/teleop``, ``/api/teleop/release``) and publishes on ``loopact/<agent>/teleop`` on a real
broker. The robot is graded by the simulator's own pose log (``--sim-log``), never by what an
endpoint answers.

The drive pad and the joystick are stimuli sent at 20 Hz, as a held stick sends them; every
wait for an effect is a wait for an observable event with a timeout.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from tests.integration.test_mqtt_cli import Proc
from tests.nodes.mqtt.helpers import needs_broker, wait_until

from loopact.robot.estop import estop_proof
from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.sim

SECRET = "operator-secret-0123456789"
STICK_HZ = 20.0
"""How often a held stick or drive pad sends (the deadman needs one every 0.5 s)."""
DEADMAN_S = 0.5


def _config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "operator.yaml"
    path.write_text(f"robot:\n  estop:\n    reset_token: {SECRET}\n{extra}")
    path.chmod(0o600)
    return path


def _poses(path: Path) -> list[dict[str, Any]]:
    try:
        return list(read_sim_log(path))
    except (OSError, ValueError):
        return []


async def _logged_until(path: Path, wall_s: float) -> list[dict[str, Any]]:
    """The pose log once it holds a sample taken at ``wall_s`` or later."""
    await wait_until(
        lambda: any(p["wall_s"] >= wall_s for p in _poses(path)), 20, f"poses up to {wall_s}"
    )
    return _poses(path)


async def _hold_stick(send: Callable[[], Awaitable[None]], until: Callable[[], bool]) -> float:
    """Send drive commands at :data:`STICK_HZ` until ``until()``; the time of the last one."""
    deadline = time.monotonic() + 60
    while True:
        await send()
        last = time.time()
        if until():
            return last
        assert time.monotonic() < deadline, "the base never moved under the operator's stick"
        await asyncio.sleep(1 / STICK_HZ)  # the stick's send rate: a stimulus, not a wait


def _stopped_after(poses: list[dict[str, Any]], let_go: float) -> tuple[float, float]:
    """(distance driven after ``let_go``, spread of the poses from ``let_go`` + 1 s on)."""
    after = [p for p in poses if p["wall_s"] >= let_go]
    settled = [p for p in after if p["wall_s"] >= let_go + 1.0]
    assert after and settled
    driven = after[-1]["x_m"] - after[0]["x_m"]
    spread = max(p["x_m"] for p in settled) - min(p["x_m"] for p in settled)
    return driven, spread


def _moving(path: Path, beyond_m: float) -> Callable[[], bool]:
    return lambda: any(p["x_m"] > beyond_m for p in _poses(path))


def _web_url(proc: Proc) -> str:
    for line in proc.output().splitlines():
        if "http://localhost:" in line:
            return "http://127.0.0.1:" + line.split("http://localhost:", 1)[1].split()[0]
    return ""


async def test_terminal_estop_and_the_web_consoles_estop_reset_and_drive_pad(
    scripted_server: Any, tmp_path: Path
) -> None:
    poses = tmp_path / "poses.jsonl"
    server = scripted_server([])
    proc = Proc(
        ["run", "--robot", "sim", "--config", str(_config(tmp_path)), "--sim-log", str(poses),
         "--web-port", "0", "--no-memory", "--base-url", server.base_url, "--model", "m",
         "--api-key", "sk-test", "--workspace", str(tmp_path / "ws")],
        tmp_path,
        "run",
    )  # fmt: skip
    try:
        url = await wait_until(lambda: _web_url(proc), 90, "the console's address")
        async with httpx.AsyncClient(base_url=url, timeout=10) as web:
            state = (await web.get("/api/estop")).json()
            assert state["latched"] is False and len(state["nonce"]) >= 16

            # the terminal's /estop latches the same stop the console shows
            assert proc.popen.stdin is not None
            proc.popen.stdin.write(b"/estop\n")
            proc.popen.stdin.flush()
            state = await wait_until(
                lambda: _latched(url), 20, "the latch from the terminal's /estop"
            )
            assert state["source"] == "terminal", state
            refused = (await web.post("/api/teleop", json={"linear_mps": 0.2})).status_code
            assert refused == 409  # no driving while latched

            # a wrong proof is refused and counted; the right one releases and is spent
            nonce = state["nonce"]
            wrong = await web.post(
                "/api/estop/reset", json={"nonce": nonce, "proof": estop_proof("guess" * 4, nonce)}
            )
            assert wrong.status_code == 403 and wrong.json()["released"] is False
            clear = await web.post("/api/estop/reset", json={"nonce": nonce, "token": SECRET})
            assert clear.status_code == 403  # the secret itself never resets
            proof = {"nonce": nonce, "proof": estop_proof(SECRET, nonce), "by": "alice"}
            released = await web.post("/api/estop/reset", json=proof)
            assert released.status_code == 200, released.text
            after = released.json()["state"]
            assert after["latched"] is False and after["nonce"] != nonce
            assert after["resets_refused"] == state["resets_refused"] + 2
            replayed = await web.post("/api/estop/reset", json=proof)
            assert replayed.status_code == 403 and replayed.json()["released"] is False
            assert (await web.get("/api/estop")).json()["resets_refused"] == after[
                "resets_refused"
            ] + 1

            # the console's own E-stop latches, and a reset needs the new nonce
            latched = (await web.post("/api/estop", json={"reason": "a child ran in"})).json()
            assert latched["latched"] is True and latched["source"] == "web"
            assert "a child ran in" in latched["reason"]
            # released this time on the terminal: /estop reset PROOF
            proof_line = f"/estop reset {estop_proof(SECRET, latched['nonce'])}\n"
            proc.popen.stdin.write(proof_line.encode())
            proc.popen.stdin.flush()
            await wait_until(lambda: not _latched(url), 20, "the terminal's reset")
            assert (await web.get("/api/estop")).json()["nonce"] != latched["nonce"]

            async def pad() -> None:
                sent = await web.post("/api/teleop", json={"linear_mps": 0.2, "by": "alice"})
                assert sent.status_code == 200, sent.text

            # the drive pad: held, the base drives; let go, the deadman stops it
            let_go = await _hold_stick(pad, _moving(poses, 0.05))
            driven, spread = _stopped_after(await _logged_until(poses, let_go + 1.5), let_go)
            assert driven < 0.2 * (DEADMAN_S + 0.5), driven  # stopped after the deadman
            assert spread < 0.005, spread  # and stays stopped
            assert (await web.get("/api/estop")).json()["operator"] == {}  # handed back

            # held again, then released at once: the base stops without the deadman
            start_x = _poses(poses)[-1]["x_m"]
            await _hold_stick(pad, _moving(poses, start_x + 0.05))
            released_at = time.time()
            answer = (await web.post("/api/teleop/release")).json()
            assert answer["released"] is True and answer["operator"] == {}
            driven, spread = _stopped_after(
                await _logged_until(poses, released_at + 1.5), released_at
            )
            assert driven < 0.2 * DEADMAN_S, driven
            assert spread < 0.005, spread
    finally:
        proc.stop()


def _latched(url: str) -> dict[str, Any] | None:
    state: dict[str, Any] = httpx.get(url + "/api/estop", timeout=5).json()
    return state if state["latched"] else None


@needs_broker
async def test_the_mqtt_teleop_topic_drives_and_the_deadman_stops(
    mqtt_broker: Any, scripted_server: Any, tmp_path: Path
) -> None:
    from loopact.nodes.mqtt.link import MqttLink
    from loopact.nodes.mqtt.settings import MqttSettings

    poses = tmp_path / "poses.jsonl"
    server = scripted_server([])
    config = _config(tmp_path, "mqtt:\n  teleop: true\n")
    proc = Proc(
        ["run", "--robot", "sim", "--transport", "mqtt", "--broker", mqtt_broker.url,
         "--agent-name", "rover", "--config", str(config), "--sim-log", str(poses), "--no-web",
         "--no-memory", "--base-url", server.base_url, "--model", "m", "--api-key", "sk-test",
         "--workspace", str(tmp_path / "ws")],
        tmp_path,
        "run",
    )  # fmt: skip
    link = MqttLink(MqttSettings(broker=mqtt_broker.url), "operator")
    await link.start(require=True)
    states: list[dict[str, Any]] = []
    sub = link.subscribe(
        "loopact/rover/estop/state", lambda _t, p, _r: states.append(json.loads(p)), depth=100
    )
    await link.acked(sub, 5)
    try:
        await wait_until(lambda: states, 90, "the robot's e-stop state on the broker")
        command = json.dumps({"linear_mps": 0.2, "angular_dps": 0, "by": "joystick"}).encode()

        async def stick() -> None:
            link.publish("loopact/rover/teleop", command, 1)

        let_go = await _hold_stick(stick, _moving(poses, 0.05))
        await wait_until(
            lambda: any(s.get("operator", {}).get("base") for s in states), 10, "the takeover"
        )
        driven, spread = _stopped_after(await _logged_until(poses, let_go + 1.5), let_go)
        assert driven < 0.2 * (DEADMAN_S + 0.5), driven
        assert spread < 0.005, spread
        await wait_until(lambda: states[-1].get("operator") == {}, 10, "the hand-back")
    finally:
        await link.stop()
        proc.stop()
