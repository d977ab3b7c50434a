"""``track(x1, y1, x2, y2)``: follow a target with the head and the base (SPEC D5, X3, issue 15).

The box must be one :func:`~loopact.robot.positioning.locate` (``visual_positioning``) handed
out: the box-selection step is the only source of coordinates, and the tracker starts on the
very frame those coordinates refer to. A :class:`~loopact.vision.track.ColorCheckedTracker`
(KCF plus a colour check) then follows the target at camera rate in its own task
(:class:`~loopact.robot.camera_loop.FrameWorker`), and :class:`TrackController` turns each box
into commands, all through the safety governor: the head keeps the target centred; the base
turns when the pan passes :data:`BASE_TURN_FROM_DEG` (hard near the pan limit), and drives to keep
``vision.track_distance_m`` from the target by depth, forward only while the head looks ahead
(the governor trusts the depth image for its obstacle stop only then). A lost target stops the
base and is reported; a stop or a preemption cancels it like every motion.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopact.errors import RobotError, SafetyError
from loopact.robot.camera_loop import FrameWorker
from loopact.robot.governor import MotionLease
from loopact.robot.interface import CameraFrame, Twist
from loopact.robot.motion import RobotEnv
from loopact.robot.perception import PerceptionOptions, show
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.overlay import draw_boxes
from loopact.vision.track import ColorCheckedTracker, TrackState, check_box

FRAME_PERIOD_S = 0.08
"""Robot-clock seconds between tracked frames (12.5 Hz)."""
CONTROL_PERIOD_S = 0.05
STALE_S = 0.5
LOST_GRACE_S = 1.0
BASE_TURN_FROM_DEG = 12.0
FORWARD_PAN_DEG = 6.0
HEAD_GAIN = 0.5
MAX_DURATION_S = 600.0
RENEW_MARGIN_S = 1.0
SHOW_EVERY_S = 2.0


@dataclass(frozen=True)
class TrackCommand:
    """Targets for one control step.

    Attributes:
        pan_deg: Head pan target, degrees, left positive.
        tilt_deg: Head tilt target, degrees, down positive.
        linear_mps: Base forward speed, m/s.
        angular_radps: Base yaw rate, rad/s, left positive.
    """

    pan_deg: float
    tilt_deg: float
    linear_mps: float
    angular_radps: float


@dataclass
class TrackController:
    """``box -> head targets + twist`` (pure; see the module docstring).

    Args:
        hfov_deg: Camera horizontal field of view, degrees.
        pan_limits_deg: Head pan limits ``(min, max)``.
        tilt_limits_deg: Head tilt limits ``(min, max)``, down positive.
        distance_m: Distance to keep from the target, metres.
        max_linear_mps: Largest forward/backward speed it asks for, m/s.
    """

    hfov_deg: float
    pan_limits_deg: tuple[float, float]
    tilt_limits_deg: tuple[float, float]
    distance_m: float = 1.2
    max_linear_mps: float = 0.3

    def step(
        self,
        box: tuple[float, float, float, float],
        width: int,
        height: int,
        pan_deg: float,
        tilt_deg: float,
        distance_m: float | None,
    ) -> TrackCommand:
        """Commands that bring the box's centre to the image centre and keep the distance."""
        f = (width / 2) / math.tan(math.radians(self.hfov_deg) / 2)
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        ex = -math.degrees(math.atan((cx - width / 2) / f))  # left positive
        ey = math.degrees(math.atan((cy - height / 2) / f))  # down positive
        pan = min(max(pan_deg + HEAD_GAIN * ex, self.pan_limits_deg[0]), self.pan_limits_deg[1])
        tilt = min(max(tilt_deg + HEAD_GAIN * ey, self.tilt_limits_deg[0]), self.tilt_limits_deg[1])
        look = pan_deg + ex  # where the target is relative to the base, degrees
        w = 0.0
        if abs(look) > BASE_TURN_FROM_DEG:
            w = math.radians(1.5 * (look - math.copysign(BASE_TURN_FROM_DEG, look)))
            near_limit = abs(pan) > 0.8 * max(abs(self.pan_limits_deg[0]), self.pan_limits_deg[1])
            if near_limit:
                w *= 2.0
        v = 0.0
        if distance_m is not None and math.isfinite(distance_m):
            v = min(max(0.6 * (distance_m - self.distance_m), -0.15), self.max_linear_mps)
            if v > 0 and abs(pan_deg) > FORWARD_PAN_DEG:
                v = 0.0  # forward only while the depth image looks ahead (governor, X3)
        return TrackCommand(pan, tilt, v, w)


def _distance(depth_m: Any, box: tuple[float, float, float, float]) -> float | None:
    """Median depth in the inner half of the box, metres (None without valid depth)."""
    h, w = depth_m.shape[:2]
    x1, y1, x2, y2 = box
    qx, qy = (x2 - x1) / 4, (y2 - y1) / 4
    patch = depth_m[
        int(max(0, y1 + qy)) : int(min(h, y2 - qy)), int(max(0, x1 + qx)) : int(min(w, x2 - qx))
    ]
    vals = patch[np.isfinite(patch) & (patch > 0)]
    return float(np.median(vals)) if vals.size else None


async def track_target(
    env: RobotEnv,
    opts: PerceptionOptions,
    box: tuple[float, float, float, float],
    duration_s: float,
    ctx: ToolContext | None = None,
) -> ToolResult:
    """Run the tracker (see the module docstring); never raises for robot problems."""
    if not (math.isfinite(duration_s) and 0 < duration_s <= MAX_DURATION_S):
        return ToolResult.failure(
            f"duration_s must be in (0, {MAX_DURATION_S:g}], got {duration_s}"
        )
    head = env.profile.head
    if not (env.robot.has_head and head.present):
        return ToolResult.failure("track needs a pan-tilt head; this robot has none")
    width, height = opts.frame_size() or (None, None)
    problem = check_box(box, width, height)
    if problem:  # say what is wrong with the box itself (negative size, outside the frame)
        return ToolResult.failure(f"{problem}; pass the bbox visual_positioning returned")
    first = opts.frame_of(box)
    if first is None:
        return ToolResult.failure(
            f"bbox {list(box)} is not a box visual_positioning returned: call "
            "visual_positioning(target) first and pass its bbox"
        )
    h, w = first.rgb.shape[:2]
    problem = check_box(box, w, h)
    if problem:
        return ToolResult.failure(problem)
    tracker = ColorCheckedTracker(first.rgb, box)
    ctrl = TrackController(
        env.robot.camera_hfov_deg,
        head.pan_limits_deg,
        head.tilt_limits_deg,
        opts.track_distance_m,
        min(0.3, env.profile.limits.max_linear_mps),
    )
    clock, gov = env.robot.clock, env.governor
    max_s = env.profile.limits.max_motion_duration_s
    start_head = await env.robot.get_head()
    try:
        forward = abs(math.degrees(start_head.pan_rad)) < FORWARD_PAN_DEG
        lease: MotionLease = await gov.begin_motion("track", min(duration_s, max_s), forward)
        head_lease = await gov.begin_head("track", duration_s + 5)
    except (SafetyError, RobotError) as exc:
        return ToolResult.failure(f"track could not start: {exc}")
    t0 = clock.now()
    end = t0 + duration_s
    stopped_by, detail = "duration", ""
    seen = {"frames": 0, "in_view": 0, "recentred": 0}
    last_ok = clock.now()
    state: TrackState | None = None
    last_frame: CameraFrame | None = None
    distance: float | None = None
    cmd = TrackCommand(math.degrees(start_head.pan_rad), math.degrees(start_head.tilt_rad), 0, 0)

    def process(frame: CameraFrame) -> TrackState:
        return tracker.update(frame.rgb)

    seen_seq = 0
    next_show = clock.now()
    showing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    showing.set_result(None)
    try:
        async with FrameWorker(env, process, FRAME_PERIOD_S) as frames:
            while True:
                now = clock.now()
                if now >= end:
                    break
                if now > lease.deadline_s - RENEW_MARGIN_S and lease.active:
                    await gov.end_motion(lease)
                    forward = abs(cmd.pan_deg) < FORWARD_PAN_DEG
                    lease = await gov.begin_motion("track", min(end - now, max_s), forward)
                frames.check()
                sample = frames.latest
                if sample is not None and sample.seq != seen_seq:
                    seen_seq = sample.seq
                    state, last_frame = sample.result, sample.frame
                    seen["frames"] += 1
                    if state.ok:
                        last_ok = now
                        seen["in_view"] += 1
                        seen["recentred"] += int(state.recentred)
                        if sample.seq % 3 == 1:
                            distance = _distance((await env.robot.get_depth()).depth_m, state.box)
                        hs = await env.robot.get_head()
                        cmd = ctrl.step(
                            state.box,
                            w,
                            h,
                            math.degrees(hs.pan_rad),
                            math.degrees(hs.tilt_rad),
                            distance,
                        )
                        if not forward and cmd.linear_mps > 0:
                            cmd = TrackCommand(cmd.pan_deg, cmd.tilt_deg, 0.0, cmd.angular_radps)
                        await gov.set_head(head_lease, cmd.pan_deg, cmd.tilt_deg)
                    else:
                        cmd = TrackCommand(cmd.pan_deg, cmd.tilt_deg, 0.0, 0.0)
                    if ctx is not None and now >= next_show and showing.done():
                        next_show = now + SHOW_EVERY_S  # drawn beside the control loop
                        showing = asyncio.ensure_future(
                            _show(env, ctx, sample.frame.rgb, state, "tracking")
                        )
                if now - last_ok > LOST_GRACE_S:
                    stopped_by = "lost"
                    detail = f"the target was out of sight for {now - last_ok:.1f} s"
                    break
                fresh = sample is not None and now - sample.frame.stamp_s <= STALE_S
                twist = Twist(cmd.linear_mps, cmd.angular_radps) if fresh else Twist()
                await gov.command(lease, twist)
                if not lease.active or not head_lease.active:
                    who = lease if not lease.active else head_lease
                    stopped_by, detail = who.stopped_by or "cancelled", who.detail
                    break
                await clock.sleep(CONTROL_PERIOD_S)
    except (SafetyError, RobotError) as exc:
        stopped_by, detail = "error", str(exc)
    finally:
        await gov.end_motion(lease)
        gov.end_head(head_lease)
        await asyncio.wait({showing})
    elapsed = clock.now() - t0
    frac = seen["in_view"] / seen["frames"] if seen["frames"] else 0.0
    data: dict[str, Any] = {
        "duration_s": round(elapsed, 1),
        "frames": seen["frames"],
        "in_view_pct": round(100 * frac, 1),
        "last_bbox": None if state is None else [round(v) for v in state.box],
        "distance_m": None if distance is None else round(distance, 2),
        "stopped_by": stopped_by,
    }
    data["result"] = (
        f"tracked the target for {elapsed:.0f} s ({data['in_view_pct']:.0f} % of frames in view); "
        f"stopped by {stopped_by}" + (f" ({detail})" if detail else "")
    )
    meta = {
        "recentred": seen["recentred"],
        "camera_hz": round(seen["frames"] / max(elapsed, 1e-3), 1),
    }
    if ctx is not None and state is not None and last_frame is not None:
        await _show(env, ctx, last_frame.rgb, state, f"stopped: {stopped_by}")
    if stopped_by == "duration":
        return ToolResult(ok=True, data=data, metadata=meta)
    return ToolResult(ok=False, data=data, metadata=meta, error=data["result"])


async def _show(env: RobotEnv, ctx: ToolContext, rgb: Any, state: TrackState, what: str) -> None:
    caption = f"track: {what}, {'on target' if state.ok else 'lost'} (score {state.score:.2f})"
    chosen = [round(v) for v in state.box] if state.ok else None
    overlay = await asyncio.to_thread(draw_boxes, rgb, [], chosen, caption)
    await show(env, ctx, overlay, caption)


def make_track_tools(env: RobotEnv, opts: PerceptionOptions) -> list[Tool]:
    """``track`` bound to ``env`` (SPEC D5)."""

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=MAX_DURATION_S + 60,
        examples=[
            ("follow the ball with the camera", {"x1": 300, "y1": 140, "x2": 340, "y2": 180})
        ],
    )
    async def track(
        ctx: ToolContext, x1: float, y1: float, x2: float, y2: float, duration_s: float = 60.0
    ) -> ToolResult:
        """Follow an object with camera and base; pass the bbox from visual_positioning. 跟踪目标。

        Args:
            x1: Left edge of the box, pixels.
            y1: Top edge of the box, pixels.
            x2: Right edge of the box, pixels.
            y2: Bottom edge of the box, pixels.
            duration_s: How long to track, seconds.
        """
        return await track_target(env, opts, (x1, y1, x2, y2), duration_s, ctx)

    return [track]
