"""``loopact run --record run.mcap`` on the simulator, read back with the ``mcap`` reader
(issue 44, acceptance 1; SPEC H3, D6).

One short simulator run (half a metre forward, a look with ``seewhat``, a reply: a few seconds
of robot time at four times real speed) with ``--trace``, ``--sim-log`` and ``--record``. The
file must hold every channel of the run with its Foxglove schema, as many agent events as the
trace, the simulator's ground truth equal to its sim log line for line, poses whose quaternions
carry the sim log's headings, and camera and tool images that decode.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from tests.agent.helpers import call
from tests.observe.mcap_read import read_mcap, yaw_of

from loopact.observe import topics as tp
from loopact.observe.recorder import SIM_LOG
from loopact.sim.simlog import read_sim_log
from loopact.testing import ScriptedModelServer
from loopact.trace import read_trace

pytestmark = pytest.mark.sim
SECRET = "sk-record-secret-77"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPACT_", "OTEL_"))}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    return env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One recorded simulator run (shared by the tests below): its folder and its stderr."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    script = [
        {"tool_calls": [call("move_forward", {"distance_m": 0.5}, id="c1")]},
        {"tool_calls": [call("seewhat", {}, id="c2")]},
        {"text": "I moved half a metre and looked around."},
    ]
    with ScriptedModelServer(script) as server:
        args = ["run", "--robot", "sim", "--sim-speed", "4", "--once", "go forward and look"]
        args += ["--base-url", server.base_url, "--model", "m", "--api-key", SECRET]
        args += ["--trace", str(tmp_path / "t.jsonl"), "--sim-log", str(tmp_path / "poses.jsonl")]
        args += ["--workspace", str(tmp_path / "ws"), "--no-web", "--no-memory"]
        args += ["--record", str(tmp_path / "run.mcap")]
        proc = subprocess.run(
            [sys.executable, "-m", "loopact", *args],
            cwd=tmp_path,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        server.assert_consumed()
    assert proc.returncode == 0, proc.stderr
    return tmp_path, proc.stderr


def test_a_simulator_run_recorded_to_mcap_reads_back_whole(recorded: tuple[Path, str]) -> None:
    tmp_path, stderr = recorded
    out = tmp_path / "run.mcap"
    assert f"recording: {out}" in stderr
    rec = read_mcap(out)
    trace = [ev for ev in read_trace(tmp_path / "t.jsonl") if ev["type"] != "trace_start"]
    sim_log = list(read_sim_log(tmp_path / "poses.jsonl"))

    # every channel of this run, each with its Foxglove schema (and JSON for the two of ours)
    expected = {tp.TF, tp.ODOM_POSE, tp.CAMERA, tp.TOOL_IMAGE, tp.LOG, tp.EVENTS}
    expected |= {tp.TRUTH_POSE, tp.SITE, SIM_LOG}
    assert expected <= set(rec.schemas), sorted(rec.schemas)
    for topic in expected - {SIM_LOG}:
        assert rec.schemas[topic] == tp.SCHEMAS[topic], topic
    assert rec.encodings[tp.EVENTS] == rec.encodings[SIM_LOG] == "json"
    assert rec.encodings[tp.TF] == rec.encodings[tp.CAMERA] == "protobuf"

    # the agent's events: one Log line and one JSON event per trace line, in order
    assert rec.counts[tp.EVENTS] == rec.counts[tp.LOG] == len(trace)
    assert [e["type"] for e in rec.messages[tp.EVENTS]] == [e["type"] for e in trace]
    assert [m.name for m in rec.messages[tp.LOG]] == [e["type"] for e in trace]
    results = [e for e in rec.messages[tp.EVENTS] if e["type"] == "tool_result"]
    assert [r["name"] for r in results] == ["move_forward", "seewhat"]
    assert all(r["duration_s"] > 0 for r in results)  # the call's timing
    assert SECRET not in out.read_bytes().decode("latin-1")

    # ground truth: every sim log line from the first recorded one on, none missing, equal
    recorded = rec.messages[SIM_LOG]
    assert rec.counts[tp.TRUTH_POSE] == len(recorded) >= 20
    first = next(i for i, s in enumerate(sim_log) if s["t_s"] == recorded[0]["t_s"])
    assert recorded == sim_log[first : first + len(recorded)]
    assert recorded[-1]["x_m"] > 0.45  # it covers the motion
    for line, pose in zip(recorded, rec.messages[tp.TRUTH_POSE], strict=True):
        assert pose.frame_id == "map"
        assert pose.pose.position.x == pytest.approx(line["x_m"], abs=1e-9)
        assert pose.pose.position.y == pytest.approx(line["y_m"], abs=1e-9)
        assert math.degrees(yaw_of(pose.pose.orientation)) == pytest.approx(
            line["yaw_deg"], abs=1e-6
        )

    # odometry and TF: map -> odom -> base_link -> camera, the pose where the robot was
    assert rec.counts[tp.TF] == rec.counts[tp.ODOM_POSE] >= 5
    frames = rec.messages[tp.TF][-1].transforms
    assert [(t.parent_frame_id, t.child_frame_id) for t in frames] == [
        ("map", "odom"),
        ("odom", "base_link"),
        ("base_link", "camera"),
    ]
    last = rec.messages[tp.ODOM_POSE][-1]
    assert last.frame_id == "odom"
    assert last.pose.position.x == pytest.approx(sim_log[-1]["x_m"], abs=0.02)
    assert frames[1].translation.x == last.pose.position.x

    # images that decode: the camera at its size, the image seewhat showed
    assert rec.counts[tp.CAMERA] >= 2
    assert rec.counts[tp.TOOL_IMAGE] == sum(e["type"] == "tool_image" for e in trace) == 1
    for topic in (tp.CAMERA, tp.TOOL_IMAGE):
        for image in rec.messages[topic]:
            assert image.format == "jpeg"
            rgb = cv2.imdecode(np.frombuffer(image.data, np.uint8), cv2.IMREAD_COLOR)
            assert rgb is not None and rgb.ndim == 3, topic
    camera = cv2.imdecode(np.frombuffer(rec.messages[tp.CAMERA][0].data, np.uint8), 1)
    assert camera.shape == (480, 640, 3)
    assert float(camera.std()) > 5  # a picture of the room, not a blank frame

    # the site: its waypoints by name
    site = rec.messages[tp.SITE][0].entities[0]
    assert {t.text for t in site.texts} >= {"kitchen"}


def test_a_trace_and_its_sim_log_convert_to_the_same_channels(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    """``loopact trace t.jsonl --sim-log poses.jsonl --to-mcap`` writes what the live recording
    wrote of the agent, and the whole sim log as ground truth, odometry and TF."""
    run = recorded[0]
    out = tmp_path / "conv.mcap"
    args = ["trace", str(run / "t.jsonl"), "--sim-log", str(run / "poses.jsonl")]
    proc = _cli([*args, "--to-mcap", str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}: ") and proc.stderr == ""
    conv, live = read_mcap(out), read_mcap(run / "run.mcap")
    assert conv.messages[tp.EVENTS] == live.messages[tp.EVENTS]  # same events, same timings
    assert [m.message for m in conv.messages[tp.LOG]] == [m.message for m in live.messages[tp.LOG]]
    sim_log = list(read_sim_log(run / "poses.jsonl"))
    assert conv.messages[SIM_LOG] == sim_log
    assert conv.counts[tp.TRUTH_POSE] == conv.counts[tp.TF] == len(sim_log)
    assert conv.log_times[SIM_LOG] == [round(s["wall_s"] * 1e9) for s in sim_log]
    assert conv.counts[tp.TOOL_IMAGE] == 1
    # an older sim log without wall_s: placed from the trace's start, and said so
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(json.dumps({k: v for k, v in s.items() if k != "wall_s"}) + "\n" for s in sim_log)
    )
    proc = _cli(
        ["trace", str(run / "t.jsonl"), "--sim-log", str(old), "--to-mcap", str(out)], tmp_path
    )
    assert proc.returncode == 0 and "has no wall_s times" in proc.stderr, proc.stderr
    # usage errors: --sim-log alone; a sim log that is a trace
    proc = _cli(["trace", str(run / "t.jsonl"), "--sim-log", str(old)], tmp_path)
    assert proc.returncode == 2 and "--sim-log goes with --to-mcap" in proc.stderr
    bad = ["trace", str(run / "t.jsonl"), "--sim-log", str(run / "t.jsonl"), "--to-mcap", str(out)]
    proc = _cli(bad, tmp_path)
    assert proc.returncode == 2 and "not a pose sample" in proc.stderr, proc.stderr


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=cwd,
        env=_env(cwd),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_file_that_is_not_a_recording_is_not_overwritten(
    scripted_server: Any, tmp_path: Path
) -> None:
    """``--record notes.txt`` on a user's file is refused before anything runs (nothing lost)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    server = scripted_server([])
    args = ["run", "--robot", "none", "--once", "hi", "--base-url", server.base_url]
    args += ["--record", str(notes), "--workspace", str(tmp_path / "ws"), "--no-memory"]
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"record.path {notes} holds something else" in proc.stderr
    assert notes.read_text(encoding="utf-8") == "my notes\n"
