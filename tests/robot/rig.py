"""Robot test rig: the real MuJoCo SimRobot behind a recording proxy, governor and tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import CameraFrame, DepthFrame, HeadState, Pose, Twist
from loopact.robot.profile import HardwareProfile, SiteMap, load_profile, load_site
from loopact.robot.session import make_robot_tools
from loopact.tools.base import Tool
from loopact.vision.gate import ImageGate

SIM_SPEED = 4.0


class RecordingRobot:
    """Wraps a SimRobot and records every twist sent to it (what the actuators received)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.clock = inner.clock
        self.has_head = inner.has_head
        self.camera_hfov_deg = inner.camera_hfov_deg
        self.twists: list[tuple[float, Twist]] = []
        self.stale_pose_s = 0.0
        self.stale_reads = 0  # the next N readings are 1 s old (a publisher that stalls)

    async def send_twist(self, twist: Twist) -> None:
        self.twists.append((self.clock.now(), twist))
        await self.inner.send_twist(twist)

    async def get_pose(self) -> Pose:
        p: Pose = await self.inner.get_pose()
        if self.stale_reads > 0:
            self.stale_reads -= 1
            return Pose(p.x_m, p.y_m, p.yaw_rad, p.frame, p.stamp_s - 1.0)
        if self.stale_pose_s:
            return Pose(p.x_m, p.y_m, p.yaw_rad, p.frame, p.stamp_s - self.stale_pose_s)
        return p

    async def get_frame(self) -> CameraFrame:
        f: CameraFrame = await self.inner.get_frame()
        return f

    async def get_depth(self) -> DepthFrame:
        d: DepthFrame = await self.inner.get_depth()
        return d

    async def set_head(self, pan_rad: float, tilt_rad: float) -> None:
        await self.inner.set_head(pan_rad, tilt_rad)

    async def get_head(self) -> HeadState:
        h: HeadState = await self.inner.get_head()
        return h

    async def teleport(self, x_m: float, y_m: float, yaw_rad: float) -> None:
        await self.inner.teleport(x_m, y_m, yaw_rad)

    async def close(self) -> None:
        await self.inner.close()

    @property
    def commanded(self) -> Twist:
        """The last twist the robot received (zero if none)."""
        return self.twists[-1][1] if self.twists else Twist()


@dataclass
class Rig:
    robot: RecordingRobot
    governor: SafetyGovernor
    profile: HardwareProfile
    site: SiteMap
    tools: dict[str, Tool] = field(default_factory=dict)

    async def call(self, name: str, **kwargs: Any) -> Any:
        return await self.tools[name](**kwargs)  # type: ignore[operator]

    async def pose(self) -> Pose:
        return await self.robot.get_pose()

    async def wait_for(
        self, cond: Callable[[], Awaitable[bool]], sim_timeout_s: float = 10.0
    ) -> None:
        """Wait on the sim clock until ``cond()`` is true; fail after ``sim_timeout_s``."""
        end = self.robot.clock.now() + sim_timeout_s
        while not await cond():
            assert self.robot.clock.now() < end, "condition not met in time"
            await self.robot.clock.sleep(0.05)


async def make_rig(site: SiteMap | None = None, profile: str = "sim") -> Rig:
    from loopact.sim import SimRobot

    robot = RecordingRobot(await asyncio.wait_for(SimRobot.create(speed=SIM_SPEED), 30))
    prof = load_profile(profile)
    site_map = site if site is not None else load_site("sim_room")
    gov = SafetyGovernor(robot, prof, site_map)
    gov.start()
    tools = make_robot_tools(robot, gov, prof, site_map, ImageGate())
    return Rig(robot, gov, prof, site_map, {t.name: t for t in tools})
