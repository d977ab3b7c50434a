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
from tests.nodes.mqtt.helpers import needs_broker, wait_until
from tests.test_cli import cli_env, run_cli

from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.settings import MqttSettings
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
    """``loopact run`` over ``broker`` with the MQTT text channel on (``mqtt.text_channel``:
    the test's watcher instructs the agent and reads its events there; off by default)."""
    config = tmp_path / "mqtt-text.yaml"
    config.write_text("mqtt:\n  text_channel: true\n", encoding="utf-8")
    return [
        "run",
        "--config",
        str(config),
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
    node.kill()
    removed = await watcher.wait("node_removed", name="add", timeout=5)
    # dropped through its last will, not the 3 s heartbeat timeout (timing: bench/mqtt.py)
    assert removed["reason"] == "the node went offline"

    # restarted: offered again
    def added() -> list[dict[str, Any]]:
        return [e for e in watcher.events if e["type"] == "node_added" and e["name"] == "add"]

    before = len(added())
    again = Proc(
        ["node", str(ADD_TOOL), "--transport", "mqtt", "--broker", mqtt_broker.url], tmp_path, "n2"
    )
    procs.append(again)
    await wait_until(lambda: len(added()) > before, timeout=30, what="the rediscovery")
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
    # the robot's own seewhat is the one offered, with no clash with a built-in one
    assert "already exists in the agent" not in proc.stderr, proc.stderr
    assert any(e["type"] == "node_added" and e["name"] == "seewhat" for e in events)


async def test_a_broker_restart_during_a_task_is_survived_and_traced(
    mqtt_broker: MqttBroker,
    scripted_server: Any,
    tmp_path: Path,
    procs: list[Proc],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Acceptance 4: the broker restarts while a tool call runs; the result arrives once, the
    tool ran once, and the trace shows the link going down and up again."""
    server = scripted_server(
        [
            {"tool_calls": [call("slow_step", {"seconds": 2.0})]},
            {"text": "Stepped."},
        ]
    )
    count = tmp_path / "runs.txt"
    monkeypatch.setenv("SLOW_TOOL_COUNT", str(count))  # inherited by the node process
    trace = tmp_path / "t.jsonl"
    watcher = await Watcher(mqtt_broker).start()
    agent = Proc(
        agent_args(server, mqtt_broker, tmp_path, "--robot", "none", "--trace", str(trace)),
        tmp_path,
        "agent",
    )
    procs.append(agent)
    slow = Path(__file__).parent.parent / "node_files" / "slow_tool.py"
    procs.append(
        Proc(["node", str(slow), "--transport", "mqtt", "--broker", mqtt_broker.url], tmp_path, "n")
    )
    await watcher.wait("node_added", name="slow_step", timeout=60)
    watcher.say("take a slow step")
    await wait_until(lambda: count.exists() and count.read_text(), timeout=30, what="the call")
    await asyncio.to_thread(mqtt_broker.restart)
    result = await watcher.wait("tool_result", name="slow_step", timeout=30)
    assert result["ok"] is True and result["data"] == "stepped for 2 s", result
    await watcher.wait("task_end")
    assert count.read_text() == "run\n"  # ran exactly once
    events = list(read_trace(trace))
    links = [e["state"] for e in events if e["type"] == "mqtt_link" and e["client"] == "nodes"]
    assert links[:3] == ["up", "down", "up"], links  # the first connection is traced too
    await watcher.link.stop()


@pytest.mark.sim
async def test_a_fleet_two_agents_two_simulated_robots_shared_and_addressed_nodes(
    mqtt_broker: MqttBroker,
    scripted_server: Any,
    tmp_path: Path,
    procs: list[Proc],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """X4: two agents (robot_a, robot_b), each with its own simulated robot, on one broker; a
    node addressed to robot_a only and a node shared by both. Each robot moves by its own
    instruction (graded by its own simulator's pose)."""
    log = tmp_path / "fleet.txt"
    monkeypatch.setenv("FLEET_TOOL_LOG", str(log))
    servers = {
        "robot_a": scripted_server(
            [
                {
                    "tool_calls": [
                        call("charger_status", {"robot": "robot_a"}, "c1"),
                        call("add", {"a": 1, "b": 1}, "c2"),
                        call("move_forward", {"distance_m": 1.0}, "c3"),
                    ],
                    "expect": {"tools": ["charger_status", "add", "move_forward"]},
                },
                {"text": "robot_a done."},
            ]
        ),
        "robot_b": scripted_server(
            [
                {
                    "tool_calls": [
                        call("charger_status", {"robot": "robot_b"}, "c1"),
                        call("move_forward", {"distance_m": 0.5}, "c2"),
                    ],
                    "expect": {"tools": ["charger_status", "move_forward"]},
                },
                {"text": "robot_b done."},
            ]
        ),
    }
    nodes_dir = Path(__file__).parent.parent / "node_files"
    url = mqtt_broker.url
    shared = Proc(
        [
            "node",
            str(nodes_dir / "fleet_tool.py"),
            "--transport",
            "mqtt",
            "--broker",
            url,
            "--shared",
        ],
        tmp_path,
        "shared",
    )
    only_a = Proc(
        ["node", str(ADD_TOOL), "--transport", "mqtt", "--broker", url, "--agent-name", "robot_a"],
        tmp_path,
        "only_a",
    )
    procs += [shared, only_a]
    for p in (shared, only_a):
        await wait_until(lambda p=p: "loopact node: serving" in p.output(), timeout=60)

    def run_robot(name: str, text: str) -> subprocess.CompletedProcess[str]:
        work = tmp_path / name
        work.mkdir()
        args = agent_args(servers[name], mqtt_broker, work, "--robot", "sim", "--sim-speed", "4")
        args += ["--agent-name", name, "--once", text, "--trace", str(work / "t.jsonl")]
        return run_cli(args, work, None, 240)

    done_a, done_b = await asyncio.gather(
        asyncio.to_thread(run_robot, "robot_a", "check the dock, add 1 and 1, move 1 m"),
        asyncio.to_thread(run_robot, "robot_b", "check the dock, move half a metre"),
    )
    assert done_a.returncode == 0, done_a.stderr
    assert done_b.returncode == 0, done_b.stderr
    assert (done_a.stdout.strip(), done_b.stdout.strip()) == ("robot_a done.", "robot_b done.")
    offered_b = {t["function"]["name"] for t in servers["robot_b"].requests[0].body["tools"]}
    assert "add" not in offered_b  # addressed to robot_a only
    poses = {}
    for name in ("robot_a", "robot_b"):
        events = list(read_trace(tmp_path / name / "t.jsonl"))
        results = {e["name"]: e for e in events if e["type"] == "tool_result"}
        assert all(r["ok"] for r in results.values()), results
        state = next(e for e in events if e["type"] == "robot_state")
        poses[name] = (state["x_m"], state["y_m"])
    assert abs(poses["robot_a"][0] - 1.0) < 0.05 and abs(poses["robot_b"][0] - 0.5) < 0.05
    assert sorted(log.read_text().split()) == ["robot_a", "robot_b"]


def test_a_wrong_password_stops_the_node_at_start_and_is_never_printed(tmp_path: Path) -> None:
    broker = MqttBroker(tmp_path / "auth", users={"robot": "right-pass"}).start()
    try:
        env = {"LOOPACT_MQTT_USERNAME": "robot", "LOOPACT_MQTT_PASSWORD": "wrong-pass"}
        args = ["node", str(ADD_TOOL), "--transport", "mqtt", "--broker", broker.url]
        proc = run_cli(args, tmp_path, env, 60)
    finally:
        broker.stop()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refused the connection" in proc.stderr and "LOOPACT_MQTT_PASSWORD" in proc.stderr
    assert "LOOPACT_MQTT_USERNAME" in proc.stderr
    assert proc.stderr.count("refused the connection") == 1, proc.stderr  # said once
    assert "wrong-pass" not in proc.stdout + proc.stderr
