"""Ground truth of the simulator: --describe, --sim-log, scenarios, trajectory (issue 15 acc. 2)."""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from tests.agent.helpers import call
from tests.test_cli import run_cli

from loopact.sim import SimRobot, world
from loopact.sim.describe import describe_world, line_length_m
from loopact.sim.groundtruth import distance_to_polyline, iou, object_bbox
from loopact.sim.scenarios import SCENARIOS
from loopact.sim.simlog import read_sim_log
from loopact.vision.detect import detect_colors

pytestmark = pytest.mark.sim

WAIT_S = 30.0


def test_describe_prints_the_whole_world_as_json(tmp_path: Path) -> None:
    proc = run_cli(["sim", "--describe"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    desc = json.loads(proc.stdout)
    names = {o["name"] for o in desc["objects"]}
    assert names == {o.name for o in world.OBJECTS}
    for o in desc["objects"]:
        assert {"name", "colour", "shape", "position_m", "size_m"} <= set(o)
        assert set(o["position_m"]) == {"x_m", "y_m", "z_m"}
    # the furniture too: every thing in the room, with where and how big it is
    obstacles = {o["name"]: o for o in desc["obstacles"]}
    assert set(obstacles) == {"crate", "pillar", "table"}
    assert (obstacles["crate"]["position_m"]["x_m"], obstacles["crate"]["position_m"]["y_m"]) == (
        world.CRATE_CENTER_M
    )
    assert obstacles["table"]["size_m"]["z_m"] == world.TABLE_HEIGHT_M
    assert all({"colour", "shape", "size_m"} <= set(o) for o in obstacles.values())
    line = desc["line"]
    assert line["colour"] == "purple" and line["width_m"] == world.LINE_WIDTH_M
    pts = [(p["x_m"], p["y_m"]) for p in line["polyline_m"]]
    assert pts[0] == pts[-1] and set(pts) == set(world.LINE_CORNERS_M)
    assert line["length_m"] == pytest.approx(10.4)
    assert {w["name"] for w in desc["waypoints"]} == set(world.WAYPOINTS)
    assert desc["robot_start"] == {
        "x_m": 0.0,
        "y_m": 0.0,
        "yaw_deg": 0.0,
        "head_pan_deg": 0.0,
        "head_tilt_deg": 15.0,
        "radius_m": world.ROBOT_RADIUS_M,
    }
    assert desc["room"]["x_min_m"] == world.ROOM_X_M[0]
    assert desc["units"] == {"length": "m", "angle": "deg", "time": "s"}


def test_describe_of_the_moving_target_has_its_path_and_rejects_unknown(tmp_path: Path) -> None:
    desc = describe_world("moving-target")
    ball = next(o for o in desc["objects"] if o["name"] == "cyan_ball")
    assert ball["movable"] and ball["path"]["max_speed_mps"] <= 0.3
    assert ball["position_m"]["x_m"] == pytest.approx(2.5)
    bad = run_cli(["sim", "--describe", "--scenario", "nope"], tmp_path)
    assert bad.returncode == 2 and "moving-target" in bad.stderr


def _per_second(samples: list[dict[str, Any]]) -> Counter[int]:
    return Counter(int(s["t_s"]) for s in samples)


def test_run_writes_the_sim_log_at_20_hz_of_sim_time(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 0.6})]},
            {"text": "Done."},
        ]
    )
    log = tmp_path / "sim.jsonl"
    proc = run_cli(
        [
            *("run", "--robot", "sim", "--once", "move forward 0.6 m", "--yes"),
            *("--base-url", server.base_url, "--model", "m", "--no-memory"),
            *("--workspace", str(tmp_path / "ws"), "--sim-speed", "4", "--sim-log", str(log)),
        ],
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    samples = list(read_sim_log(log))
    assert {"t_s", "x_m", "y_m", "yaw_deg", "objects"} <= set(samples[0])
    counts = _per_second(samples)
    full = [s for s in counts if s < int(samples[-1]["t_s"])]  # whole seconds only
    assert full and min(counts[s] for s in full) >= 10, counts
    times = [s["t_s"] for s in samples]
    assert times == sorted(times)
    assert samples[-1]["x_m"] == pytest.approx(0.6, abs=0.03)  # ground truth, not odometry


async def test_moving_target_moves_along_its_path_in_view(tmp_path: Path) -> None:
    log = tmp_path / "mt.jsonl"
    robot = await asyncio.wait_for(
        SimRobot.create(speed=8.0, scenario="moving-target", sim_log=log), WAIT_S
    )
    try:
        frame = await robot.get_frame()
        st = robot.sim.state()
        path = SCENARIOS["moving-target"].movers[0].path
        x, y = st.movers["cyan_ball"]
        assert (x, y) == pytest.approx(path.position(st.stamp_s), abs=0.02)
        desc = describe_world("moving-target")
        ball = dict(next(o for o in desc["objects"] if o["name"] == "cyan_ball"))
        ball["position_m"] = {"x_m": x, "y_m": y, "z_m": 0.1}
        box = object_bbox(ball, (st.x_m, st.y_m, st.yaw_rad), (st.pan_rad, st.tilt_rad), 640, 480)
        assert box is not None  # in view at the start
        x1, y1, x2, y2 = (int(v) for v in box)
        found = detect_colors(frame.rgb[y1:y2, x1:x2].copy(), hfov_deg=70, color="cyan")
        assert found and found[0].area_px > 0.5 * (x2 - x1) * (y2 - y1)  # rendered right there
        await robot.clock.sleep(2.0)
    finally:
        await robot.close()
    samples = list(read_sim_log(log))
    moved = [s["objects"]["cyan_ball"] for s in samples]
    dist = sum(
        math.dist((a["x_m"], a["y_m"]), (b["x_m"], b["y_m"])) for a, b in zip(moved, moved[1:])
    )
    span = samples[-1]["t_s"] - samples[0]["t_s"]
    assert 0.1 < dist / span <= 0.3 + 1e-3


async def test_projected_boxes_match_the_rendered_objects() -> None:
    robot = await asyncio.wait_for(SimRobot.create(speed=8.0), WAIT_S)
    desc = describe_world()
    try:
        checked = 0
        for pose in ((1.0, -0.5, -0.6), (0.5, 0.5, 0.3), (0.0, 0.0, 0.0)):
            await robot.teleport(*pose)
            frame = await robot.get_frame()
            st = robot.sim.state()
            dets = detect_colors(frame.rgb, hfov_deg=70)
            for obj in desc["objects"]:
                gt = object_bbox(
                    obj, (st.x_m, st.y_m, st.yaw_rad), (st.pan_rad, st.tilt_rad), 640, 480
                )
                if gt is None or not (gt[0] > 0 and gt[2] < 640):
                    continue
                same = [d for d in dets if d.color == obj["colour"]]
                assert same, (pose, obj["name"])
                assert iou(gt, same[0].bbox) > 0.8, (pose, obj["name"], gt, same[0].bbox)
                checked += 1
        assert checked >= 3
    finally:
        await robot.close()


def test_snapshot_draws_the_logged_trajectory(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    corners = [*world.LINE_CORNERS_M, world.LINE_CORNERS_M[0]]
    lines = []
    for i in range(200):  # a lap of the line, as a log would record it
        s = i / 199 * line_length_m()
        for (ax, ay), (bx, by) in zip(corners, corners[1:]):
            seg = math.dist((ax, ay), (bx, by))
            if s <= seg:
                x, y = ax + (bx - ax) * s / seg, ay + (by - ay) * s / seg
                break
            s -= seg
        lines.append(json.dumps({"t_s": i * 0.2, "x_m": x, "y_m": y, "yaw_deg": 0, "objects": {}}))
    log.write_text("\n".join(lines) + "\n")
    assert distance_to_polyline(x, y, corners) < 1e-6
    out = tmp_path / "snap"
    proc = run_cli(["sim", "--snapshot", str(out), "--sim-log", str(log)], tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "camera.png",
        "map.png",
        "topdown.png",
        "trajectory.png",
    ]
    top = np.asarray(Image.open(out / "topdown.png").convert("RGB")).astype(int)
    traj = np.asarray(Image.open(out / "trajectory.png").convert("RGB")).astype(int)
    drawn = np.abs(traj - top).sum(axis=2) > 60
    u, v = (int(round(c)) for c in world.topdown_pixel(3.6, 0.0))  # on the east side of the loop
    assert drawn[v - 3 : v + 4, u - 3 : u + 4].any()
    u, v = (int(round(c)) for c in world.topdown_pixel(2.0, 0.0))  # the middle: nothing drawn
    assert not drawn[v - 3 : v + 4, u - 3 : u + 4].any()
    missing = run_cli(["sim", "--snapshot", str(out), "--sim-log", str(tmp_path / "no")], tmp_path)
    assert missing.returncode == 2 and "not a file" in missing.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("garbage\n")  # no pose at all: said, not an empty picture
    proc = run_cli(["sim", "--snapshot", str(tmp_path / "e"), "--sim-log", str(empty)], tmp_path)
    assert proc.returncode == 2 and "holds no poses" in proc.stderr, proc.stderr


def test_the_trajectory_caption_is_legible() -> None:
    """A newcomer could not read the caption of trajectory.png: a thick black copy of the text
    under a thin white one, on the light margin. The caption's glyphs must stand on a dark
    ground, white on it (contrast of relative luminance >= 7, WCAG's AAA)."""
    from loopact.sim.render import TOPDOWN_SIZE
    from loopact.sim.snapshot import draw_trajectory

    w, h = TOPDOWN_SIZE
    top = np.full((h, w, 3), 236, dtype=np.uint8)  # as light as the margin and the floor
    samples = [{"t_s": i * 0.5, "x_m": i * 0.1, "y_m": 0.0, "yaw_deg": 0.0} for i in range(11)]
    traj = draw_trajectory(top, samples).astype(int)
    strip = slice(0, 40)  # the caption's rows; the path is in the middle of the room
    ink = np.abs(traj[strip] - top[strip].astype(int)).sum(axis=2) > 30
    rows, cols = np.nonzero(ink)
    assert cols.size, "no caption drawn"
    box = traj[strip][rows.min() : rows.max() + 1, cols.min() : cols.max() + 1] / 255.0
    linear = np.where(box <= 0.04045, box / 12.92, ((box + 0.055) / 1.055) ** 2.4)
    lum = linear @ np.array([0.2126, 0.7152, 0.0722])
    ground, glyphs = float(np.median(lum)), float(np.percentile(lum, 99))
    assert (glyphs + 0.05) / (ground + 0.05) >= 7, (ground, glyphs)
    assert 0.03 < float((lum > 0.5).mean()) < 0.4  # white strokes of text, not a white box


def test_a_file_of_other_json_lines_is_not_drawn_as_a_trajectory(tmp_path: Path) -> None:
    """Newcomer report: a trace given as --sim-log drew a wrong trajectory ("0.0 s, 5.88 m
    driven (11 poses)") and exited 0; every line must be a pose sample, else it is refused
    at its first bad line, saying what that line looks like."""
    pose = {"t_s": 0.0, "x_m": 0.0, "y_m": 0.0, "yaw_deg": 0.0, "objects": {}}
    trace_start = {"ts": 100.0, "type": "trace_start", "task_id": None, "schema": 1}
    state = {"ts": 101.0, "type": "robot_state", "x_m": 1.0, "y_m": 0.0, "yaw_rad": 0.3}
    need = "not a pose sample (an object with t_s, x_m, y_m and yaw_deg numbers)"
    log = tmp_path / "t.jsonl"
    cases: list[tuple[list[Any], str]] = [
        (
            [trace_start, state],
            f"{log}:1: {need}: a loopact trace event ('trace_start'); "
            f"a trace is read with loopact trace {log}",
        ),
        (
            [pose, {"t_s": 1.0, "x_m": 1.0, "y_m": 0.0, "yaw_rad": 0.3}],
            f"{log}:2: {need}: no yaw_deg (its keys: t_s, x_m, y_m, yaw_rad)",
        ),
        ([pose, {"a": 1}], f"{log}:2: {need}: no t_s, x_m, y_m, yaw_deg (its keys: a)"),
        ([[1, 2], pose], f"{log}:1: {need}: an array"),
        ([{**pose, "x_m": "1.0"}], f"{log}:1: not a pose sample: x_m is '1.0', not a number"),
        ([{**pose, "t_s": True}], f"{log}:1: not a pose sample: t_s is True, not a number"),
        (
            [pose, {**pose, "objects": {"ball": {"x_m": 1}}}],
            f"{log}:2: not a pose sample: objects must map names to x_m, y_m numbers",
        ),
    ]
    out = tmp_path / "snap"
    for lines, expected in cases:
        log.write_text("".join(json.dumps(line) + "\n" for line in lines))
        with pytest.raises(ValueError) as raised:
            list(read_sim_log(log))
        assert str(raised.value) == expected
        proc = run_cli(["sim", "--snapshot", str(out), "--sim-log", str(log)], tmp_path)
        assert proc.returncode == 2, (lines, proc.stderr)
        assert proc.stderr == f"loopact: cannot read the sim log: {expected}\n"
        assert not out.exists()  # refused before anything is drawn


def test_config_knows_every_scenario() -> None:
    from typing import get_args

    from loopact.config import RobotConfig

    assert set(get_args(RobotConfig.model_fields["scenario"].annotation)) == set(SCENARIOS)
