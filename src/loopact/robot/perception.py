"""Perception tools (SPEC D5, G1, G2): seewhat, observe_surroundings, detect_objects.

Frames older than ``camera.max_age_s`` on the robot clock are refused, never silently used.
Images for the model pass through the image gate; a blurry or rejected image still gives an ok
result whose ``data`` says the image was unreadable, so the agent tells the user and carries on
with text (G2).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from loopact.errors import RobotError, StaleDataError, ToolError
from loopact.llm.messages import Image
from loopact.robot.interface import CameraFrame, DepthFrame
from loopact.robot.motion import RobotEnv, rotate
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.tools.builtin.frames import save_image
from loopact.vision.detect import ColorRanges, Detection, detect_colors


async def fresh_frame(env: RobotEnv) -> CameraFrame:
    """The newest RGB frame, refusing stale data.

    The age is measured at the moment of the request (``request time - stamp``), so a frame
    rendered on demand, or delivered with transport latency, counts as fresh; a camera that
    stopped publishing does not.

    Raises:
        StaleDataError: Older than ``camera.max_age_s``.
        RobotError: No frame.
    """
    requested_s = env.robot.clock.now()
    frame = await env.robot.get_frame()
    age = requested_s - frame.stamp_s
    if age > env.profile.camera.max_age_s:
        raise StaleDataError(
            f"the camera frame is {age:.2f} s old (limit {env.profile.camera.max_age_s} s); "
            "the camera may be down",
            age_s=age,
        )
    return frame


async def _fresh_depth(env: RobotEnv) -> DepthFrame | None:
    requested_s = env.robot.clock.now()
    try:
        depth = await env.robot.get_depth()
    except RobotError:
        return None
    if requested_s - depth.stamp_s > env.profile.camera.max_age_s:
        return None
    return depth


async def _pan_deg(env: RobotEnv) -> float:
    if env.robot.has_head and env.profile.head.present:
        return math.degrees((await env.robot.get_head()).pan_rad)
    return 0.0


async def _detect(
    env: RobotEnv, frame: CameraFrame, color: str | None, ranges: ColorRanges
) -> list[dict[str, Any]]:
    depth = await _fresh_depth(env)
    pan = await _pan_deg(env)
    dets: list[Detection] = await asyncio.to_thread(
        detect_colors,
        frame.rgb,
        None if depth is None else depth.depth_m,
        hfov_deg=env.robot.camera_hfov_deg,
        color=color,
        ranges=ranges,
    )
    out = []
    for d in dets:
        item = d.to_dict()
        item["bearing_deg"] = round(d.bearing_deg + pan, 1)  # relative to the robot's heading
        out.append(item)
    return out


def caption(objects: list[dict[str, Any]]) -> str:
    """A one-line description of colour detections for the model."""
    if not objects:
        return "no coloured objects detected"
    parts = []
    for o in objects[:6]:
        side = "ahead"
        if o["bearing_deg"] > 5:
            side = f"{o['bearing_deg']:.0f} deg left"
        elif o["bearing_deg"] < -5:
            side = f"{-o['bearing_deg']:.0f} deg right"
        dist = "" if o["distance_m"] is None else f" at {o['distance_m']:.1f} m"
        parts.append(f"{o['color']} object{dist}, {side}")
    return "detected: " + "; ".join(parts)


async def _kept(ctx: ToolContext, images: list[Image]) -> dict[str, Any]:
    """``{"image": "frames/seewhat-....jpg"}``: the frame the model saw, saved in the
    workspace for later plan steps (``{{steps.N.outputs.metadata.image}}``, issue 19); empty
    when there is no usable frame or it cannot be saved."""
    if not images:
        return {}
    try:
        return {"image": await asyncio.to_thread(save_image, ctx.workspace, images[0], "seewhat")}
    except ToolError as exc:
        return {"image_error": str(exc)}


async def _view(
    env: RobotEnv, ranges: ColorRanges, label: str
) -> tuple[dict[str, Any], list[Image]]:
    frame = await fresh_frame(env)
    gated = await asyncio.to_thread(env.gate.process, frame.rgb)
    objects = await _detect(env, frame, None, ranges)
    view: dict[str, Any] = {"view": label, "caption": caption(objects), "objects": objects}
    images: list[Image] = []
    if gated.image is None:
        view["image"] = f"unreadable: {gated.error}; describe from the detections only"
    elif gated.blurry:
        view["image"] = (
            f"unreadable: too blurry (sharpness {gated.laplacian_var:.0f}); "
            "tell the user and go on with the detections"
        )
    else:
        images.append(gated.image)
        view["image"] = f"attached ({gated.image.width_px}x{gated.image.height_px} JPEG)"
    return view, images


def make_perception_tools(env: RobotEnv, ranges: ColorRanges | None = None) -> list[Tool]:
    """The perception tools bound to ``env`` (SPEC D5)."""
    col = ranges or ColorRanges()
    known = ", ".join(col.names)

    @tool(
        safety=SafetyClass.READ_ONLY,
        timeout_s=20,
        examples=[("what is in front of you?", {}), ("你前面有什么？", {})],
    )
    async def seewhat(ctx: ToolContext) -> ToolResult:
        """Look through the camera now: newest image and coloured objects seen. 看看前面有什么。"""
        try:
            view, images = await _view(env, col, "camera")
        except RobotError as exc:
            return ToolResult.failure(str(exc))
        return ToolResult.success(view, images=images, **await _kept(ctx, images))

    @tool(safety=SafetyClass.MOTION, timeout_s=90)
    async def observe_surroundings() -> ToolResult:
        """Look all around: turn in four 90-degree steps, return the four views. 四处看看。"""
        views: list[dict[str, Any]] = []
        images: list[Image] = []
        labels = ["front", "left", "behind", "right"]
        try:
            for i, label in enumerate(labels):
                if i > 0:
                    turned = await rotate(env, "observe_surroundings", 90.0, 60.0, +1)
                    if not turned.ok:
                        return ToolResult.failure(
                            f"observe_surroundings: turning failed: {turned.error}",
                            data={"views": views},
                        )
                view, imgs = await _view(env, col, label)
                views.append(view)
                images.extend(imgs)
            await rotate(env, "observe_surroundings", 90.0, 60.0, +1)
        except RobotError as exc:
            return ToolResult.failure(str(exc), data={"views": views})
        return ToolResult.success(
            {"views": views, "note": "images in order: " + ", ".join(labels)}, images=images
        )

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=20)
    async def detect_objects(color: str | None = None) -> ToolResult:
        """Find coloured objects in the camera view with their distance and bearing. 找彩色物体。

        Bearings are in degrees relative to the robot's heading, left positive; distances in
        metres from the camera; bbox is [x1, y1, x2, y2] in pixels.

        Args:
            color: Only this colour, or omit for all.
        """
        if color is not None and color.strip().lower() not in col.ranges:
            return ToolResult.failure(f"unknown colour {color!r}; known colours: {known}")
        try:
            frame = await fresh_frame(env)
            objects = await _detect(env, frame, color, col)
        except RobotError as exc:
            return ToolResult.failure(str(exc))
        return ToolResult.success(objects, caption=caption(objects))

    detect_objects.description += f" Colours: {known}."
    return [seewhat, observe_surroundings, detect_objects]
