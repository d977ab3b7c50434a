"""The live camera view of the console (SPEC F6).

Frames are rendered only when a page asks for one: ``GET /api/camera/frame.jpg`` (the page polls
it while it is visible) or ``GET /camera.mjpg`` (multipart MJPEG for other viewers). With no
page open nothing is rendered. Several viewers share one render: a frame younger than
``1 / fps`` seconds is served again instead of rendering a new one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from loopact._compat import wait_within
from loopact.errors import RobotError

log = logging.getLogger(__name__)

BOUNDARY = "loopactframe"
_FRAME_TIMEOUT_S = 5.0


class _FrameSource(Protocol):
    async def get_frame(self) -> Any: ...


@dataclass(frozen=True)
class EncodedFrame:
    """One camera frame encoded for the page.

    Attributes:
        jpeg: JPEG bytes.
        stamp_s: Capture time on the robot's clock, in seconds.
        seq: Render counter (increases by one per rendered frame).
        width_px: Width in pixels.
        height_px: Height in pixels.
    """

    jpeg: bytes
    stamp_s: float
    seq: int
    width_px: int
    height_px: int


def encode_jpeg(rgb: npt.NDArray[np.uint8], quality: int) -> bytes:
    """Encode an ``HxWx3`` uint8 RGB array as JPEG.

    Raises:
        ValueError: ``rgb`` is not an ``HxWx3`` uint8 array.
    """
    import cv2

    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 RGB frame, got {rgb.shape} {rgb.dtype}")
    ok, buf = cv2.imencode(".jpg", rgb[:, :, ::-1], [int(cv2.IMWRITE_JPEG_QUALITY), quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return bytes(buf.tobytes())


class CameraFeed:
    """Renders and caches camera frames on demand.

    Args:
        robot: The robot (``await robot.get_frame()`` -> ``CameraFrame``).
        fps: Most frames per second rendered (shared by every viewer).
        jpeg_quality: JPEG quality, 1-100.
    """

    def __init__(self, robot: _FrameSource, fps: float = 10.0, jpeg_quality: int = 80) -> None:
        if fps <= 0:
            raise ValueError(f"camera fps must be > 0, got {fps}")
        self._robot = robot
        self._period_s = 1.0 / fps
        self._quality = jpeg_quality
        self._lock = asyncio.Lock()
        self._last: EncodedFrame | None = None
        self._last_at = 0.0
        self.renders = 0

    async def frame(self) -> EncodedFrame:
        """The newest frame, rendered now unless one younger than the period exists.

        Raises:
            RobotError: No frame is available, rendering failed or took over 5 s.
        """
        async with self._lock:
            started = time.monotonic()
            if self._last is not None and started - self._last_at < self._period_s:
                return self._last
            try:
                cam = await wait_within(self._robot.get_frame(), _FRAME_TIMEOUT_S)
            except asyncio.TimeoutError as exc:
                raise RobotError(f"no camera frame within {_FRAME_TIMEOUT_S:.0f} s") from exc
            rgb = np.asarray(cam.rgb)
            try:
                jpeg = await asyncio.to_thread(encode_jpeg, rgb, self._quality)
            except ValueError as exc:
                raise RobotError(f"camera frame unusable: {exc}") from exc
            self.renders += 1
            self._last = EncodedFrame(
                jpeg=jpeg,
                stamp_s=float(cam.stamp_s),
                seq=self.renders,
                width_px=int(rgb.shape[1]),
                height_px=int(rgb.shape[0]),
            )
            self._last_at = started  # the period counts from the render's start
            return self._last

    async def mjpeg(self, stop: asyncio.Event) -> AsyncIterator[bytes]:
        """Multipart MJPEG parts at up to ``fps`` until ``stop`` is set or the client leaves."""
        last_seq = -1
        while not stop.is_set():
            started = time.monotonic()
            try:
                f = await self.frame()
            except RobotError as exc:
                log.warning("camera stream: %s", exc)
                return
            if f.seq != last_seq:
                last_seq = f.seq
                head = (
                    f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\n"
                    f"Content-Length: {len(f.jpeg)}\r\nX-Frame-Stamp: {f.stamp_s:.3f}\r\n\r\n"
                ).encode()
                yield head + f.jpeg + b"\r\n"
            wait_s = max(0.0, self._period_s - (time.monotonic() - started))
            try:
                await wait_within(stop.wait(), wait_s)
            except asyncio.TimeoutError:
                pass
