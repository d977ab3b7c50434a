"""Bad camera input for the perception tools on the real simulator (issue 15, "Bad input").

The real MuJoCo robot, whose camera can be made to fail on demand: ``render`` raises the
RobotError a failed render (or a ROS 2 camera that never published) raises, ``corrupt`` hands
out a frame with the wrong shape. Every tool gives a failed result that says what was wrong,
a running follow_line or track stops with the base at zero, and nothing raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopact.errors import RobotError
from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import CameraFrame
from loopact.robot.perception import PerceptionOptions
from loopact.robot.profile import load_profile, load_site
from loopact.robot.session import make_robot_tools
from loopact.sim import SimRobot
from loopact.tools.base import Tool
from loopact.vision.gate import ImageGate

pytestmark = pytest.mark.sim


class FaultyCameraRobot(SimRobot):
    """The simulated robot with a camera that breaks when :attr:`fault` is set."""

    fault: str | None = None

    async def get_frame(self) -> CameraFrame:
        if self.fault == "render":
            raise RobotError("rendering the camera image failed (GL context lost)")
        frame = await super().get_frame()
        if self.fault == "corrupt":  # one channel only, as a broken driver might send
            return CameraFrame(frame.rgb[:, :, 0].copy(), frame.stamp_s, frame.frame_id)
        return frame


@dataclass
class FaultRig:
    robot: FaultyCameraRobot
    governor: SafetyGovernor
    tools: dict[str, Tool]

    async def call(self, name: str, **args: Any) -> Any:
        """The tool itself: an exception would fail the test (the registry would hide it)."""
        return await self.tools[name](**args)  # type: ignore[operator]

    async def moving(self, task: asyncio.Future[Any]) -> None:
        """Wait (bounded by sim time) until the governor commands motion."""
        clock = self.robot.clock
        while self.governor.last_twist.is_zero:
            assert clock.now() < 30.0 and not task.done(), task
            await clock.sleep(0.05)


@pytest.fixture
async def fault_rig(tmp_path: Path) -> AsyncIterator[FaultRig]:
    robot = await asyncio.wait_for(
        FaultyCameraRobot.create(speed=2.0, width=320, height=240, scenario="moving-target"), 30
    )
    prof, site = load_profile("sim"), load_site("sim_room")
    gov = SafetyGovernor(robot, prof, site)
    gov.start()
    tools = make_robot_tools(robot, gov, prof, site, ImageGate(), PerceptionOptions())
    try:
        yield FaultRig(robot, gov, {t.name: t for t in tools})
    finally:
        await gov.close()
        await robot.close()


@pytest.mark.parametrize(("fault", "needle"), [("render", "GL context"), ("corrupt", "corrupt")])
async def test_a_broken_camera_gives_failed_results_that_say_why(
    fault_rig: FaultRig, fault: str, needle: str
) -> None:
    fault_rig.robot.fault = fault
    for name, args in [
        ("seewhat", {}),
        ("detect_objects", {}),
        ("visual_positioning", {"target": "the cyan ball"}),
        ("follow_line", {"color": "purple", "duration_s": 5.0}),
    ]:
        res = await fault_rig.call(name, **args)
        assert not res.ok, (name, res)
        assert needle in (res.error or ""), (name, res.error)
    assert fault_rig.governor.last_twist.is_zero


async def test_follow_line_stops_when_the_camera_breaks_mid_run(fault_rig: FaultRig) -> None:
    await fault_rig.robot.teleport(1.0, -1.1, 0.0)  # on the line, facing along it
    task = asyncio.ensure_future(fault_rig.call("follow_line", color="purple", duration_s=30.0))
    await fault_rig.moving(task)
    fault_rig.robot.fault = "corrupt"
    res = await asyncio.wait_for(task, 30)
    assert not res.ok and res.data["stopped_by"] == "error", res.data
    assert "corrupt frame" in res.data["result"], res.data
    assert fault_rig.governor.last_twist.is_zero
    await fault_rig.robot.clock.sleep(0.5)
    assert abs(fault_rig.robot.sim.state().linear_mps) < 0.01  # the base really stopped


async def test_track_stops_when_the_camera_breaks_mid_run(fault_rig: FaultRig) -> None:
    found = await fault_rig.call("visual_positioning", target="the cyan ball")
    assert found.ok and found.data["found"], found.data
    x1, y1, x2, y2 = found.data["bbox"]
    task = asyncio.ensure_future(
        fault_rig.call("track", x1=x1, y1=y1, x2=x2, y2=y2, duration_s=30.0)
    )
    await fault_rig.moving(task)
    fault_rig.robot.fault = "render"
    res = await asyncio.wait_for(task, 30)
    assert not res.ok and res.data["stopped_by"] == "error", res.data
    assert "GL context" in res.data["result"], res.data
    assert fault_rig.governor.last_twist.is_zero
    await fault_rig.robot.clock.sleep(0.5)
    st = fault_rig.robot.sim.state()
    assert abs(st.linear_mps) < 0.01 and abs(st.angular_radps) < 0.05


async def test_a_frame_perception_cannot_read_stops_the_frame_worker_with_a_reason(
    fault_rig: FaultRig,
) -> None:
    from loopact.robot.camera_loop import FrameWorker
    from loopact.robot.motion import RobotEnv

    env = RobotEnv(
        fault_rig.robot, fault_rig.governor, load_profile("sim"), load_site("sim_room"), ImageGate()
    )

    def process(frame: CameraFrame) -> int:
        raise ValueError(f"cannot read a {frame.rgb.shape} frame")

    async with FrameWorker(env, process, 0.1) as worker:
        clock = fault_rig.robot.clock
        t0 = clock.now()
        while True:  # bounded by sim time
            try:
                worker.check()
            except RobotError as exc:
                assert "perception failed on the camera frame" in str(exc)
                assert "ValueError: cannot read a (240, 320, 3) frame" in str(exc)
                break
            assert clock.now() - t0 < 5.0, "the worker never reported the failure"
            await clock.sleep(0.05)
    assert worker.latest is None
