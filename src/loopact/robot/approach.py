"""``approach(target, stop_at_m)`` and ``face(target)``: go up to / turn to a named object
(SPEC D5, H4; issues 15 and 20).

Both find the object as ``visual_positioning`` does offline (colour, shape and place words in
English or Chinese; :mod:`loopact.robot.sighting`), looking around when it is not in view (the
head to each side first, then turning in place: :func:`~loopact.robot.sighting.search`, issue
45), and fail naming the target and what they saw when it is nowhere. The camera's pan is
centred first, and again once the object is found, so the base's heading is the camera's.

``face`` turns in place until the object's bearing is within :data:`FACE_TOL_DEG`, looking again
after every turn. ``approach`` faces it coarsely, then drives one governor motion towards it:
a camera task re-sights the object about 5 times a second (keeping to the same object: another
blob of that colour elsewhere is not taken for it) and places it on the floor; the 20 Hz control
loop steers at that point by odometry, slows down on the way in, and stops when the gap from the
robot's footprint to the object's visible surface (:attr:`Sighting.gap_m`) is within
``stop_at_m``. The governor's speed limits, obstacle stop, geofence, watchdog and emergency stop
hold throughout; a stop or a preemption cancels it like every motion, with the base zeroed.
``stop_at_m`` is raised to ``limits.obstacle_stop_m`` + :data:`STOP_MARGIN_M` (the governor
keeps that much room to anything ahead). Bounded by :data:`MAX_TRAVEL_M` of driving and
:data:`MAX_DURATION_S` of robot time.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase
from loopact.robot.interface import Pose, Twist
from loopact.robot.lease import MotionLease, cause_phrase, due_for_renewal, lease_span
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import said_by, why_of
from loopact.robot.perception import PerceptionOptions, show
from loopact.robot.sighting import Search, Sighting, query_problem, search, sight, turn
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.overlay import draw_boxes
from loopact.vision.scene import TargetQuery, parse_target, thing

FACE_TOL_DEG = 3.0
"""``face`` ends with the object's bearing within this, degrees."""
DRIVE_TOL_DEG = 8.0
"""``approach`` turns in place before driving until the bearing is within this, degrees."""
FACE_TRIES = 5
"""Turn-and-look rounds before ``face`` gives up."""
STOP_MARGIN_M = 0.05
"""``stop_at_m`` is at least ``limits.obstacle_stop_m`` plus this, metres."""
MAX_TRAVEL_M = 8.0
"""Longest drive of one ``approach``, metres."""
MAX_DURATION_S = 120.0
"""Longest ``approach``, robot-clock seconds."""
SPEED_MPS = 0.4
"""Top speed on the way in, m/s (clamped to the profile's limit)."""
MIN_SPEED_MPS = 0.05
K_GAP = 1.2  # 1/s: speed = K * (gap - stop_at_m)
K_HEADING = 2.0  # 1/s: yaw rate = K * bearing
DRIVE_MAX_BEARING_DEG = 20.0
"""Past this bearing the base turns without driving forward, degrees."""
FRAME_PERIOD_S = 0.2
CONTROL_PERIOD_S = 0.05
LOST_GRACE_S = 2.0
"""The drive stops when the object has not been re-sighted this long, robot-clock seconds."""
RENEW_MARGIN_S = 1.0
PROGRESS_EVERY_S = 1.0


def _data(
    s: Sighting, target: str, env: RobotEnv, pose: Pose, travelled_m: float
) -> dict[str, Any]:
    gap = s.gap_from(pose, env.profile.footprint_radius_m)
    return {
        "found": True,
        "target": target,
        "seen_as": s.name,
        "distance_m": None if gap is None else round(gap, 2),
        "bearing_deg": round(s.bearing_from(pose), 1),
        "camera_distance_m": (
            None if s.detection.distance_m is None else round(s.detection.distance_m, 2)
        ),
        "bbox": list(s.detection.bbox),
        "travelled_m": round(travelled_m, 2),
    }


def _not_found(target: str, found: Search) -> ToolResult:
    if found.stopped is not None:
        return found.stopped
    if found.seen:
        said = Phrase(
            "approach.not_found", target=target, reason=found.reason, seen=tuple(found.seen)
        )
    else:
        said = Phrase("approach.not_found_nothing", target=target, reason=found.reason)
    seen = [s.text("en") for s in found.seen]
    return ToolResult.failure(said, data={"found": False, "target": target, "seen": seen})


async def _show(env: RobotEnv, ctx: ToolContext | None, s: Sighting, caption: str) -> None:
    overlay = await asyncio.to_thread(
        draw_boxes, s.frame.rgb, [s.detection], list(s.detection.bbox), caption
    )
    await show(env, ctx, overlay, caption)


async def _centre_head(env: RobotEnv, name: str) -> None:
    """Pan 0 and the home tilt, so that the base's heading is the camera's (no-op headless)."""
    if not (env.robot.has_head and env.profile.head.present):
        return
    head = await env.robot.get_head()
    tilt = env.profile.head.home_tilt_deg
    if abs(math.degrees(head.pan_rad)) < 0.5 and abs(math.degrees(head.tilt_rad) - tilt) < 0.5:
        return
    lease = await env.governor.begin_head(name, 5.0)
    try:
        await env.governor.set_head(lease, 0.0, tilt)
        await env.governor.wait_head(lease, 0.0, tilt, timeout_s=3.0)
    finally:
        env.governor.end_head(lease)


async def _start(
    env: RobotEnv, opts: PerceptionOptions, target: str, name: str, ctx: ToolContext | None
) -> tuple[TargetQuery, Search | None, ToolResult | None]:
    """Check the target, centre the head, search: ``(query, search, None)`` or a failure."""
    if not target.strip():
        return parse_target(target), None, ToolResult.failure(Phrase("approach.empty"))
    query = parse_target(target.strip(), opts.colors.names)
    problem = query_problem(query, opts)
    if problem is not None:
        return query, None, ToolResult.failure(problem)
    await _centre_head(env, name)
    found = await search(env, opts, query, name, progress=ctx.progress if ctx else None)
    if found.sighting is None:
        return query, None, _not_found(target.strip(), found)
    return query, found, None


async def turn_to(
    env: RobotEnv,
    opts: PerceptionOptions,
    query: TargetQuery,
    s: Sighting,
    name: str,
    tol_deg: float,
) -> tuple[Sighting, ToolResult | None]:
    """Turn in place until the sighting's bearing is within ``tol_deg``, looking again after
    each turn; returns the last sighting and, when it could not, the failure."""
    for _ in range(FACE_TRIES):
        if abs(s.bearing_deg) <= tol_deg:
            return s, None
        res = await turn(env, name, s.bearing_deg)
        if not res.ok:
            return s, res
        again, _dets, reason = await sight(env, opts, query, near=s)
        if again is None:
            lost = Phrase("approach.lost_sight", name=thing(s.detection), reason=reason)
            return s, ToolResult.failure(lost, data={"found": False, "target": s.name})
        s = again
    if abs(s.bearing_deg) <= tol_deg:
        return s, None
    off = Phrase(
        "approach.still_off", name=thing(s.detection), bearing_deg=s.bearing_deg, tries=FACE_TRIES
    )
    return s, ToolResult.failure(off, data=_data(s, query.text, env, s.pose, 0.0))


async def face_target(
    env: RobotEnv, opts: PerceptionOptions, target: str, ctx: ToolContext | None = None
) -> ToolResult:
    """``face`` (see the module docstring); never raises for robot problems."""
    try:
        query, found, failure = await _start(env, opts, target, "face", ctx)
        if failure is not None or found is None or found.sighting is None:
            return failure or ToolResult.failure("not found")
        s, failure = await turn_to(env, opts, query, found.sighting, "face", FACE_TOL_DEG)
        if failure is not None:
            return failure
    except RobotError as exc:
        return ToolResult.failure(said_by(exc))
    data = _data(s, query.text, env, s.pose, 0.0)
    if data["distance_m"] is None:
        said = Phrase("face.facing", target=query.text, bearing_deg=data["bearing_deg"])
    else:
        said = Phrase(
            "face.facing_at",
            target=query.text,
            bearing_deg=data["bearing_deg"],
            distance_m=data["distance_m"],
        )
    await _show(env, ctx, s, f"face: {s.name} {data['bearing_deg']:+.1f} deg")
    return ToolResult.said(said, data, confidence=s.confidence)


async def approach_target(
    env: RobotEnv,
    opts: PerceptionOptions,
    target: str,
    stop_at_m: float,
    ctx: ToolContext | None = None,
) -> ToolResult:
    """``approach`` (see the module docstring); never raises for robot problems."""
    if not (math.isfinite(stop_at_m) and 0 < stop_at_m <= MAX_TRAVEL_M):
        return ToolResult.failure(
            Phrase("approach.stop_at_range", max_m=MAX_TRAVEL_M, stop_at_m=stop_at_m)
        )
    meta: dict[str, Any] = {}
    floor_m = env.profile.limits.obstacle_stop_m + STOP_MARGIN_M
    if stop_at_m < floor_m:
        meta["clamped"] = {"stop_at_m": {"requested": stop_at_m, "applied": floor_m}}
        stop_at_m = floor_m
    try:
        query, found, failure = await _start(env, opts, target, "approach", ctx)
        if failure is not None or found is None or found.sighting is None:
            return failure or ToolResult.failure("not found")
        s = found.sighting
        if s.gap_m is None:
            return ToolResult.failure(Phrase("approach.no_depth", name=thing(s.detection)))
        if s.gap_m > stop_at_m:
            s, failure = await turn_to(env, opts, query, s, "approach", DRIVE_TOL_DEG)
            if failure is not None:
                return failure
        run = _Drive(env, opts, query, s, stop_at_m, ctx)
        if s.gap_m is not None and s.gap_m > stop_at_m:
            await run.drive()
        return await run.outcome(meta)
    except RobotError as exc:
        return ToolResult.failure(said_by(exc), **meta)


class _Drive:
    """The drive of one ``approach``: a camera task re-sighting the object beside a 20 Hz
    control loop that steers at it through one governor motion (renewed at its deadline)."""

    def __init__(
        self,
        env: RobotEnv,
        opts: PerceptionOptions,
        query: TargetQuery,
        s: Sighting,
        stop_at_m: float,
        ctx: ToolContext | None,
    ) -> None:
        self.env, self.opts, self.query, self.ctx = env, opts, query, ctx
        self.s, self.stop_at_m = s, stop_at_m
        self.cause: StopCause = StopCause.TARGET
        self.why: Phrase | None = None
        self.travelled = 0.0
        self.seen_s = env.robot.clock.now()
        self.sightings = 0
        self.error: RobotError | None = None
        self.lease = MotionLease("approach", 0.0, 0.0)  # replaced by the governor's in drive()

    async def watch(self) -> None:
        """Re-sight the object every :data:`FRAME_PERIOD_S` until cancelled."""
        clock = self.env.robot.clock
        try:
            while True:
                due = clock.now() + FRAME_PERIOD_S
                again, _dets, _reason = await sight(self.env, self.opts, self.query, near=self.s)
                if again is not None and again.point is not None:
                    self.s, self.seen_s = again, again.pose.stamp_s
                    self.sightings += 1
                await clock.sleep(max(0.0, due - clock.now()))
        except RobotError as exc:
            self.error = exc
        except Exception as exc:  # a frame perception cannot read: stop the drive, say why
            self.error = RobotError(f"perception failed ({type(exc).__name__}: {exc})")

    async def drive(self) -> None:
        """Drive until the gap is within ``stop_at_m``, a bound, a lost object or a stop."""
        env, gov = self.env, self.env.governor
        max_s = env.profile.limits.max_motion_duration_s
        end = env.robot.clock.now() + MAX_DURATION_S
        self.lease = await gov.begin_motion("approach", lease_span(MAX_DURATION_S, max_s), True)
        watcher = asyncio.ensure_future(self.watch())
        try:
            await self._control(end)
        finally:
            watcher.cancel()
            await asyncio.wait({watcher})
            await gov.end_motion(self.lease)

    async def _control(self, end: float) -> None:
        env, gov, clock = self.env, self.env.governor, self.env.robot.clock
        max_s = env.profile.limits.max_motion_duration_s
        v_max = min(SPEED_MPS, env.profile.limits.max_linear_mps)
        w_max = math.radians(env.profile.limits.max_angular_dps)
        last = await env.pose()
        next_report = clock.now() + PROGRESS_EVERY_S
        while True:
            now = clock.now()
            pose = await env.pose()
            self.travelled += math.hypot(pose.x_m - last.x_m, pose.y_m - last.y_m)
            last = pose
            gap = self.s.gap_from(pose, env.profile.footprint_radius_m) or 0.0
            bearing = self.s.bearing_from(pose)
            stop = self._bound(now, end, gap)
            if stop:
                self.cause, self.why = stop
                return
            if due_for_renewal(self.lease, now, end, RENEW_MARGIN_S):
                await gov.end_motion(self.lease)
                span = lease_span(end - now, max_s)
                self.lease = await gov.begin_motion("approach", span, True)
            v = min(v_max, max(MIN_SPEED_MPS, K_GAP * (gap - self.stop_at_m)))
            if abs(bearing) > DRIVE_MAX_BEARING_DEG:
                v = 0.0
            w = max(-w_max, min(w_max, K_HEADING * math.radians(bearing)))
            await gov.command(self.lease, Twist(v, w))
            if not self.lease.active:
                self.cause = self.lease.cause or StopCause.REPLACED
                self.why = self.lease.why
                return
            if self.ctx is not None and now >= next_report:
                next_report += PROGRESS_EVERY_S
                self.ctx.progress(
                    f"approach: the {self.s.name} is {gap:.2f} m ahead, {bearing:+.0f} deg; "
                    f"driven {self.travelled:.2f} m"
                )
            await clock.sleep(CONTROL_PERIOD_S)

    def _bound(self, now: float, end: float, gap: float) -> tuple[StopCause, Phrase | None] | None:
        """Why the drive ends now (cause, what to say about it), or None."""
        if self.error is not None:
            return StopCause.ERROR, why_of(self.error)
        if gap <= self.stop_at_m:
            return StopCause.TARGET, None
        if now - self.seen_s > LOST_GRACE_S:
            lost_s = now - self.seen_s
            return StopCause.LOST, Phrase(
                "approach.lost", name=thing(self.s.detection), lost_s=lost_s
            )
        if self.travelled >= MAX_TRAVEL_M:
            return StopCause.MAX_DISTANCE, Phrase("approach.max_distance", max_m=MAX_TRAVEL_M)
        if now >= end:
            return StopCause.TIMEOUT, Phrase("approach.timeout", max_s=MAX_DURATION_S)
        return None

    async def outcome(self, meta: dict[str, Any]) -> ToolResult:
        """The result from a last look with the base stopped: distance, bearing, travelled."""
        final, _dets, _reason = await sight(self.env, self.opts, self.query, near=self.s)
        s = final if final is not None and final.point is not None else self.s
        pose = await self.env.pose()
        data = _data(s, self.query.text, self.env, pose, self.travelled)
        gap = data["distance_m"]
        stopped_by = self.cause.stopped_by
        data["stopped_by"] = stopped_by
        meta = {**meta, "sightings": self.sightings, "stop_at_m": self.stop_at_m}
        meta["cause"] = self.cause.value
        within = gap is not None and gap <= self.stop_at_m + STOP_MARGIN_M
        await _show(self.env, self.ctx, s, f"approach: {s.name} {gap} m, {stopped_by}")
        travelled = self.travelled
        if within and self.cause in (StopCause.TARGET, StopCause.OBSTACLE):
            said = Phrase(
                "approach.near",
                gap_m=gap,
                target=self.query.text,
                bearing_deg=data["bearing_deg"],
                travelled_m=travelled,
            )
            return ToolResult.said(said, data, **meta)
        short = Phrase(
            "approach.short" if self.why is None else "approach.short_why",
            cause=cause_phrase(self.cause),
            why=self.why,
            target=self.query.text,
            gap_m=gap,
            stop_at_m=self.stop_at_m,
            travelled_m=travelled,
        )
        return ToolResult(ok=False, data=data, metadata=meta, outcome=short)


def make_approach_tools(env: RobotEnv, opts: PerceptionOptions) -> list[Tool]:
    """``approach`` and ``face`` bound to ``env`` (SPEC D5, issue 15)."""

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=MAX_DURATION_S + 90,
        examples=[
            (
                "drive up to the yellow ball and stop one meter from it",
                {"target": "yellow ball", "stop_at_m": 1.0},
            ),
            ("走到蓝色的球旁边", {"target": "blue ball"}),
        ],
    )
    async def approach(ctx: ToolContext, target: str, stop_at_m: float = 0.5) -> ToolResult:
        """Find an object with the camera, drive up to it and stop close to it. 开到物体跟前。

        Looks around for it when it is not in view (the head first, then turning in place),
        so one call does "go to / drive up to / approach the <colour or shape>" wherever the
        object is, also one an earlier call found ("find the blue ball and go to it"); stops
        for obstacles. For a named place use navigation.

        Args:
            target: What to go to, e.g. "the red box", "蓝色的球".
            stop_at_m: Stop when the robot's front is this close to the object, metres.
        """
        return await approach_target(env, opts, target, stop_at_m, ctx)

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=90,
        examples=[
            ("turn towards the red box", {"target": "red box"}),
            ("转向蓝色的球", {"target": "blue ball"}),
        ],
    )
    async def face(ctx: ToolContext, target: str) -> ToolResult:
        """Turn in place until an object seen by the camera is straight ahead. 转向物体。

        Looks around for it when it is not in view (the head first, then turning in place),
        so one call does "find / face / turn to the <colour or shape>": it ends facing it, or
        fails naming what it saw instead.

        Args:
            target: What to face, e.g. "the green cylinder", "黄色的箱子".
        """
        return await face_target(env, opts, target, ctx)

    return [approach, face]
