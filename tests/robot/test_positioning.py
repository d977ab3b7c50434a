"""visual_positioning and seewhat on the real simulator, graded by ground truth (issue 15)."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from tests.robot.rig import Rig

from loopact.llm.messages import Image
from loopact.sim.describe import describe_world
from loopact.sim.groundtruth import iou, object_bbox
from loopact.tools.base import ToolContext

pytestmark = pytest.mark.sim


def _ctx(shown: list[tuple[Image, str]]) -> ToolContext:
    return ToolContext("t", "c1", Path.cwd(), show_image=lambda i, c: shown.append((i, c)))


async def _gt_box(rig: Rig, name: str) -> tuple[float, float, float, float] | None:
    pose = await rig.robot.get_pose()
    head = await rig.robot.get_head()
    obj = next(o for o in describe_world()["objects"] if o["name"] == name)
    return object_bbox(
        obj, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), 640, 480
    )


async def test_visual_positioning_red_box_matches_ground_truth(rig: Rig) -> None:
    await rig.robot.teleport(1.0, -0.5, -0.6)
    shown: list[tuple[Image, str]] = []
    res = await rig.tools["visual_positioning"].invoke({"target": "red box"}, _ctx(shown))
    assert res.ok, res.error
    assert set(res.data) == {"found", "target", "bbox", "confidence", "reason"}
    assert res.data["found"] is True and res.data["confidence"] >= 0.5
    frame = res.metadata["frame"]
    assert (frame["width_px"], frame["height_px"]) == (640, 480) and frame["stamp_s"] > 0
    gt = await _gt_box(rig, "red_cube")
    assert gt is not None and iou(gt, res.data["bbox"]) >= 0.5
    # the overlay went to people, not to the model
    assert not res.images and len(shown) == 1
    img = PILImage.open(io.BytesIO(shown[0][0].data))
    assert img.size == (640, 480) and "red box" in shown[0][1]
    x1, y1, x2, y2 = res.data["bbox"]
    r, g, b = img.convert("RGB").getpixel((x1 + 1, (y1 + y2) // 2))  # the green box edge
    assert g > 150 and r < 120 and b < 120


async def test_visual_positioning_in_chinese_and_not_in_view(rig: Rig) -> None:
    await rig.robot.teleport(1.5, -1.6, 0.0)
    zh = await rig.call("visual_positioning", target="红色的方块")
    assert zh.ok and zh.data["found"] and zh.data["bbox"][0] < 320 < zh.data["bbox"][2]
    gone = await rig.call("visual_positioning", target="the green cylinder")
    assert gone.ok and gone.data["found"] is False and gone.data["bbox"] is None
    assert "no green object" in gone.data["reason"]
    # a colour with no HSV range: not found, never a box of another colour (issue 15)
    for phrase in ("the magenta box", "粉红色的球"):
        odd = await rig.call("visual_positioning", target=phrase)
        assert odd.ok and odd.data["found"] is False and odd.data["bbox"] is None, odd.data
        assert "no HSV range for colour" in odd.data["reason"] and "red" in odd.data["reason"]
    empty = await rig.call("visual_positioning", target="  ")
    assert not empty.ok and "empty" in (empty.error or "")


async def test_seewhat_describes_what_is_really_in_view(rig: Rig) -> None:
    await rig.robot.teleport(0.0, 0.0, math.radians(-20))
    res = await rig.call("seewhat")
    assert res.ok, res.error
    text = res.data["result"]
    in_view = set()
    for obj in describe_world()["objects"]:
        box = await _gt_box(rig, obj["name"])
        if box is not None and (box[2] - box[0]) * (box[3] - box[1]) > 200:
            in_view.add(obj["colour"])
    assert in_view  # the pose shows something
    for obj in describe_world()["objects"]:
        assert (obj["colour"] in text) == (obj["colour"] in in_view), (text, in_view)
    asked = await rig.call("seewhat", question="is there a ball?")
    assert asked.data["question"] == "is there a ball?" and "no vision model" in asked.data["note"]


async def test_seewhat_tool_image_event_reaches_the_trace(rig: Rig, tmp_path: Path) -> None:
    shown: list[tuple[Image, str]] = []
    res: Any = await rig.tools["seewhat"].invoke({}, _ctx(shown))
    assert res.ok and len(shown) == 1 and shown[0][1] == res.data["result"]
