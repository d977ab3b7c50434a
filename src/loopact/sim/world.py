"""The simulated room and robot, as MJCF built in code (SPEC D6).

The layout is fixed: other parts (the site map, tests, prompts) rely on exactly these numbers,
so they are module constants as well as geometry in the MJCF. All lengths are metres, angles
radians unless a name says ``_deg``; world frame x forward (at start), y left, z up (REP 103).

Contact groups: bit 1 (``contype=1``/``conaffinity=1``) is "solid" (robot base, walls, objects,
obstacles). The floor, the painted line, waypoint markers and the head have no collision: the
base slides on planar joints, so it never needs the floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopact.sim.scenarios import Mover

# Room: the floor spans these bounds; walls stand just outside them.
ROOM_X_M = (-2.0, 6.0)
ROOM_Y_M = (-3.0, 3.0)
WALL_HEIGHT_M = 0.6
WALL_THICKNESS_M = 0.1

# Robot (differential drive with a pan-tilt RGB-D head).
ROBOT_RADIUS_M = 0.17
ROBOT_HEIGHT_M = 0.15
CAMERA_HEIGHT_M = 0.35
CAMERA_HFOV_DEG = 70.0
PAN_ORIGIN_M = (-0.02, 0.0, 0.30)  # pan joint in the base frame
CAMERA_FORWARD_M = 0.04  # camera ahead of the tilt axis (the tilt axis is at CAMERA_HEIGHT_M)
PAN_LIMITS_RAD = (-math.pi / 2, math.pi / 2)  # left positive
TILT_LIMITS_RAD = (math.radians(-30.0), math.radians(45.0))  # down positive
DEFAULT_HEAD_PAN_RAD = 0.0
DEFAULT_HEAD_TILT_RAD = math.radians(15.0)  # looks a little down: floor line and objects in view
MAX_LINEAR_ACCEL_MPS2 = 1.0
MAX_ANGULAR_ACCEL_RADPS2 = 3.0

# Named waypoints (map frame = odom frame in the simulator).
WAYPOINTS: dict[str, tuple[float, float]] = {
    "kitchen": (4.5, 2.0),
    "charger": (-1.4, 0.0),
    "door": (5.4, -0.6),
    "window": (1.0, -2.5),
}

# The purple floor line: a closed rectangle, corners in order.
LINE_CORNERS_M: tuple[tuple[float, float], ...] = ((0.6, -1.1), (3.6, -1.1), (3.6, 1.1), (0.6, 1.1))
LINE_WIDTH_M = 0.04
LINE_RGBA = (0.55, 0.1, 0.75, 1.0)


@dataclass(frozen=True)
class SceneObject:
    """One coloured object standing on the floor.

    Attributes:
        name: Identifier, also the MJCF geom name (``obj_<name>``).
        colour: Colour word a person would use.
        shape: ``box``, ``cylinder`` or ``sphere``.
        x_m: Centre x in metres.
        y_m: Centre y in metres.
        size_m: MJCF half-sizes in metres (box: 3 values, cylinder: radius and half-height,
            sphere: radius).
        rgba: Colour, 0..1.
    """

    name: str
    colour: str
    shape: str
    x_m: float
    y_m: float
    size_m: tuple[float, ...]
    rgba: tuple[float, float, float, float]

    @property
    def height_m(self) -> float:
        """Total height above the floor in metres."""
        if self.shape == "sphere":
            return 2 * self.size_m[0]
        return 2 * self.size_m[-1]


OBJECTS: tuple[SceneObject, ...] = (
    SceneObject("red_cube", "red", "box", 3.0, -1.6, (0.15, 0.15, 0.15), (0.9, 0.05, 0.05, 1)),
    SceneObject(
        "green_cylinder", "green", "cylinder", 1.6, 2.3, (0.12, 0.16), (0.05, 0.75, 0.1, 1)
    ),
    SceneObject("blue_sphere", "blue", "sphere", -1.2, -2.2, (0.15,), (0.05, 0.2, 0.95, 1)),
    SceneObject("yellow_box", "yellow", "box", 5.3, 0.6, (0.15, 0.2, 0.16), (0.95, 0.85, 0.05, 1)),
)

# Obstacles (grey/brown, collidable).
CRATE_CENTER_M = (2.6, -2.5)
CRATE_SIZE_M = (0.6, 0.4, 0.5)  # full x, y, z extents
PILLAR_CENTER_M = (-1.2, 2.2)
PILLAR_RADIUS_M = 0.15
PILLAR_HEIGHT_M = 0.6
TABLE_CENTER_M = (4.6, -1.8)
TABLE_TOP_M = (0.9, 0.6)  # full x, y extents of the top
TABLE_HEIGHT_M = 0.7

_SOLID = 'contype="1" conaffinity="1"'
_GHOST = 'contype="0" conaffinity="0"'


def _f(*values: float) -> str:
    return " ".join(f"{v:.4g}" for v in values)


def _walls(bounds: tuple[tuple[float, float], tuple[float, float]] | None = None) -> str:
    (x0, x1), (y0, y1) = bounds or (ROOM_X_M, ROOM_Y_M)
    t = WALL_THICKNESS_M / 2
    h = WALL_HEIGHT_M / 2
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 + 2 * t, (y1 - y0) / 2
    rgba = _f(0.78, 0.74, 0.68, 1)
    walls = [
        ("wall_south", cx, y0 - t, hx, t),
        ("wall_north", cx, y1 + t, hx, t),
        ("wall_west", x0 - t, cy, t, hy),
        ("wall_east", x1 + t, cy, t, hy),
    ]
    return "\n".join(
        f'<geom name="{n}" type="box" pos="{_f(x, y, h)}" size="{_f(sx, sy, h)}" '
        f'rgba="{rgba}" {_SOLID}/>'
        for n, x, y, sx, sy in walls
    )


def _objects() -> str:
    out = []
    for o in OBJECTS:
        z = o.height_m / 2
        out.append(
            f'<geom name="obj_{o.name}" type="{o.shape}" pos="{_f(o.x_m, o.y_m, z)}" '
            f'size="{_f(*o.size_m)}" rgba="{_f(*o.rgba)}" {_SOLID}/>'
        )
    return "\n".join(out)


def _obstacles() -> str:
    bx, by = CRATE_CENTER_M
    sx, sy, sz = CRATE_SIZE_M
    px, py = PILLAR_CENTER_M
    pr, ph = PILLAR_RADIUS_M, PILLAR_HEIGHT_M
    brown = _f(0.55, 0.36, 0.2, 1)
    grey = _f(0.45, 0.45, 0.47, 1)
    parts = [
        f'<geom name="obs_crate" type="box" pos="{_f(bx, by, sz / 2)}" '
        f'size="{_f(sx / 2, sy / 2, sz / 2)}" rgba="{brown}" {_SOLID}/>',
        f'<geom name="obs_pillar" type="cylinder" pos="{_f(px, py, ph / 2)}" '
        f'size="{_f(pr, ph / 2)}" rgba="{grey}" {_SOLID}/>',
    ]
    tx, ty = TABLE_CENTER_M
    tw, td = TABLE_TOP_M
    th = TABLE_HEIGHT_M
    top_t = 0.02
    parts.append(
        f'<geom name="table_top" type="box" pos="{_f(tx, ty, th - top_t)}" '
        f'size="{_f(tw / 2, td / 2, top_t)}" rgba="{brown}" {_SOLID}/>'
    )
    leg_r = 0.025
    leg_h = (th - 2 * top_t) / 2
    for i, (dx, dy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        lx = tx + dx * (tw / 2 - 0.05)
        ly = ty + dy * (td / 2 - 0.05)
        parts.append(
            f'<geom name="table_leg{i}" type="cylinder" pos="{_f(lx, ly, leg_h)}" '
            f'size="{_f(leg_r, leg_h)}" rgba="{brown}" {_SOLID}/>'
        )
    return "\n".join(parts)


def _line() -> str:
    out = []
    rgba = _f(*LINE_RGBA)
    n = len(LINE_CORNERS_M)
    hw = LINE_WIDTH_M / 2
    for i in range(n):
        (ax, ay), (bx, by) = LINE_CORNERS_M[i], LINE_CORNERS_M[(i + 1) % n]
        length = math.hypot(bx - ax, by - ay)
        yaw = math.atan2(by - ay, bx - ax)
        out.append(
            f'<geom name="line{i}" type="box" pos="{_f((ax + bx) / 2, (ay + by) / 2, 0.001)}" '
            f'size="{_f(length / 2 + hw, hw, 0.001)}" euler="0 0 {yaw:.6f}" rgba="{rgba}" '
            f"{_GHOST}/>"
        )
    return "\n".join(out)


def _markers() -> str:
    return "\n".join(
        f'<geom name="wp_{name}" type="cylinder" pos="{_f(x, y, 0.0005)}" size="0.12 0.0005" '
        f'rgba="{_f(0.62, 0.66, 0.7, 1)}" {_GHOST}/>'
        for name, (x, y) in WAYPOINTS.items()
    )


def _robot(width: int, height: int) -> str:
    fovy = math.degrees(2 * math.atan(math.tan(math.radians(CAMERA_HFOV_DEG) / 2) * height / width))
    r, h = ROBOT_RADIUS_M, ROBOT_HEIGHT_M
    base_z = 0.015 + h / 2
    pan_x, _, pan_z = PAN_ORIGIN_M
    tilt_z = CAMERA_HEIGHT_M - pan_z
    dark = _f(0.15, 0.15, 0.17, 1)
    white = _f(0.95, 0.95, 0.95, 1)
    orange = _f(1.0, 0.45, 0.0, 1)
    return f"""
<body name="base" pos="0 0 0">
  <joint name="base_x" type="slide" axis="1 0 0" damping="0"/>
  <joint name="base_y" type="slide" axis="0 1 0" damping="0"/>
  <joint name="base_yaw" type="hinge" axis="0 0 1" damping="0"/>
  <inertial pos="0 0 {base_z:.4f}" mass="8" diaginertia="0.09 0.09 0.116"/>
  <geom name="base_body" type="cylinder" pos="0 0 {base_z:.4f}" size="{_f(r, h / 2)}"
        rgba="{dark}" {_SOLID} friction="0.3 0.005 0.0001"/>
  <geom name="base_front" type="box" pos="{_f(r * 0.55, 0, 0.015 + h + 0.005)}"
        size="0.05 0.03 0.005" rgba="{orange}" {_GHOST}/>
  <geom name="base_cap" type="cylinder" pos="{_f(0, 0, 0.015 + h + 0.002)}"
        size="{_f(r * 0.9, 0.002)}" rgba="{_f(0.3, 0.32, 0.36, 1)}" {_GHOST}/>
  <geom name="mast" type="cylinder" pos="{_f(pan_x, 0, (0.015 + h + pan_z) / 2)}"
        size="{_f(0.015, (pan_z - 0.015 - h) / 2)}" rgba="{dark}" {_GHOST}/>
  <body name="head_pan" pos="{_f(pan_x, 0, pan_z)}">
    <joint name="head_pan" type="hinge" axis="0 0 1" range="{_f(*PAN_LIMITS_RAD)}"
           limited="true" damping="0.3" armature="0.01"/>
    <inertial pos="0 0 0.02" mass="0.15" diaginertia="0.0003 0.0003 0.0003"/>
    <geom type="box" pos="0 0 0.02" size="0.02 0.04 0.02" rgba="{dark}" {_GHOST}/>
    <body name="head_tilt" pos="{_f(0, 0, tilt_z)}">
      <joint name="head_tilt" type="hinge" axis="0 1 0" range="{_f(*TILT_LIMITS_RAD)}"
             limited="true" damping="0.3" armature="0.01"/>
      <inertial pos="0 0 0" mass="0.15" diaginertia="0.0003 0.0003 0.0003"/>
      <geom type="box" pos="0.01 0 0" size="0.025 0.06 0.02" rgba="{white}" {_GHOST}/>
      <geom type="cylinder" pos="0.036 0 0" euler="0 90 0" size="0.012 0.002"
            rgba="0.05 0.05 0.05 1" {_GHOST}/>
      <camera name="head_camera" pos="{_f(CAMERA_FORWARD_M, 0, 0)}" xyaxes="0 -1 0 0 0 1"
              fovy="{fovy:.4f}"/>
    </body>
  </body>
</body>"""


def _movers(movers: Sequence[Mover]) -> str:
    """Kinematic spheres on two slide joints each (the physics thread sets their positions)."""
    return "\n".join(
        f'<body name="mover_{m.name}" pos="0 0 {m.radius_m:.4g}">'
        f'<joint name="mover_{m.name}_x" type="slide" axis="1 0 0"/>'
        f'<joint name="mover_{m.name}_y" type="slide" axis="0 1 0"/>'
        f'<geom name="obj_{m.name}" type="sphere" size="{m.radius_m:.4g}" '
        f'rgba="{_f(*m.rgba)}" mass="0.5" {_GHOST}/></body>'
        for m in movers
    )


Bounds = tuple[tuple[float, float], tuple[float, float]]
"""A floor's ``((x_min, x_max), (y_min, y_max))`` in metres."""


def topdown_view_height_m(
    topdown: tuple[int, int] = (880, 660), bounds: Bounds | None = None
) -> float:
    """Height in metres of the floor area the orthographic top-down camera sees."""
    (x0, x1), (y0, y1) = bounds or (ROOM_X_M, ROOM_Y_M)
    return max((y1 - y0) + 0.6, ((x1 - x0) + 0.6) * topdown[1] / topdown[0])


def topdown_pixel(
    x_m: float, y_m: float, topdown: tuple[int, int] = (880, 660), bounds: Bounds | None = None
) -> tuple[float, float]:
    """Pixel ``(u, v)`` of the world point ``(x_m, y_m)`` in the top-down image (x right, y up)
    of the floor ``bounds`` (default: the room's)."""
    (x0, x1), (y0, y1) = bounds or (ROOM_X_M, ROOM_Y_M)
    w, h = topdown
    scale = h / topdown_view_height_m(topdown, bounds)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return w / 2 + (x_m - cx) * scale, h / 2 - (y_m - cy) * scale


def room_statics(objects: bool = True) -> str:
    """The room's line, markers, obstacles and (``objects``) coloured objects, as MJCF geoms."""
    parts = (_line(), _markers(), _objects() if objects else "", _obstacles())
    return "\n    ".join(p for p in parts if p)


def build_mjcf(
    width: int = 640,
    height: int = 480,
    topdown: tuple[int, int] = (880, 660),
    movers: Sequence[Mover] = (),
    bounds: Bounds | None = None,
    statics: str | None = None,
) -> str:
    """Build the MJCF XML of the room and robot (SPEC D6).

    Args:
        width: Camera image width in pixels (the vertical FOV is derived so that the
            horizontal FOV is :data:`CAMERA_HFOV_DEG`).
        height: Camera image height in pixels.
        topdown: Size (width, height) in pixels of the top-down view, for the offscreen buffer.
        movers: A scenario's moving objects (:mod:`loopact.sim.scenarios`), added after the
            robot so that the robot's joints keep their places.
        bounds: The floor's bounds (walls stand just outside), default the room's.
        statics: The MJCF geoms of another world (the flat's, :mod:`loopact.sim.flat`)
            instead of the room's line, markers, objects and obstacles.

    Returns:
        The MJCF document as a string.

    Raises:
        ValueError: A size is not positive.
    """
    if width <= 0 or height <= 0 or min(topdown) <= 0:
        raise ValueError(f"image sizes must be positive, got {width}x{height} and {topdown}")
    off_w = max(width, topdown[0])
    off_h = max(height, topdown[1])
    (x0, x1), (y0, y1) = bounds or (ROOM_X_M, ROOM_Y_M)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    # Orthographic top-down camera: fovy is the visible height in metres.
    view_h = topdown_view_height_m(topdown, bounds)
    if statics is None:
        statics = room_statics()
    floor_rgba = _f(0.86, 0.85, 0.8, 1)
    return f"""<mujoco model="loopact_room">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002" gravity="0 0 -9.81" integrator="implicitfast"/>
  <statistic extent="{max(10.0, x1 - x0 + 2):.4g}" center="{_f(cx, cy, 0.3)}"/>
  <visual>
    <global offwidth="{off_w}" offheight="{off_h}"/>
    <map znear="0.002" zfar="2"/>
    <quality shadowsize="0"/>
    <headlight ambient="0.3 0.3 0.3" diffuse="0.3 0.3 0.3" specular="0 0 0"/>
  </visual>
  <asset>
    <texture name="sky" type="skybox" builtin="gradient" rgb1="0.75 0.82 0.9" rgb2="0.95 0.95 0.95"
             width="64" height="64"/>
  </asset>
  <worldbody>
    <light name="sun" directional="true" pos="{_f(cx, cy, 5)}" dir="0.2 0.3 -1"
           diffuse="0.55 0.55 0.55" specular="0.05 0.05 0.05" castshadow="false"/>
    <geom name="floor" type="plane" pos="{_f(cx, cy, 0)}"
          size="{_f((x1 - x0) / 2, (y1 - y0) / 2, 0.1)}" rgba="{floor_rgba}" {_GHOST}/>
    {_walls(bounds)}
    {statics}
    <camera name="topdown" mode="fixed" pos="{_f(cx, cy, 10)}" xyaxes="1 0 0 0 1 0"
            projection="orthographic" fovy="{view_h:.4f}"/>
    {_robot(width, height)}
    {_movers(movers)}
  </worldbody>
  <actuator>
    <velocity name="drive_x" joint="base_x" kv="400" forcerange="-80 80"/>
    <velocity name="drive_y" joint="base_y" kv="400" forcerange="-80 80"/>
    <velocity name="drive_yaw" joint="base_yaw" kv="12" forcerange="-12 12"/>
    <position name="pan" joint="head_pan" kp="2" ctrlrange="{_f(*PAN_LIMITS_RAD)}"/>
    <position name="tilt" joint="head_tilt" kp="2" ctrlrange="{_f(*TILT_LIMITS_RAD)}"/>
  </actuator>
</mujoco>
"""
