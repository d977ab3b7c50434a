"""Conversions between loopact's payloads and ROS 2 messages (``sensor_msgs/Image``, headers).

Pure functions of a message (no rclpy import here: the message types are passed in), so they are
tested without ROS 2. Images are ``HxWx3`` uint8 RGB; depth is ``HxW`` float32 metres; stamps are
seconds (SPEC C4, D1).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from loopact.nodes.connector import ImageData


def image_to_msg(img: ImageData, msg_type: Any) -> Any:
    """An ``HxWx3`` uint8 RGB image as a ``sensor_msgs/Image`` (``rgb8``)."""
    msg = msg_type()
    rgb = np.ascontiguousarray(img.rgb, dtype=np.uint8)
    h, w = rgb.shape[:2]
    msg.height, msg.width = h, w
    msg.encoding = "rgb8"
    msg.is_bigendian = 0
    msg.step = w * 3
    msg.header.frame_id = img.frame_id
    set_stamp(msg.header, img.stamp_s)
    msg.data = rgb.tobytes()
    return msg


def set_stamp(header: Any, stamp_s: float) -> None:
    """Write seconds into a ``std_msgs/Header`` stamp."""
    sec = int(stamp_s)
    header.stamp.sec = sec
    header.stamp.nanosec = int((stamp_s - sec) * 1e9)


def stamp_of(header: Any) -> float:
    """A header stamp in seconds."""
    return float(header.stamp.sec) + float(header.stamp.nanosec) * 1e-9


MAX_HEADER_AGE_S = 2.0
"""A header stamp older than this on arrival is not trusted as the capture time, seconds."""


def capture_time(header: Any, arrival_s: float, wall_now_s: float | None = None) -> float:
    """When a message's data was taken, on the clock ``arrival_s`` was read from.

    ``sensor_msgs`` headers carry the acquisition time (an image's exposure, a joint state's
    reading) on the publisher's wall clock; the arrival time less the stamp's age is when the
    data was taken on this process's clock, so a frame that waited in a queue is not taken for
    a new one. The age counts only when it is plausible, 0 to :data:`MAX_HEADER_AGE_S`: an
    unset stamp, or a publisher's clock ahead of ours or far behind it, gives the arrival.

    Args:
        header: A ``std_msgs/Header``.
        arrival_s: When the message arrived, seconds on the subscriber's clock.
        wall_now_s: The wall clock now (``time.time()`` when None), seconds.
    """
    stamp = stamp_of(header)
    if stamp <= 0.0:
        return arrival_s
    age = (time.time() if wall_now_s is None else wall_now_s) - stamp
    return arrival_s - age if 0.0 <= age <= MAX_HEADER_AGE_S else arrival_s


def msg_to_image(msg: Any) -> ImageData:
    """A ``sensor_msgs/Image`` (rgb8, bgr8, rgba8, bgra8 or mono8) as RGB :class:`ImageData`.

    Raises:
        ValueError: Another encoding or a size that does not match the data.
    """
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}.get(msg.encoding)
    if channels is None:
        raise ValueError(f"unsupported image encoding {msg.encoding!r}")
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    if step < w * channels or buf.size < h * step:
        raise ValueError(f"image data ({buf.size} bytes) does not fit {w}x{h} step {step}")
    arr = buf[: h * step].reshape(h, step)[:, : w * channels].reshape(h, w, channels)
    if msg.encoding == "mono8":
        rgb = np.repeat(arr, 3, axis=2)
    elif msg.encoding.startswith("bgr"):
        rgb = arr[:, :, 2::-1]
    else:
        rgb = arr[:, :, :3]
    return ImageData(np.ascontiguousarray(rgb), stamp_of(msg.header), msg.header.frame_id)


def msg_to_depth(msg: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A ``32FC1`` (metres) or ``16UC1`` (millimetres) depth image as ``HxW`` float32 metres.

    Raises:
        ValueError: Another encoding or a size mismatch.
    """
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    raw = bytes(msg.data)
    if msg.encoding == "32FC1":
        dtype: Any = np.dtype(np.float32).newbyteorder(">" if msg.is_bigendian else "<")
        scale = 1.0
    elif msg.encoding == "16UC1":
        dtype = np.dtype(np.uint16).newbyteorder(">" if msg.is_bigendian else "<")
        scale = 0.001
    else:
        raise ValueError(f"unsupported depth encoding {msg.encoding!r}")
    if len(raw) < h * step or step < w * dtype.itemsize:
        raise ValueError(f"depth data ({len(raw)} bytes) does not fit {w}x{h} step {step}")
    rows = np.frombuffer(raw[: h * step], dtype=np.uint8).reshape(h, step)[:, : w * dtype.itemsize]
    arr = np.ascontiguousarray(rows).view(dtype).reshape(h, w).astype(np.float32)
    if scale != 1.0:
        arr[arr == 0] = np.nan
        arr *= scale
    result: np.ndarray[Any, np.dtype[np.float32]] = arr
    return result
