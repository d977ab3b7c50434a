"""Issue 15 acceptance 3 with the real local brain (no model endpoint): "what do you see?" is
answered with the objects actually in view, checked against the world description, and "follow
the purple line" starts follow_line."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.llm.local.test_brain import _local_ready

from loopact.sim.describe import describe_world
from loopact.sim.groundtruth import object_bbox
from loopact.sim.simlog import read_sim_log

pytestmark = [
    pytest.mark.sim,
    pytest.mark.local_model,
    pytest.mark.skipif(_local_ready() is not None, reason=str(_local_ready())),
]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LOOPACT_API_KEY", "OPENAI_API_KEY", "LOOPACT_BASE_URL", "LOOPACT_MODEL")
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg-data")
    return env


def _cmd(text: str, tmp_path: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "loopact", "run", "--once", text, "--robot", "sim"),
        *("--trace", str(tmp_path / "t.jsonl"), "--sim-log", str(tmp_path / "sim.jsonl")),
        *("--yes", "--no-web", "--no-memory"),
    ]


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "t.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.timeout(600)
def test_what_do_you_see_names_the_objects_really_in_view(tmp_path: Path) -> None:
    proc = subprocess.run(
        _cmd("what do you see?", tmp_path),
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert proc.returncode == 0, proc.stderr
    events = _events(tmp_path)
    calls = [e["name"] for e in events if e["type"] == "tool_call"]
    assert "seewhat" in calls, calls
    sample = list(read_sim_log(tmp_path / "sim.jsonl"))[-1]
    pose = (sample["x_m"], sample["y_m"], math.radians(sample["yaw_deg"]))
    head = (math.radians(sample["head"]["pan_deg"]), math.radians(sample["head"]["tilt_deg"]))
    in_view, out_of_view = set(), set()
    for obj in describe_world()["objects"]:
        box = object_bbox(obj, pose, head, 640, 480)
        big = box is not None and (box[2] - box[0]) * (box[3] - box[1]) > 200
        (in_view if big else out_of_view).add(obj["colour"])
    reply = proc.stdout.lower()
    assert in_view, "the start view shows objects"
    assert any(c in reply for c in in_view), (reply, in_view)
    assert not any(c in reply for c in out_of_view - in_view), (reply, out_of_view)


@pytest.mark.timeout(600)
def test_follow_the_purple_line_starts_follow_line(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _cmd("follow the purple line", tmp_path),
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 500
        started = None
        while started is None and time.monotonic() < deadline and proc.poll() is None:
            calls = [e for e in _events(tmp_path) if e["type"] == "tool_call"]
            started = next((c for c in calls if c["name"] == "follow_line"), None)
            if started is None:
                time.sleep(0.5)  # polling a file another process writes; bounded above
        assert started is not None, (proc.poll(), _events(tmp_path)[-3:])
        assert started["arguments"].get("color", "purple") == "purple"
        # the robot really drives: the ground-truth log shows it moving towards the line
        while time.monotonic() < deadline and proc.poll() is None:
            samples = list(read_sim_log(tmp_path / "sim.jsonl"))
            if samples and math.hypot(samples[-1]["x_m"], samples[-1]["y_m"]) > 0.2:
                break
            time.sleep(0.5)
        samples = list(read_sim_log(tmp_path / "sim.jsonl"))
        assert math.hypot(samples[-1]["x_m"], samples[-1]["y_m"]) > 0.2
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
