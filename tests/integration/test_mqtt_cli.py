"""Issue 17 acceptance through the real commands over a real broker (SPEC C2, C4, X4).

``loopact run --transport mqtt`` (agent), ``loopact node FILE --transport mqtt`` (a user tool)
and the broker each run in their own process; the model is the scripted server over HTTP; the
test drives the agent through its MQTT text channel and watches its events there.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.nodes.mqtt_helpers import needs_broker, wait_until
from tests.test_cli import cli_env, run_cli

from loopact.nodes.mqtt_link import MqttLink, MqttSettings
from loopact.testing.mqtt_broker import MqttBroker
from loopact.trace import read_trace

pytestmark = needs_broker

ADD_TOOL = Path(__file__).parent.parent / "node_files" / "add_tool.py"


class Proc:
    """A ``loopact`` child process with its output in a log file."""

    def __init__(self, args: list[str], cwd: Path, log: str) -> None:
        self.log = cwd / f"{log}.log"
        self._fh = self.log.open("w")
        env = {**cli_env(cwd), "PYTHONUNBUFFERED": "1"}
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "loopact", *args],
            cwd=cwd,
            env=env,
            stdout=self._fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGINT)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.popen.stdin is not None:
            self.popen.stdin.close()
        self._fh.close()


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in reversed(started):
        p.stop()


class Watcher:
    """An MQTT client in the test: the agent's events (text_output) and any raw topic."""

    def __init__(self, broker: MqttBroker) -> None:
        self.link = MqttLink(MqttSettings(broker=broker.url), "test-watcher")
        self.events: list[dict[str, Any]] = []
        self.raw: list[tuple[str, bytes]] = []

    async def start(self, agent: str = "loopact", raw: str | None = None) -> Watcher:
        await self.link.start(require=True)
        sub = self.link.subscribe(
            f"loopact/{agent}/text_output",
            lambda t, p, r: self.events.append({**json.loads(p), "_t": time.monotonic()}),
            depth=10_000,
        )
        await self.link.acked(sub, 5)
        if raw:
            rsub = self.link.subscribe(raw, lambda t, p, r: self.raw.append((t, p)), depth=1000)
            await self.link.acked(rsub, 5)
        return self

    def find(self, type_: str, **fields: Any) -> dict[str, Any] | None:
        for e in self.events:
            if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()):
                return e
        return None

    async def wait(self, type_: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        found = await wait_until(
            lambda: self.find(type_, **fields), timeout=timeout, what=f"{type_} {fields}"
        )
        assert isinstance(found, dict)
        return found

    def say(self, text: str, agent: str = "loopact") -> None:
        self.link.publish(f"loopact/{agent}/text_input", text.encode())


def agent_args(server: Any, broker: MqttBroker, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--transport",
        "mqtt",
        "--broker",
        broker.url,
        "--base-url",
        server.base_url,
        "--model",
        "scripted",
        "--api-key",
        "sk-test",
        "--yes",
        "--no-web",
        "--no-memory",
        "--workspace",
        str(tmp_path / "ws"),
        *extra,
    ]


async def test_the_ros2_tool_file_is_offered_called_and_dropped_over_mqtt(
    mqtt_broker: MqttBroker, scripted_server: Any, tmp_path: Path, procs: list[Proc]
) -> None:
    """Acceptance 1: the ROS 2 tests' ``add`` file, over MQTT; SIGKILL drops it within 1 s."""
    server = scripted_server(
        [
            {"tool_calls": [call("add", {"a": 2, "b": 40})], "expect": {"tools": ["add"]}},
            {"text": "It is 42."},
        ]
    )
    watcher = await Watcher(mqtt_broker).start()
    procs.append(Proc(agent_args(server, mqtt_broker, tmp_path, "--robot", "none"), tmp_path, "a"))
    await watcher.wait("node_added", name="system_status", timeout=60)
    node = Proc(
        ["node", str(ADD_TOOL), "--transport", "mqtt", "--broker", mqtt_broker.url], tmp_path, "n"
    )
    procs.append(node)
    await watcher.wait("node_added", name="add", timeout=30)
    watcher.say("what is 2 + 40?")
    result = await watcher.wait("tool_result", name="add")
    assert result["ok"] is True and result["data"] == 42
    await watcher.wait("task_end")
    assert "42" in str(server.requests[1].body["messages"][-1]["content"])
    killed_at = time.monotonic()
    node.kill()
    removed = await watcher.wait("node_removed", name="add", timeout=5)
    assert removed["_t"] - killed_at < 1.0, "a killed node must be dropped within 1 s"
    assert removed["reason"] == "the node went offline"

    # restarted: back within a second of its start
    def added() -> list[dict[str, Any]]:
        return [e for e in watcher.events if e["type"] == "node_added" and e["name"] == "add"]

    before = len(added())
    again = Proc(
        ["node", str(ADD_TOOL), "--transport", "mqtt", "--broker", mqtt_broker.url], tmp_path, "n2"
    )
    procs.append(again)
    await wait_until(lambda: "serving add" in again.output(), timeout=30, what="the node start")
    serving_seen = time.monotonic()
    await wait_until(lambda: len(added()) > before, timeout=5, what="the rediscovery")
    assert added()[-1]["_t"] - serving_seen < 1.0
    await watcher.link.stop()


@pytest.mark.sim
def test_once_drives_the_simulated_robot_through_tools_served_over_mqtt(
    mqtt_broker: MqttBroker, scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 2: ``--robot sim --transport mqtt --once "move forward one meter"``."""
    server = scripted_server(
        [
            {
                "tool_calls": [call("move_forward", {"distance_m": 1.0})],
                "expect": {"tools": ["move_forward", "seewhat", "mqtt_publish"]},
            },
            {"text": "Moved one metre."},
        ]
    )
    trace = tmp_path / "t.jsonl"
    seen: list[str] = []

    async def watch_and_run() -> subprocess.CompletedProcess[str]:
        link = MqttLink(MqttSettings(broker=mqtt_broker.url), "test-spy")
        await link.start(require=True)
        sub = link.subscribe(
            "loopact/loopact/output/move_forward/+", lambda t, p, r: seen.append(t), depth=100
        )
        await link.acked(sub, 5)
        args = agent_args(server, mqtt_broker, tmp_path, "--robot", "sim", "--sim-speed", "4")
        args += ["--once", "move forward one meter", "--trace", str(trace)]
        proc = await asyncio.to_thread(run_cli, args, tmp_path, None, 180)
        await link.stop()
        return proc

    proc = asyncio.run(watch_and_run())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Moved one metre."
    events = list(read_trace(trace))
    result = next(e for e in events if e["type"] == "tool_result" and e["name"] == "move_forward")
    assert result["ok"] is True, result
    state = next(e for e in events if e["type"] == "robot_state")
    assert abs(state["x_m"] - 1.0) < 0.05 and abs(state["y_m"]) < 0.05
    # the call went over the broker: request, accepted and done on the tool's topics
    assert "loopact/loopact/output/move_forward/request" in seen
    assert "loopact/loopact/output/move_forward/response" in seen
