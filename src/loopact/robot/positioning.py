"""``visual_positioning(target)``: the box of a named object in the newest frame (SPEC D5, G2).

The result's ``data`` is strict JSON ``{found, target, bbox: [x1, y1, x2, y2], confidence,
reason}`` in pixels of the frame it used; ``metadata.frame`` gives that frame's width, height
and timestamp. With a vision model (:attr:`PerceptionOptions.vision`) the box comes from a
box-selection request whose answer is validated (:func:`loopact.vision.model.validate_box_answer`)
and checked against the colour detector's candidates, which are offered to choose from
(:func:`loopact.vision.model.check_box`); a refused answer falls back to the detector.
Offline the detector alone chooses (:func:`loopact.vision.scene.select_target`). This box is
the only source of coordinates for ``track``: the frame is kept so that ``track`` starts its
tracker on the image the coordinates refer to.
"""

from __future__ import annotations

import asyncio
from typing import Any

from loopact.errors import RobotError
from loopact.i18n import Phrase
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import said_by
from loopact.robot.perception import PerceptionOptions, detections, fresh_frame, show
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.overlay import draw_boxes
from loopact.vision.scene import Selection, noun, parse_target, select_target


async def locate(
    env: RobotEnv, opts: PerceptionOptions, target: str, ctx: ToolContext | None = None
) -> ToolResult:
    """Run one box selection (see the module docstring).

    Raises:
        RobotError: No fresh frame.
    """
    query = parse_target(target, opts.colors.names)
    frame = await fresh_frame(env)
    h, w = frame.rgb.shape[:2]
    dets, _pan = await detections(env, frame, None, opts.colors)
    meta: dict[str, Any] = {
        "frame": {"width_px": w, "height_px": h, "stamp_s": round(frame.stamp_s, 3)},
        "candidates": [{"color": d.color, "bbox": list(d.bbox)} for d in dets],
        "source": "detector",
    }
    answer: dict[str, Any] | None = None
    said: Phrase | None = None  # the reason, typed, when the runtime wrote it
    if opts.vision is not None:
        gated = await asyncio.to_thread(env.gate.process, frame.rgb)
        if gated.image is not None and (gated.image.width_px, gated.image.height_px) == (w, h):
            answer, problems = await opts.vision.select_box(gated.image, query, dets, w, h)
            if problems:
                meta["model_refused"] = problems
            if answer is not None:
                meta["source"] = opts.vision.name
        else:
            meta["model_refused"] = ["the image gate changed the frame; detector used"]
    if answer is None and query.color is not None and query.color not in opts.colors.ranges:
        known = ", ".join(opts.colors.names)
        said = Phrase("positioning.no_range", color=query.color, target=target, known=known)
        answer = {  # the detector cannot see this colour: never a box of another one
            "found": False,
            "target": target,
            "bbox": None,
            "confidence": 0.0,
            "reason": said.text("en"),
        }
    if answer is None:
        sel: Selection = select_target(query, dets, w)
        det = sel.detection
        said = sel.said
        answer = {
            "found": det is not None,
            "target": noun(det) if det is not None else target,
            "bbox": list(det.bbox) if det is not None else None,
            "confidence": sel.confidence,
            "reason": sel.reason,
        }
    if answer["found"] and float(answer["confidence"]) < opts.min_confidence:
        meta["low_confidence"] = True
        reason = said or str(answer["reason"])  # a vision model's reason: its own words
        confidence = float(answer["confidence"])
        said = Phrase("positioning.low_confidence", confidence=confidence, reason=reason)
        answer["reason"] = said.text("en")
    if answer["found"]:
        opts.keep_box(frame, answer["bbox"])
    caption = (
        f"{target}: {answer['target']} {answer['bbox']} conf {float(answer['confidence']):.2f}"
        if answer["found"]
        else f"{target}: not found"
    )
    overlay = await asyncio.to_thread(draw_boxes, frame.rgb, dets, answer["bbox"], caption)
    await show(env, ctx, overlay, caption)
    data = {k: answer[k] for k in ("found", "target", "bbox", "confidence", "reason")}
    # the box is the data; the reason, typed, is what people read (issue 38)
    return ToolResult(ok=True, data=data, metadata=meta, outcome=said)


def make_positioning_tools(env: RobotEnv, opts: PerceptionOptions) -> list[Tool]:
    """``visual_positioning`` bound to ``env`` (SPEC D5)."""

    @tool(
        safety=SafetyClass.READ_ONLY,
        timeout_s=60,
        examples=[("where is the red box?", {"target": "red box"})],
    )
    async def visual_positioning(ctx: ToolContext, target: str) -> ToolResult:
        """Find an object in the camera image and give its box in pixels. 在图像里框出物体。

        Returns {found, target, bbox: [x1, y1, x2, y2], confidence, reason}; pass the bbox to
        track to follow the object.

        Args:
            target: What to find, e.g. "the red box", "the ball on the left", "红色的方块".
        """
        if not target.strip():
            return ToolResult.failure(Phrase("positioning.empty"))
        try:
            return await locate(env, opts, target.strip(), ctx)
        except RobotError as exc:
            return ToolResult.failure(said_by(exc))

    return [visual_positioning]
