"""Hardware profiles and site maps (SPEC D1, D3, X3).

A **hardware profile** says what a robot model is and what it may do: drive type, pan-tilt head
and its joint limits, the safety limits the governor enforces, the camera, the ROS 2 topic names
(for the ROS 2 transport) and how old a pose may be. A **site map** names places in the ``map``
frame (REP 105) and draws the geofence polygon the governor keeps the robot inside.

Both are YAML files. Packaged names: profiles ``sim``, ``turtlebot4``, ``mecanum_ptz``; sites
``sim_room``. Any other argument is read as a file path. Every mistake becomes a
:class:`~loopact.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from loopact.config.yaml_strict import safe_load_unique
from loopact.errors import ConfigError

_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class HeadConfig(BaseModel):
    """The pan-tilt head (SPEC D4).

    Attributes:
        present: Whether the robot has a pan-tilt head.
        pan_limits_deg: ``[min, max]`` pan in degrees, left positive.
        tilt_limits_deg: ``[min, max]`` tilt in degrees, down positive.
        home_pan_deg: Pan of the home (re-centred) position, degrees.
        home_tilt_deg: Tilt of the home position, degrees (down positive).
    """

    model_config = _STRICT
    present: bool = False
    pan_limits_deg: tuple[float, float] = (0.0, 0.0)
    tilt_limits_deg: tuple[float, float] = (0.0, 0.0)
    home_pan_deg: float = 0.0
    home_tilt_deg: float = 0.0

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> HeadConfig:
        for key in ("pan_limits_deg", "tilt_limits_deg"):
            lo, hi = getattr(self, key)
            if lo > hi:
                raise ValueError(f"{key} must be [min, max], got [{lo}, {hi}]")
        if self.present and not (
            self.pan_limits_deg[0] <= self.home_pan_deg <= self.pan_limits_deg[1]
            and self.tilt_limits_deg[0] <= self.home_tilt_deg <= self.tilt_limits_deg[1]
        ):
            raise ValueError("home_pan_deg/home_tilt_deg must lie within the head's limits")
        return self


class Limits(BaseModel):
    """Safety limits the governor enforces (SPEC C5, X3).

    Attributes:
        max_linear_mps: Largest forward/backward speed, m/s.
        max_angular_dps: Largest yaw rate, degrees per second.
        max_motion_duration_s: Deadline of any single motion, seconds (robot clock).
        obstacle_stop_m: Stop when an obstacle is closer than this to the robot's front, metres.
        command_timeout_s: Watchdog: zero the base when commands stop for this long, seconds.
        max_lateral_mps: Largest sideways speed of a mecanum base, m/s (None: the forward
            limit). Nothing watches the sides for obstacles, so keep it low (issue 43).
        blind_max_linear_mps: Forward speed limit when no range sensor (depth, laser scan)
            watches the path (``obstacle_sensors`` ``[none]`` or ``[bumper]``), m/s; None
            (the default): forward motion is refused without one (issue 41).
    """

    model_config = _STRICT
    max_linear_mps: PositiveFloat
    max_angular_dps: PositiveFloat
    max_motion_duration_s: PositiveFloat
    obstacle_stop_m: PositiveFloat
    command_timeout_s: PositiveFloat
    max_lateral_mps: PositiveFloat | None = None
    blind_max_linear_mps: PositiveFloat | None = None

    @property
    def lateral_mps(self) -> float:
        """The sideways speed limit in force, m/s."""
        return self.max_lateral_mps or self.max_linear_mps


class CameraConfig(BaseModel):
    """The RGB-D camera.

    Attributes:
        width_px: Image width in pixels.
        height_px: Image height in pixels.
        hfov_deg: Horizontal field of view in degrees.
        max_age_s: Frames older than this (robot clock) are stale and never used, seconds.
        mount_height_m: Height of the optical centre above the floor, metres.
        mount_forward_m: Forward offset of the optical centre from the base centre, metres.
    """

    model_config = _STRICT
    width_px: PositiveInt
    height_px: PositiveInt
    hfov_deg: float = Field(gt=0, lt=180)
    max_age_s: PositiveFloat
    mount_height_m: float = Field(default=0.35, ge=0)
    mount_forward_m: float = 0.0


class Topics(BaseModel):
    """ROS 2 topic names (SPEC D1), used by the ROS 2 robot implementation."""

    model_config = _STRICT
    cmd_vel: str = "cmd_vel"
    odom: str = "odom"
    image: str = "camera/image_raw"
    depth: str = "camera/depth/image_raw"
    camera_info: str = "camera/camera_info"
    head_commands: str = "head_controller/commands"
    scan: str = "scan"
    bumper: str = "bumper"


ObstacleSensor = Literal["depth", "laser_scan", "bumper", "none"]
"""What watches the path ahead for the obstacle stop (issue 41): the camera's ``depth`` image,
a ``laser_scan`` (``sensor_msgs/LaserScan`` on ``topics.scan``), a ``bumper``
(``std_msgs/Bool`` on ``topics.bumper``: a contact, not a range), or ``none``."""


class KeepOut(BaseModel):
    """A region of the robot's frame the arm must stay out of (its body, its head).

    A vertical cylinder when ``radius_m`` is given, else an axis-aligned box of half-sizes
    ``half_x_m`` and ``half_y_m``; between ``z_min_m`` and ``z_max_m`` (metres, ``base_link``).
    """

    model_config = _STRICT
    name: str
    x_m: float = 0.0
    y_m: float = 0.0
    radius_m: PositiveFloat | None = None
    half_x_m: PositiveFloat | None = None
    half_y_m: PositiveFloat | None = None
    z_min_m: float = 0.0
    z_max_m: float

    @pydantic.model_validator(mode="after")
    def _shape(self) -> KeepOut:
        box = self.half_x_m is not None and self.half_y_m is not None
        if (self.radius_m is None) == (not box):
            raise ValueError("give radius_m (a cylinder) or half_x_m and half_y_m (a box)")
        if self.z_min_m >= self.z_max_m:
            raise ValueError("z_min_m must be below z_max_m")
        return self


class ArmControllers(BaseModel):
    """The ROS 2 interfaces of the arm's controllers (ros2_control's standard ones).

    Attributes:
        trajectory_action: ``control_msgs/action/FollowJointTrajectory`` of the arm controller.
        gripper_action: ``control_msgs/action/GripperCommand`` of the gripper controller.
        joint_states: ``sensor_msgs/JointState`` with the arm's and the fingers' joints.
    """

    model_config = _STRICT
    trajectory_action: str = "arm_controller/follow_joint_trajectory"
    gripper_action: str = "gripper_controller/gripper_cmd"
    joint_states: str = "joint_states"


class ArmConfig(BaseModel):
    """An arm with a parallel gripper on the robot (issue 43; docs/manipulation.md).

    Attributes:
        description: The arm's MJCF (or URDF) the kinematics are read from: a path, or
            ``package://<python package>/<path>`` for a description installed with a package.
        joints: The arm controller's joints, base to tip.
        gripper_joints: The fingers' joints; the gap between the pads is their sum.
        tcp_site: The MJCF site at the grasp point between the pads.
        mount_m: Where the description's root sits in ``base_link``, ``[x, y, z]`` metres.
        mount_yaw_deg: Its rotation about z, degrees.
        home_rad: The stowed pose (``arm_home``; the base drives with the arm there), radians.
        max_joint_speed_radps: Largest speed of any joint the governor lets through, rad/s.
        max_gap_m: Widest gap between the finger pads, metres.
        max_grip_force_n: Largest squeezing force the governor allows, newtons.
        grip_force_n: The force ``pick`` and ``gripper close`` squeeze with, newtons.
        workspace_min_m: Lower corner ``[x, y, z]`` of the box (``base_link``, metres) every
            part of the arm stays in.
        workspace_max_m: Its upper corner.
        keep_out: Regions of the robot's own body the arm stays out of.
        mount_links: Links seated on the mount (they only turn about it): not checked
            against the body they stand on.
        clearance_m: The least distance kept from the floor, a surface and the body, metres.
        carry_max_linear_mps: The base's speed limit while the gripper holds something, m/s.
        camera_pivot_m: Where the head's pan and tilt axes cross, ``base_link`` metres (to
            locate what the camera sees in 3D from depth).
        camera_ahead_m: How far the optical centre sits ahead of that pivot, metres.
        look_tilt_deg: The head's tilt (down positive) when it looks at the workspace, degrees.
        controllers: The ROS 2 interfaces of its controllers.
    """

    model_config = _STRICT
    description: str
    joints: tuple[str, ...] = Field(min_length=1)
    gripper_joints: tuple[str, ...] = ()
    tcp_site: str = "tcp"
    mount_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    mount_yaw_deg: float = 0.0
    home_rad: tuple[float, ...]
    max_joint_speed_radps: PositiveFloat = 1.5
    max_gap_m: PositiveFloat = 0.08
    max_grip_force_n: PositiveFloat = 15.0
    grip_force_n: PositiveFloat = 8.0
    workspace_min_m: tuple[float, float, float]
    workspace_max_m: tuple[float, float, float]
    keep_out: tuple[KeepOut, ...] = ()
    mount_links: tuple[str, ...] = ()
    clearance_m: float = Field(default=0.008, ge=0)
    carry_max_linear_mps: PositiveFloat = 0.25
    camera_pivot_m: tuple[float, float, float] = (-0.02, 0.0, 0.35)
    camera_ahead_m: float = 0.04
    look_tilt_deg: float = 40.0
    controllers: ArmControllers = ArmControllers()

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> ArmConfig:
        if len(self.home_rad) != len(self.joints):
            raise ValueError(f"home_rad needs {len(self.joints)} values, one per joint")
        if any(lo >= hi for lo, hi in zip(self.workspace_min_m, self.workspace_max_m, strict=True)):
            raise ValueError("workspace_min_m must be below workspace_max_m on every axis")
        if self.grip_force_n > self.max_grip_force_n:
            raise ValueError("grip_force_n must not exceed max_grip_force_n")
        return self


class HardwareProfile(BaseModel):
    """One robot model (SPEC D1).

    Attributes:
        name: Profile name.
        drive: ``differential`` or ``mecanum``.
        head: The pan-tilt head.
        limits: Safety limits.
        camera: The camera.
        topics: ROS 2 topic names.
        pose_max_age_s: Poses older than this (robot clock) are stale, seconds.
        footprint_radius_m: Radius of the base's footprint (front = centre + radius), metres.
        body_height_m: Height of the robot's body; obstacles above it do not block, metres.
        navigation: ``auto`` (Nav2's ``navigate_to_pose`` when its action server is found,
            else loopact's planner), ``nav2`` or ``planner`` (issue 40; docs/navigation.md).
        obstacle_sensors: What the obstacle stop reads (:data:`ObstacleSensor`); ``[depth]``
            by default, ``[none]`` for none. With several, the nearest obstacle any of them
            sees counts, and one that has no data is left out while another has.
        laser_mount_forward_m: Forward offset of the laser scanner from the base centre,
            metres (its scan plane is taken as level).
        arm: The arm and gripper, if the robot has one (issue 43).
    """

    model_config = _STRICT
    name: str
    drive: Literal["differential", "mecanum"]
    head: HeadConfig = HeadConfig()
    limits: Limits
    camera: CameraConfig
    topics: Topics = Topics()
    pose_max_age_s: PositiveFloat
    footprint_radius_m: PositiveFloat = 0.17
    body_height_m: PositiveFloat = 0.5
    navigation: Literal["auto", "planner", "nav2"] = "auto"
    obstacle_sensors: tuple[ObstacleSensor, ...] = ("depth",)
    laser_mount_forward_m: float = 0.0
    arm: ArmConfig | None = None

    @pydantic.field_validator("obstacle_sensors")
    @classmethod
    def _none_alone(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("list the obstacle sensors, or [none] for a robot without one")
        if "none" in v and len(v) > 1:
            raise ValueError("none cannot be listed with other obstacle sensors")
        if len(set(v)) != len(v):
            raise ValueError("an obstacle sensor is listed twice")
        return v

    @property
    def range_sensors(self) -> tuple[str, ...]:
        """The declared sensors that measure a distance ahead (``depth``, ``laser_scan``)."""
        return tuple(s for s in self.obstacle_sensors if s in ("depth", "laser_scan"))


class Waypoint(BaseModel):
    """A named place in the site's frame.

    Attributes:
        x_m: x in metres.
        y_m: y in metres.
        yaw_deg: Heading to face on arrival in degrees (counter-clockwise), or None.
        names: Other names the place answers to, in any language (``[厨房]`` for
            ``kitchen``): ``navigation`` and ``distance_to`` accept them, and the first
            Chinese one names the place in the reply to a Chinese instruction.
    """

    model_config = _STRICT
    x_m: float
    y_m: float
    yaw_deg: float | None = None
    names: tuple[str, ...] = ()


class Surface(BaseModel):
    """A fixed flat surface of the site the arm works on (a table), in the site's frame.

    Attributes:
        x_m: Centre x, metres.
        y_m: Centre y, metres.
        yaw_deg: Rotation about z, degrees.
        size_x_m: Full extent along its own x, metres.
        size_y_m: Full extent along its own y, metres.
        top_z_m: Height of its top above the floor, metres (the arm stays above it).
    """

    model_config = _STRICT
    x_m: float
    y_m: float
    yaw_deg: float = 0.0
    size_x_m: PositiveFloat
    size_y_m: PositiveFloat
    top_z_m: PositiveFloat


class Doorway(BaseModel):
    """A doorway between two rooms of the site (issue 40).

    Attributes:
        x_m: Centre x in metres.
        y_m: Centre y in metres.
        width_m: Clear width in metres.
        rooms: The two rooms it joins (names of :attr:`SiteMap.rooms`).
    """

    model_config = _STRICT
    x_m: float
    y_m: float
    width_m: PositiveFloat
    rooms: tuple[str, str]


class SiteMap(BaseModel):
    """Named waypoints, rooms, doorways, the map and a geofence (SPEC D3, X3).

    Attributes:
        frame: The frame waypoints and geofence are in (``map``).
        waypoints: Name -> :class:`Waypoint`. Names and their ``names`` are unique
            ignoring case (a clash is a :class:`~loopact.errors.ConfigError` naming both).
        geofence: Polygon ``[[x, y], ...]`` in metres (at least 3 vertices) that the robot's
            centre must stay inside; empty for no geofence.
        rooms: Room name -> polygon ``[[x, y], ...]`` in metres: navigation says which room
            the robot and a place are in (issue 40).
        doorways: Doorway name -> :class:`Doorway`; a blocked one is named when no path
            exists.
        map: A Nav2 map_server YAML file (relative to the site file), or None; the
            configuration's ``robot.map`` overrides it.
        surfaces: Name -> :class:`Surface`: tables the arm works on and never moves into
            (issue 43).
    """

    model_config = _STRICT
    frame: str = "map"
    waypoints: dict[str, Waypoint] = {}
    geofence: list[tuple[float, float]] = []
    rooms: dict[str, list[tuple[float, float]]] = {}
    doorways: dict[str, Doorway] = {}
    map: Path | None = None
    surfaces: dict[str, Surface] = {}

    def room_at(self, x_m: float, y_m: float) -> str | None:
        """The room whose polygon holds ``(x_m, y_m)``, or None."""
        for name, poly in self.rooms.items():
            if len(poly) >= 3 and point_in_polygon(x_m, y_m, poly):
                return name
        return None

    @pydantic.model_validator(mode="after")
    def _names_are_unique(self) -> SiteMap:
        seen: dict[str, str] = {}
        for key, wp in self.waypoints.items():
            for name in (key, *wp.names):
                low = name.strip().lower()
                if not low:
                    raise ValueError(f"waypoint {key!r} has an empty name")
                if seen.get(low, key) != key:
                    raise ValueError(f"the name {name!r} is used by {seen[low]!r} and {key!r}")
                seen[low] = key
        return self

    @pydantic.field_validator("geofence")
    @classmethod
    def _polygon(cls, v: list[tuple[float, float]]) -> list[tuple[float, float]]:
        if v and len(v) < 3:
            raise ValueError(f"a polygon needs at least 3 vertices, got {len(v)}")
        return v

    def contains(self, x_m: float, y_m: float) -> bool:
        """True if ``(x_m, y_m)`` is inside the geofence (always True without one)."""
        if not self.geofence:
            return True
        return point_in_polygon(x_m, y_m, self.geofence)

    def distance_to_fence(self, x_m: float, y_m: float) -> float:
        """Distance in metres from ``(x_m, y_m)`` to the nearest geofence edge (inf if none)."""
        if not self.geofence:
            return math.inf
        pts = self.geofence
        best = math.inf
        for i, (ax, ay) in enumerate(pts):
            bx, by = pts[(i + 1) % len(pts)]
            dx, dy = bx - ax, by - ay
            seg2 = dx * dx + dy * dy
            t = 0.0 if seg2 == 0 else max(0.0, min(1.0, ((x_m - ax) * dx + (y_m - ay) * dy) / seg2))
            best = min(best, math.hypot(x_m - (ax + t * dx), y_m - (ay + t * dy)))
        return best


def point_in_polygon(x: float, y: float, polygon: list[tuple[float, float]]) -> bool:
    """Even-odd ray casting test; points on an edge count as inside or outside arbitrarily."""
    inside = False
    n = len(polygon)
    for i in range(n):
        x1, y1 = polygon[i]
        x2, y2 = polygon[(i + 1) % n]
        if (y1 > y) != (y2 > y):
            x_cross = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            if x < x_cross:
                inside = not inside
    return inside


def _packaged(kind: str) -> list[str]:
    folder = resources.files("loopact.robot") / kind
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def yaml_file(name_or_path: str | Path) -> Path | None:
    """The file a profile or site setting names, or None for a packaged name (``sim``).

    A value with a ``.yaml``/``.yml`` suffix or a path separator is a file (SPEC D1, D3).
    """
    name = str(name_or_path)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or "/" in name or "\\" in name:
        return path
    return None


def _read_yaml(name_or_path: str | Path, kind: str, what: str) -> tuple[dict[str, Any], str]:
    text: str
    source: str
    path = yaml_file(name_or_path)
    name = str(name_or_path)
    if path is not None:
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read {what} file {source}: {exc}", key=what) from None
    else:
        res = resources.files("loopact.robot") / kind / f"{name}.yaml"
        if not res.is_file():
            known = ", ".join(_packaged(kind))
            raise ConfigError(
                f"unknown {what} {name!r}: use one of {known} or a path to a YAML file",
                key=what,
            )
        source = f"{kind}/{name}.yaml"
        text = res.read_text(encoding="utf-8")
    try:
        data = safe_load_unique(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}", key=what) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level", key=what)
    return data, source


def _validate(model: type[BaseModel], data: dict[str, Any], source: str, what: str) -> Any:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(x) for x in err["loc"]) or "(top level)"
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise ConfigError(f"{source}: {key}: {err['msg']}{more}", key=f"{what}.{key}") from None


def load_profile(name_or_path: str | Path) -> HardwareProfile:
    """Load a hardware profile by packaged name (``sim``, ...) or YAML path (SPEC D1).

    Raises:
        ConfigError: Unknown name, unreadable file, bad YAML, or a wrong key (named).
    """
    data, source = _read_yaml(name_or_path, "profiles", "profile")
    profile: HardwareProfile = _validate(HardwareProfile, data, source, "profile")
    return profile


def load_site(name_or_path: str | Path) -> SiteMap:
    """Load a site map by packaged name (``sim_room``) or YAML path (SPEC D3).

    Raises:
        ConfigError: Unknown name, unreadable file, bad YAML, or a wrong key (named).
    """
    data, source = _read_yaml(name_or_path, "sites", "site")
    site: SiteMap = _validate(SiteMap, data, source, "site")
    path = yaml_file(name_or_path)
    if site.map is not None and path is not None and not site.map.is_absolute():
        site = site.model_copy(update={"map": path.parent / site.map})
    return site
