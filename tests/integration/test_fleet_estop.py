"""Issue 41, acceptance 3: one fleet e-stop message stops three simulated robots on one broker.

Three ``loopact run --robot sim --transport mqtt`` processes (each its own MuJoCo robot, its
governor and its agent, ``robot_0`` .. ``robot_2``) on one mosquitto broker; each drives on a
scripted ``drive`` call; the test publishes one message on ``loopact/_fleet/estop``. Graded
by each simulator's own pose log: every robot stops, and each robot's e-stop state (retained
on ``loopact/<agent>/estop/state``) says the fleet latched it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.integration.test_mqtt_cli import Proc
from tests.nodes.mqtt.helpers import needs_broker, wait_until

from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.sim.simlog import read_sim_log

pytestmark = [needs_broker, pytest.mark.sim]

ROBOTS = 3


@pytest.fixture
def robots() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def _poses(path: Path) -> list[dict[str, Any]]:
    try:
        return list(read_sim_log(path))
    except (OSError, ValueError):
        return []


async def test_one_fleet_message_stops_every_robot_on_the_broker(
    mqtt_broker: Any, scripted_server: Any, tmp_path: Path, robots: list[Proc]
) -> None:
    drive = call("drive", {"linear_mps": 0.25, "angular_dps": 0, "duration_s": 25})
    server = scripted_server([{"tool_calls": [drive]}] * ROBOTS + [{"text": "Stopped."}] * ROBOTS)
    names = [f"robot_{i}" for i in range(ROBOTS)]
    for name in names:
        proc = Proc(
            ["run", "--robot", "sim", "--transport", "mqtt", "--broker", mqtt_broker.url,
             "--agent-name", name, "--sim-log", str(tmp_path / f"{name}.jsonl"), "--base-url",
             server.base_url, "--model", "m", "--api-key", "sk-test", "--no-web",
             "--no-memory", "--workspace", str(tmp_path / f"ws_{name}")],
            tmp_path,
            name,
        )  # fmt: skip
        assert proc.popen.stdin is not None
        proc.popen.stdin.write(b"drive forward slowly\n")
        proc.popen.stdin.flush()
        robots.append(proc)
    link = MqttLink(MqttSettings(broker=mqtt_broker.url), "fleet_manager")
    await link.start(require=True)
    states: dict[str, dict[str, Any]] = {}

    def on_state(topic: str, payload: bytes, _retained: bool) -> None:
        states[topic.split("/")[1]] = json.loads(payload)

    sub = link.subscribe("loopact/+/estop/state", on_state, depth=1000)
    await link.acked(sub, 5)
    try:
        # every robot drives (its own simulator's truth), then one message for the fleet
        for name in names:
            path = tmp_path / f"{name}.jsonl"
            await wait_until(
                lambda p=path: any(line["x_m"] > 0.05 for line in _poses(p)),  # type: ignore[misc]
                timeout=120,
                what=f"{name} driving",
            )
        sent = time.time()
        link.publish("loopact/_fleet/estop", b"stop", 1)
        await wait_until(
            lambda: all(states.get(n, {}).get("latched") for n in names), 20, "every latch"
        )
        for name in names:
            assert states[name]["source"].startswith("mqtt fleet"), states[name]
        # each drive ended on the e-stop and its agent answered (the script is used up)
        await wait_until(lambda: len(server.requests) >= 2 * ROBOTS, 30, "every agent's reply")
        for request in server.requests[ROBOTS:]:
            result = str(request.body["messages"][-1]["content"])
            assert "emergency_stop" in result, result
        for name in names:  # each simulator logged its rest after braking, before it stops
            path = tmp_path / f"{name}.jsonl"
            await wait_until(
                lambda p=path: any(line["wall_s"] >= sent + 0.9 for line in _poses(p)),  # type: ignore[misc]
                timeout=20,
                what=f"{name} at rest",
            )
    finally:
        await link.stop()
        for proc in robots:
            proc.stop()
    for name in names:
        lines = _poses(tmp_path / f"{name}.jsonl")
        after = [p for p in lines if p["wall_s"] >= sent]
        assert after, name
        settled = [p for p in after if p["wall_s"] >= sent + 0.6]  # the base brakes first
        assert settled, name
        # stopped: no further motion once it braked, and it had driven before
        assert max(p["x_m"] for p in settled) - min(p["x_m"] for p in settled) < 0.005, name
        assert after[0]["x_m"] > 0.05 and settled[-1]["x_m"] - after[0]["x_m"] < 0.1, name
