"""Foxglove messages from loopact's readings (issue 44): poses, transforms, images, markers.

Pure functions over ``foxglove.messages`` (foxglove-sdk, MIT): each returns one message of a
Foxglove published schema, so Foxglove's standard panels (3D, Image, Log, Raw Messages, Plot)
show it. Units follow ROS REP 103 (metres, radians; x forward, y left, z up); times are Unix
seconds (wall clock) unless said otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from foxglove.messages import (
    Color,
    CompressedImage,
    FrameTransform,
    FrameTransforms,
    Grid,
    LinePrimitive,
    LinePrimitiveLineType,
    Log,
    LogLevel,
    PackedElementField,
    PackedElementFieldNumericType,
    Point3,
    Pose,
    PoseInFrame,
    PosesInFrame,
    Quaternion,
    SceneEntity,
    SceneUpdate,
    SpherePrimitive,
    TextPrimitive,
    Timestamp,
    Vector2,
    Vector3,
)

from loopact.observe.topics import BASE_FRAME, CAMERA_FRAME, MAP_FRAME, ODOM_FRAME, Level

_LEVELS = {
    "debug": LogLevel.Debug,
    "info": LogLevel.Info,
    "warning": LogLevel.Warning,
    "error": LogLevel.Error,
}
_RED = Color(r=0.9, g=0.1, b=0.1, a=0.9)
_ORANGE = Color(r=1.0, g=0.6, b=0.0, a=0.9)
_CYAN = Color(r=0.0, g=0.8, b=0.9, a=0.9)
_GREEN = Color(r=0.1, g=0.8, b=0.2, a=0.9)
_WHITE = Color(r=1.0, g=1.0, b=1.0, a=1.0)


def stamp(wall_s: float) -> Timestamp:
    """A Foxglove timestamp of Unix seconds."""
    return Timestamp.from_epoch_secs(wall_s)


def ns(wall_s: float) -> int:
    """Unix seconds as the nanoseconds of an MCAP log time."""
    return int(round(wall_s * 1e9))


def yaw_pitch(yaw_rad: float, pitch_rad: float = 0.0) -> Quaternion:
    """The rotation ``yaw`` about z, then ``pitch`` about the new y (pitch > 0 looks down)."""
    cy, sy = math.cos(yaw_rad / 2), math.sin(yaw_rad / 2)
    cp, sp = math.cos(pitch_rad / 2), math.sin(pitch_rad / 2)
    return Quaternion(x=-sy * sp, y=cy * sp, z=sy * cp, w=cy * cp)


def planar_pose(x_m: float, y_m: float, yaw_rad: float, z_m: float = 0.0) -> Pose:
    """A pose on the floor plane: position in metres, heading in radians."""
    return Pose(position=Vector3(x=x_m, y=y_m, z=z_m), orientation=yaw_pitch(yaw_rad))


def pose_in_frame(wall_s: float, frame: str, x_m: float, y_m: float, yaw_rad: float) -> PoseInFrame:
    """``foxglove.PoseInFrame`` of a planar pose in ``frame``."""
    return PoseInFrame(timestamp=stamp(wall_s), frame_id=frame, pose=planar_pose(x_m, y_m, yaw_rad))


def transforms(
    wall_s: float,
    x_m: float,
    y_m: float,
    yaw_rad: float,
    camera: tuple[float, float, float, float] | None = None,
    odom_in_map: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> FrameTransforms:
    """``map -> odom -> base_link (-> camera)`` (REP 105) for one pose.

    Args:
        wall_s: Unix seconds.
        x_m: Robot x in ``odom``, metres.
        y_m: Robot y in ``odom``, metres.
        yaw_rad: Robot heading in ``odom``, radians.
        camera: ``(forward_m, height_m, pan_rad, tilt_rad)`` of the camera on the robot (tilt
            down positive), or None without a camera.
        odom_in_map: ``(x_m, y_m, yaw_rad)`` of ``odom`` in ``map`` (the identity where the
            site map shares the odometry frame, as in the simulator).
    """
    t = stamp(wall_s)
    ox, oy, oyaw = odom_in_map
    out = [
        FrameTransform(
            timestamp=t,
            parent_frame_id=MAP_FRAME,
            child_frame_id=ODOM_FRAME,
            translation=Vector3(x=ox, y=oy, z=0.0),
            rotation=yaw_pitch(oyaw),
        ),
        FrameTransform(
            timestamp=t,
            parent_frame_id=ODOM_FRAME,
            child_frame_id=BASE_FRAME,
            translation=Vector3(x=x_m, y=y_m, z=0.0),
            rotation=yaw_pitch(yaw_rad),
        ),
    ]
    if camera is not None:
        forward_m, height_m, pan_rad, tilt_rad = camera
        out.append(
            FrameTransform(
                timestamp=t,
                parent_frame_id=BASE_FRAME,
                child_frame_id=CAMERA_FRAME,
                translation=Vector3(x=forward_m, y=0.0, z=height_m),
                rotation=yaw_pitch(pan_rad, tilt_rad),
            )
        )
    return FrameTransforms(transforms=out)


def jpeg_image(wall_s: float, jpeg: bytes, frame: str = CAMERA_FRAME) -> CompressedImage:
    """``foxglove.CompressedImage`` of JPEG bytes."""
    return CompressedImage(timestamp=stamp(wall_s), frame_id=frame, data=jpeg, format="jpeg")


def encode_jpeg(rgb: npt.NDArray[np.uint8], quality: int) -> bytes:
    """An ``HxWx3`` uint8 RGB frame as JPEG bytes (OpenCV).

    Raises:
        ValueError: Not an ``HxWx3`` uint8 array, or OpenCV could not encode it.
    """
    import cv2

    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 RGB frame, got {rgb.shape} {rgb.dtype}")
    ok, buf = cv2.imencode(".jpg", rgb[:, :, ::-1], [int(cv2.IMWRITE_JPEG_QUALITY), quality])
    if not ok:
        raise ValueError("OpenCV could not encode the frame as JPEG")
    return bytes(buf)


def log_line(wall_s: float, level: Level, name: str, message: str, task_id: str | None) -> Log:
    """``foxglove.Log``: ``name`` is the event type, ``file`` the task id (or empty)."""
    t = stamp(wall_s)
    return Log(timestamp=t, level=_LEVELS[level], name=name, message=message, file=task_id or "")


def _label(x: float, y: float, text: str, z: float = 0.45) -> TextPrimitive:
    return TextPrimitive(
        pose=planar_pose(x, y, 0.0, z),
        billboard=True,
        font_size=14.0,
        scale_invariant=True,
        color=_WHITE,
        text=text,
    )


def _sphere(x: float, y: float, size: float, color: Color, z: float = 0.1) -> SpherePrimitive:
    return SpherePrimitive(
        pose=planar_pose(x, y, 0.0, z), size=Vector3(x=size, y=size, z=size), color=color
    )


def decision_marker(
    wall_s: float, n: int, decision: str, reason: str, text: str, at: tuple[float, float] | None
) -> SceneUpdate:
    """A governor decision where the robot was (``odom``): red for a halt or an emergency stop,
    orange otherwise; ``at`` None (no pose yet) puts it at the origin."""
    x, y = at or (0.0, 0.0)
    color = _RED if decision in ("halt", "emergency_stop", "refuse") else _ORANGE
    entity = SceneEntity(
        timestamp=stamp(wall_s),
        frame_id=ODOM_FRAME,
        id=f"governor-{n}",
        spheres=[_sphere(x, y, 0.25, color)],
        texts=[_label(x, y, f"{decision} {reason}: {text}"[:120])],
    )
    return SceneUpdate(entities=[entity])


def objects_update(wall_s: float, objects: dict[str, dict[str, float]]) -> SceneUpdate:
    """The simulator's moving objects (``map``) as spheres with their names."""
    entity = SceneEntity(
        timestamp=stamp(wall_s),
        frame_id=MAP_FRAME,
        id="sim-objects",
        spheres=[_sphere(p["x_m"], p["y_m"], 0.2, _CYAN) for p in objects.values()],
        texts=[_label(p["x_m"], p["y_m"], name) for name, p in objects.items()],
    )
    return SceneUpdate(entities=[entity])


def site_update(
    wall_s: float,
    waypoints: dict[str, tuple[float, float]],
    geofence: Sequence[tuple[float, float]],
    frame: str = MAP_FRAME,
) -> SceneUpdate:
    """The site map: each waypoint a green sphere with its name, the geofence a closed line."""
    lines = []
    if len(geofence) >= 3:
        lines.append(
            LinePrimitive(
                type=LinePrimitiveLineType.LineLoop,
                pose=planar_pose(0.0, 0.0, 0.0),
                thickness=0.03,
                color=_ORANGE,
                points=[Point3(x=x, y=y, z=0.02) for x, y in geofence],
            )
        )
    entity = SceneEntity(
        timestamp=stamp(wall_s),
        frame_id=frame,
        id="site",
        spheres=[_sphere(x, y, 0.15, _GREEN, 0.05) for x, y in waypoints.values()],
        texts=[_label(x, y, name, 0.3) for name, (x, y) in waypoints.items()],
        lines=lines,
    )
    return SceneUpdate(entities=[entity])


def occupancy_grid(
    wall_s: float,
    cells: npt.NDArray[Any],
    resolution_m: float,
    origin: tuple[float, float, float],
    frame: str = MAP_FRAME,
) -> Grid:
    """``foxglove.Grid`` of an occupancy map (ROS ``nav_msgs/OccupancyGrid`` values: 0 free,
    100 occupied, -1 unknown, one byte per cell).

    Args:
        wall_s: Unix seconds.
        cells: ``HxW`` int8 or uint8 array, row 0 at the origin's y (rows grow along +y).
        resolution_m: Cell edge in metres.
        origin: ``(x_m, y_m, yaw_rad)`` of cell (0, 0)'s corner in ``frame``.
        frame: The map's frame.

    Raises:
        ValueError: ``cells`` is not 2-D or the resolution is not positive.
    """
    if cells.ndim != 2 or not resolution_m > 0:
        raise ValueError(f"a map is HxW cells with a positive resolution, got {cells.shape}")
    data = np.ascontiguousarray(cells).astype(np.int8, copy=False).view(np.uint8)
    rows, cols = data.shape
    return Grid(
        timestamp=stamp(wall_s),
        frame_id=frame,
        pose=planar_pose(*origin),
        column_count=cols,
        cell_size=Vector2(x=resolution_m, y=resolution_m),
        row_stride=cols,
        cell_stride=1,
        fields=[
            PackedElementField(name="occupancy", offset=0, type=PackedElementFieldNumericType.Uint8)
        ],
        data=data.tobytes(),
    )


def path(wall_s: float, points: Iterable[tuple[float, float, float]], frame: str) -> PosesInFrame:
    """``foxglove.PosesInFrame`` of a planned path: ``(x_m, y_m, yaw_rad)`` per point."""
    return PosesInFrame(
        timestamp=stamp(wall_s),
        frame_id=frame,
        poses=[planar_pose(x, y, yaw) for x, y, yaw in points],
    )
