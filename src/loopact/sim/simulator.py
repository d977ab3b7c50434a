"""The physics thread, the simulated clock and the robot's state (SPEC D6).

:class:`Simulator` steps MuJoCo on its own thread with a 2 ms step, in control ticks of
:data:`CONTROL_STEPS` steps. Each tick it turns the commanded twist into velocity-actuator
targets (with acceleration limits), applies head targets, advances physics, publishes a
consistent copy of the state and wakes every :class:`SimClock` sleeper whose deadline passed.

``speed`` scales simulated time against wall time: 1.0 is real time, 4.0 is four times faster,
``float("inf")`` runs as fast as the CPU allows. Every timestamp the robot reports is simulated
time, so tools and tests behave the same at any speed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from loopact.errors import ConfigError, RobotError
from loopact.robot.interface import normalize_angle
from loopact.sim import arm_scene, world, worlds
from loopact.sim.arm_sim import ArmPhysics
from loopact.sim.render import import_mujoco
from loopact.sim.scenarios import Scenario, get_scenario
from loopact.sim.simlog import Listener, SimLog
from loopact.sim.state import SimState

logger = logging.getLogger(__name__)

TIMESTEP_S = 0.002
CONTROL_STEPS = 5  # physics steps per control tick (10 ms of simulated time)
_MAX_LAG_S = 0.25  # wall-clock lag after which pacing re-anchors instead of catching up
_MAX_AHEAD_S = 0.05  # simulated seconds physics may run past a wake-up no loop has run yet
_WAKE_WAIT_S = 2.0  # wall seconds physics waits for a stalled loop before going on without it
_SETPOINT_LEAD_MPS = 0.1  # how far the velocity setpoint may run ahead of the real velocity
_SETPOINT_LEAD_RADPS = 0.3


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _fail(fut: asyncio.Future[None], message: str) -> None:
    if not fut.done():
        fut.set_exception(RobotError(message))


class SimClock:
    """Simulated time (implements :class:`loopact.robot.interface.Clock`).

    ``now()`` is the simulator's time in seconds. ``sleep(dt)`` completes once simulated time
    has advanced by at least ``dt``; it works from any asyncio loop and is cancellation-safe.

    Args:
        sim: The simulator whose time this is.
    """

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def now(self) -> float:
        """Simulated seconds since the simulator started."""
        return self._sim.now()

    async def sleep(self, seconds: float) -> None:
        """Wait until simulated time has advanced by ``seconds``.

        Args:
            seconds: Simulated seconds; zero or negative just yields to the loop.

        Raises:
            ValueError: ``seconds`` is not a finite number.
            RobotError: The simulator is closed (or closes while waiting).
        """
        if not math.isfinite(seconds):
            raise ValueError(f"sleep seconds must be finite, got {seconds!r}")
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._sim._add_sleeper(self.now() + seconds, loop, fut)
        await fut


class Simulator:
    """MuJoCo physics of the room and robot on a dedicated thread (SPEC D6).

    Args:
        speed: Simulated seconds per wall second; ``float("inf")`` for as fast as possible.
        width: Camera width in pixels (sets the camera's vertical FOV, see
            :func:`loopact.sim.world.build_mjcf`).
        height: Camera height in pixels.
        scenario: The scenario (``default``, ``moving-target``, ``flat``, ``flat-blocked``; see
            :mod:`loopact.sim.scenarios`), by name or as a :class:`Scenario`.
        sim_log: Write the ground-truth poses here as JSON Lines (:class:`SimLog`), or None.
        holonomic: The base moves sideways too (a mecanum profile; issue 43): the twist's
            lateral speed is applied; otherwise it is ignored (a differential base).

    Attributes:
        arm: The arm's controllers (:class:`~loopact.sim.arm_sim.ArmPhysics`) in a scenario
            with an arm, else None.

    Raises:
        ConfigError: ``speed`` is not positive (key ``sim.speed``), or an unknown scenario.
        RobotError: MuJoCo is missing or the model does not compile.
        OSError: The sim log cannot be created.
    """

    def __init__(
        self,
        speed: float = 1.0,
        width: int = 640,
        height: int = 480,
        scenario: str | Scenario = "default",
        sim_log: Path | None = None,
        holonomic: bool = False,
    ) -> None:
        if not speed > 0:
            raise ConfigError(f"simulator speed must be > 0 (or inf), got {speed!r}", "sim.speed")
        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self._mj = import_mujoco()
        self.speed = float(speed)
        self.width = width
        self.height = height
        movers = self.scenario.movers
        self.holonomic = holonomic
        try:
            self.model: Any = self._mj.MjModel.from_xml_string(
                worlds.build_mjcf(self.scenario, width, height)
            )
        except ValueError as exc:
            raise RobotError(f"simulator model failed to compile: {exc}") from exc
        self.model.opt.timestep = TIMESTEP_S
        self._data: Any = self._mj.MjData(self.model)
        m = self.model
        self._qadr = {
            n: int(m.jnt_qposadr[m.joint(n).id])
            for n in ("base_x", "base_y", "base_yaw", "head_pan", "head_tilt")
        }
        self._vadr = {n: int(m.jnt_dofadr[m.joint(n).id]) for n in ("base_x", "base_y", "base_yaw")}
        self._act = {n: int(m.actuator(n).id) for n in ("drive_x", "drive_y", "drive_yaw")}
        self._mover_adr = [
            (
                mv,
                int(m.jnt_qposadr[m.joint(f"mover_{mv.name}_x").id]),
                int(m.jnt_qposadr[m.joint(f"mover_{mv.name}_y").id]),
            )
            for mv in movers
        ]
        self._place_movers(0.0)
        self._act_pan = int(m.actuator("pan").id)
        self._act_tilt = int(m.actuator("tilt").id)
        self._data.qpos[self._qadr["head_pan"]] = world.DEFAULT_HEAD_PAN_RAD
        self._data.qpos[self._qadr["head_tilt"]] = world.DEFAULT_HEAD_TILT_RAD
        self._data.ctrl[self._act_pan] = world.DEFAULT_HEAD_PAN_RAD
        self._data.ctrl[self._act_tilt] = world.DEFAULT_HEAD_TILT_RAD
        self._mj.mj_forward(self.model, self._data)
        self._free = [
            (m.body(b).name[4:], int(m.jnt_qposadr[m.body_jntadr[b]]))
            for b in range(m.nbody)
            if m.body(b).name.startswith("obj_") and m.body_jntnum[b] == 1
        ]
        self.arm: ArmPhysics | None = None
        if self.scenario.arm:
            self.arm = ArmPhysics(m, self._data, self.now, arm_scene.ARM_HOME_RAD)
            self._mj.mj_forward(m, self._data)

        self.clock = SimClock(self)
        self._lock = threading.Lock()
        self._twist = (0.0, 0.0, 0.0)
        self._head_target = (world.DEFAULT_HEAD_PAN_RAD, world.DEFAULT_HEAD_TILT_RAD)
        self._teleport: tuple[float, float, float] | None = None
        self._v_sp = 0.0
        self._w_sp = 0.0
        self._vy_sp = 0.0
        self._time = 0.0
        self._state = self._read_state()
        self._sleepers: list[
            tuple[float, int, asyncio.AbstractEventLoop, asyncio.Future[None]]
        ] = []
        self._seq = itertools.count()
        self._unseen: dict[int, float] = {}  # wake-up id -> simulated time it was posted at
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._error: str | None = None
        self._holds = 0
        self.steps_taken = 0
        self._log = SimLog(sim_log) if sim_log is not None else None
        if self._log is not None:
            self._log.write(self._state)

    # -- public API ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the physics thread (idempotent).

        Raises:
            RobotError: The simulator was already closed.
        """
        with self._lock:
            if self._closed:
                raise RobotError("simulator is closed")
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="loopact-sim", daemon=True)
            self._thread.start()

    def listen_truth(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on the physics thread with every ground-truth sample from now on:
        the lines of the sim log (:class:`SimLog`), also without ``--sim-log`` (a recording,
        issue 44). It must be quick and must not raise. Returns the remover."""
        with self._lock:
            if self._log is None:
                self._log = SimLog(None)
            sim_log = self._log
        return sim_log.listen(listener)

    def hold(self) -> None:
        """Freeze simulated time until the matching :meth:`release` (sensor rendering).

        A camera or depth image is rendered while simulated time stands still, so what the
        robot sees is as fresh on its clock however long the CPU takes to render: results
        do not depend on machine load (SPEC D6). Holds nest.
        """
        with self._lock:
            self._holds += 1

    def release(self) -> None:
        """End one :meth:`hold`."""
        with self._lock:
            self._holds = max(0, self._holds - 1)

    @property
    def running(self) -> bool:
        """True while the physics thread is stepping."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def now(self) -> float:
        """Simulated time in seconds."""
        return self._time

    def state(self) -> SimState:
        """The latest consistent state copy.

        Raises:
            RobotError: The physics thread died.
        """
        if self._error is not None:
            raise RobotError(self._error)
        with self._lock:
            return self._state

    def set_twist(self, linear_mps: float, angular_radps: float, lateral_mps: float = 0.0) -> None:
        """Command the base; held until the next command (SPEC D1).

        Args:
            linear_mps: Forward speed in m/s (negative: backward).
            angular_radps: Yaw rate in rad/s, counter-clockwise positive.
            lateral_mps: Sideways speed in m/s, left positive; applied on a holonomic base
                only (:attr:`holonomic`), ignored on a differential one.

        Raises:
            ValueError: A value is not finite.
        """
        values = (linear_mps, angular_radps, lateral_mps)
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"twist must be finite, got {values!r}")
        with self._lock:
            self._twist = (
                float(linear_mps),
                float(angular_radps),
                float(lateral_mps) if self.holonomic else 0.0,
            )

    def set_head_target(self, pan_rad: float, tilt_rad: float) -> tuple[float, float]:
        """Command the head joints, clamped to their limits.

        Args:
            pan_rad: Pan in radians, left positive, limited to ±pi/2.
            tilt_rad: Tilt in radians, down positive, limited to -30..45 degrees.

        Returns:
            The (pan, tilt) actually commanded after clamping, in radians.

        Raises:
            ValueError: A value is not finite.
        """
        if not (math.isfinite(pan_rad) and math.isfinite(tilt_rad)):
            raise ValueError(f"head angles must be finite, got ({pan_rad!r}, {tilt_rad!r})")
        pan = min(max(pan_rad, world.PAN_LIMITS_RAD[0]), world.PAN_LIMITS_RAD[1])
        tilt = min(max(tilt_rad, world.TILT_LIMITS_RAD[0]), world.TILT_LIMITS_RAD[1])
        with self._lock:
            self._head_target = (pan, tilt)
        return pan, tilt

    def set_base_pose(self, x_m: float, y_m: float, yaw_rad: float) -> None:
        """Teleport the base (applied at the next control tick; velocities zeroed).

        For tests and scenario set-up only; odometry jumps with it (map = odom here).

        Args:
            x_m: x in metres.
            y_m: y in metres.
            yaw_rad: Heading in radians.
        """
        with self._lock:
            self._teleport = (float(x_m), float(y_m), float(yaw_rad))

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the base and the physics thread, fail pending sleeps; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._twist = (0.0, 0.0, 0.0)
            thread = self._thread
        self._stop.set()
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("physics thread did not stop within %.1f s", timeout_s)
        self._fail_sleepers("simulator closed")
        if self._log is not None:
            self._log.close()

    # -- clock support ------------------------------------------------------------------------

    def _add_sleeper(
        self, deadline: float, loop: asyncio.AbstractEventLoop, fut: asyncio.Future[None]
    ) -> None:
        with self._lock:
            if self._closed:
                raise RobotError("simulator is closed")
            if self._error is not None:
                raise RobotError(self._error)
            heapq.heappush(self._sleepers, (deadline, next(self._seq), loop, fut))

    def _wake_due(self, now: float) -> None:
        due = []
        with self._lock:
            while self._sleepers and self._sleepers[0][0] <= now:
                due.append(heapq.heappop(self._sleepers))
        for _, seq, loop, fut in due:
            if fut.done():  # cancelled: nothing to do
                continue
            with self._lock:
                self._unseen[seq] = now
            try:
                loop.call_soon_threadsafe(self._woken, fut, seq)
            except RuntimeError:  # that loop is closed
                with self._lock:
                    self._unseen.pop(seq, None)

    def _woken(self, fut: asyncio.Future[None], seq: int) -> None:
        """On the sleeper's loop: wake it; once the woken task has taken its step (up to its
        next await), tell physics that loop is keeping up.

        Waking the future queues the task's step on this loop; the callback queued after it
        runs once that step is over. Physics so holds while a controller computes and sends
        its command, at any speed: at ``speed=inf`` it would otherwise run on unbounded in
        that window (seconds of sim time in a slow step on a loaded machine, and the
        governor's watchdog stops the base).
        """
        _wake(fut)
        asyncio.get_running_loop().call_soon(self._seen, seq)  # runs after the task's step

    def _seen(self, seq: int) -> None:
        with self._lock:
            self._unseen.pop(seq, None)

    def _wait_for_loops(self, now: float) -> bool:
        """Hold physics while a loop has not run a wake-up posted more than
        :data:`_MAX_AHEAD_S` of simulated time ago (at most :data:`_WAKE_WAIT_S` of wall time).

        A controller on a starved or paused event loop (a loaded machine, a garbage
        collection) would otherwise see simulated time run on without it, and the governor's
        watchdog stop the base for a pause no real controller made: the simulation runs
        slower than asked instead, as simulators do when the machine cannot keep up (D6).

        Returns:
            Whether physics waited (the wall-clock pacing then re-anchors).
        """
        deadline = time.perf_counter() + _WAKE_WAIT_S
        waited = False
        while not self._stop.is_set():
            with self._lock:
                oldest = min(self._unseen.values(), default=None)
                if oldest is not None and time.perf_counter() > deadline:
                    logger.debug("a loop did not run its simulator wake-up; going on without it")
                    self._unseen.clear()
                    oldest = None
            if oldest is None or now - oldest <= _MAX_AHEAD_S:
                return waited
            self._stop.wait(0.0005)
            waited = True
        return waited

    def _fail_sleepers(self, message: str) -> None:
        with self._lock:
            left, self._sleepers = self._sleepers, []
        for _, _, loop, fut in left:
            try:
                loop.call_soon_threadsafe(_fail, fut, message)
            except RuntimeError:
                pass

    # -- physics thread -----------------------------------------------------------------------

    def _place_movers(self, t_s: float) -> None:
        """Put every mover where its path says it is at ``t_s`` (kinematic, no dynamics)."""
        d = self._data
        for mv, ax, ay in self._mover_adr:
            d.qpos[ax], d.qpos[ay] = mv.path.position(t_s)

    def _read_state(self) -> SimState:
        d = self._data
        q, v = self._qadr, self._vadr
        yaw = float(d.qpos[q["base_yaw"]])
        vx, vy = float(d.qvel[v["base_x"]]), float(d.qvel[v["base_y"]])
        objects = {
            name: (float(d.qpos[a]), float(d.qpos[a + 1]), float(d.qpos[a + 2]))
            for name, a in self._free
        }
        return SimState(
            stamp_s=float(d.time),
            qpos=np.array(d.qpos, dtype=np.float64),
            x_m=float(d.qpos[q["base_x"]]),
            y_m=float(d.qpos[q["base_y"]]),
            yaw_rad=normalize_angle(yaw),
            linear_mps=vx * math.cos(yaw) + vy * math.sin(yaw),
            angular_radps=float(d.qvel[v["base_yaw"]]),
            pan_rad=float(d.qpos[q["head_pan"]]),
            tilt_rad=float(d.qpos[q["head_tilt"]]),
            movers={
                mv.name: (float(d.qpos[ax]), float(d.qpos[ay])) for mv, ax, ay in self._mover_adr
            },
            lateral_mps=-vx * math.sin(yaw) + vy * math.cos(yaw),
            objects=objects,
            arm=self.arm.truth() if self.arm is not None else None,
        )

    def _control(self, dt: float) -> None:
        """Turn the commanded twist into actuator targets with acceleration limits."""
        d = self._data
        with self._lock:
            (v_cmd, w_cmd, vy_cmd), (pan, tilt) = self._twist, self._head_target
            teleport, self._teleport = self._teleport, None
        if teleport is not None:
            x, y, yaw = teleport
            d.qpos[self._qadr["base_x"]] = x
            d.qpos[self._qadr["base_y"]] = y
            d.qpos[self._qadr["base_yaw"]] = yaw
            for adr in self._vadr.values():
                d.qvel[adr] = 0.0
            self._v_sp = self._w_sp = self._vy_sp = 0.0
            self._mj.mj_forward(self.model, d)
        yaw = float(d.qpos[self._qadr["base_yaw"]])
        c, s = math.cos(yaw), math.sin(yaw)
        vx_w, vy_w = float(d.qvel[self._vadr["base_x"]]), float(d.qvel[self._vadr["base_y"]])
        v_act = vx_w * c + vy_w * s
        vy_act = -vx_w * s + vy_w * c
        w_act = float(d.qvel[self._vadr["base_yaw"]])
        dv = world.MAX_LINEAR_ACCEL_MPS2 * dt
        dw = world.MAX_ANGULAR_ACCEL_RADPS2 * dt
        v_sp = self._v_sp + min(max(v_cmd - self._v_sp, -dv), dv)
        w_sp = self._w_sp + min(max(w_cmd - self._w_sp, -dw), dw)
        # Blocked by contact: keep the setpoint near the real velocity so it does not wind up.
        v_sp = min(max(v_sp, v_act - _SETPOINT_LEAD_MPS), v_act + _SETPOINT_LEAD_MPS)
        w_sp = min(max(w_sp, w_act - _SETPOINT_LEAD_RADPS), w_act + _SETPOINT_LEAD_RADPS)
        # sideways (a holonomic base; zero otherwise): the same acceleration limit
        vy_sp = self._vy_sp + min(max(vy_cmd - self._vy_sp, -dv), dv)
        vy_sp = min(max(vy_sp, vy_act - _SETPOINT_LEAD_MPS), vy_act + _SETPOINT_LEAD_MPS)
        self._v_sp, self._w_sp, self._vy_sp = v_sp, w_sp, vy_sp
        d.ctrl[self._act["drive_x"]] = v_sp * c - vy_sp * s
        d.ctrl[self._act["drive_y"]] = v_sp * s + vy_sp * c
        d.ctrl[self._act["drive_yaw"]] = w_sp
        d.ctrl[self._act_pan] = pan
        d.ctrl[self._act_tilt] = tilt
        if self._mover_adr:
            # where the movers are at the end of this tick (their velocities stay zero)
            self._place_movers(float(d.time) + dt)
        if self.arm is not None:
            self.arm.control(dt)

    def _run(self) -> None:
        mj, m, d = self._mj, self.model, self._data
        tick_s = CONTROL_STEPS * TIMESTEP_S
        wall0, sim0 = time.perf_counter(), float(d.time)
        bad_qacc = int(mj.mjtWarning.mjWARN_BADQACC)
        warned = 0
        try:
            while not self._stop.is_set():
                if self._holds:
                    # time stands still while a sensor image renders; no catch-up after
                    self._stop.wait(0.0005)
                    wall0, sim0 = time.perf_counter(), float(d.time)
                    continue
                self._control(tick_s)
                mj.mj_step(m, d, CONTROL_STEPS)
                self.steps_taken += CONTROL_STEPS
                state = self._read_state()
                with self._lock:
                    self._state = state
                self._time = state.stamp_s
                if self._log is not None:
                    self._log.write(state)
                self._wake_due(state.stamp_s)
                if self._unseen and self._wait_for_loops(state.stamp_s):
                    wall0, sim0 = time.perf_counter(), state.stamp_s
                n_bad = int(d.warning[bad_qacc].number)
                if n_bad > warned:
                    warned = n_bad
                    logger.warning("simulator became unstable (bad QACC) at t=%.3f", d.time)
                if math.isinf(self.speed):
                    continue
                ahead = (state.stamp_s - sim0) / self.speed - (time.perf_counter() - wall0)
                if ahead > 0:
                    self._stop.wait(ahead)
                elif ahead < -_MAX_LAG_S:
                    logger.debug("simulator lagging %.3f s behind; re-anchoring", -ahead)
                    wall0, sim0 = time.perf_counter(), state.stamp_s
        except Exception as exc:
            self._error = f"simulator physics failed: {type(exc).__name__}: {exc}"
            logger.exception("simulator physics thread failed")
            self._fail_sleepers(self._error)
        finally:
            with self._lock:
                d.ctrl[:] = 0.0
