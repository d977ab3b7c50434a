"""``loopact sim --ros2``: the MuJoCo simulator as a ROS 2 robot (SPEC D1, D6, X3).

The simulated robot publishes and subscribes the standard interfaces a real robot has, with
names from the hardware profile:

- out: ``odom`` (``nav_msgs/Odometry``, ``odom`` -> ``base_link``); ``/tf`` (``map`` ->
  ``odom``, the identity: the simulator's world is its map, and ``odom`` -> ``base_link``),
  like a localized robot; ``map`` (``nav_msgs/OccupancyGrid``, transient local: the
  simulator's own map, as a map server publishes it; issue 40); ``camera/image_raw``
  (``sensor_msgs/Image`` rgb8), ``camera/depth/image_raw`` (``32FC1``, metres),
  ``camera/camera_info`` (``sensor_msgs/CameraInfo``), ``joint_states`` (head pan/tilt);
  ``scan`` (``sensor_msgs/LaserScan``, 360 beams traced through the world:
  :mod:`loopact.sim.laser`) when the profile's ``obstacle_sensors`` name ``laser_scan``;
- in: ``cmd_vel`` (``geometry_msgs/Twist``; ``linear.y`` on a mecanum base) and
  ``head_controller/commands`` (``std_msgs/Float64MultiArray`` [pan, tilt] in radians, like a
  ros2_control forward position controller). Like a real base it stops by itself when
  ``cmd_vel`` stops arriving for ``cmd_timeout_s``.

In the arm scene (``--scenario arm``) the arm's controllers are served too: the
``FollowJointTrajectory`` and ``GripperCommand`` actions and the arm's ``joint_states``
(:mod:`loopact.sim.arm_ros2`).

By default the base-side safety governor (``loopact base``) runs in the same process on its
own node, so the agent's motion requests go through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from loopact.errors import RobotError
from loopact.maps.grid import OccupancyGrid
from loopact.nodes.connector import ImageData, Subscription
from loopact.nodes.ros2.connector import Ros2Connector
from loopact.nodes.ros2.convert import image_to_msg, set_stamp
from loopact.nodes.ros2.interfaces import RosUnavailable, ros_types
from loopact.robot.interface import Twist
from loopact.robot.profile import HardwareProfile

if TYPE_CHECKING:
    from loopact.robot.base_node import EstopReset

logger = logging.getLogger(__name__)

SCAN_HZ = 10.0
"""Laser scan rate, Hz (a 2D LiDAR's 5-10 Hz)."""


class SimRos2Bridge:
    """Expose a simulated robot on ROS 2 topics.

    Args:
        robot: The simulated robot (``loopact.sim.SimRobot``).
        connector: Its ROS 2 connector (node ``loopact_sim``).
        profile: Topic names and camera geometry.
        camera_hz: Camera (RGB + depth) publishing rate in Hz.
        odom_hz: Odometry / joint state rate in Hz.
        cmd_timeout_s: Zero the base when no ``cmd_vel`` arrives for this long, seconds.
        grid: The map to publish on ``map`` (None: no map topic).
    """

    def __init__(
        self,
        robot: Any,
        connector: Ros2Connector,
        profile: HardwareProfile,
        camera_hz: float = 10.0,
        odom_hz: float = 30.0,
        cmd_timeout_s: float = 0.5,
        grid: OccupancyGrid | None = None,
    ) -> None:
        self.robot = robot
        self.grid = grid
        robot.freeze_time_while_rendering = False  # ROS 2 runs on wall time (SimRobot)
        self.connector = connector
        self.profile = profile
        self.camera_hz = camera_hz
        self.odom_hz = odom_hz
        self.cmd_timeout_s = cmd_timeout_s
        self.cmd_count = 0
        self.frames = 0
        self._last_cmd_s = -math.inf
        self._moving = False
        self._subs: list[Subscription] = []
        self._pubs: dict[str, Any] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._scan_task: asyncio.Task[None] | None = None
        self.scans = 0

    async def start(self) -> None:
        """Create the publishers and subscriptions and start the publishing loops."""
        RosTwist = ros_types("geometry_msgs.msg", "Twist")
        Odometry = ros_types("nav_msgs.msg", "Odometry")
        CameraInfo, JointState = ros_types("sensor_msgs.msg", "CameraInfo", "JointState")
        RosImage = ros_types("sensor_msgs.msg", "Image")
        Float64MultiArray = ros_types("std_msgs.msg", "Float64MultiArray")

        c = self.connector
        await c.start()
        t = self.profile.topics
        self._pubs = {
            "odom": c.publisher(Odometry, t.odom, c.qos(depth=10)),
            "image": c.publisher(RosImage, t.image, c.qos(depth=2)),
            "depth": c.publisher(RosImage, t.depth, c.qos(depth=2)),
            "info": c.publisher(CameraInfo, t.camera_info, c.qos(depth=1)),
            "joints": c.publisher(JointState, "joint_states", c.qos(depth=10)),
        }
        self._start_localization()
        self._start_scan()
        self._subs = [
            c.subscribe_msg(
                RosTwist,
                t.cmd_vel,
                c.qos(depth=10),
                self._on_cmd_vel,
                convert=lambda m: Twist(float(m.linear.x), float(m.angular.z), float(m.linear.y)),
            ),
            c.subscribe_msg(
                Float64MultiArray,
                t.head_commands,
                c.qos(depth=10),
                self._on_head,
                convert=lambda m: list(m.data),
            ),
        ]
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._odom_loop(), name="loopact-sim-odom"),
            loop.create_task(self._camera_loop(), name="loopact-sim-camera"),
            loop.create_task(self._timeout_loop(), name="loopact-sim-cmd-timeout"),
        ]
        if self._scan_task is not None:
            self._tasks.append(self._scan_task)

    def _start_scan(self) -> None:
        """A ``sensor_msgs/LaserScan`` on ``topics.scan`` at :data:`SCAN_HZ`, traced from the
        world (:mod:`loopact.sim.laser`), when the profile declares ``laser_scan``."""
        if "laser_scan" not in self.profile.obstacle_sensors:
            return
        from loopact.sim.laser import LaserScanner

        LaserScan = ros_types("sensor_msgs.msg", "LaserScan")
        c = self.connector
        self._pubs["scan"] = c.publisher(LaserScan, self.profile.topics.scan, c.qos(depth=2))
        scanner = LaserScanner(self.robot.sim.model, self.profile.laser_mount_forward_m)
        self._scan_task = asyncio.get_running_loop().create_task(
            self._scan_loop(scanner, LaserScan), name="loopact-sim-scan"
        )

    async def _scan_loop(self, scanner: Any, msg_type: Any) -> None:
        from loopact.sim.laser import scan_to_msg

        period = 1.0 / SCAN_HZ
        while True:
            started = time.monotonic()
            st = self.robot.sim.state()
            ranges = await asyncio.to_thread(scanner.scan, st.qpos)
            self._pubs["scan"].publish(scan_to_msg(ranges, msg_type, time.time(), "base_scan"))
            self.scans += 1
            await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))

    def _start_localization(self) -> None:
        """``/tf`` and the latched ``map`` (skipped, with a warning, without tf2_msgs)."""
        c = self.connector
        if self.grid is not None:
            RosGrid = ros_types("nav_msgs.msg", "OccupancyGrid")
            pub = c.publisher(RosGrid, "map", c.qos(latched=True))
            pub.publish(grid_to_msg(self.grid, RosGrid, time.time()))
            self._pubs["map"] = pub
        try:
            TFMessage = ros_types("tf2_msgs.msg", "TFMessage")
        except RosUnavailable as exc:
            logger.warning("no /tf (tf2_msgs missing: %s)", exc)
            return
        self._pubs["tf"] = c.publisher(TFMessage, "/tf", c.qos(depth=100))

    def _publish_tf(self, st: Any, now: float) -> None:
        TFMessage = ros_types("tf2_msgs.msg", "TFMessage")
        TransformStamped = ros_types("geometry_msgs.msg", "TransformStamped")
        out = []
        for parent, child, x, y, yaw in (
            ("map", "odom", 0.0, 0.0, 0.0),
            ("odom", "base_link", float(st.x_m), float(st.y_m), float(st.yaw_rad)),
        ):
            t = TransformStamped()
            set_stamp(t.header, now)
            t.header.frame_id = parent
            t.child_frame_id = child
            t.transform.translation.x = x
            t.transform.translation.y = y
            t.transform.rotation.z = math.sin(yaw / 2)
            t.transform.rotation.w = math.cos(yaw / 2)
            out.append(t)
        self._pubs["tf"].publish(TFMessage(transforms=out))

    async def close(self) -> None:
        """Stop the loops and zero the base (the robot and connector are the caller's)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sub in self._subs:
            sub.close()
        with contextlib.suppress(Exception):
            await self.robot.send_twist(Twist())

    def _on_cmd_vel(self, twist: Twist) -> None:
        self.cmd_count += 1
        self._last_cmd_s = time.monotonic()
        self._moving = not twist.is_zero
        try:
            values = (twist.linear_mps, twist.angular_radps, twist.lateral_mps)
            if not all(math.isfinite(v) for v in values):
                raise ValueError("non-finite cmd_vel")
            self.robot.sim.set_twist(*values)  # linear.y moves a holonomic base (issue 43)
        except (ValueError, RobotError) as exc:
            logger.warning("cmd_vel ignored: %s", exc)

    def _on_head(self, values: list[float]) -> None:
        if len(values) != 2 or not all(math.isfinite(v) for v in values):
            logger.warning("head command ignored: need [pan, tilt] in radians, got %s", values)
            return
        try:
            self.robot.sim.set_head_target(values[0], values[1])
        except (ValueError, RobotError) as exc:
            logger.warning("head command ignored: %s", exc)

    async def _timeout_loop(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            if self._moving and time.monotonic() - self._last_cmd_s > self.cmd_timeout_s:
                self._moving = False
                with contextlib.suppress(Exception):
                    self.robot.sim.set_twist(0.0, 0.0)
                logger.info("cmd_vel silent for %.2f s: base stopped", self.cmd_timeout_s)

    async def _odom_loop(self) -> None:
        Odometry = ros_types("nav_msgs.msg", "Odometry")
        JointState = ros_types("sensor_msgs.msg", "JointState")

        period = 1.0 / self.odom_hz
        while True:
            st = self.robot.sim.state()
            now = time.time()
            odom = Odometry()
            set_stamp(odom.header, now)
            odom.header.frame_id = "odom"
            odom.child_frame_id = "base_link"
            odom.pose.pose.position.x = float(st.x_m)
            odom.pose.pose.position.y = float(st.y_m)
            odom.pose.pose.orientation.z = math.sin(st.yaw_rad / 2)
            odom.pose.pose.orientation.w = math.cos(st.yaw_rad / 2)
            odom.twist.twist.linear.x = float(st.linear_mps)
            odom.twist.twist.angular.z = float(st.angular_radps)
            self._pubs["odom"].publish(odom)
            js = JointState()
            set_stamp(js.header, now)
            js.name = ["head_pan_joint", "head_tilt_joint"]
            js.position = [float(st.pan_rad), float(st.tilt_rad)]
            self._pubs["joints"].publish(js)
            if "tf" in self._pubs:
                self._publish_tf(st, now)
            await asyncio.sleep(period)

    async def _camera_loop(self) -> None:
        period = 1.0 / self.camera_hz
        while True:
            started, taken = time.monotonic(), time.time()  # the state rendered is newer
            try:
                frame = await self.robot.get_frame()
                depth = await self.robot.get_depth()
            except RobotError as exc:
                logger.warning("camera render failed: %s", exc)
                await asyncio.sleep(period)
                continue
            await asyncio.to_thread(self._publish_camera, frame.rgb, depth.depth_m, taken)
            self.frames += 1
            await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))

    def _publish_camera(self, rgb: Any, depth_m: Any, now: float) -> None:
        """Build and publish image, depth and camera info (worker thread), stamped ``now``
        (wall seconds before the render: the header stamp is the acquisition time)."""
        CameraInfo = ros_types("sensor_msgs.msg", "CameraInfo")
        RosImage = ros_types("sensor_msgs.msg", "Image")
        cam = self.profile.camera
        frame_rgb = rgb
        self._pubs["image"].publish(
            image_to_msg(ImageData(frame_rgb, now, "camera_optical_frame"), RosImage)
        )
        dmsg = RosImage()
        d = np.ascontiguousarray(depth_m, dtype=np.float32)
        dmsg.height, dmsg.width = d.shape
        dmsg.encoding = "32FC1"
        dmsg.is_bigendian = 0
        dmsg.step = d.shape[1] * 4
        dmsg.header.frame_id = "camera_optical_frame"
        set_stamp(dmsg.header, now)
        dmsg.data = d.tobytes()
        self._pubs["depth"].publish(dmsg)
        h, w = frame_rgb.shape[:2]
        fx = (w / 2) / math.tan(math.radians(cam.hfov_deg) / 2)
        info = CameraInfo()
        set_stamp(info.header, now)
        info.header.frame_id = "camera_optical_frame"
        info.width, info.height = w, h
        info.distortion_model = "plumb_bob"
        info.k = [fx, 0.0, w / 2, 0.0, fx, h / 2, 0.0, 0.0, 1.0]
        info.p = [fx, 0.0, w / 2, 0.0, 0.0, fx, h / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
        self._pubs["info"].publish(info)


def grid_to_msg(grid: OccupancyGrid, msg_type: Any, now: float) -> Any:
    """An :class:`OccupancyGrid` as a ``nav_msgs/OccupancyGrid`` message."""
    msg = msg_type()
    set_stamp(msg.header, now)
    msg.header.frame_id = grid.frame_id
    msg.info.resolution = float(grid.resolution_m)
    msg.info.width, msg.info.height = grid.width, grid.height
    msg.info.origin.position.x = float(grid.origin_x_m)
    msg.info.origin.position.y = float(grid.origin_y_m)
    msg.info.origin.orientation.z = math.sin(grid.origin_yaw_rad / 2)
    msg.info.origin.orientation.w = math.cos(grid.origin_yaw_rad / 2)
    msg.data = grid.data.reshape(-1).tolist()
    return msg


async def run_sim_ros2(
    profile: str = "sim",
    site: str | None = "sim_room",
    agent: str = "loopact",
    with_base: bool = True,
    camera_hz: float = 10.0,
    speed: float = 1.0,
    scenario: str = "default",
    sim_log: Path | None = None,
    reset: EstopReset | None = None,
) -> int:
    """``loopact sim --ros2``: simulator + (by default) base governor until SIGINT/SIGTERM.

    ``scenario`` and ``sim_log`` are those of :class:`~loopact.sim.simulator.Simulator`;
    ``reset`` says who may release the governor's latched emergency stop (issue 21).

    Raises:
        ConfigError: Bad profile, site or speed.
        NodeError: ROS 2 is unavailable.
    """
    import signal

    from loopact.robot.base_node import BaseGovernorNode
    from loopact.robot.profile import load_profile, load_site
    from loopact.sim import SimRobot
    from loopact.sim.scenarios import get_scenario

    sc = get_scenario(scenario)
    if site == "sim_room":  # the default site is the room's; the flat and the arm scene
        site = sc.site  # bring their own, and the arm scene its robot (sim_arm)
    prof = load_profile(sc.profile if profile == "sim" else profile)
    site_map = load_site(site) if site else None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    robot = await SimRobot.create(
        speed=speed,
        width=prof.camera.width_px,
        height=prof.camera.height_px,
        scenario=scenario,
        sim_log=sim_log,
        holonomic=prof.drive == "mecanum",
    )
    from loopact.sim.worldmap import world_map

    sim_conn = Ros2Connector("loopact_sim")
    grid = world_map(scenario)
    bridge = SimRos2Bridge(robot, sim_conn, prof, camera_hz=camera_hz, grid=grid)
    base_conn: Ros2Connector | None = None
    base: BaseGovernorNode | None = None
    arm: Any = None
    try:
        await bridge.start()
        if prof.arm is not None and robot.sim.arm is not None:
            from loopact.sim.arm_ros2 import SimArmRos2Server

            arm = SimArmRos2Server(robot, sim_conn, prof.arm)
            await arm.start()
        if with_base:
            base_conn = Ros2Connector("loopact_base")
            base = BaseGovernorNode(base_conn, prof, site_map, agent, reset)
            await base.start()
        print(
            f"loopact sim: ROS 2 robot up (profile {prof.name}"
            f"{', arm controllers' if arm is not None else ''}"
            f"{', base governor for agent ' + repr(agent) if with_base else ', no governor'})",
            flush=True,
        )
        await stop.wait()
    finally:
        if base is not None:
            await base.close()
        if base_conn is not None:
            await base_conn.shutdown()
        if arm is not None:
            await arm.close()
            goals = arm.goals
            print(
                f"loopact sim: arm goals received: {goals['trajectory']} FollowJointTrajectory, "
                f"{goals['gripper']} GripperCommand",
                flush=True,
            )
        await bridge.close()
        await sim_conn.shutdown()
        await robot.close()
    return 0
