"""``loopact run`` stops cleanly on SIGTERM as it does on Ctrl-C (a newcomer's audit).

``docker stop`` and systemd send SIGTERM; before, a running ``--once`` died at once with exit
code 143, no message and a trace cut after a ``tool_progress``: no ``task_end``, and the
motion's stop path never ran. Now both signals preempt the task like Stop (SPEC A6): the
motion is cancelled, the trace ends the task, and the exit code says which signal it was.
Real CLI in its own process, real simulated robot, the real OpenAI provider on the scripted
model server.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.test_cli import cli_env


def _events(trace: Path) -> list[dict[str, Any]]:
    if not trace.exists():
        return []
    out = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # the line being written
            break
    return out


@pytest.mark.sim
@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_signal_preempts_the_running_motion_and_ends_the_task_in_the_trace(
    scripted_server: Any, tmp_path: Path, sig: signal.Signals, code: int, said: str
) -> None:
    server = scripted_server([{"tool_calls": [call("move_forward", {"distance_m": 2.5}, "m1")]}])
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopact", "run", "--robot", "sim", "--once", "drive forward",
         "--base-url", server.base_url, "--model", "m", "--no-web", "--trace", str(trace),
         "--workspace", str(tmp_path / "ws")],
        cwd=tmp_path, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any(e["type"] == "tool_progress" for e in _events(trace)):
                break
            time.sleep(0.1)  # polling a file another process writes; bounded above
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == code, (out, err)
    assert said in err and "Traceback" not in out + err, (out, err)
    assert "Stopped" in err and "loopact: preempted" not in err, err  # said once
    events = _events(trace)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["name"] == "move_forward" and result["ok"] is False, result
    ends = [e for e in events if e["type"] == "task_end"]
    assert [e["status"] for e in ends] == ["preempted"], events[-4:]
    assert len(server.requests) == 1  # nothing asked the model after the signal
