"""A kinematic differential-drive base on a stepped clock, for fuzzing the governor (issue 20).

The real governor and the real motion tools run against it exactly as against the MuJoCo
robot (the :class:`~loopact.robot.interface.Robot` interface), but time advances only when
the test steps it: thousands of motions take seconds, and every run is the same run. The base
follows its commanded twist with the simulator's acceleration limits
(:data:`loopact.sim.world.MAX_LINEAR_ACCEL_MPS2`, ``MAX_ANGULAR_ACCEL_RADPS2``) and records
every command that reached it. Depth images see nothing (no obstacles in this world: the
fuzz targets limits, geofence and stops).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import heapq
import itertools
import math
from typing import Any

import numpy as np

from loopact.robot.interface import CameraFrame, DepthFrame, HeadState, Pose, Twist
from loopact.sim import world


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """A default executor that runs each job at once on the event loop's thread.

    The governor hands its depth clearance to a thread (``asyncio.to_thread``); on a stepped
    clock a real thread would finish after a number of loop turns that depends on the
    machine's load, so the fuzz would not be the same run every time. Inline, every job is
    done before its awaiting coroutine resumes: deterministic, and no thread hand-off cost.
    """

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine, as a thread would
            fut.set_exception(exc)
        return fut


class SteppedClock:
    """A robot clock that moves only in :meth:`advance` (seconds)."""

    def __init__(self) -> None:
        self.t = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + max(seconds, 0.0), next(self._seq), fut))
        await fut

    def advance(self, dt: float) -> None:
        self.t += dt
        while self._sleepers and self._sleepers[0][0] <= self.t + 1e-9:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)


class KinematicRobot:
    """The base: ``x_m``, ``y_m``, ``yaw_rad`` integrated from the accel-limited twist.

    Attributes:
        twists: Every twist sent, in order, with its clock time.
        heads: Every head command ``(pan_rad, tilt_rad)``.
    """

    has_head = True
    camera_hfov_deg = world.CAMERA_HFOV_DEG

    def __init__(self) -> None:
        self.clock = SteppedClock()
        self.x_m = self.y_m = self.yaw_rad = 0.0
        self.v = self.w = 0.0
        self.cmd = Twist()
        self.pan = 0.0
        self.tilt = world.DEFAULT_HEAD_TILT_RAD
        self.twists: list[tuple[float, Twist]] = []
        self.heads: list[tuple[float, float]] = []
        self._depth = np.full((12, 16), np.nan, dtype=np.float32)

    def step(self, dt: float) -> None:
        """Integrate ``dt`` seconds and advance the clock."""
        dv = world.MAX_LINEAR_ACCEL_MPS2 * dt
        dw = world.MAX_ANGULAR_ACCEL_RADPS2 * dt
        self.v += min(max(self.cmd.linear_mps - self.v, -dv), dv)
        self.w += min(max(self.cmd.angular_radps - self.w, -dw), dw)
        self.yaw_rad = math.remainder(self.yaw_rad + self.w * dt, 2 * math.pi)
        self.x_m += self.v * math.cos(self.yaw_rad) * dt
        self.y_m += self.v * math.sin(self.yaw_rad) * dt
        self.clock.advance(dt)

    @property
    def at_rest(self) -> bool:
        return abs(self.v) < 1e-9 and abs(self.w) < 1e-9

    async def send_twist(self, twist: Twist) -> None:
        self.twists.append((self.clock.t, twist))
        self.cmd = twist

    async def get_pose(self) -> Pose:
        return Pose(self.x_m, self.y_m, self.yaw_rad, frame="odom", stamp_s=self.clock.t)

    async def get_frame(self) -> CameraFrame:
        rgb = np.zeros((12, 16, 3), dtype=np.uint8)
        return CameraFrame(rgb=rgb, stamp_s=self.clock.t, frame_id="head_camera")

    async def get_depth(self) -> DepthFrame:
        return DepthFrame(depth_m=self._depth, stamp_s=self.clock.t, frame_id="head_camera")

    async def set_head(self, pan_rad: float, tilt_rad: float) -> None:
        self.heads.append((pan_rad, tilt_rad))
        self.pan, self.tilt = pan_rad, tilt_rad

    async def get_head(self) -> HeadState:
        return HeadState(self.pan, self.tilt, stamp_s=self.clock.t)

    async def close(self) -> None:
        self.cmd = Twist()


class Driven:
    """The base and its governor with the clock running by itself, for agent-level tests.

    The simulated clock advances ``dt_s`` robot seconds per event-loop pass of its driver
    (about ten times real time), so motions end without a test stepping them. Use as
    ``async with Driven() as rig``; ``rig.tools`` are the real robot tools on this base.
    """

    DT_S = 0.02

    def __init__(self) -> None:
        from loopact.robot.governor import SafetyGovernor
        from loopact.robot.profile import load_profile, load_site
        from loopact.robot.session import make_robot_tools
        from loopact.vision.gate import ImageGate

        self.robot = KinematicRobot()
        self.profile = load_profile("sim")
        self.site = load_site("sim_room")
        self.governor = SafetyGovernor(self.robot, self.profile, self.site)  # type: ignore[arg-type]
        self.tools = make_robot_tools(
            self.robot,  # type: ignore[arg-type]
            self.governor,
            self.profile,
            self.site,
            ImageGate(),
        )
        self._driver: asyncio.Task[None] | None = None

    async def _drive(self) -> None:
        while True:
            self.robot.step(self.DT_S)
            await asyncio.sleep(0.002)  # the simulator's own pace, not a wait for an outcome

    async def __aenter__(self) -> Driven:
        self.governor.start()
        self._driver = asyncio.create_task(self._drive())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.governor.close()
        if self._driver is not None:
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._driver

    async def settle(self) -> None:
        """Wait (bounded) until the base is at rest after the last command."""
        for _ in range(2000):
            if self.robot.at_rest and self.governor.base_lease is None:
                return
            await asyncio.sleep(0.002)
        raise AssertionError(f"the base did not come to rest: v={self.robot.v}, w={self.robot.w}")

    def stopped(self) -> str | None:
        """Why the robot is not safely stopped, or None: at rest, last command zero, unowned."""
        last = self.robot.twists[-1][1] if self.robot.twists else None
        if last is not None and (last.linear_mps, last.angular_radps) != (0.0, 0.0):
            return f"the last command to the base was {last}"
        if self.governor.base_lease is not None:
            return "a motion still owns the base"
        if not self.robot.at_rest:
            return f"the base still moves: v={self.robot.v}, w={self.robot.w}"
        return None
