"""SimRobot through the Robot interface, rendering and snapshots (SPEC D1, D6, F6)."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from loopact.errors import RobotError
from loopact.robot.interface import Clock, Robot, Twist
from loopact.sim import SimRobot, Simulator, world, write_snapshot
from loopact.sim.render import RenderWorker

pytestmark = pytest.mark.sim

WAIT_S = 30.0


@pytest.fixture
async def robot():
    r = await asyncio.wait_for(SimRobot.create(speed=4.0), WAIT_S)
    yield r
    await r.close()


def _colour_masks(img: np.ndarray) -> dict[str, np.ndarray]:
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return {
        "red": (r > 150) & (g < 60) & (b < 60),
        "green": (g > 150) & (r < 90) & (b < 90),
        "blue": (b > 150) & (r < 60) & (g < 110),
        "yellow": (r > 150) & (g > 130) & (b < 60),
        "purple": (r > 90) & (r < 200) & (g < 60) & (b > 120),
    }


async def test_implements_the_robot_protocol(robot: SimRobot) -> None:
    assert isinstance(robot, Robot)
    assert isinstance(robot.clock, Clock)
    assert robot.has_head is True
    assert robot.camera_hfov_deg == pytest.approx(70.0)
    pose = await robot.get_pose()
    assert (pose.x_m, pose.y_m, pose.yaw_rad, pose.frame) == (0.0, 0.0, 0.0, "odom")


async def test_twist_drives_and_turns(robot: SimRobot) -> None:
    t0 = robot.clock.now()
    await robot.send_twist(Twist(linear_mps=0.4, lateral_mps=0.3))  # lateral ignored: diff drive
    await asyncio.wait_for(robot.clock.sleep(2.0), WAIT_S)
    pose = await robot.get_pose()
    await robot.send_twist(Twist())
    assert pose.stamp_s - t0 >= 2.0
    # 0.4 s ramp at 1 m/s^2 costs 0.08 m against constant 0.4 m/s
    assert pose.x_m == pytest.approx(0.4 * (pose.stamp_s - t0) - 0.08, abs=0.05)
    assert abs(pose.y_m) < 0.01 and abs(pose.yaw_rad) < 0.01
    await robot.send_twist(Twist(angular_radps=0.8))
    await asyncio.wait_for(robot.clock.sleep(1.0), WAIT_S)
    assert (await robot.get_pose()).yaw_rad > 0.4


async def test_frames_shapes_and_stamps(robot: SimRobot) -> None:
    frame = await robot.get_frame()
    assert frame.rgb.shape == (480, 640, 3) and frame.rgb.dtype == np.uint8
    assert frame.rgb.std() > 10  # a real image, not a blank buffer
    depth = await robot.get_depth()
    assert depth.depth_m.shape == (480, 640) and depth.depth_m.dtype == np.float32
    assert 0.0 <= frame.stamp_s <= depth.stamp_s <= robot.clock.now()
    await asyncio.wait_for(robot.clock.sleep(0.5), WAIT_S)
    later = await robot.get_frame()
    assert later.stamp_s >= frame.stamp_s + 0.5
    later.rgb[:] = 0  # callers get their own copy
    assert (await robot.get_frame()).rgb.std() > 10
    top = await robot.render_topdown()
    assert top.shape[2] == 3 and top.dtype == np.uint8 and top.shape[1] > top.shape[0]


async def test_start_view_shows_line_and_objects(robot: SimRobot) -> None:
    rgb = (await robot.get_frame()).rgb
    masks = _colour_masks(rgb)
    for colour in ("purple", "red", "yellow"):
        assert masks[colour].sum() > 200, colour


async def test_depth_finite_ahead_and_smaller_near_an_object(robot: SimRobot) -> None:
    await robot.set_head(0.0, 0.0)
    await asyncio.wait_for(robot.clock.sleep(1.0), WAIT_S)
    far = (await robot.get_depth()).depth_m
    # level camera at 0.35 m facing the east wall (x = 6, 0.6 m tall): just below the
    # horizon the rays hit the wall; the camera is ~0.02 m ahead of the base centre
    centre = far[244:260, 280:360]
    assert np.isfinite(centre).all()
    assert np.isnan(far[:40]).all()  # sky above the wall: nothing within the far plane
    assert float(np.median(centre)) == pytest.approx(6.0 - 0.02, abs=0.2)
    # 0.5 m in front of the red cube's face (cube centre x=3.0, half-size 0.15)
    cube = next(o for o in world.OBJECTS if o.name == "red_cube")
    await robot.teleport(cube.x_m - cube.size_m[0] - 0.52, cube.y_m, 0.0)
    near = (await robot.get_depth()).depth_m
    # the cube (0.3 m tall) is just below the level camera's horizon: rows ~290-400
    near_c = float(np.median(near[300:340, 300:340]))
    assert near_c == pytest.approx(0.5, abs=0.05)
    assert near_c < float(np.median(centre))
    # the cube's face spans ~43% of the width and the lower ~40% of the height (~17%)
    assert _colour_masks((await robot.get_frame()).rgb)["red"].mean() > 0.12


async def test_head_moves_to_commanded_angles_within_limits(robot: SimRobot) -> None:
    await robot.set_head(0.6, -0.2)
    await asyncio.wait_for(robot.clock.sleep(1.5), WAIT_S)
    head = await robot.get_head()
    assert head.pan_rad == pytest.approx(0.6, abs=0.02)
    assert head.tilt_rad == pytest.approx(-0.2, abs=0.02)
    await robot.set_head(3.0, 1.5)  # beyond the limits: clamped
    await asyncio.wait_for(robot.clock.sleep(2.5), WAIT_S)
    head = await robot.get_head()
    assert head.pan_rad == pytest.approx(math.pi / 2, abs=0.03)
    assert head.tilt_rad == pytest.approx(math.radians(45), abs=0.03)
    assert head.stamp_s > 3.9


async def test_close_is_idempotent_and_final() -> None:
    robot = await asyncio.wait_for(SimRobot.create(speed=4.0), WAIT_S)
    await robot.send_twist(Twist(linear_mps=0.3))
    await robot.close()
    assert not robot.sim.running
    await robot.close()
    with pytest.raises(RobotError):
        await robot.get_frame()
    with pytest.raises(RobotError):
        await robot.send_twist(Twist())


def test_write_snapshot(tmp_path: Path) -> None:
    paths = write_snapshot(tmp_path / "snap")
    assert [p.name for p in paths] == ["camera.png", "topdown.png", "map.png"]
    camera = np.asarray(Image.open(paths[0]).convert("RGB"))
    top = np.asarray(Image.open(paths[1]).convert("RGB"))
    assert camera.shape == (480, 640, 3)
    cam_masks = _colour_masks(camera)
    assert cam_masks["purple"].sum() > 200 and cam_masks["red"].sum() > 200
    top_masks = _colour_masks(top)
    for colour, mask in top_masks.items():
        assert mask.sum() > 100, colour
    # the robot (dark base with an orange front marker) is drawn near the start position
    r, g, b = (top[..., i].astype(int) for i in range(3))
    assert ((r > 200) & (g > 80) & (g < 160) & (b < 60)).sum() > 10


def test_renders_once_per_sim_timestamp() -> None:
    sim = Simulator(speed=1.0)  # not started: the state stays at t = 0
    worker = RenderWorker(sim.model, 320, 240)
    worker.start()
    try:
        st = sim.state()
        a = worker.render_sync("rgb", st.qpos, st.stamp_s, WAIT_S)
        b = worker.render_sync("rgb", st.qpos, st.stamp_s, WAIT_S)
        assert worker.render_count == 1
        assert a.shape == (240, 320, 3) and np.array_equal(a, b) and a is not b
        worker.render_sync("depth", st.qpos, st.stamp_s, WAIT_S)
        worker.render_sync("rgb", st.qpos, st.stamp_s + 0.01, WAIT_S)
        assert worker.render_count == 3
    finally:
        worker.close()
        sim.close()
    with pytest.raises(RobotError, match="closed"):
        worker.render_sync("rgb", st.qpos, st.stamp_s, WAIT_S)


def test_importing_the_package_does_not_import_mujoco() -> None:
    code = "import sys, loopact.sim; assert 'mujoco' not in sys.modules, 'mujoco imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()


async def test_simulated_time_waits_for_a_slow_render(robot: SimRobot) -> None:
    """A render that takes long on a loaded CPU costs no simulated time (SPEC D6)."""
    real_submit = robot._renderer.submit

    def slow_submit(*args: object, **kwargs: object) -> object:
        import time

        time.sleep(0.5)  # half a second of wall time = 2 s of simulated time at speed 4
        return real_submit(*args, **kwargs)

    robot._renderer.submit = slow_submit  # type: ignore[method-assign]
    await robot.send_twist(Twist(0.3, 0.0))
    await robot.clock.sleep(1.0)  # up to speed
    before = robot.clock.now()
    frame = await robot.get_depth()
    after = robot.clock.now()
    await robot.send_twist(Twist())
    assert after - before < 0.05  # time stood still while it rendered
    assert frame.stamp_s >= before - 0.05  # and the image shows that moment


async def test_time_runs_on_while_rendering_when_freezing_is_off(robot: SimRobot) -> None:
    """``loopact sim --ros2`` streams its camera on wall time: renders do not pause the robot."""
    real_submit = robot._renderer.submit

    def slow_submit(*args: object, **kwargs: object) -> object:
        import time

        time.sleep(0.5)  # = 2 s of simulated time at speed 4
        return real_submit(*args, **kwargs)

    robot._renderer.submit = slow_submit  # type: ignore[method-assign]
    robot.freeze_time_while_rendering = False
    before = robot.clock.now()
    frame = await robot.get_frame()
    after = robot.clock.now()
    assert after - before > 1.0  # simulated time kept running during the slow render
    assert frame.stamp_s < after
