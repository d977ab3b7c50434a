"""Ground-truth pose log of the simulator (``--sim-log FILE``; SPEC D6, H5, issue 15).

JSON Lines, one object per sample, :data:`LOG_PERIOD_S` apart in simulated time (20 Hz)::

    {"t_s": 1.25, "x_m": 0.312, "y_m": -0.004, "yaw_deg": 1.7,
     "head": {"pan_deg": 0.0, "tilt_deg": 15.0},
     "objects": {"cyan_ball": {"x_m": 2.49, "y_m": 0.36}}, "wall_s": 1764510000.125}

``t_s`` is simulated time; ``wall_s`` the Unix time the sample was taken (``loopact trace
--to-mcap`` places it beside the trace's events with it; issue 44); ``x_m``, ``y_m``,
``yaw_deg`` are the robot base's true pose in the world frame (= ``map`` = ``odom`` in the
simulator); ``objects`` holds every movable object (empty in the ``default`` scenario; with
``z_m`` in the arm scene); ``arm`` (the arm scene only) the gripper's gap, what both fingers
touch and whether any part of the arm touches the table.
Graders read it with :func:`read_sim_log`. Lines are
flushed about once per simulated second, and on close, so a crash loses at most that much.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

logger = logging.getLogger(__name__)


class SimState(Protocol):
    """What a log line is made of (:class:`loopact.sim.simulator.SimState` has it)."""

    @property
    def stamp_s(self) -> float: ...
    @property
    def x_m(self) -> float: ...
    @property
    def y_m(self) -> float: ...
    @property
    def yaw_rad(self) -> float: ...
    @property
    def pan_rad(self) -> float: ...
    @property
    def tilt_rad(self) -> float: ...
    @property
    def movers(self) -> dict[str, tuple[float, float]]: ...
    @property
    def objects(self) -> dict[str, tuple[float, float, float]]: ...


LOG_PERIOD_S = 0.05
"""Simulated seconds between samples (20 Hz, twice the 10 Hz the issue asks for)."""
_FLUSH_EVERY = 20


def sample(state: SimState) -> dict[str, Any]:
    """One log line for ``state`` (see the module docstring)."""
    line = _pose_line(state)
    arm = getattr(state, "arm", None)
    if arm is not None:  # the arm scene (issue 43): what graders hold the arm to
        line["arm"] = {
            "gap_m": round(arm.gap_m, 4),
            "held": list(arm.held),
            "table_contact": bool(arm.table_contact),
        }
    return line


def _pose_line(state: SimState) -> dict[str, Any]:
    return {
        "t_s": round(state.stamp_s, 4),
        "x_m": round(state.x_m, 4),
        "y_m": round(state.y_m, 4),
        "yaw_deg": round(math.degrees(state.yaw_rad), 3),
        "head": {
            "pan_deg": round(math.degrees(state.pan_rad), 3),
            "tilt_deg": round(math.degrees(state.tilt_rad), 3),
        },
        "objects": {
            **{
                name: {"x_m": round(x, 4), "y_m": round(y, 4)}
                for name, (x, y) in state.movers.items()
            },
            # the arm scene's free objects, with their height (issue 43)
            **{
                name: {"x_m": round(x, 4), "y_m": round(y, 4), "z_m": round(z, 4)}
                for name, (x, y, z) in state.objects.items()
            },
        },
    }


Listener = Callable[[dict[str, Any]], None]
"""Called with each line (a dict) as it is written, on the physics thread."""


class SimLog:
    """Writes :func:`sample` lines every :data:`LOG_PERIOD_S` of simulated time.

    Called on the physics thread only (:meth:`write` after every control tick). Listeners
    (:meth:`listen`: a recording, issue 44) get every line as it is written, so what they see
    is exactly the file.

    Args:
        path: The file (parent folders are created; an existing file is replaced), or None to
            feed listeners only.

    Raises:
        OSError: The file cannot be created.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = None if path is None else Path(path)
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
        self._listeners: tuple[Listener, ...] = ()
        self._closed = False
        self._next_s = 0.0
        self._unflushed = 0
        self.lines = 0

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every line from the next one on; returns the remover."""
        self._listeners = (*self._listeners, listener)

        def remove() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return remove

    def write(self, state: SimState) -> None:
        """Write a line if a sample is due at ``state.stamp_s``."""
        if self._closed or state.stamp_s + 1e-9 < self._next_s:
            return
        line = {**sample(state), "wall_s": round(time.time(), 4)}
        for listener in self._listeners:
            try:
                listener(line)
            except Exception:  # a recording must never stop the physics
                logger.exception("a sim log listener failed; it is dropped")
                self._listeners = tuple(x for x in self._listeners if x is not listener)
        self.lines += 1
        # the next sample is due one period after this one's slot (no drift, no bursts)
        self._next_s = (math.floor(state.stamp_s / LOG_PERIOD_S + 1e-6) + 1) * LOG_PERIOD_S
        if self._file is None:
            return
        self._file.write(json.dumps(line) + "\n")
        self._unflushed += 1
        if self._unflushed >= _FLUSH_EVERY:
            self._file.flush()
            self._unflushed = 0

    def close(self) -> None:
        """Flush and close; idempotent."""
        self._closed = True
        if self._file is not None:
            self._file.close()
            self._file = None


def read_sim_log(path: Path) -> Iterator[dict[str, Any]]:
    """The samples of a sim log, in order (a torn last line is skipped).

    Every line is checked by :func:`check_sample`, so a file of something else (a trace
    written by ``--trace``, any JSON Lines) is refused at its first line, not drawn or graded.

    Raises:
        OSError: The file cannot be read.
        ValueError: A line other than the last is not JSON, or a line is not a pose sample
            (names the line and what it looks like).
    """
    with Path(path).open(encoding="utf-8") as f:
        lines = f.readlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if n == len(lines):
                return  # being written, or cut by a crash
            raise ValueError(f"{path}:{n}: not a JSON line ({exc.msg})") from None
        yield check_sample(value, f"{path}:{n}")


POSE_FIELDS = ("t_s", "x_m", "y_m", "yaw_deg")
"""The fields every sample has, each a number (s, m, m, deg)."""


def check_sample(value: Any, where: str) -> dict[str, Any]:
    """Check one parsed line of a sim log: a pose sample as :func:`sample` writes it.

    Args:
        value: The parsed JSON of one line.
        where: ``FILE:LINE`` for the message.

    Returns:
        ``value``: an object with :data:`POSE_FIELDS` as numbers, and ``objects`` (when
        present) a mapping of names to ``{x_m, y_m}`` numbers.

    Raises:
        ValueError: ``FILE:LINE: not a pose sample (...): ...``, saying what is missing or
            wrong and what the line looks like (a trace event is named as one).
    """
    need = "an object with t_s, x_m, y_m and yaw_deg numbers"
    if not isinstance(value, dict):
        what = "an array" if isinstance(value, list) else f"the JSON value {value!r}"[:60]
        raise ValueError(f"{where}: not a pose sample ({need}): {what}")
    if isinstance(value.get("type"), str) and "ts" in value:
        trace = where.rsplit(":", 1)[0]
        raise ValueError(
            f"{where}: not a pose sample ({need}): a loopact trace event "
            f"({value['type']!r}); a trace is read with loopact trace {trace}"
        )
    missing = [k for k in POSE_FIELDS if k not in value]
    if missing:
        keys = ", ".join(list(value)[:6]) + (", ..." if len(value) > 6 else "")
        holds = f"its keys: {keys}" if value else "an empty object"
        raise ValueError(f"{where}: not a pose sample ({need}): no {', '.join(missing)} ({holds})")
    for key in POSE_FIELDS:
        if not _is_number(value[key]):
            raise ValueError(f"{where}: not a pose sample: {key} is {value[key]!r}, not a number")
    objects = value.get("objects", {})
    if not isinstance(objects, dict) or not all(
        isinstance(p, dict) and _is_number(p.get("x_m")) and _is_number(p.get("y_m"))
        for p in objects.values()
    ):
        raise ValueError(f"{where}: not a pose sample: objects must map names to x_m, y_m numbers")
    return value


def _is_number(value: Any) -> bool:
    """A finite JSON number that fits a float (not true/false, not a 400-digit integer)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
