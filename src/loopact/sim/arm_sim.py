"""The simulated arm's controllers, like ros2_control's (issue 43, SPEC D1, D6).

:class:`ArmPhysics` runs on the simulator's physics thread and does what a robot's arm
controllers do:

- a **joint trajectory controller** (as ``joint_trajectory_controller`` serves
  ``control_msgs/action/FollowJointTrajectory``): a goal is a list of points (positions,
  optional velocities, time from start) for the five arm joints; it is checked (joint names,
  finite values inside the joint limits, speeds the motors can make) and refused with
  ``INVALID_JOINTS`` or ``INVALID_GOAL`` when wrong; then interpolated every control tick
  (cubic with velocities, else linear) from the arm's position when the goal arrived. It
  ends ``SUCCEEDED`` within the goal tolerance, or aborts with ``PATH_TOLERANCE_VIOLATED``
  (the arm fell behind: something blocks it) or ``GOAL_TOLERANCE_VIOLATED``; a new goal
  replaces the running one; :meth:`ArmPhysics.cancel` holds the arm where it is now.
- a **parallel gripper controller** (as ``control_msgs/action/GripperCommand``): a gap
  between the finger pads and a largest squeezing force; it ends when the gap is reached or
  the fingers stall on something.

It also reads the ground truth the graders use (:meth:`ArmPhysics.truth`): joint positions
and speeds, the gap, which objects both fingers touch, and whether any part of the arm
touches the table. Units: radians, metres, seconds, newtons.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.errors import LoopactError

ARM_JOINTS = (
    "arm_shoulder_yaw",
    "arm_shoulder_pitch",
    "arm_elbow",
    "arm_wrist_pitch",
    "arm_wrist_roll",
)
"""The arm controller's joints, in its order."""
FINGER_JOINTS = ("arm_finger_left", "arm_finger_right")
"""The gripper's joints; the gap between the pads is their sum."""

MAX_JOINT_SPEED_RADPS = 3.0
"""The motors' top speed: a goal that asks more is refused (``INVALID_GOAL``)."""
MAX_GRIP_FORCE_N = 20.0
"""The gripper motor's largest force per finger, newtons."""
MAX_GAP_M = 0.08
"""The widest gap between the finger pads, metres."""
PATH_TOLERANCE_RAD = 0.3
"""A joint this far behind the trajectory aborts the goal (something blocks the arm)."""
GOAL_TOLERANCE_RAD = 0.03
"""Each joint within this of the last point: the goal succeeded."""
GOAL_TIME_TOLERANCE_S = 1.0
"""How long after the last point the joints may take to get within the goal tolerance."""
GRIP_REACHED_M = 0.002
"""The gap within this of the goal: the gripper reached it."""
GRIP_STALL_MPS = 0.002
GRIP_STALL_S = 0.15
"""Fingers slower than :data:`GRIP_STALL_MPS` for :data:`GRIP_STALL_S` have stalled."""

# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL = 0
INVALID_GOAL = -1
INVALID_JOINTS = -2
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5


class GoalRefused(LoopactError, ValueError):
    """A trajectory goal the controller does not accept (in loopact's exception tree).

    Attributes:
        code: ``INVALID_GOAL`` or ``INVALID_JOINTS`` (FollowJointTrajectory's codes).
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class GoalStatus:
    """Where a trajectory or gripper goal is.

    Attributes:
        state: ``executing``, ``succeeded``, ``aborted`` or ``cancelled``.
        code: FollowJointTrajectory's ``error_code`` once it ended (0: success).
        text: Its ``error_string``.
        stalled: Gripper goals: the fingers stopped on something before the goal.
        reached: Gripper goals: the gap reached the goal.
    """

    state: str = "executing"
    code: int = SUCCESSFUL
    text: str = ""
    stalled: bool = False
    reached: bool = False

    @property
    def done(self) -> bool:
        """True once it ended."""
        return self.state != "executing"


@dataclass(frozen=True)
class ArmTruth:
    """The arm's ground truth at one instant.

    Attributes:
        positions_rad: Arm joint positions in :data:`ARM_JOINTS` order.
        velocities_radps: Their speeds.
        gap_m: Gap between the finger pads, metres.
        grip_force_n: Mean force of the two finger motors, newtons.
        held: Objects both fingers touch (``red_cube``), sorted.
        table_contact: Whether any part of the arm touches the table.
        tcp_m: The grasp point between the pads, world frame, metres.
        executing: Whether a trajectory goal is running.
    """

    positions_rad: tuple[float, ...]
    velocities_radps: tuple[float, ...]
    gap_m: float
    grip_force_n: float
    held: tuple[str, ...]
    table_contact: bool
    tcp_m: tuple[float, float, float]
    executing: bool


@dataclass
class _Goal:
    id: int
    times: npt.NDArray[np.float64]  # (N+1,), from 0: the start position first
    positions: npt.NDArray[np.float64]  # (N+1, 5) in ARM_JOINTS order
    velocities: npt.NDArray[np.float64] | None
    from_current: bool = False  # the first point is a placeholder: the position at start
    started_s: float | None = None
    status: GoalStatus = field(default_factory=GoalStatus)


@dataclass
class _Grip:
    id: int
    gap_m: float
    effort_n: float
    status: GoalStatus = field(default_factory=GoalStatus)
    still_s: float = 0.0
    applied: bool = False


def _interpolate(goal: _Goal, t: float) -> npt.NDArray[np.float64]:
    times, pos = goal.times, goal.positions
    if t >= times[-1]:
        last: npt.NDArray[np.float64] = pos[-1]
        return last
    k = int(np.searchsorted(times, t, side="right")) - 1
    k = max(0, min(k, len(times) - 2))
    h = times[k + 1] - times[k]
    s = (t - times[k]) / h
    if goal.velocities is None:
        out: npt.NDArray[np.float64] = pos[k] + s * (pos[k + 1] - pos[k])
        return out
    v0, v1 = goal.velocities[k] * h, goal.velocities[k + 1] * h
    h00 = 2 * s**3 - 3 * s**2 + 1
    h10 = s**3 - 2 * s**2 + s
    h01 = -2 * s**3 + 3 * s**2
    h11 = s**3 - s**2
    cubic: npt.NDArray[np.float64] = h00 * pos[k] + h10 * v0 + h01 * pos[k + 1] + h11 * v1
    return cubic


class ArmPhysics:
    """The arm's controllers and ground truth on the physics thread (see the module docstring).

    Command methods (:meth:`follow`, :meth:`cancel`, :meth:`gripper`, :meth:`status`) are
    thread-safe; :meth:`control` and :meth:`truth` run on the physics thread only.

    Args:
        model: The compiled ``MjModel`` with the arm (:mod:`loopact.sim.arm_scene`).
        data: Its ``MjData`` (the physics thread's).
        now: The simulated time, seconds (a callable).
        home_rad: Where the arm starts (the stowed pose), radians; None: all joints at zero.
    """

    def __init__(
        self, model: Any, data: Any, now: Any, home_rad: tuple[float, ...] | None = None
    ) -> None:
        self._m, self._d, self._now = model, data, now
        m = model
        self._qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in ARM_JOINTS])
        self._vadr = np.array([m.jnt_dofadr[m.joint(n).id] for n in ARM_JOINTS])
        self._act = np.array([m.actuator(n).id for n in ARM_JOINTS])
        self._fq = np.array([m.jnt_qposadr[m.joint(n).id] for n in FINGER_JOINTS])
        self._fv = np.array([m.jnt_dofadr[m.joint(n).id] for n in FINGER_JOINTS])
        self._fact = np.array([m.actuator(n).id for n in FINGER_JOINTS])
        self.limits = np.array([m.jnt_range[m.joint(n).id] for n in ARM_JOINTS], dtype=float)
        self._tcp = m.site("tcp").id
        arm_bodies = _subtree(m, m.body("arm_base").id)
        self._arm_geom = np.isin(m.geom_bodyid, list(arm_bodies))
        left, right = m.body("arm_finger_left").id, m.body("arm_finger_right").id
        self._finger_body = {left: 0, right: 1}
        self._table = m.geom("arm_table").id
        self._object_of: dict[int, str] = {}
        for b in range(m.nbody):
            name = m.body(b).name
            if name.startswith("obj_"):
                self._object_of[b] = name[4:]
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._goal: _Goal | None = None
        self._goals: dict[int, _Goal] = {}
        self._grip: _Grip | None = None
        self._grips: dict[int, _Grip] = {}
        self._hold: npt.NDArray[np.float64] | None = None
        self._hold_now = True
        if home_rad is not None:  # the arm starts stowed, its controller holding it there
            data.qpos[self._qadr] = home_rad
            data.ctrl[self._act] = home_rad
        self._q_last = np.array(data.qpos[self._qadr], dtype=float)
        data.ctrl[self._fact] = MAX_GAP_M / 2

    # ---- commands (any thread) ------------------------------------------------------------

    def check_goal(
        self,
        names: list[str],
        times_s: list[float],
        positions: list[list[float]],
        velocities: list[list[float]] | None,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
        """Check a trajectory goal as the controller does; returns it in joint order.

        Raises:
            GoalRefused: ``INVALID_JOINTS`` (names other than the arm's five) or
                ``INVALID_GOAL`` (no points, times not increasing, a value not finite, a
                position outside the joint limits, a speed beyond the motors').
        """
        if sorted(names) != sorted(ARM_JOINTS):
            raise GoalRefused(
                INVALID_JOINTS, f"the arm controller's joints are {list(ARM_JOINTS)}, got {names}"
            )
        order = [names.index(n) for n in ARM_JOINTS]
        if not positions or len(times_s) != len(positions):
            raise GoalRefused(INVALID_GOAL, "a trajectory needs points, each with a time")
        try:
            pos = np.array(positions, dtype=float)[:, order]
            times = np.array(times_s, dtype=float)
            vel = None if not velocities else np.array(velocities, dtype=float)[:, order]
        except (ValueError, IndexError) as exc:
            raise GoalRefused(INVALID_GOAL, f"malformed points: {exc}") from None
        if vel is not None and vel.shape != pos.shape:
            raise GoalRefused(INVALID_GOAL, "velocities must be given for every point or none")
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(times))) or (
            vel is not None and not np.all(np.isfinite(vel))
        ):
            raise GoalRefused(INVALID_GOAL, "a position, velocity or time is not finite")
        if times[0] < 0 or np.any(np.diff(times) <= 0):
            raise GoalRefused(INVALID_GOAL, "times from start must be >= 0 and increase")
        lo, hi = self.limits[:, 0], self.limits[:, 1]
        bad = np.argwhere((pos < lo - 1e-6) | (pos > hi + 1e-6))
        if len(bad):
            k, j = bad[0]
            raise GoalRefused(
                INVALID_GOAL,
                f"point {k}: {ARM_JOINTS[j]} = {pos[k, j]:.3f} rad is outside its limits "
                f"[{lo[j]:.2f}, {hi[j]:.2f}]",
            )
        return times, pos, vel

    def follow(
        self,
        names: list[str],
        times_s: list[float],
        positions: list[list[float]],
        velocities: list[list[float]] | None = None,
    ) -> int:
        """Start a trajectory goal (it replaces a running one, which ends ``cancelled``).

        Args:
            names: Joint names of each point's values.
            times_s: Each point's time from start, seconds (increasing).
            positions: Each point's joint positions, radians.
            velocities: Each point's joint speeds, rad/s, or None.

        Returns:
            The goal's id (for :meth:`status`).

        Raises:
            GoalRefused: See :meth:`check_goal`; also a first point that would make the arm
                jump (faster than the motors from where it is).
        """
        times, pos, vel = self.check_goal(names, times_s, positions, velocities)
        with self._lock:
            start = self._q_last.copy()
        speeds = [np.abs(pos[0] - start) / max(times[0], 1e-9)]
        if len(times) > 1:
            speeds.append(np.abs(np.diff(pos, axis=0)) / np.diff(times)[:, None])
        top = max(float(np.max(s)) for s in speeds)
        if top > MAX_JOINT_SPEED_RADPS * 1.05:
            raise GoalRefused(
                INVALID_GOAL,
                f"the trajectory needs {top:.2f} rad/s; the motors make at most "
                f"{MAX_JOINT_SPEED_RADPS} rad/s",
            )
        from_current = times[0] > 0
        if from_current:
            times = np.concatenate([[0.0], times])
            pos = np.vstack([start, pos])
            if vel is not None:
                vel = np.vstack([np.zeros(len(ARM_JOINTS)), vel])
        with self._lock:
            goal = _Goal(next(self._ids), times, pos, vel, from_current)
            if self._goal is not None and not self._goal.status.done:
                self._goal.status = GoalStatus("cancelled", SUCCESSFUL, "replaced by a new goal")
            self._goal = goal
            self._goals[goal.id] = goal
            self._hold = None
            self._hold_now = False
        return goal.id

    def cancel(self, goal_id: int | None = None) -> None:
        """Stop the running trajectory (``goal_id``'s, or any): the arm holds where it is."""
        with self._lock:
            goal = self._goal
            if goal is not None and (goal_id is None or goal.id == goal_id):
                if not goal.status.done:
                    goal.status = GoalStatus("cancelled", SUCCESSFUL, "cancelled")
                self._goal = None
                self._hold_now = True
            elif goal_id is None:
                self._hold_now = True

    def gripper(self, gap_m: float, effort_n: float) -> int:
        """Start a gripper goal: move the pads to ``gap_m`` squeezing with at most ``effort_n``.

        Args:
            gap_m: Gap between the pads, metres (clamped to 0 .. :data:`MAX_GAP_M`).
            effort_n: Largest force per finger, newtons (clamped to the motor's
                :data:`MAX_GRIP_FORCE_N`).

        Returns:
            The goal's id (for :meth:`status`).

        Raises:
            ValueError: A value is not finite or the effort is not positive.
        """
        if not (math.isfinite(gap_m) and math.isfinite(effort_n)) or effort_n <= 0:
            raise ValueError(f"gripper goal must be finite with effort > 0: {gap_m}, {effort_n}")
        grip = _Grip(
            0, min(max(gap_m, 0.0), MAX_GAP_M), min(effort_n, MAX_GRIP_FORCE_N), GoalStatus()
        )
        with self._lock:
            grip.id = next(self._ids)
            if self._grip is not None and not self._grip.status.done:
                self._grip.status = GoalStatus("cancelled", SUCCESSFUL, "replaced by a new goal")
            self._grip = grip
            self._grips[grip.id] = grip
        return grip.id

    def status(self, goal_id: int) -> GoalStatus:
        """The status of a trajectory or gripper goal (a copy).

        Raises:
            KeyError: No such goal.
        """
        with self._lock:
            goal = self._goals.get(goal_id) or self._grips[goal_id]
            s = goal.status
            return GoalStatus(s.state, s.code, s.text, s.stalled, s.reached)

    # ---- physics thread --------------------------------------------------------------------

    def control(self, dt: float) -> None:
        """One control tick: the trajectory's setpoints and the gripper's (physics thread)."""
        d = self._d
        now = float(self._now())
        q = np.array(d.qpos[self._qadr], dtype=float)
        with self._lock:
            self._q_last = q
            goal = self._goal
            if self._hold_now:
                self._hold = np.array(q, dtype=float)
                self._hold_now = False
            if goal is not None:
                self._track(goal, now, q)
            if self._goal is None and self._hold is not None:
                d.ctrl[self._act] = self._hold
            grip = self._grip
            if grip is not None and not grip.status.done:
                self._grip_tick(grip, dt)

    def _track(self, goal: _Goal, now: float, q: npt.NDArray[np.float64]) -> None:
        if goal.started_s is None:
            goal.started_s = now
            if goal.from_current:
                goal.positions[0] = q  # from where the arm is when the goal starts
        t = now - goal.started_s
        want = _interpolate(goal, t)
        behind = np.abs(want - q)
        if t < goal.times[-1] and np.any(behind > PATH_TOLERANCE_RAD):
            j = int(np.argmax(behind))
            self._end(goal, "aborted", PATH_TOLERANCE_VIOLATED,
                      f"{ARM_JOINTS[j]} is {behind[j]:.2f} rad behind the trajectory")  # fmt: skip
            return
        self._d.ctrl[self._act] = want
        if t >= goal.times[-1]:
            err = np.abs(goal.positions[-1] - q)
            if np.all(err < GOAL_TOLERANCE_RAD):
                goal.status = GoalStatus("succeeded", SUCCESSFUL, "")
                self._goal = None
                self._hold = np.array(goal.positions[-1])
            elif t > goal.times[-1] + GOAL_TIME_TOLERANCE_S:
                j = int(np.argmax(err))
                self._end(goal, "aborted", GOAL_TOLERANCE_VIOLATED,
                          f"{ARM_JOINTS[j]} ended {err[j]:.3f} rad from the goal")  # fmt: skip

    def _end(self, goal: _Goal, state: str, code: int, text: str) -> None:
        goal.status = GoalStatus(state, code, text)
        self._goal = None
        self._hold = np.array(self._d.qpos[self._qadr], dtype=float)

    def _grip_tick(self, grip: _Grip, dt: float) -> None:
        m, d = self._m, self._d
        if not grip.applied:
            for a in self._fact:
                m.actuator_forcerange[a] = (-grip.effort_n, grip.effort_n)
            d.ctrl[self._fact] = grip.gap_m / 2
            grip.applied = True
            return
        gap = float(np.sum(d.qpos[self._fq]))
        speed = float(np.max(np.abs(d.qvel[self._fv])))
        if abs(gap - grip.gap_m) <= GRIP_REACHED_M:
            grip.status = GoalStatus("succeeded", SUCCESSFUL, "", stalled=False, reached=True)
            return
        grip.still_s = grip.still_s + dt if speed < GRIP_STALL_MPS else 0.0
        if grip.still_s >= GRIP_STALL_S:
            grip.status = GoalStatus("succeeded", SUCCESSFUL, "", stalled=True, reached=False)

    def truth(self) -> ArmTruth:
        """The arm's ground truth now (physics thread)."""
        m, d = self._m, self._d
        touching: list[set[str]] = [set(), set()]
        table = False
        n = d.ncon
        if n:
            pairs = d.contact.geom[:n]
            for g1, g2 in pairs:
                a1, a2 = bool(self._arm_geom[g1]), bool(self._arm_geom[g2])
                if a1 == a2:
                    continue
                arm_g, other = (g1, g2) if a1 else (g2, g1)
                if other == self._table:
                    table = True
                    continue
                finger = self._finger_body.get(int(m.geom_bodyid[arm_g]))
                obj = self._object_of.get(int(m.geom_bodyid[other]))
                if finger is not None and obj is not None:
                    touching[finger].add(obj)
        with self._lock:
            executing = self._goal is not None
        force = float(np.mean(np.abs(d.actuator_force[self._fact])))
        tcp = d.site_xpos[self._tcp]
        return ArmTruth(
            positions_rad=tuple(float(x) for x in d.qpos[self._qadr]),
            velocities_radps=tuple(float(x) for x in d.qvel[self._vadr]),
            gap_m=float(np.sum(d.qpos[self._fq])),
            grip_force_n=force,
            held=tuple(sorted(touching[0] & touching[1])),
            table_contact=table,
            tcp_m=(float(tcp[0]), float(tcp[1]), float(tcp[2])),
            executing=executing,
        )


def _subtree(model: Any, root: int) -> set[int]:
    """The body ``root`` and every body below it."""
    out = {root}
    for b in range(root + 1, model.nbody):
        if int(model.body_parentid[b]) in out:
            out.add(b)
    return out
