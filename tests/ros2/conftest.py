"""Real ROS 2 in separate processes (SPEC C4, D1, X3, F3).

Every test run gets its own ``ROS_DOMAIN_ID`` (from the pid, 1..100; the workers of one
``pytest -n N`` run never share one) and localhost-only discovery, so parallel runs on one
machine do not see each other. Skipped when rclpy or the
loopact_interfaces package is missing (``make ros2`` installs both).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopact.nodes.ros2.connector import Ros2Connector, ros_available

if not ros_available():  # pragma: no cover - depends on the machine
    pytest.skip(
        "ROS 2 (rclpy + loopact_interfaces) not installed: run `make ros2`",
        allow_module_level=True,
    )


def _domain_id() -> int:
    """1..100 from the pid, a different residue per pytest-xdist worker of this run."""
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    return 1 + (os.getpid() % (100 // workers)) * workers + worker % workers


DOMAIN_ID = _domain_id()


@pytest.fixture(scope="session")
def ros_env() -> dict[str, str]:
    """Environment for this run's ROS 2 processes (also applied to the test process)."""
    env = {
        "ROS_DOMAIN_ID": str(DOMAIN_ID),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA",
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)
    return {**os.environ, **env}


class Proc:
    """A child process with its output in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._fh = log.open("w")
        self.popen = subprocess.Popen(
            [sys.executable, *args],
            env=env,
            stdout=self._fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_output(self, text: str, timeout: float = 40.0) -> None:
        end = time.monotonic() + timeout
        while text not in self.output():
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.log.name} exited early:\n{self.output()[-3000:]}")
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} not printed in time:\n{self.output()[-3000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: a crash, no clean shutdown."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGINT)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.popen.stdin is not None:
            self.popen.stdin.close()
        self._fh.close()


@pytest.fixture
def spawn(ros_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    """``spawn("node", "file.py", log="node")``: start ``loopact ARGS`` in its own process."""
    procs: list[Proc] = []

    def start(*args: str, log: str) -> Proc:
        proc = Proc(["-m", "loopact.cli", *args], ros_env, tmp_path / f"{log}.log")
        procs.append(proc)
        return proc

    yield start
    for p in reversed(procs):
        p.stop()


@pytest.fixture(scope="module")
def sim_proc(ros_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """``loopact sim --ros2`` with the base-side governor, shared by a module's tests."""
    log = tmp_path_factory.mktemp("sim") / "sim.log"
    proc = Proc(["-m", "loopact.cli", "sim", "--ros2", "--camera-hz", "10"], ros_env, log)
    try:
        proc.wait_output("ROS 2 robot up", timeout=60)
        yield proc
    finally:
        proc.stop()


class Topic:
    """Collects one topic's messages in the test process; waits are bounded."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def __call__(self, item: Any) -> None:
        self.items.append(item)

    async def wait_for(self, pred: Callable[[Any], bool], timeout: float = 20.0) -> Any:
        end = time.monotonic() + timeout
        seen = 0
        while True:
            for item in self.items[seen:]:
                if pred(item):
                    return item
            seen = len(self.items)
            if time.monotonic() > end:
                raise AssertionError(f"no matching message in {timeout} s ({seen} received)")
            await asyncio.sleep(0.02)


@pytest.fixture
async def ros(ros_env: dict[str, str]) -> Any:
    """A started Ros2Connector in the test process."""
    conn = Ros2Connector(f"loopact_test_{os.getpid()}")
    await conn.start()
    yield conn
    await conn.shutdown()


def events_topic(conn: Ros2Connector, agent: str = "loopact") -> Topic:
    """Subscribe to ``/<agent>/text_output`` and parse each JSON event."""
    topic = Topic()
    conn.subscribe(
        f"/{agent}/text_output", "string", lambda s: topic(json.loads(str(s))), depth=200
    )
    return topic
