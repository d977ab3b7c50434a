"""``follow_line(color, duration_s, laps)``: follow a coloured floor line (SPEC D5, issue 15).

Each camera frame (about 10 per second of robot time) goes through
:func:`loopact.vision.line.find_line` off the event loop, then through the
:class:`~loopact.robot.line_follower.LineFollower`, whose twist goes to the safety governor
(X3): the governor's speed clamps, obstacle stop, geofence, watchdog and emergency stop hold
throughout. A motion may last at most ``limits.max_motion_duration_s``; a longer follow runs as
successive motions, each started afresh by the governor (obstacle check included).

It stops when the line stays out of view longer than ``vision.line_lost_grace_s``, on a stop or
a preemption (cancellation zeroes the base first), at the end of ``duration_s`` or after
``laps`` laps. The result says the distance driven, the laps, the time on the line and why it
stopped; the frames it used are shown with the band and the centroid drawn (SPEC F6).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase, colour_name
from loopact.robot.camera_loop import FrameWorker, Sample
from loopact.robot.interface import CameraFrame, Twist
from loopact.robot.lease import MotionLease, cause_phrase, due_for_renewal, lease_span
from loopact.robot.line_follower import Command, LineFollower
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import why_of
from loopact.robot.perception import PerceptionOptions, fresh_frame, show
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.line import Camera, LineView, find_line, line_mask
from loopact.vision.overlay import draw_line

FRAME_PERIOD_S = 0.1
"""Robot-clock seconds between frames (10 Hz)."""
CONTROL_PERIOD_S = 0.05
"""Robot-clock seconds between commands to the governor (20 Hz)."""
STALE_S = 0.5
"""The base is held while the newest processed frame is older than this, seconds."""
LINE_TILT_DEG = 20.0
"""Head tilt while following: the floor from 0.3 m ahead is in view, the robot's body is not."""
SHOW_EVERY_S = 2.0
MAX_DURATION_S = 900.0
DEFAULT_DURATION_S = 120.0
"""The time limit of a follow with no ``duration_s`` and no ``laps``, robot-clock seconds."""
DEFAULT_LAP_S = 180.0
"""With ``laps`` and no ``duration_s``, the time limit is this per lap (capped at
:data:`MAX_DURATION_S`): the laps end the follow, the limit only bounds it. A fixed 120 s
stopped "沿着线跑三圈" (31 m at 0.25 m/s, 125 s) short of its third lap."""
RENEW_MARGIN_S = 1.0


def time_limit(duration_s: float, laps: int) -> float:
    """The follow's time limit in seconds: ``duration_s`` when given (> 0), else
    :data:`DEFAULT_LAP_S` per lap with ``laps``, else :data:`DEFAULT_DURATION_S`."""
    if duration_s != 0:
        return duration_s
    return min(MAX_DURATION_S, DEFAULT_LAP_S * laps) if laps > 0 else DEFAULT_DURATION_S


def laps_text(laps: int) -> str:
    """``laps`` counted in words for people: ``0 laps``, ``1 lap``, ``2 laps``."""
    return laps_phrase(laps).text("en")


def laps_phrase(laps: int) -> Phrase:
    """``laps`` counted as a phrase: ``1 lap`` / ``1 圈``, ``2 laps`` / ``2 圈``."""
    return Phrase("line.lap" if laps == 1 else "line.laps", n=laps)


def _caption(view: LineView, state: str, laps: int) -> str:
    where = "not in the band" if view.offset_m is None else f"offset {view.offset_m:+.2f} m"
    return f"follow_line: {state}, line {where}, {laps_text(laps)}"


async def _aim_head(env: RobotEnv) -> float:
    """Tilt the head to :data:`LINE_TILT_DEG` with pan 0; returns the tilt in degrees."""
    if not (env.robot.has_head and env.profile.head.present):
        return env.profile.head.home_tilt_deg
    lo, hi = env.profile.head.tilt_limits_deg
    tilt = min(max(LINE_TILT_DEG, lo), hi)
    lease = await env.governor.begin_head("follow_line", 5.0)
    try:
        await env.governor.set_head(lease, 0.0, tilt)
        await env.governor.wait_head(lease, 0.0, tilt, timeout_s=3.0)
    finally:
        env.governor.end_head(lease)
    return tilt


def _request_problem(
    opts: PerceptionOptions, color: str, duration_s: float, laps: int
) -> Phrase | None:
    """Why a follow_line request cannot start (None when it can): colour, duration, laps."""
    if color.strip().lower() not in opts.colors.ranges:
        return Phrase("line.no_colour", color=color, known=", ".join(opts.colors.names))
    if not (math.isfinite(duration_s) and 0 < duration_s <= MAX_DURATION_S):
        return Phrase("perception.duration_range", max_s=MAX_DURATION_S, duration_s=duration_s)
    if laps < 0:
        return Phrase("line.bad_laps", laps=laps)
    return None


async def follow(
    env: RobotEnv,
    opts: PerceptionOptions,
    color: str,
    duration_s: float,
    laps: int,
    ctx: ToolContext | None = None,
) -> ToolResult:
    """Run the line follower (see the module docstring); never raises for robot problems."""
    key = color.strip().lower()
    duration_s = time_limit(duration_s, laps)
    problem = _request_problem(opts, color, duration_s, laps)
    if problem is not None:
        return ToolResult.failure(problem)
    clock, gov = env.robot.clock, env.governor
    max_s = env.profile.limits.max_motion_duration_s
    follower = LineFollower(speed_mps=min(opts.line_speed_mps, env.profile.limits.max_linear_mps))
    try:
        tilt = await _aim_head(env)
        t0 = clock.now()
        lease: MotionLease = await gov.begin_motion(
            "follow_line", lease_span(duration_s, max_s), True
        )
    except RobotError as exc:
        return ToolResult.failure(Phrase("line.cannot_start", why=why_of(exc)))
    run = _LineRun(env, opts, ctx, key, follower, lease, t0, duration_s, laps)
    cam_cfg = env.profile.camera
    cam = Camera(cam_cfg.hfov_deg, cam_cfg.mount_height_m, cam_cfg.mount_forward_m, tilt)

    def process(frame: CameraFrame) -> LineView:
        return find_line(frame.rgb, cam, key, opts.colors)

    try:
        async with FrameWorker(env, process, FRAME_PERIOD_S) as frames:
            await run.control(frames)
            run.frames = frames.frames
    except RobotError as exc:
        run.cause, run.why = StopCause.ERROR, why_of(exc)
    finally:
        await gov.end_motion(run.lease)
        await asyncio.wait({run.showing})
    return await run.outcome()


class _LineRun:
    """One ``follow_line`` call from its lease to its result: the control loop at 20 Hz
    beside the line perception's frames, the time on the line, and why it stopped."""

    def __init__(
        self,
        env: RobotEnv,
        opts: PerceptionOptions,
        ctx: ToolContext | None,
        key: str,
        follower: LineFollower,
        lease: MotionLease,
        t0: float,
        duration_s: float,
        laps: int,
    ) -> None:
        self.env, self.opts, self.ctx, self.key = env, opts, ctx, key
        self.follower, self.lease, self.laps = follower, lease, laps
        self.t0, self.end = t0, t0 + duration_s
        self.cause: StopCause = StopCause.DURATION
        self.why: Phrase | None = None
        self.on_line_s = 0.0
        self.frames = 0
        now = env.robot.clock.now()
        self.last_seen, self.next_show, self.next_report = now, now, now + 1.0
        self.view: LineView | None = None
        self.last_state, self.last_t = "", now
        self.cmd = Command(0.0, 0.0, "acquire", False)
        self.seen_seq = 0
        self.showing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.showing.set_result(None)

    async def control(self, frames: FrameWorker[LineView]) -> None:
        """Command the base until the end, the laps, a lost line or a stop (X3)."""
        clock, gov, follower = self.env.robot.clock, self.env.governor, self.follower
        max_s = self.env.profile.limits.max_motion_duration_s
        while True:
            now = clock.now()
            if now >= self.end:
                break
            if due_for_renewal(self.lease, now, self.end, RENEW_MARGIN_S):
                await gov.end_motion(self.lease)
                span = lease_span(self.end - now, max_s)
                self.lease = await gov.begin_motion("follow_line", span, True)
            frames.check()
            sample = frames.latest
            if sample is not None and sample.seq != self.seen_seq:
                self._on_frame(sample, now)
            if now - self.last_seen > self.opts.line_lost_grace_s:
                self.cause = StopCause.LINE_LOST
                lost_s = now - self.last_seen
                self.why = Phrase("line.lost", color=colour_name(self.key), lost_s=lost_s)
                break
            if self.laps and follower.laps >= self.laps:
                self.cause = StopCause.LAPS
                break
            cmd = self.cmd
            fresh = sample is not None and now - sample.frame.stamp_s <= STALE_S
            await gov.command(
                self.lease, Twist(cmd.linear_mps, cmd.angular_radps) if fresh else Twist()
            )
            if not self.lease.active:
                self.cause = self.lease.cause or StopCause.REPLACED
                self.why = self.lease.why
                break
            if self.ctx is not None and now >= self.next_report:
                self.next_report += 1.0
                self.ctx.progress(
                    f"follow_line: {cmd.state}, {follower.path_m:.1f} m, {laps_text(follower.laps)}"
                )
            await clock.sleep(CONTROL_PERIOD_S)

    def _on_frame(self, sample: Sample[LineView], now: float) -> None:
        """A newly processed frame: the follower's next command, the time on the line, and
        now and then an overlay for people (drawn beside the control loop)."""
        self.seen_seq = sample.seq
        view = self.view = sample.result
        cmd = self.cmd = self.follower.step(view, sample.pose, sample.frame.stamp_s)
        if view.points > 0 or cmd.state in ("approach", "pivot"):
            self.last_seen = now  # the line is under the robot there, out of view
        if self.last_state in ("follow", "approach", "pivot"):
            self.on_line_s += now - self.last_t  # since the last frame: on the line
        self.last_state, self.last_t = cmd.state, now
        if self.ctx is not None and now >= self.next_show and self.showing.done():
            self.next_show = now + SHOW_EVERY_S
            self.showing = asyncio.ensure_future(
                _show(
                    self.env,
                    self.ctx,
                    sample.frame.rgb,
                    view,
                    self.key,
                    self.opts,
                    cmd.state,
                    self.follower.laps,
                )
            )

    async def outcome(self) -> ToolResult:
        """The result: distance, laps, time on the line, why it stopped; a last overlay."""
        follower, stopped_by = self.follower, self.cause.stopped_by
        elapsed = self.env.robot.clock.now() - self.t0
        data: dict[str, Any] = {
            "distance_m": round(follower.path_m, 2),
            "laps": follower.laps,
            "time_on_line_s": round(min(self.on_line_s, elapsed), 1),
            "duration_s": round(elapsed, 1),
            "stopped_by": stopped_by,
        }
        data["result"] = Phrase(
            "line.followed" if self.why is None else "line.followed_why",
            color=colour_name(self.key),
            elapsed_s=elapsed,
            distance_m=follower.path_m,
            laps=laps_phrase(follower.laps),
            on_line_s=data["time_on_line_s"],
            cause=cause_phrase(self.cause),
            why=self.why,
        )
        meta = {"frames": self.frames, "state": follower.state, "cause": self.cause.value}
        if self.view is not None and self.ctx is not None:
            try:
                last = await fresh_frame(self.env)
                await _show(
                    self.env,
                    self.ctx,
                    last.rgb,
                    self.view,
                    self.key,
                    self.opts,
                    f"stopped: {stopped_by}",
                    follower.laps,
                )
            except RobotError:
                pass
        ok = self.cause in (StopCause.DURATION, StopCause.LAPS)
        return ToolResult(ok=ok, data=data, metadata=meta)


async def _show(
    env: RobotEnv,
    ctx: ToolContext,
    rgb: Any,
    view: LineView,
    color: str,
    opts: PerceptionOptions,
    state: str,
    laps: int,
) -> None:
    y0, y1 = view.band_rows
    caption = _caption(view, state, laps)

    def draw() -> Any:
        import cv2
        import numpy as np

        mask = line_mask(rgb, color, opts.colors).astype(np.uint8)
        full = cv2.resize(mask, (rgb.shape[1], rgb.shape[0])) > 0
        return draw_line(rgb, (y0, y1), view.centroid_u, caption, full[y0:y1])

    await show(env, ctx, await asyncio.to_thread(draw), caption)


def make_follow_line_tools(env: RobotEnv, opts: PerceptionOptions) -> list[Tool]:
    """``follow_line`` bound to ``env`` (SPEC D5)."""

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=MAX_DURATION_S + 60,
        # laps first: "one lap" must become laps=1, not the open-ended default (issue 20)
        examples=[
            ("drive two laps along the purple line", {"color": "purple", "laps": 2}),
            ("沿着线跑三圈", {"laps": 3}),
            ("follow the purple line", {"color": "purple"}),
        ],
    )
    async def follow_line(
        ctx: ToolContext, color: str = "purple", duration_s: float = 0.0, laps: int = 0
    ) -> ToolResult:
        """Drive along the coloured line on the floor with the camera. 沿着地上的线走。

        Stops when the line is lost, at the end of duration_s, or after laps laps.

        Args:
            color: Colour of the line, e.g. "purple".
            duration_s: Longest time to follow, seconds (a time limit, not a lap count); 0:
                120 s, or 180 s per lap when laps is given.
            laps: Laps of the closed line to drive, then stop ("one lap" or "一圈": 1, "two
                laps": 2); 0 for no lap limit. With 0, duration_s or a lost line ends it.
        """
        return await follow(env, opts, color, duration_s, laps, ctx)

    return [follow_line]
