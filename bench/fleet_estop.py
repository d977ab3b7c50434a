"""The MQTT fleet emergency stop (issue 41): one message on ``loopact/_fleet/estop``, how long
until every robot on the broker is at zero twist (target: 3 robots within 200 ms, p99).

Three ``loopact run --robot sim --transport mqtt`` processes (``robot_0`` .. ``robot_2``, each
its own MuJoCo simulator, safety governor and agent) on one mosquitto broker on a free
loopback port. Each round, this process drives all three through their teleop topic
(``mqtt.teleop: true``, a 20 Hz stick), publishes one ``stop`` on the fleet topic, and reads
in each robot's trace (``--trace``) the ``governor`` event ``emergency_stop``, which the
governor emits right after it sent the base its zero twist (``estop_rules.emergency_stop``):
its wall-clock stamp minus the publish time is that robot's time to zero twist (one machine,
one clock). The fleet's figure is the slowest of the three. Then each robot is reset on its own
topic with the operator's proof over the nonce it published, and the next round begins.

Baseline, measured in the same run: the broker's own hop (publish -> delivery to a subscriber
on this process's second client), so the ratio shows what loopact adds.

Usage: .venv/bin/python bench/fleet_estop.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from discovery import pct  # noqa: E402

from loopact._compat import wait_within  # noqa: E402
from loopact.nodes.mqtt.link import MqttLink  # noqa: E402
from loopact.nodes.mqtt.settings import MqttSettings  # noqa: E402
from loopact.robot.estop import estop_proof  # noqa: E402
from loopact.testing.mqtt_broker import MqttBroker  # noqa: E402
from loopact.trace import read_trace  # noqa: E402

ROBOTS = 3
SECRET = "bench-operator-secret-0123456789"
TARGET_MS = 200.0


async def wait_for(pred: Any, timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)
    return value


def summary(name: str, ms: list[float], target: float | None = None) -> str:
    ms = sorted(ms)
    line = f"{name}: p50 {pct(ms, 0.5):.1f} ms, p99 {pct(ms, 0.99):.1f} ms, max {ms[-1]:.1f} ms"
    if target is not None:
        verdict = "meets" if pct(ms, 0.99) <= target else "MISSES"
        line += f" (n={len(ms)}; target <= {target:.0f} ms: {verdict})"
    return line


def latches(trace: Path) -> list[float]:
    if not trace.exists():
        return []
    try:
        events = list(read_trace(trace))
    except (OSError, ValueError):
        return []
    return [
        e["ts"] for e in events if e["type"] == "governor" and e["decision"] == "emergency_stop"
    ]


def new_latches(work: Path, names: list[str], before: dict[str, int]) -> list[float] | None:
    """The stamp of each robot's first latch after ``before`` (counts), once all have one."""
    found = {n: latches(work / f"{n}.jsonl") for n in names}
    if any(len(found[n]) <= before[n] for n in names):
        return None
    return [found[n][before[n]] for n in names]


async def broker_hop(link: MqttLink, n: int = 200) -> list[float]:
    """ms from publish to delivery on this process's own subscription (the baseline)."""
    got: asyncio.Queue[float] = asyncio.Queue()
    sub = link.subscribe("bench/hop", lambda _t, _p, _r: got.put_nowait(time.perf_counter()))
    await link.acked(sub, 5)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        link.publish("bench/hop", b"x", 1)
        out.append((await wait_within(got.get(), 5) - t0) * 1000)
    return out


async def bench(work: Path, rounds: int) -> None:
    broker = MqttBroker(work / "broker").start()
    config = work / "robot.yaml"
    config.write_text(f"robot:\n  estop:\n    reset_token: {SECRET}\nmqtt:\n  teleop: true\n")
    config.chmod(0o600)
    names = [f"robot_{i}" for i in range(ROBOTS)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = []
    for name in names:
        args = ["run", "--robot", "sim", "--transport", "mqtt", "--broker", broker.url]
        args += ["--agent-name", name, "--config", str(config), "--trace", f"{name}.jsonl"]
        args += ["--no-web", "--no-memory", "--base-url", "http://127.0.0.1:9", "--model", "m"]
        args += ["--api-key", "unused", "--workspace", str(work / f"ws_{name}")]
        log = (work / f"{name}.log").open("w")
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "loopact",
                *args,
                cwd=work,
                env=env,
                stdin=asyncio.subprocess.PIPE,
                stdout=log,
                stderr=log,
            )  # fmt: skip
        )
    link = MqttLink(MqttSettings(broker=broker.url), "fleet_bench")
    await link.start(require=True)
    states: dict[str, dict[str, Any]] = {}

    def on_state(topic: str, payload: bytes, _retained: bool) -> None:
        states[topic.split("/")[1]] = json.loads(payload)

    await link.acked(link.subscribe("loopact/+/estop/state", on_state, depth=1000), 5)
    try:
        await wait_for(lambda: all(n in states for n in names), 180, "every robot up")
        hop = await broker_hop(link)
        fleet_ms: list[float] = []
        each_ms: list[float] = []
        for r in range(rounds):
            before = {n: len(latches(work / f"{n}.jsonl")) for n in names}
            stick = asyncio.ensure_future(drive(link, names))
            await wait_for(
                lambda: all(states[n].get("operator", {}).get("base") for n in names),
                30,
                "every robot taken over by the stick",
            )
            sent = time.time()
            link.publish("loopact/_fleet/estop", b"stop", 1)
            await wait_for(lambda: all(states[n]["latched"] for n in names), 10, "every latch")
            stick.cancel()
            stamps = await wait_for(
                lambda b=before: new_latches(work, names, b),  # type: ignore[misc]
                10,
                "every governor's emergency_stop in its trace",
            )
            ms = [(s - sent) * 1000 for s in stamps]
            fleet_ms.append(max(ms))
            each_ms.extend(ms)
            for n in names:  # each robot reset on its own topic with a proof of its nonce
                nonce = states[n]["nonce"]
                reset = {"command": "reset", "nonce": nonce, "proof": estop_proof(SECRET, nonce)}
                link.publish(f"loopact/{n}/estop", json.dumps({**reset, "by": "bench"}), 1)
            await wait_for(lambda: not any(states[n]["latched"] for n in names), 10, "resets")
            print(f"round {r + 1}: {', '.join(f'{m:.1f}' for m in ms)} ms", flush=True)
        print(summary("broker hop (baseline)", hop))
        print(summary("each robot at zero twist", each_ms))
        print(summary(f"fleet ({ROBOTS} robots) at zero twist", fleet_ms, TARGET_MS))
        print(f"fleet p50 / broker hop p50: {pct(fleet_ms, 0.5) / pct(hop, 0.5):.1f}x")
    finally:
        await link.stop()
        for p in procs:
            if p.returncode is None:
                p.terminate()
        for p in procs:
            await wait_within(p.wait(), 30)
        broker.stop()


async def drive(link: MqttLink, names: list[str]) -> None:
    """The operator's stick on every robot's teleop topic at 20 Hz, until cancelled."""
    command = json.dumps({"linear_mps": 0.2, "angular_dps": 0, "by": "bench"}).encode()
    while True:
        for n in names:
            link.publish(f"loopact/{n}/teleop", command, 0)
        await asyncio.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="loopact-fleet-estop-") as tmp:
        asyncio.run(bench(Path(tmp), a.rounds))


if __name__ == "__main__":
    main()
