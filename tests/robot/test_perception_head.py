"""Perception (SPEC D5, G1, G2) and pan-tilt (SPEC D4) tools on the real MuJoCo SimRobot."""

from __future__ import annotations

import asyncio
import io
import math
import re

import numpy as np
import pytest
from PIL import Image as PILImage
from tests.robot.rig import Rig

from loopact.app.robot import open_robot
from loopact.errors import ConfigError
from loopact.robot.head import looks
from loopact.robot.interface import CameraFrame
from loopact.vision.gate import ImageGate

pytestmark = pytest.mark.sim


async def test_seewhat_returns_gated_jpeg_and_caption(rig: Rig) -> None:
    res = await rig.call("seewhat")
    assert res.ok, res.error
    assert len(res.images) == 1
    img = res.images[0]
    assert img.media_type == "image/jpeg" and img.data[:2] == b"\xff\xd8"
    assert max(img.width_px, img.height_px) <= 1024
    decoded = PILImage.open(io.BytesIO(img.data))
    assert decoded.mode == "RGB" and decoded.size == (img.width_px, img.height_px)
    assert res.data["image"].startswith("attached")
    assert "purple line" in res.data["result"]  # the floor line is in the start view


async def test_detect_objects_finds_red_when_facing_it(rig: Rig) -> None:
    await rig.robot.teleport(1.5, -1.6, 0.0)  # red cube at (3.0, -1.6), straight ahead
    res = await rig.call("detect_objects", color="red")
    assert res.ok, res.error
    assert len(res.data) >= 1
    red = res.data[0]
    assert red["color"] == "red"
    x1, y1, x2, y2 = red["bbox"]
    assert 0 <= x1 < 320 < x2 <= 640 and 0 <= y1 < y2 <= 480
    assert abs(red["bearing_deg"]) < 5
    assert 1.0 < red["distance_m"] < 1.5  # centre 1.5 m away, front face a bit closer
    everything = await rig.call("detect_objects")
    assert {"red", "purple"} <= {d["color"] for d in everything.data}
    bad = await rig.call("detect_objects", color="orange")
    assert not bad.ok and "known colours: red" in (bad.error or "")


async def test_detect_bearing_accounts_for_head_pan(rig: Rig) -> None:
    await rig.robot.teleport(1.5, -1.6, math.radians(-30))  # cube 30 deg to the left
    assert (await rig.call("servo_move", pan_deg=30, tilt_deg=15)).ok
    res = await rig.call("detect_objects", color="red")
    assert res.ok and res.data
    assert abs(res.data[0]["bearing_deg"] - 30) < 5


async def test_blurry_frame_gives_ok_result_with_note(rig: Rig) -> None:
    import cv2

    inner_get_frame = rig.robot.get_frame

    async def blurred() -> CameraFrame:
        f = await inner_get_frame()
        return CameraFrame(cv2.GaussianBlur(f.rgb, (0, 0), 6), f.stamp_s)

    rig.robot.get_frame = blurred  # type: ignore[method-assign]
    res = await rig.call("seewhat")
    assert res.ok
    assert res.images == ()
    assert "unreadable" in res.data["image"] and "blurry" in res.data["image"]


async def test_sharp_sim_frames_pass_the_gate(rig: Rig) -> None:
    gate = ImageGate()
    for x, y, yaw in [(0, 0, 0), (1.5, -1.6, 0), (0, 0, math.pi), (2, 2, -1.5)]:
        await rig.robot.teleport(x, y, yaw)
        frame = await rig.robot.get_frame()
        res = gate.process(frame.rgb)
        assert res.image is not None and not res.blurry, (x, y, yaw, res.laplacian_var)


async def test_stale_frame_refused(rig: Rig) -> None:
    inner_get_frame = rig.robot.get_frame

    async def old() -> CameraFrame:
        f = await inner_get_frame()
        return CameraFrame(f.rgb, f.stamp_s - 10.0)

    rig.robot.get_frame = old  # type: ignore[method-assign]
    res = await rig.call("seewhat")
    assert not res.ok and "old" in (res.error or "")
    res = await rig.call("detect_objects")
    assert not res.ok and "old" in (res.error or "")


async def test_observe_surroundings_four_views(rig: Rig) -> None:
    res = await rig.call("observe_surroundings")
    assert res.ok, res.error
    assert [v["view"] for v in res.data["views"]] == ["front", "left", "behind", "right"]
    assert len(res.images) == 4
    assert len({i.sha256 for i in res.images}) == 4
    pose = await rig.pose()
    assert abs(math.degrees(math.atan2(math.sin(pose.yaw_rad), math.cos(pose.yaw_rad)))) < 6


async def test_head_tools(rig: Rig) -> None:
    res = await rig.call("servo_move", pan_deg=40, tilt_deg=-10)
    assert res.ok, res.error
    # the words say where the head really is (within the 2.5-degree tolerance below)
    words = re.fullmatch(
        r"the camera now looks (\d+) degrees left and (\d+) degrees up", res.data["result"]
    )
    assert words, res.data["result"]
    assert abs(int(words[1]) - 40) <= 3 and abs(int(words[2]) - 10) <= 3
    head = await rig.robot.get_head()
    assert abs(math.degrees(head.pan_rad) - 40) < 2.5
    assert abs(math.degrees(head.tilt_rad) + 10) < 2.5
    said = {
        "servo_nod": 'nodded ("yes")',
        "servo_shake": 'shook the head ("no")',
        "servo_init": "centred the camera",
    }
    for name in ("servo_nod", "servo_shake", "servo_init"):
        res = await rig.call(name)
        assert res.ok, (name, res.error)
        assert res.data["result"] == said[name]
    head = await rig.robot.get_head()
    assert abs(math.degrees(head.pan_rad)) < 2.5
    assert abs(math.degrees(head.tilt_rad) - rig.profile.head.home_tilt_deg) < 2.5
    assert all(t.is_zero for _, t in rig.robot.twists)  # the base never moved


async def test_a_stopped_head_move_does_not_name_its_tool_in_its_error(rig: Rig) -> None:
    """Every reader puts a tool's name before its error ("servo_move: ..."); the head's
    error said "servo_move interrupted: ..." after it (the newcomer's "move_forward:
    move_forward stopped early ..." in the head)."""
    moving = asyncio.ensure_future(rig.call("servo_move", pan_deg=85, tilt_deg=0))

    async def turning() -> bool:
        return abs(math.degrees((await rig.robot.get_head()).pan_rad)) > 5

    await rig.wait_for(turning)
    await rig.governor.stop_all("the test's stop")
    res = await asyncio.wait_for(moving, 10)
    assert not res.ok
    assert res.error == "interrupted: the test's stop", res.error
    # observe_surroundings, stopped while it turns to its second view
    looking = asyncio.ensure_future(rig.call("observe_surroundings"))

    async def base_turning() -> bool:
        return abs(math.degrees((await rig.pose()).yaw_rad)) > 10

    await rig.wait_for(base_turning)
    await rig.governor.stop_all("the test's stop")
    res = await asyncio.wait_for(looking, 30)
    assert not res.ok
    assert res.error.startswith("turning failed: stopped early by "), res.error


async def test_tool_safety_classes(rig: Rig) -> None:
    safety = {name: t.safety.value for name, t in rig.tools.items()}
    for name in (
        "move_forward",
        "move_backward",
        "turn_left",
        "turn_right",
        "drive",
        "stop",
        "navigation",
        "servo_move",
        "servo_init",
        "servo_shake",
        "servo_nod",
        "observe_surroundings",
    ):
        assert safety[name] == "motion", name
    for name in ("get_current_pose", "seewhat", "detect_objects"):
        assert safety[name] == "read_only", name
    params = rig.tools["move_forward"].parameters["properties"]
    assert set(params) == {"distance_m", "speed_mps"}
    assert set(rig.tools["drive"].parameters["properties"]) == {
        "linear_mps",
        "angular_dps",
        "duration_s",
    }
    assert set(rig.tools["servo_move"].parameters["properties"]) == {"pan_deg", "tilt_deg"}
    # a place or object by name, or a pose in the map frame (issue 40)
    assert set(rig.tools["navigation"].parameters["properties"]) == {
        "waypoint",
        "x_m",
        "y_m",
        "yaw_deg",
    }


async def test_open_robot_session() -> None:
    with pytest.raises(ConfigError, match="robot.kind") as ei:
        await open_robot(kind="gazebo")
    assert ei.value.key == "robot.kind" and "sim" in str(ei.value)
    session = await open_robot(speed=4)
    try:
        state = await session.state()
        assert state == {"x_m": 0.0, "y_m": 0.0, "yaw_rad": 0.0, "frame": "odom"}
        names = [t.name for t in session.tools]
        assert len(names) == len(set(names)) == 22  # show_map: the simulator has a map
        assert {"approach", "face", "distance_to", "show_map"} <= set(names)
        res = await session.tools[names.index("move_forward")](distance_m=0.3)  # type: ignore[operator]
        assert res.ok, res.error
        await session.stop("test")
        assert session.governor.last_twist.is_zero
    finally:
        await session.close()
        await session.close()  # idempotent


async def test_profile_without_head_has_no_servo_tools() -> None:
    from tests.robot.rig import make_rig

    rig = await make_rig(profile="turtlebot4")
    try:
        assert "servo_move" not in rig.tools and "seewhat" in rig.tools
        assert np.isfinite(rig.profile.limits.max_linear_mps)
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_signed_robot_arguments_declare_their_convention(rig: Rig) -> None:
    # REP 103 for the base (forward and left positive); the head's pan left, tilt down.
    assert dict(rig.tools["servo_move"].directions) == {
        "pan_deg": ("left", "right"),
        "tilt_deg": ("down", "up"),
    }
    assert dict(rig.tools["drive"].directions) == {
        "linear_mps": ("forward", "backward"),
        "angular_dps": ("left", "right"),
    }


def test_where_the_camera_looks_in_words() -> None:
    assert looks(-43.6, 0.5).text() == "the camera now looks 44 degrees right and 0 degrees down"
    assert looks(0.4, -20).text() == "the camera now looks straight ahead and 20 degrees up"
    assert looks(20.2, 0).text("zh") == "摄像头现在朝向左 20 度，向下 0 度"


def _said(sentence: str, colour: str) -> tuple[float, float]:
    """``(distance m, bearing deg left positive)`` of the ``colour`` object in a sentence."""
    m = re.search(rf"a {colour} \w+ ([\d.]+) m away, (\d+) degrees (left|right)", sentence)
    assert m, (colour, sentence)
    return float(m[1]), float(m[2]) * (1 if m[3] == "left" else -1)


def _truth(x_m: float, y_m: float) -> tuple[float, float]:
    """Distance (m) and bearing (deg, left positive) of a point from the start pose (0, 0, 0)."""
    return math.hypot(x_m, y_m), math.degrees(math.atan2(y_m, x_m))


async def test_described_distances_and_bearings_match_the_world(rig: Rig) -> None:
    """A newcomer's audit, by simulator ground truth (loopact sim --describe): seewhat said the
    red cube, 3.4 m away and 28 degrees right, was 2.8 m away (the depth, not the range), and
    observe_surroundings put the green cylinder (55 degrees left) "34 degrees right" (a bearing
    of the left view). Distances are now along the line of sight to the near face, and every
    view's bearings are from the heading at the start."""
    red_d, red_b = _truth(3.0, -1.6)  # the red cube's centre; its near face is 0.15 m closer
    green_d, green_b = _truth(1.6, 2.3)  # the green cylinder, radius 0.12 m
    looked = await rig.call("seewhat")
    assert looked.ok, looked.error
    d, b = _said(looked.data["result"], "red")
    assert abs(d - (red_d - 0.15)) < 0.25 and abs(b - red_b) < 4, (d, b, red_d, red_b)
    around = await rig.call("observe_surroundings")
    assert around.ok, around.error
    left = next(v for v in around.data["views"] if v["view"] == "left")
    d, b = _said(left["seen"], "green")
    assert abs(d - (green_d - 0.12)) < 0.25 and abs(b - green_b) < 5, (d, b, green_d, green_b)
    assert left["seen"] in around.data["result"]
