"""Issue 40 acceptance 1 through the real commands: ``loopact run --robot sim --scenario flat
--once "go to the bedroom" --yes`` with a recorded script ends in the bedroom by ground truth
without touching anything, and ``loopact sim --snapshot`` draws the path on the map."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from tests.test_cli import run_cli

from loopact.eval import truth
from loopact.eval.cli import PACKAGED_SCRIPTS
from loopact.sim.describe import describe_world
from loopact.sim.simlog import read_sim_log
from loopact.testing import ScriptedModelServer

pytestmark = pytest.mark.sim


def test_go_to_the_bedroom_on_the_flat_and_the_snapshot_shows_the_path(tmp_path: Path) -> None:
    server = ScriptedModelServer(PACKAGED_SCRIPTS / "flat_bedroom.json").start()
    log = tmp_path / "poses.jsonl"
    try:
        proc = run_cli(
            [
                "run",
                "--robot",
                "sim",
                "--scenario",
                "flat",
                "--once",
                "go to the bedroom",
                "--yes",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--workspace",
                str(tmp_path / "ws"),
                "--sim-speed",
                "8",
                "--sim-log",
                str(log),
                "--no-memory",
            ],
            tmp_path,
            timeout=240,
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    poses = list(read_sim_log(log))
    end = truth.final(poses)
    assert math.hypot(end["x_m"] - 6.2, end["y_m"] - 2.3) <= 0.3  # in the bedroom, by the log
    world = describe_world("flat")
    gaps = [truth.footprint_gap_m(p, o, 0.17) for p in poses for o in truth.solids(world)]
    assert min(gaps) > 0.0  # never touched a wall or furniture
    # the snapshot draws the path driven on the map, in the path's orange
    snap = tmp_path / "snap"
    proc = run_cli(
        ["sim", "--scenario", "flat", "--snapshot", str(snap), "--sim-log", str(log)],
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    img = np.asarray(Image.open(snap / "map.png").convert("RGB")).astype(int)
    orange = (abs(img[..., 0] - 255) < 20) & (abs(img[..., 1] - 120) < 30) & (img[..., 2] < 40)
    # the map is drawn at k pixels per 5 cm cell over (x -1.75.., y ..4.25): sample the log
    k = img.shape[1] / ((9.0 + 0.25) - (-1.5 - 0.25)) * 0.05
    hits = 0
    for p in poses[:: max(1, len(poses) // 40)]:
        col = int((p["x_m"] + 1.75) / 0.05 * k)
        row = int((4.25 - p["y_m"]) / 0.05 * k)
        window = orange[max(0, row - 3) : row + 4, max(0, col - 3) : col + 4]
        hits += bool(window.any())
    assert hits >= 0.8 * len(poses[:: max(1, len(poses) // 40)])


def test_the_flat_tasks_replay_from_their_recorded_scripts(tmp_path: Any) -> None:
    """Two of the flat's graded tasks end to end (loopact eval -t 'flat_*' runs all ten)."""
    out = tmp_path / "runs"
    args = ["eval", "--model-script", "recorded/", "--out", str(out), "--sim-speed", "8"]
    proc = run_cli(
        [*args, "-t", "flat_blocked_bedroom_zh", "-t", "flat_kitchen_zh"], tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
