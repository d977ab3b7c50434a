"""The simulated robot behind the standard robot interface (SPEC D1, D6, F6).

:class:`SimRobot` implements :class:`loopact.robot.interface.Robot` on top of a
:class:`~loopact.sim.simulator.Simulator` (physics thread) and a
:class:`~loopact.sim.render.RenderWorker` (GL thread). Odometry is ground truth here
(``map`` = ``odom``), every timestamp is simulated time on :attr:`SimRobot.clock`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact._compat import wait_within
from loopact.errors import RobotError
from loopact.robot.interface import CameraFrame, Clock, DepthFrame, HeadState, Pose, Twist
from loopact.sim import world
from loopact.sim.arm_driver import SimArmDriver
from loopact.sim.render import RenderKind, RenderWorker
from loopact.sim.simulator import Simulator

logger = logging.getLogger(__name__)

RENDER_TIMEOUT_S = 15.0
CAMERA_FRAME_ID = "head_camera"


class SimRobot:
    """A differential-drive robot with a pan-tilt RGB-D head in the MuJoCo room.

    Build it with :meth:`create`. Robot tools never call :meth:`send_twist` or
    :meth:`set_head` directly: the safety governor does (SPEC X3).

    Attributes:
        sim: The running :class:`Simulator`.
        clock: Simulated time (a :class:`~loopact.sim.simulator.SimClock`).
        has_head: Always True.
        camera_hfov_deg: Horizontal field of view of the head camera in degrees.
        width: Camera width in pixels.
        height: Camera height in pixels.
        arm: The arm's controllers (:class:`SimArmDriver`) in the arm scene, else None.
        freeze_time_while_rendering: Hold simulated time while a camera or depth image renders
            (:meth:`Simulator.hold`; default True, so what the robot sees does not depend on
            machine load). ``loopact sim --ros2`` turns it off: ROS 2 consumers run on wall
            time, and a camera streaming at 10 Hz would otherwise slow the robot's motion.
    """

    has_head: bool = True

    def __init__(self, sim: Simulator, renderer: RenderWorker) -> None:
        self.sim = sim
        self.clock: Clock = sim.clock
        self.camera_hfov_deg: float = world.CAMERA_HFOV_DEG
        self.width = sim.width
        self.height = sim.height
        self._renderer = renderer
        self._closed = False
        self.freeze_time_while_rendering = True
        self.arm: SimArmDriver | None = SimArmDriver(sim) if sim.arm is not None else None

    @classmethod
    async def create(
        cls,
        speed: float = 1.0,
        width: int = 640,
        height: int = 480,
        scenario: str = "default",
        sim_log: Path | None = None,
        holonomic: bool = False,
    ) -> SimRobot:
        """Start a simulator and its renderer.

        Args:
            speed: Simulated seconds per wall second (``float("inf")``: as fast as possible).
            width: Camera width in pixels.
            height: Camera height in pixels.
            scenario: ``default`` or ``moving-target`` (:mod:`loopact.sim.scenarios`).
            sim_log: Write the ground-truth pose log here (:mod:`loopact.sim.simlog`).
            holonomic: A mecanum base: the twist's lateral speed moves it sideways (issue 43).

        Returns:
            The running robot at (0, 0), yaw 0, head pan 0 and tilt
            :data:`loopact.sim.world.DEFAULT_HEAD_TILT_RAD` (looking a little down).

        Raises:
            ConfigError: ``speed`` is not positive, or an unknown scenario.
            RobotError: MuJoCo or the GL context is unavailable.
            OSError: The sim log cannot be created.
        """
        sim = await asyncio.to_thread(Simulator, speed, width, height, scenario, sim_log, holonomic)
        renderer = RenderWorker(sim.model, width, height)
        try:
            await asyncio.to_thread(renderer.start)
            sim.start()
        except BaseException:
            await asyncio.to_thread(renderer.close)
            sim.close()
            raise
        return cls(sim, renderer)

    def _check_open(self) -> None:
        if self._closed:
            raise RobotError("the simulated robot is closed")

    async def send_twist(self, twist: Twist) -> None:
        """Command the base (held until the next command; ``lateral_mps`` moves a holonomic base
        sideways and is ignored on a differential one).

        Args:
            twist: Forward speed in m/s, yaw rate in rad/s, sideways speed in m/s.

        Raises:
            RobotError: The robot is closed.
            ValueError: A twist component is not finite.
        """
        self._check_open()
        self.sim.set_twist(twist.linear_mps, twist.angular_radps, twist.lateral_mps)

    async def get_pose(self) -> Pose:
        """The base pose in ``odom`` (ground truth in simulation), stamped with sim time."""
        self._check_open()
        st = self.sim.state()
        return Pose(st.x_m, st.y_m, st.yaw_rad, frame="odom", stamp_s=st.stamp_s)

    async def get_map_pose(self) -> Pose:
        """The base pose in the ``map`` frame: the simulator's world is its map, and its
        odometry is exact, so the robot is localized (issue 40; over ROS 2 it publishes
        ``map`` -> ``odom`` as the identity)."""
        self._check_open()
        st = self.sim.state()
        return Pose(st.x_m, st.y_m, st.yaw_rad, frame="map", stamp_s=st.stamp_s)

    async def _render(self, kind: RenderKind) -> tuple[float, npt.NDArray[Any]]:
        """Render the current state; returns (sim stamp, image)."""
        self._check_open()
        hold = self.freeze_time_while_rendering
        if hold:
            self.sim.hold()  # simulated time waits for the image (Simulator.hold)
        try:
            st = self.sim.state()
            fut = self._renderer.submit(kind, st.qpos, st.stamp_s)
            img = await wait_within(asyncio.wrap_future(fut), RENDER_TIMEOUT_S)
            return st.stamp_s, img
        except asyncio.TimeoutError as exc:
            raise RobotError(f"rendering {kind} took longer than {RENDER_TIMEOUT_S} s") from exc
        finally:
            if hold:
                self.sim.release()

    async def get_frame(self) -> CameraFrame:
        """Render the head camera now (cached per sim timestamp) (SPEC F6).

        Returns:
            ``HxWx3`` uint8 RGB, stamped with the sim time of the rendered state.

        Raises:
            RobotError: Rendering failed or the robot is closed.
        """
        stamp, rgb = await self._render("rgb")
        return CameraFrame(rgb=rgb, stamp_s=stamp, frame_id=CAMERA_FRAME_ID)

    async def get_depth(self) -> DepthFrame:
        """Render the depth image aligned with :meth:`get_frame` (REP 118 ``32FC1``).

        Returns:
            ``HxW`` float32 metres along the optical axis, NaN beyond the far plane.

        Raises:
            RobotError: Rendering failed or the robot is closed.
        """
        stamp, depth = await self._render("depth")
        return DepthFrame(depth_m=depth, stamp_s=stamp, frame_id=CAMERA_FRAME_ID)

    async def render_topdown(self) -> npt.NDArray[np.uint8]:
        """Render the whole room from above (RGB, x to the right, y up) (SPEC F6).

        Raises:
            RobotError: Rendering failed or the robot is closed.
        """
        _, img = await self._render("topdown")
        top: npt.NDArray[np.uint8] = img
        return top

    async def set_head(self, pan_rad: float, tilt_rad: float) -> None:
        """Command the pan-tilt head; values are clamped to the joint limits.

        Args:
            pan_rad: Pan in radians, left positive, within ±pi/2.
            tilt_rad: Tilt in radians, down positive, within -30..45 degrees.

        Raises:
            RobotError: The robot is closed.
            ValueError: An angle is not finite.
        """
        self._check_open()
        pan, tilt = self.sim.set_head_target(pan_rad, tilt_rad)
        if (pan, tilt) != (pan_rad, tilt_rad):
            logger.debug(
                "head command clamped to pan %.1f deg, tilt %.1f deg",
                math.degrees(pan),
                math.degrees(tilt),
            )

    async def get_head(self) -> HeadState:
        """The head's joint positions in radians, stamped with sim time."""
        self._check_open()
        st = self.sim.state()
        return HeadState(st.pan_rad, st.tilt_rad, stamp_s=st.stamp_s)

    async def teleport(self, x_m: float, y_m: float, yaw_rad: float) -> None:
        """Move the base instantly (scenario set-up and tests only) and wait until applied.

        Args:
            x_m: x in metres.
            y_m: y in metres.
            yaw_rad: Heading in radians.
        """
        self._check_open()
        self.sim.set_base_pose(x_m, y_m, yaw_rad)
        await self.clock.sleep(0.02)

    async def close(self) -> None:
        """Zero the base, stop the physics and render threads, free the GL context; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sim.set_twist(0.0, 0.0)
        finally:
            await asyncio.to_thread(self.sim.close)
            await asyncio.to_thread(self._renderer.close)
