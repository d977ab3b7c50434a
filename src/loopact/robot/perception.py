"""Perception tools (SPEC D5, G1, G2, F6): seewhat, observe_surroundings, detect_objects.

Frames older than ``camera.max_age_s`` on the robot clock are refused, never silently used.
Images for the model pass through the image gate; a blurry or rejected image still gives an ok
result whose ``data`` says the image was unreadable, so the agent tells the user and carries on
with text (G2). ``seewhat`` always describes the view offline from the colour detector and
depth (:func:`loopact.vision.scene.describe`), so a model without vision (the local brain)
answers "what do you see?" truthfully; with a vision model (:class:`PerceptionOptions.vision`)
that model describes the frame. Every perception tool shows people the frame it used with its
overlay (``ToolContext.show_image``, SPEC F6).
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.errors import ModelError, RobotError, StaleDataError
from loopact.i18n import Phrase, colour_name
from loopact.llm.messages import Image
from loopact.robot.interface import CameraFrame, DepthFrame
from loopact.robot.located import LocatedObject
from loopact.robot.motion import RobotEnv, rotate
from loopact.robot.outcome import said_by
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.tools.builtin.frames import keep_for_plan
from loopact.vision.detect import ColorRanges, Detection, detect_colors
from loopact.vision.model import VisionModel, iou
from loopact.vision.overlay import draw_boxes
from loopact.vision.scene import LINE_COLOR, describe_phrase, noun

KEEP_FRAMES = 8
"""Frames a perception result may refer to that are kept for ``track`` (by timestamp)."""


@dataclass
class PerceptionOptions:
    """What the perception tools share (SPEC D5, G2; the ``vision`` config section).

    Attributes:
        colors: HSV ranges by colour name.
        vision: A vision-capable model for box selection (the main model when it has
            vision, or ``vision.model``), or None: the detector alone. Set by the app.
        describer: A separate vision model (``vision.model``) that describes frames for
            ``seewhat``; None when the main model sees the image itself or has no vision.
        min_confidence: Below this a result says it is unsure (G2).
        line_lost_grace_s: ``follow_line`` stops after the line is out of view this long.
        line_speed_mps: ``follow_line``'s forward speed on a straight line, m/s.
        track_distance_m: ``track`` keeps this distance to the target, metres.
        frames: Recent frames whose pixel coordinates a result gave, by stamp (``track``
            initialises its tracker on the frame the box refers to).
    """

    colors: ColorRanges = field(default_factory=ColorRanges)
    vision: VisionModel | None = None
    describer: VisionModel | None = None
    min_confidence: float = 0.5
    line_lost_grace_s: float = 1.5
    line_speed_mps: float = 0.25
    track_distance_m: float = 1.2
    frames: OrderedDict[float, tuple[CameraFrame, tuple[float, ...]]] = field(
        default_factory=OrderedDict
    )

    def keep_box(self, frame: CameraFrame, box: Sequence[float]) -> None:
        """Remember a box a result handed out, with the frame it refers to."""
        self.frames[frame.stamp_s] = (frame, tuple(float(v) for v in box))
        self.frames.move_to_end(frame.stamp_s)
        while len(self.frames) > KEEP_FRAMES:
            self.frames.popitem(last=False)

    def frame_size(self) -> tuple[int, int] | None:
        """``(width, height)`` in pixels of the newest frame a box was handed out for."""
        if not self.frames:
            return None
        frame = next(reversed(self.frames.values()))[0]
        return int(frame.rgb.shape[1]), int(frame.rgb.shape[0])

    def frame_of(self, box: Sequence[float]) -> CameraFrame | None:
        """The frame of the newest handed-out box that ``box`` matches (IoU >= 0.8), or None."""
        for frame, kept in reversed(self.frames.values()):
            if iou(kept, box) >= 0.8:
                return frame
        return None


async def show(
    env: RobotEnv, ctx: ToolContext | None, rgb: npt.NDArray[np.uint8], caption: str
) -> None:
    """Gate an overlay image (off the loop) and show it to people (SPEC F6); never fails."""
    if ctx is None:
        return
    gated = await asyncio.to_thread(env.gate.process, rgb)
    if gated.image is not None:
        ctx.show_image(gated.image, caption)


def frame_problem(frame: CameraFrame) -> str | None:
    """What makes ``frame`` unusable for perception, or None (an ``HxWx3`` uint8 RGB image)."""
    rgb = frame.rgb
    if not isinstance(rgb, np.ndarray):
        return f"pixels are a {type(rgb).__name__}, not an array"
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] < 8 or rgb.shape[1] < 8:
        return f"shape {tuple(rgb.shape)}, expected height x width x 3 (at least 8x8)"
    if rgb.dtype != np.uint8:
        return f"pixel type {rgb.dtype}, expected uint8"
    if not math.isfinite(frame.stamp_s):
        return f"timestamp {frame.stamp_s}"
    return None


async def fresh_frame(env: RobotEnv) -> CameraFrame:
    """The newest RGB frame, refusing stale data.

    The age is measured at the moment of the request (``request time - stamp``), so a frame
    rendered on demand, or delivered with transport latency, counts as fresh; a camera that
    stopped publishing does not.

    Raises:
        StaleDataError: Older than ``camera.max_age_s``.
        RobotError: No frame, or a corrupt one (not an ``HxWx3`` uint8 RGB array with pixels).
    """
    requested_s = env.robot.clock.now()
    frame = await env.robot.get_frame()
    problem = frame_problem(frame)
    if problem:
        raise RobotError(f"the camera sent a corrupt frame: {problem}")
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


async def detections(
    env: RobotEnv, frame: CameraFrame, color: str | None, ranges: ColorRanges
) -> tuple[list[Detection], float]:
    """Colour blobs of ``frame`` with depth (off the loop), and the head's pan in degrees.

    Bearings in the detections are relative to the camera; add the pan for the robot's heading.
    """
    dets, pan, _depth = await detections_and_depth(env, frame, color, ranges)
    return dets, pan


async def detections_and_depth(
    env: RobotEnv, frame: CameraFrame, color: str | None, ranges: ColorRanges
) -> tuple[list[Detection], float, DepthFrame | None]:
    """:func:`detections` plus the depth frame they used (None when there was no fresh one)."""
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
    if depth is not None and dets:
        await _remember(env, dets, pan, frame.stamp_s)
    return dets, pan, depth


async def _remember(env: RobotEnv, dets: list[Detection], pan_deg: float, stamp_s: float) -> None:
    """Keep where each seen object lies on the floor, for ``navigation`` and ``show_map``
    (:mod:`loopact.robot.located`; issue 40): the robot's pose plus the blob's bearing and
    horizontal range (depth along the tilted axis, projected on the floor)."""
    try:
        pose = await env.map_pose()
        tilt = math.radians(env.profile.head.home_tilt_deg)
        if env.robot.has_head and env.profile.head.present:
            tilt = (await env.robot.get_head()).tilt_rad
    except RobotError:
        return
    for det in dets:
        if det.range_m is None or det.color == LINE_COLOR or not math.isfinite(det.range_m):
            continue
        a = pose.yaw_rad + math.radians(det.bearing_deg + pan_deg)
        r = det.range_m * math.cos(tilt) + env.profile.camera.mount_forward_m
        env.located.remember(
            LocatedObject(
                noun(det),
                det.color,
                pose.x_m + r * math.cos(a),
                pose.y_m + r * math.sin(a),
                pose.frame,
                stamp_s,
            )
        )


def as_objects(dets: list[Detection], pan_deg: float) -> list[dict[str, Any]]:
    """JSON-able detections with bearings relative to the robot's heading (degrees, left
    positive) and ``distance_m`` the range from the camera along the line of sight (metres,
    :attr:`~loopact.vision.detect.Detection.range_m`), not the depth."""
    out = []
    for d in dets:
        item = d.to_dict()
        item["bearing_deg"] = round(d.bearing_deg + pan_deg, 1)
        item["distance_m"] = None if d.range_m is None else round(d.range_m, 2)
        out.append(item)
    return out


def caption(objects: list[dict[str, Any]]) -> str:
    """A one-line description of colour detections for the model (:func:`caption_phrase`
    in English)."""
    return caption_phrase(objects).text("en")


def caption_phrase(objects: list[dict[str, Any]]) -> Phrase:
    """What :func:`caption` says, as a typed phrase (``detected.*``)."""
    if not objects:
        return Phrase("detected.none")
    parts = []
    for o in objects[:6]:
        side = Phrase("detected.ahead")
        if o["bearing_deg"] > 5:
            side = Phrase("detected.left", angle_deg=o["bearing_deg"])
        elif o["bearing_deg"] < -5:
            side = Phrase("detected.right", angle_deg=-o["bearing_deg"])
        color = colour_name(o["color"])
        if o["distance_m"] is None:
            parts.append(Phrase("detected.object", color=color, side=side))
        else:
            distance = o["distance_m"]
            parts.append(Phrase("detected.object_at", color=color, distance_m=distance, side=side))
    return Phrase("detected.some", items=tuple(parts))


SEEN_PER_VIEW = 4
"""Objects each view of ``observe_surroundings`` names in its sentence, nearest first."""


def around_sentence(seen: Sequence[tuple[str, Phrase]]) -> Phrase:
    """``observe_surroundings``' outcome: ``"looked all around. In front: I see a red box 2.8 m
    away, 29 degrees right. To the left: I see ...."`` (环顾了四周。前方：我看到...), one part per
    view in the order turned (front, left, behind, right). Bearings in every part are relative
    to the robot's heading before it turned (degrees, left positive, wrapped to (-180, 180]):
    the green box to the right of the left view is "56 degrees left".

    Args:
        seen: ``(view, what it saw)`` per view: ``front``, ``left``, ``behind`` or ``right``
            and the scene phrase (:func:`~loopact.vision.scene.describe_phrase`).
    """
    parts = (Phrase("around.view", view=Phrase(f"around.{v}"), seen=said) for v, said in seen)
    return Phrase("around.all", views=tuple(parts))


async def _view(
    env: RobotEnv,
    ranges: ColorRanges,
    label: str,
    ctx: ToolContext | None = None,
    turned_deg: float = 0.0,
) -> tuple[dict[str, Any], list[Image], Phrase]:
    """One view of ``observe_surroundings``: its detections (bearings relative to the robot's
    heading now), its images and what it saw, a phrase (also ``seen``, in English) whose
    bearings are relative to the heading before the robot turned ``turned_deg`` degrees (left
    positive), so the four views agree."""
    frame = await fresh_frame(env)
    gated = await asyncio.to_thread(env.gate.process, frame.rgb)
    dets, pan = await detections(env, frame, None, ranges)
    objects = as_objects(dets, pan)
    seen = describe_phrase(dets, pan + turned_deg, limit=SEEN_PER_VIEW)
    view: dict[str, Any] = {
        "view": label,
        "caption": caption(objects),
        "seen": seen.text("en"),
        "objects": objects,
    }
    overlay = await asyncio.to_thread(
        draw_boxes, frame.rgb, dets, None, f"{label}: {view['caption']}"
    )
    await show(env, ctx, overlay, f"{label}: {view['caption']}")
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
    return view, images, seen


async def see(
    env: RobotEnv, opts: PerceptionOptions, question: str | None, ctx: ToolContext | None
) -> ToolResult:
    """``seewhat``: the newest frame, an offline description, and the vision model's answer.

    Raises:
        RobotError: No fresh frame.
    """
    frame = await fresh_frame(env)
    gated = await asyncio.to_thread(env.gate.process, frame.rgb)
    dets, pan = await detections(env, frame, None, opts.colors)
    scene = describe_phrase(dets, pan)
    said: Phrase | None = scene
    text = scene.text("en")
    # ``caption`` is what plans refer to ({{steps.N.outputs.data.caption}}, issue 19)
    data: dict[str, Any] = {
        "view": "camera",
        "result": text,
        "caption": text,
        "objects": as_objects(dets, pan),
    }
    meta: dict[str, Any] = {
        "frame": {"width_px": frame.rgb.shape[1], "height_px": frame.rgb.shape[0]},
        "stamp_s": round(frame.stamp_s, 3),
        "source": "detector",
    }
    images: list[Image] = []
    if gated.image is None:
        data["image"] = f"unreadable: {gated.error}; describe from the detections only"
    elif gated.blurry:
        data["image"] = (
            f"unreadable: too blurry (sharpness {gated.laplacian_var:.0f}); "
            "tell the user the camera image is unclear and go on with the detections"
        )
    else:
        images.append(gated.image)
        data["image"] = f"attached ({gated.image.width_px}x{gated.image.height_px} JPEG)"
        if opts.describer is not None:
            try:
                answer = await opts.describer.describe(gated.image, question, text)
            except ModelError as exc:
                data["note"] = f"the vision model failed ({exc}); this is the detector's view"
            else:
                if answer:  # the vision model's own words: nothing typed to render
                    data["result"] = data["caption"] = answer
                    data["detector"] = text
                    meta["source"] = opts.describer.name
                    said = None
    if question:
        data["question"] = question
        if meta["source"] == "detector":
            data["note"] = (
                "no vision model: only colours, distances and bearings are known; "
                "answer from them and say what you cannot tell"
            )
    if ctx is not None:
        meta.update(await keep_for_plan(ctx, images, "seewhat"))
    overlay = await asyncio.to_thread(draw_boxes, frame.rgb, dets, None, text)
    await show(env, ctx, overlay, text)
    return ToolResult(ok=True, data=data, metadata=meta, images=tuple(images), outcome=said)


async def look_around(env: RobotEnv, col: ColorRanges, ctx: ToolContext | None) -> ToolResult:
    """``observe_surroundings``: turn in four 90-degree steps (through the governor) and look
    each way; the outcome is :func:`around_sentence` of the four views."""
    views: list[dict[str, Any]] = []
    seen: list[tuple[str, Phrase]] = []
    images: list[Image] = []
    labels = ["front", "left", "behind", "right"]
    try:
        for i, label in enumerate(labels):
            if i > 0:
                turned = await rotate(env, "observe_surroundings", 90.0, 60.0, +1)
                if not turned.ok:
                    why = turned.outcome or Phrase("stop.reason", reason=turned.error or "")
                    failed = Phrase("around.turn_failed", why=why)
                    return ToolResult.failure(failed, data={"views": views})
            view, imgs, said = await _view(env, col, label, ctx, turned_deg=90.0 * i)
            views.append(view)
            seen.append((label, said))
            images.extend(imgs)
        await rotate(env, "observe_surroundings", 90.0, 60.0, +1)
    except RobotError as exc:
        return ToolResult.failure(said_by(exc), data={"views": views})
    return ToolResult.success(
        {
            "result": around_sentence(seen),
            "views": views,
            "note": "images in order: " + ", ".join(labels) + "; each view's objects have "
            "bearings from the heading it was taken at, its 'seen' and 'result' from the "
            "heading at the start",
        },
        images=images,
    )


def make_perception_tools(env: RobotEnv, opts: PerceptionOptions | None = None) -> list[Tool]:
    """The perception tools bound to ``env`` (SPEC D5)."""
    opts = opts or PerceptionOptions()
    col = opts.colors
    known = ", ".join(col.names)

    @tool(
        safety=SafetyClass.READ_ONLY,
        timeout_s=45,
        examples=[("what do you see?", {}), ("你前面有什么？", {})],
    )
    async def seewhat(ctx: ToolContext, question: str | None = None) -> ToolResult:
        """Look through the camera: what is in view, with colours and distances. 看看前面有什么。

        Args:
            question: A question about the view, or omit for a description.
        """
        try:
            return await see(env, opts, question, ctx)
        except RobotError as exc:
            return ToolResult.failure(said_by(exc))

    @tool(safety=SafetyClass.MOTION, timeout_s=90, examples=[("look all around you", {})])
    async def observe_surroundings(ctx: ToolContext) -> ToolResult:
        """Look all around: turn in four 90-degree steps, return the four views. 四处看看。"""
        return await look_around(env, col, ctx)

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=20)
    async def detect_objects(ctx: ToolContext, color: str | None = None) -> ToolResult:
        """Find coloured objects in the camera view with their distance and bearing. 找彩色物体。

        Bearings are in degrees relative to the robot's heading, left positive; distances in
        metres from the camera; bbox is [x1, y1, x2, y2] in pixels.

        Args:
            color: Only this colour, or omit for all.
        """
        if color is not None and color.strip().lower() not in col.ranges:
            return ToolResult.failure(Phrase("perception.unknown_colour", color=color, known=known))
        try:
            frame = await fresh_frame(env)
            dets, pan = await detections(env, frame, color, col)
            objects = as_objects(dets, pan)
            said = caption_phrase(objects)
            text = said.text("en")
            overlay = await asyncio.to_thread(draw_boxes, frame.rgb, dets, None, text)
            await show(env, ctx, overlay, text)
        except RobotError as exc:
            return ToolResult.failure(said_by(exc))
        # the objects are the data; the caption is for the model and, typed, for people
        return ToolResult(ok=True, data=objects, metadata={"caption": text}, outcome=said)

    detect_objects.description += f" Colours: {known}."
    return [seewhat, observe_surroundings, detect_objects]
