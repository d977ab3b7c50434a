"""The simulated robot through the real command (issue 3 acceptance 3 and 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from tests.agent.helpers import call
from tests.test_cli import run_cli

from loopact.trace import read_trace

pytestmark = pytest.mark.sim


def test_once_on_the_sim_ends_with_robot_state(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 0.5})]},
            {"text": "Moved half a metre."},
        ]
    )
    proc = run_cli(
        [
            "run",
            "--robot",
            "sim",
            "--once",
            "move forward half a meter",
            "--trace",
            str(tmp_path / "t.jsonl"),
            "--yes",
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--workspace",
            str(tmp_path / "ws"),
            "--sim-speed",
            "4",
        ],
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Moved half a metre."
    events = list(read_trace(tmp_path / "t.jsonl"))
    assert [e["type"] for e in events][-2:] == ["robot_state", "task_end"]
    state = events[-2]
    assert state["frame"] == "odom" and abs(state["x_m"] - 0.5) < 0.05
    # the robot's tools were offered to the model
    tools = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert {"move_forward", "turn_left", "navigation", "seewhat", "detect_objects"} <= set(tools)


def test_snapshot_writes_camera_and_topdown_pngs(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    proc = run_cli(["sim", "--snapshot", str(out)], tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["camera.png", "map.png", "topdown.png"]
    top = np.asarray(Image.open(out / "topdown.png").convert("HSV"))
    hue, sat = top[..., 0].astype(int), top[..., 1]
    saturated = sat > 120
    # red, green, blue objects and the purple line are all visible from above
    for lo, hi in ((0, 8), (70, 100), (150, 175), (190, 215)):
        assert np.count_nonzero(saturated & (hue >= lo) & (hue <= hi)) > 30, (lo, hi)
    cam = np.asarray(Image.open(out / "camera.png").convert("RGB"))
    assert cam.shape == (480, 640, 3) and cam.std() > 10
