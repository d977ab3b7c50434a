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

from loopact.errors import RobotError, SafetyError
from loopact.robot.camera_loop import FrameWorker
from loopact.robot.governor import MotionLease
from loopact.robot.interface import CameraFrame, Twist
from loopact.robot.line_follower import Command, LineFollower
from loopact.robot.motion import RobotEnv
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
RENEW_MARGIN_S = 1.0


def _caption(view: LineView, state: str, laps: int) -> str:
    where = "not in the band" if view.offset_m is None else f"offset {view.offset_m:+.2f} m"
    return f"follow_line: {state}, line {where}, laps {laps}"


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
    if key not in opts.colors.ranges:
        return ToolResult.failure(
            f"no HSV range for colour {color!r} (vision.colors); known: "
            f"{', '.join(opts.colors.names)}"
        )
    if not (math.isfinite(duration_s) and 0 < duration_s <= MAX_DURATION_S):
        return ToolResult.failure(
            f"duration_s must be in (0, {MAX_DURATION_S:g}], got {duration_s}"
        )
    if laps < 0:
        return ToolResult.failure(f"laps must be >= 0 (0: no limit), got {laps}")
    clock = env.robot.clock
    gov = env.governor
    max_s = env.profile.limits.max_motion_duration_s
    cam_cfg = env.profile.camera
    follower = LineFollower(speed_mps=min(opts.line_speed_mps, env.profile.limits.max_linear_mps))
    stopped_by = "duration"
    detail = ""
    on_line_s = 0.0
    try:
        tilt = await _aim_head(env)
        t0 = clock.now()
        end = t0 + duration_s
        lease: MotionLease = await gov.begin_motion("follow_line", min(duration_s, max_s), True)
    except (SafetyError, RobotError) as exc:
        return ToolResult.failure(f"follow_line could not start: {exc}")
    cam = Camera(cam_cfg.hfov_deg, cam_cfg.mount_height_m, cam_cfg.mount_forward_m, tilt)
    last_seen = clock.now()
    next_show = clock.now()
    next_report = clock.now() + 1.0
    view: LineView | None = None
    last_state, last_t = "", clock.now()
    cmd = Command(0.0, 0.0, "acquire", False)
    seen_seq = 0
    showing: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    showing.set_result(None)

    def process(frame: CameraFrame) -> LineView:
        return find_line(frame.rgb, cam, key, opts.colors)

    try:
        async with FrameWorker(env, process, FRAME_PERIOD_S) as frames:
            while True:
                now = clock.now()
                if now >= end:
                    break
                if now > lease.deadline_s - RENEW_MARGIN_S and lease.active:
                    await gov.end_motion(lease)
                    lease = await gov.begin_motion("follow_line", min(end - now, max_s), True)
                frames.check()
                sample = frames.latest
                if sample is not None and sample.seq != seen_seq:
                    seen_seq = sample.seq
                    view = sample.result
                    cmd = follower.step(view, sample.pose, sample.frame.stamp_s)
                    if view.points > 0 or cmd.state in ("approach", "pivot"):
                        last_seen = now  # the line is under the robot there, out of view
                    if last_state in ("follow", "approach", "pivot"):
                        on_line_s += now - last_t  # since the last frame: on the line
                    last_state, last_t = cmd.state, now
                    if ctx is not None and now >= next_show and showing.done():
                        next_show = now + SHOW_EVERY_S  # drawn beside the control loop
                        showing = asyncio.ensure_future(
                            _show(
                                env,
                                ctx,
                                sample.frame.rgb,
                                view,
                                key,
                                opts,
                                cmd.state,
                                follower.laps,
                            )
                        )
                if now - last_seen > opts.line_lost_grace_s:
                    stopped_by = "line_lost"
                    detail = f"no {key} line in view for {now - last_seen:.1f} s"
                    break
                if laps and follower.laps >= laps:
                    stopped_by = "laps"
                    break
                fresh = sample is not None and now - sample.frame.stamp_s <= STALE_S
                twist = Twist(cmd.linear_mps, cmd.angular_radps) if fresh else Twist()
                await gov.command(lease, twist)
                if not lease.active:
                    stopped_by, detail = lease.stopped_by or "cancelled", lease.detail
                    break
                if ctx is not None and now >= next_report:
                    next_report += 1.0
                    ctx.progress(
                        f"follow_line: {cmd.state}, {follower.path_m:.1f} m, laps {follower.laps}"
                    )
                await clock.sleep(CONTROL_PERIOD_S)
            n_frames = frames.frames
    except (SafetyError, RobotError) as exc:
        stopped_by, detail = "error", str(exc)
        n_frames = 0
    finally:
        await gov.end_motion(lease)
        await asyncio.wait({showing})
    elapsed = clock.now() - t0
    data: dict[str, Any] = {
        "distance_m": round(follower.path_m, 2),
        "laps": follower.laps,
        "time_on_line_s": round(min(on_line_s, elapsed), 1),
        "duration_s": round(elapsed, 1),
        "stopped_by": stopped_by,
    }
    data["result"] = (
        f"followed the {key} line for {elapsed:.0f} s: {follower.path_m:.1f} m, "
        f"{follower.laps} laps, on the line {data['time_on_line_s']:.0f} s; stopped by {stopped_by}"
        + (f" ({detail})" if detail else "")
    )
    meta = {"frames": n_frames, "state": follower.state}
    if view is not None and ctx is not None:
        try:
            last = await fresh_frame(env)
            await _show(
                env, ctx, last.rgb, view, key, opts, f"stopped: {stopped_by}", follower.laps
            )
        except RobotError:
            pass
    if stopped_by in ("duration", "laps"):
        return ToolResult(ok=True, data=data, metadata=meta)
    return ToolResult(ok=False, data=data, metadata=meta, error=data["result"])


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
        examples=[("follow the purple line", {"color": "purple"})],
    )
    async def follow_line(
        ctx: ToolContext, color: str = "purple", duration_s: float = 120.0, laps: int = 0
    ) -> ToolResult:
        """Drive along the coloured line on the floor with the camera. 沿着地上的线走。

        Stops when the line is lost, at the end of duration_s, or after laps laps.

        Args:
            color: Colour of the line, e.g. "purple".
            duration_s: Longest time to follow, seconds.
            laps: Stop after this many laps of a closed line (0: no limit).
        """
        return await follow(env, opts, color, duration_s, laps, ctx)

    return [follow_line]
