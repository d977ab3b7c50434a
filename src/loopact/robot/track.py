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

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase
from loopact.robot.camera_loop import FrameWorker, Sample
from loopact.robot.interface import CameraFrame, Twist
from loopact.robot.lease import MotionLease, cause_phrase, due_for_renewal, lease_span
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import why_of
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


def _first_frame(
    env: RobotEnv,
    opts: PerceptionOptions,
    box: tuple[float, float, float, float],
    duration_s: float,
) -> tuple[CameraFrame | None, str | Phrase]:
    """The frame ``box`` was handed out on, or None and why the request cannot start: the
    duration, the head, the box itself, and whether visual_positioning returned it (G2)."""
    if not (math.isfinite(duration_s) and 0 < duration_s <= MAX_DURATION_S):
        return None, Phrase(
            "perception.duration_range", max_s=MAX_DURATION_S, duration_s=duration_s
        )
    if not (env.robot.has_head and env.profile.head.present):
        return None, Phrase("track.no_head")
    width, height = opts.frame_size() or (None, None)
    problem = check_box(box, width, height)
    if problem:  # say what is wrong with the box itself (negative size, outside the frame)
        return None, Phrase("track.bad_box", problem=problem)
    first = opts.frame_of(box)
    if first is None:
        return None, Phrase("track.not_handed_out", bbox=str(list(box)))
    h, w = first.rgb.shape[:2]
    problem = check_box(box, w, h)
    return (None, problem) if problem else (first, "")


async def track_target(
    env: RobotEnv,
    opts: PerceptionOptions,
    box: tuple[float, float, float, float],
    duration_s: float,
    ctx: ToolContext | None = None,
) -> ToolResult:
    """Run the tracker (see the module docstring); never raises for robot problems."""
    first, problem = _first_frame(env, opts, box, duration_s)
    if first is None:
        return ToolResult.failure(problem)
    head = env.profile.head
    tracker = ColorCheckedTracker(first.rgb, box)
    ctrl = TrackController(
        env.robot.camera_hfov_deg,
        head.pan_limits_deg,
        head.tilt_limits_deg,
        opts.track_distance_m,
        min(0.3, env.profile.limits.max_linear_mps),
    )
    gov = env.governor
    start_head = await env.robot.get_head()
    cmd = TrackCommand(math.degrees(start_head.pan_rad), math.degrees(start_head.tilt_rad), 0, 0)
    try:
        forward = abs(cmd.pan_deg) < FORWARD_PAN_DEG
        max_s = env.profile.limits.max_motion_duration_s
        lease: MotionLease = await gov.begin_motion("track", lease_span(duration_s, max_s), forward)
        head_lease = await gov.begin_head("track", duration_s + 5)
    except RobotError as exc:
        return ToolResult.failure(Phrase("track.cannot_start", why=why_of(exc)))
    h, w = first.rgb.shape[:2]
    run = _TrackRun(env, ctx, ctrl, (w, h), lease, head_lease, forward, cmd, duration_s)

    def process(frame: CameraFrame) -> TrackState:
        return tracker.update(frame.rgb)

    try:
        async with FrameWorker(env, process, FRAME_PERIOD_S) as frames:
            await run.control(frames)
    except RobotError as exc:
        run.cause, run.why = StopCause.ERROR, why_of(exc)
    finally:
        await gov.end_motion(run.lease)
        gov.end_head(head_lease)
        await asyncio.wait({run.showing})
    return await run.outcome()


class _TrackRun:
    """One ``track`` call from its leases to its result: the control loop at 20 Hz beside the
    tracker's frames, what it saw, and why it stopped."""

    def __init__(
        self,
        env: RobotEnv,
        ctx: ToolContext | None,
        ctrl: TrackController,
        size: tuple[int, int],
        lease: MotionLease,
        head_lease: MotionLease,
        forward: bool,
        cmd: TrackCommand,
        duration_s: float,
    ) -> None:
        self.env, self.ctx, self.ctrl, self.size = env, ctx, ctrl, size
        self.lease, self.head_lease, self.forward, self.cmd = lease, head_lease, forward, cmd
        clock = env.robot.clock
        self.t0 = clock.now()
        self.end = self.t0 + duration_s
        self.cause: StopCause = StopCause.DURATION
        self.why: Phrase | None = None
        self.seen = {"frames": 0, "in_view": 0, "recentred": 0}
        self.last_ok = clock.now()
        self.state: TrackState | None = None
        self.last_frame: CameraFrame | None = None
        self.distance: float | None = None
        self.seen_seq = 0
        self.next_show = clock.now()
        self.showing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.showing.set_result(None)

    async def control(self, frames: FrameWorker[TrackState]) -> None:
        """Command the base and the head until the end, a lost target or a stop (X3)."""
        clock, gov = self.env.robot.clock, self.env.governor
        max_s = self.env.profile.limits.max_motion_duration_s
        while True:
            now = clock.now()
            if now >= self.end:
                break
            if due_for_renewal(self.lease, now, self.end, RENEW_MARGIN_S):
                await gov.end_motion(self.lease)
                self.forward = abs(self.cmd.pan_deg) < FORWARD_PAN_DEG
                self.lease = await gov.begin_motion(
                    "track", lease_span(self.end - now, max_s), self.forward
                )
            frames.check()
            sample = frames.latest
            if sample is not None and sample.seq != self.seen_seq:
                await self._on_frame(sample, now)
            if now - self.last_ok > LOST_GRACE_S:
                self.cause = StopCause.LOST
                self.why = Phrase("track.lost", lost_s=now - self.last_ok)
                break
            fresh = sample is not None and now - sample.frame.stamp_s <= STALE_S
            cmd = self.cmd
            await gov.command(
                self.lease, Twist(cmd.linear_mps, cmd.angular_radps) if fresh else Twist()
            )
            if not self.lease.active or not self.head_lease.active:
                who = self.lease if not self.lease.active else self.head_lease
                self.cause, self.why = who.cause or StopCause.REPLACED, who.why
                break
            await clock.sleep(CONTROL_PERIOD_S)

    async def _on_frame(self, sample: Sample[TrackState], now: float) -> None:
        """A newly tracked frame: count it, aim the head, plan the base, show it now and then."""
        self.seen_seq = sample.seq
        state, self.last_frame = sample.result, sample.frame
        self.state = state
        self.seen["frames"] += 1
        cmd = self.cmd
        if state.ok:
            self.last_ok = now
            self.seen["in_view"] += 1
            self.seen["recentred"] += int(state.recentred)
            if sample.seq % 3 == 1:
                depth = (await self.env.robot.get_depth()).depth_m
                self.distance = _distance(depth, state.box)
            hs = await self.env.robot.get_head()
            w, h = self.size
            pan, tilt = math.degrees(hs.pan_rad), math.degrees(hs.tilt_rad)
            cmd = self.ctrl.step(state.box, w, h, pan, tilt, self.distance)
            if not self.forward and cmd.linear_mps > 0:
                cmd = TrackCommand(cmd.pan_deg, cmd.tilt_deg, 0.0, cmd.angular_radps)
            await self.env.governor.set_head(self.head_lease, cmd.pan_deg, cmd.tilt_deg)
        else:
            cmd = TrackCommand(cmd.pan_deg, cmd.tilt_deg, 0.0, 0.0)
        self.cmd = cmd
        if self.ctx is not None and now >= self.next_show and self.showing.done():
            self.next_show = now + SHOW_EVERY_S  # drawn beside the control loop
            self.showing = asyncio.ensure_future(
                _show(self.env, self.ctx, sample.frame.rgb, state, "tracking")
            )

    async def outcome(self) -> ToolResult:
        """The result: time, frames in view, last box and distance, why it stopped."""
        elapsed = self.env.robot.clock.now() - self.t0
        seen, state, stopped_by = self.seen, self.state, self.cause.stopped_by
        frac = seen["in_view"] / seen["frames"] if seen["frames"] else 0.0
        data: dict[str, Any] = {
            "duration_s": round(elapsed, 1),
            "frames": seen["frames"],
            "in_view_pct": round(100 * frac, 1),
            "last_bbox": None if state is None else [round(v) for v in state.box],
            "distance_m": None if self.distance is None else round(self.distance, 2),
            "stopped_by": stopped_by,
        }
        data["result"] = Phrase(
            "track.tracked" if self.why is None else "track.tracked_why",
            elapsed_s=elapsed,
            in_view_pct=data["in_view_pct"],
            cause=cause_phrase(self.cause),
            why=self.why,
        )
        meta = {
            "recentred": seen["recentred"],
            "camera_hz": round(seen["frames"] / max(elapsed, 1e-3), 1),
            "cause": self.cause.value,
        }
        if self.ctx is not None and state is not None and self.last_frame is not None:
            await _show(self.env, self.ctx, self.last_frame.rgb, state, f"stopped: {stopped_by}")
        return ToolResult(ok=self.cause is StopCause.DURATION, data=data, metadata=meta)


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
