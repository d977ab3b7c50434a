"""Reading the robot for a recording: pose and TF at ``record.pose_hz``, camera frames at
``record.camera_hz`` (issue 44).

Two asyncio tasks beside the agent, each reading the :class:`~loopact.robot.interface.Robot`
the way the tools do (the robot is shared; nothing is commanded). A reading that fails (no pose
yet, a render error) is skipped and logged once; a slow camera delays only the camera task.
JPEG encoding runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from loopact._compat import wait_within
from loopact.errors import RobotError
from loopact.observe.messages import encode_jpeg
from loopact.observe.recorder import Recorder
from loopact.robot.interface import Robot

log = logging.getLogger(__name__)

_READ_TIMEOUT_S = 5.0


@dataclass
class RobotTap:
    """The running reader tasks of :func:`tap_robot`; :meth:`close` stops them.

    Attributes:
        poses: Poses recorded so far.
        frames: Camera frames recorded so far.
    """

    poses: int = 0
    frames: int = 0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _warned: set[str] = field(default_factory=set)

    def warn_once(self, what: str, exc: BaseException) -> None:
        """Log the first failure of each reading."""
        if what not in self._warned:
            self._warned.add(what)
            log.warning("recording: %s unavailable (%s); skipped while it fails", what, exc)

    async def close(self) -> None:
        """Stop the readers and wait for them."""
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks.clear()


def tap_robot(
    recorder: Recorder, robot: Robot, pose_hz: float, camera_hz: float, jpeg_quality: int = 75
) -> RobotTap:
    """Start reading ``robot`` into ``recorder`` on the running loop.

    Args:
        recorder: Where the readings go.
        robot: The robot (pose, head, camera).
        pose_hz: Poses (and transforms) per second, > 0.
        camera_hz: Camera frames per second; 0 records none.
        jpeg_quality: JPEG quality, 1-100.
    """
    tap = RobotTap()
    loop = asyncio.get_running_loop()
    poses = _poses(recorder, robot, pose_hz, tap)
    tap.tasks.append(loop.create_task(poses, name="loopact-rec-pose"))
    if camera_hz > 0:
        tap.tasks.append(
            loop.create_task(
                _frames(recorder, robot, camera_hz, jpeg_quality, tap), name="loopact-rec-camera"
            )
        )
    return tap


async def _poses(recorder: Recorder, robot: Robot, hz: float, tap: RobotTap) -> None:
    period = 1.0 / hz
    while True:
        started = time.monotonic()
        try:
            pose = await wait_within(robot.get_pose(), _READ_TIMEOUT_S)
            head = None
            if robot.has_head:
                state = await wait_within(robot.get_head(), _READ_TIMEOUT_S)
                head = (state.pan_rad, state.tilt_rad)
        except (RobotError, asyncio.TimeoutError) as exc:
            tap.warn_once("pose", exc)
        else:
            recorder.record_pose(time.time(), pose.x_m, pose.y_m, pose.yaw_rad, head)
            tap.poses += 1
        await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))


async def _frames(recorder: Recorder, robot: Robot, hz: float, quality: int, tap: RobotTap) -> None:
    period = 1.0 / hz
    while True:
        started = time.monotonic()
        try:
            frame = await wait_within(robot.get_frame(), _READ_TIMEOUT_S)
            taken = time.time()
            jpeg = await asyncio.to_thread(encode_jpeg, frame.rgb, quality)
        except (RobotError, asyncio.TimeoutError, ValueError) as exc:
            tap.warn_once("camera", exc)
        else:
            recorder.record_frame(taken, jpeg)
            tap.frames += 1
        await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))
