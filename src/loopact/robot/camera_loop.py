"""Perception at camera rate beside a control loop (SPEC D5; CONVENTIONS "Vision").

:class:`FrameWorker` runs ``process(frame) -> result`` on the newest camera frame in its own task,
about every ``period_s`` of robot time, the CPU work off the event loop; a controller reads
:attr:`FrameWorker.latest` at its own rate. A slow frame then delays only perception: the
controller keeps commanding from the last result, and holds the base (zero twist) once that
result is older than its staleness limit, instead of going silent and tripping the governor's
watchdog.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from loopact.errors import RobotError
from loopact.robot.interface import CameraFrame, Pose
from loopact.robot.motion import RobotEnv
from loopact.robot.perception import fresh_frame

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Sample(Generic[T]):
    """One processed frame.

    Attributes:
        seq: 1, 2, ... in order of processing.
        frame: The camera frame.
        pose: Odometry read just before the frame was taken.
        result: What ``process`` made of it.
    """

    seq: int
    frame: CameraFrame
    pose: Pose
    result: T


class FrameWorker(Generic[T]):
    """Processes the newest frame every ``period_s`` (robot clock) until stopped.

    Args:
        env: The robot environment (camera, odometry, clock).
        process: ``frame -> result``, CPU work run in a worker thread.
        period_s: Robot-clock seconds between frames.

    Use as ``async with FrameWorker(...) as worker:``; ``worker.latest`` is None until the
    first frame is processed; :meth:`check` re-raises a failure of the camera, or of
    ``process`` on a frame it cannot read (as :class:`~loopact.errors.RobotError`).
    """

    def __init__(self, env: RobotEnv, process: Callable[[CameraFrame], T], period_s: float) -> None:
        self.env = env
        self.process = process
        self.period_s = period_s
        self.latest: Sample[T] | None = None
        self.frames = 0
        self._error: RobotError | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> FrameWorker[T]:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loopact-frames")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            # wait() never raises the worker's own CancelledError, and a cancellation of the
            # caller still propagates (a suppress() here would swallow the caller's)
            await asyncio.wait({self._task})

    def check(self) -> None:
        """Raise the camera's failure, if the worker stopped on one.

        Raises:
            RobotError: The camera failed (stale or no frames, a frame that did not render) or
                ``process`` raised on a frame (a corrupt image).
        """
        if self._error is not None:
            raise self._error

    async def _run(self) -> None:
        clock = self.env.robot.clock
        due = clock.now()
        try:
            while True:
                pose = await self.env.pose()
                frame = await fresh_frame(self.env)
                try:
                    result = await asyncio.to_thread(self.process, frame)
                except Exception as exc:  # a frame perception cannot read: stop, say why
                    logger.debug("frame processing failed", exc_info=True)
                    raise RobotError(
                        f"perception failed on the camera frame of {frame.stamp_s:.2f} s "
                        f"({type(exc).__name__}: {exc})"
                    ) from exc
                self.frames += 1
                self.latest = Sample(self.frames, frame, pose, result)
                # a fixed cadence: the time spent processing counts towards the period
                due = max(due + self.period_s, clock.now())
                await clock.sleep(due - clock.now())
        except RobotError as exc:
            logger.info("frame worker stopped: %s", exc)
            self._error = exc
