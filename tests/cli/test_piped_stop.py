"""A stop word on piped input stops the running motion at once, as ``/stop`` does (README).

A newcomer's audit: piped lines run as a script, each waiting for the task before it, and a
plain "stop" (or "停") waited too, so the robot drove its whole 2.5 m before the stop was read;
only ``/stop`` skipped the wait. Real CLI in its own process, real simulated robot, the real
OpenAI provider on the scripted model server; graded by the simulator's pose in the trace.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.test_cli import cli_env
from tests.test_signals import _events

DISTANCE_M = 2.5


def _wait_for(trace: Path, proc: subprocess.Popen[str], event_type: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        events = _events(trace)
        if any(e["type"] == event_type for e in events):
            return events
        time.sleep(0.1)  # polling a file another process writes; bounded above
    pytest.fail(f"no {event_type} in the trace: {proc.poll()=}")


@pytest.mark.sim
@pytest.mark.parametrize("word", ["stop", "停", "Stop!", "/stop"])
def test_a_piped_stop_word_stops_the_motion_at_once(
    scripted_server: Any, tmp_path: Path, word: str
) -> None:
    server = scripted_server(
        [{"tool_calls": [call("move_forward", {"distance_m": DISTANCE_M}, "m1")]}]
    )
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopact", "run", "--robot", "sim", "--base-url",
         server.base_url, "--model", "m", "--no-web", "--no-memory", "--trace", str(trace),
         "--workspace", str(tmp_path / "ws")],
        cwd=tmp_path, env=cli_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    try:
        proc.stdin.write("drive forward\n")
        proc.stdin.flush()
        _wait_for(trace, proc, "tool_progress")
        proc.stdin.write(f"{word}\n")
        proc.stdin.flush()
        events = _wait_for(trace, proc, "tool_result")
        proc.stdin.write("/quit\n")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, (out, err)
    events = _events(trace)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["name"] == "move_forward" and result["ok"] is False, result
    stops = [e for e in events if e["type"] == "stop"]
    assert [e["source"] for e in stops] == ["terminal"], events[-4:]
    assert [e["status"] for e in events if e["type"] == "task_end"] == ["preempted"], events[-4:]
    x_m = [e["x_m"] for e in events if e["type"] == "robot_state"][-1]
    assert x_m < DISTANCE_M - 0.5, x_m  # ground truth: the robot stopped well short
    assert len(server.requests) == 1  # a stop goes straight to the stop path, not the model
