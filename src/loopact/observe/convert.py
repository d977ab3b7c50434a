"""A trace and its sim log as one MCAP file: ``loopact trace t.jsonl --to-mcap run.mcap``
(SPEC H3; issue 44).

The trace's events go where a live recording puts them (:mod:`loopact.observe.topics`): the
Log panel's lines, the events as JSON with tool durations, tool images, governor decisions,
``robot_state`` poses. A sim log (``--sim-log``) adds the simulator's ground truth and, since
the simulator's odometry is its ground truth, the robot's pose and transforms at 20 Hz.

Times: a sim log line carries the Unix time it was taken (``wall_s``); an older sim log without
it is placed from the trace's start at one simulated second per second, and the report says
so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopact.events import EventType
from loopact.observe.recorder import Recorder
from loopact.sim.simlog import read_sim_log
from loopact.trace import load_trace


@dataclass
class Converted:
    """What :func:`trace_to_mcap` wrote.

    Attributes:
        path: The MCAP file.
        counts: Messages per topic.
        warnings: What the reader skipped or guessed, one sentence each.
    """

    path: Path
    counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)


def trace_to_mcap(trace_path: Path, out: Path, sim_log: Path | None = None) -> Converted:
    """Write ``trace_path`` (and ``sim_log``) as the MCAP file ``out`` (written over).

    Raises:
        ValueError: The trace or the sim log cannot be read (names the file and line), or the
            trace is empty.
        OSError: A file cannot be read, or ``out`` cannot be written.
    """
    trace = load_trace(trace_path)
    warnings = list(trace.warnings)
    if not trace.events:
        raise ValueError(f"{trace_path}: the trace is empty")
    samples = list(read_sim_log(sim_log)) if sim_log is not None else []
    recorder = Recorder()
    recorder.open_file(out)
    try:
        for event in trace.events:
            if event.get("type") == EventType.TRACE_START:  # the run's header: the file's metadata
                header = {k: v for k, v in event.items() if k not in ("ts", "type", "task_id")}
                recorder.write_metadata("loopact", header)
                continue
            recorder.on_event(event)
            if event.get("type") == EventType.ROBOT_STATE and not samples:
                _robot_state(recorder, event)
        if samples:
            warnings += _truth(recorder, samples, trace.events)
    finally:
        recorder.close()
    return Converted(out, dict(recorder.counts), warnings)


def _robot_state(recorder: Recorder, event: dict[str, Any]) -> None:
    try:
        x, y, yaw = float(event["x_m"]), float(event["y_m"]), float(event["yaw_rad"])
    except (KeyError, TypeError, ValueError):
        return
    recorder.record_pose(float(event["ts"]), x, y, yaw)


def _truth(
    recorder: Recorder, samples: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]
) -> list[str]:
    """Ground truth, and (in the simulator odometry is ground truth) poses and transforms."""
    warnings = []
    start = float(events[0].get("ts", 0.0))
    if any("wall_s" not in s for s in samples):
        warnings.append(
            "the sim log has no wall_s times (written before loopact recorded them): its "
            "samples are placed from the trace's start at one simulated second per second"
        )
    for sample in samples:
        wall = sample.get("wall_s")
        when = float(wall) if isinstance(wall, (int, float)) else start + float(sample["t_s"])
        recorder.on_truth(sample, when)
        head = sample.get("head") or {}
        pan: Any = head.get("pan_deg")
        tilt: Any = head.get("tilt_deg")
        view = None
        if _num(pan) and _num(tilt):
            view = (math.radians(pan), math.radians(tilt))
        yaw = math.radians(float(sample["yaw_deg"]))
        recorder.record_pose(when, float(sample["x_m"]), float(sample["y_m"]), yaw, view)
    return warnings


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
