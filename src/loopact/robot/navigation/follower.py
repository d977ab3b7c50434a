"""The path follower: pure pursuit along a planned path, every command through the governor
(SPEC D3, X3; issue 40 item 3).

The path is followed in governed motions (:func:`loopact.robot.motion.run_motion`), each at
most the profile's ``max_motion_duration_s`` long: a long path is several motions, each
re-checked by the governor (obstacle stop, geofence, deadline, e-stop). When the way ahead
turns by more than :data:`ROTATE_FIRST_RAD` the robot first turns in place (a motion that
does not drive forward, so a wall close ahead does not refuse it). The follower returns when
the robot arrives, when the obstacle stop ends a motion (the caller marks what the depth
camera sees and replans), when the costmap changed under the path (``replan``), or when
anything else stopped it (a stop, an emergency stop, a new command, the geofence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopact.errors import MotionStopped, SafetyError, StopCause
from loopact.i18n import Phrase
from loopact.maps.plan import line_cells
from loopact.robot.interface import Pose, Twist, normalize_angle
from loopact.robot.lease import MotionLease
from loopact.robot.motion import (
    K_ANGULAR,
    MIN_ANGULAR_RADPS,
    Progress,
    RobotEnv,
    rotate,
    run_motion,
)
from loopact.robot.navigation.context import NavContext
from loopact.robot.navigation.goals import Goal
from loopact.robot.outcome import why_of

SPEED_MPS = 0.35
"""Cruise speed along the path, m/s (clamped to the profile's limit)."""
TURN_DPS = 60.0
"""Largest turn rate, degrees per second (clamped to the profile's limit)."""
LOOKAHEAD_M = 0.45
GOAL_TOL_M = 0.08
PASSED_TOL_M = 0.2
"""Within this of the goal with the goal behind the robot counts as arrived."""
ROTATE_FIRST_RAD = math.radians(50)
HEADING_TOL_RAD = math.radians(3)
CHECK_EVERY_S = 1.0
"""How often (robot clock) the follower checks that the costmap still lets the path through."""


@dataclass
class Followed:
    """How one follow ended.

    Attributes:
        outcome: ``arrived``, ``obstacle`` (the obstacle stop), ``replan`` (the path is cut
            on the costmap) or ``stopped`` (anything else; ``cause``, ``why`` say).
        travelled_m: Distance driven, metres.
        turned_deg: Heading change, degrees, left positive.
        pose: The last pose.
        cause: Why it ended, typed (the governor's verdict: ``OBSTACLE``, ``STOPPED``,
            ``EMERGENCY_STOP``, ``GEOFENCE``, ...; ``REFUSED`` for a refusal without a stop
            cause), or None on arrival or a replan.
        why: What the governor or the tool said about it, or None.
    """

    outcome: str
    travelled_m: float
    turned_deg: float
    pose: Pose
    cause: StopCause | None = None
    why: Phrase | None = None


class PathTracker:
    """Where the robot is along a polyline, and the pure-pursuit target ahead of it.

    Args:
        points: ``[(x_m, y_m), ...]`` the path, start first.
    """

    def __init__(self, points: tuple[tuple[float, float], ...] | list[tuple[float, float]]) -> None:
        self.points = list(points)
        self.seg = 0

    def update(self, x: float, y: float) -> None:
        """Advance to the segment nearest the robot (never back)."""
        best, best_d = self.seg, math.inf
        for i in range(self.seg, min(self.seg + 4, len(self.points) - 1)):
            d = _seg_dist(self.points[i], self.points[i + 1], x, y)
            if d < best_d - 1e-9:
                best, best_d = i, d
        self.seg = best

    def target(self, x: float, y: float, lookahead_m: float) -> tuple[float, float]:
        """The first path point ``lookahead_m`` from the robot beyond its segment, else the end."""
        for i in range(self.seg, len(self.points) - 1):
            a, b = self.points[i], self.points[i + 1]
            hit = _circle_exit(a, b, x, y, lookahead_m)
            if hit is not None:
                return hit
        return self.points[-1]

    def ahead(self) -> list[tuple[float, float]]:
        """The path from the current segment on."""
        return self.points[self.seg :]


def _seg_dist(a: tuple[float, float], b: tuple[float, float], x: float, y: float) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    n = dx * dx + dy * dy
    t = 0.0 if n == 0 else max(0.0, min(1.0, ((x - a[0]) * dx + (y - a[1]) * dy) / n))
    return math.hypot(x - a[0] - t * dx, y - a[1] - t * dy)


def _circle_exit(
    a: tuple[float, float], b: tuple[float, float], x: float, y: float, r: float
) -> tuple[float, float] | None:
    """The farthest point of segment ``a``-``b`` on the circle of radius ``r`` round (x, y)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    fx, fy = a[0] - x, a[1] - y
    qa = dx * dx + dy * dy
    if qa == 0:
        return None
    qb = 2 * (fx * dx + fy * dy)
    qc = fx * fx + fy * fy - r * r
    disc = qb * qb - 4 * qa * qc
    if disc < 0:
        return None
    t = (-qb + math.sqrt(disc)) / (2 * qa)
    if not 0.0 <= t <= 1.0:
        return None
    return a[0] + t * dx, a[1] + t * dy


def path_cut(nav: NavContext, points: list[tuple[float, float]]) -> bool:
    """True if the costmap's lethal cells now cross the path ahead."""
    cm = nav.costmap()
    if cm is None or len(points) < 2:
        return False
    grid = cm.grid
    for a, b in zip(points, points[1:], strict=False):
        ca, cb = grid.to_cell(*a), grid.to_cell(*b)
        for r, c in line_cells(ca, cb)[2:]:
            if grid.inside(int(r), int(c)) and cm.lethal[r, c] and cm.clearance_m[r, c] <= 0:
                return True
    return False


async def follow(
    env: RobotEnv,
    nav: NavContext,
    points: tuple[tuple[float, float], ...],
    goal: Goal,
    progress: Progress | None = None,
) -> Followed:
    """Drive along ``points`` to ``goal`` (see the module docstring).

    Raises:
        RobotError: The pose is lost (stale odometry, localization lost).
    """
    tracker = PathTracker(points)
    run = _Run(env, nav, tracker, goal)
    start = await env.map_pose()
    run.last = start
    while True:
        pose = await env.map_pose()
        if run.arrived(pose):
            break
        tx, ty = tracker.target(pose.x_m, pose.y_m, LOOKAHEAD_M)
        err = normalize_angle(math.atan2(ty - pose.y_m, tx - pose.x_m) - pose.yaw_rad)
        if abs(err) > ROTATE_FIRST_RAD:
            turned = await _turn(env, err, progress)
            if turned is not None:
                return run.ended("stopped", await env.map_pose(), *turned)
            continue
        try:
            lease, pose = await run_motion(
                env,
                "navigation",
                env.profile.limits.max_motion_duration_s,
                True,
                run.step,
                progress,
            )
        except SafetyError as exc:
            cause = exc.cause if isinstance(exc, MotionStopped) else StopCause.REFUSED
            outcome = "obstacle" if cause is StopCause.OBSTACLE else "stopped"
            return run.ended(outcome, await env.map_pose(), cause, why_of(exc))
        pose = await env.map_pose()
        run.account(pose)
        if run.replan:
            return run.ended("replan", pose)
        if lease.cause is StopCause.OBSTACLE:
            return run.ended("obstacle", pose, lease.cause, lease.why)
        if lease.cause not in (StopCause.TARGET, StopCause.DEADLINE):
            return run.ended("stopped", pose, lease.cause or StopCause.STOPPED, lease.why)
    pose = await env.map_pose()
    if goal.yaw_rad is not None:
        err = normalize_angle(goal.yaw_rad - pose.yaw_rad)
        if abs(err) > HEADING_TOL_RAD:
            turned = await _turn(env, err, progress)
            if turned is not None:
                return run.ended("stopped", await env.map_pose(), *turned)
    return run.ended("arrived", await env.map_pose())


async def _turn(
    env: RobotEnv, err_rad: float, progress: Progress | None
) -> tuple[StopCause, Phrase | None] | None:
    """Turn in place by ``err_rad``; None when done, else ``(cause, why)``."""
    deg = abs(math.degrees(err_rad))
    if deg < 0.5:
        return None
    rate = min(TURN_DPS, env.profile.limits.max_angular_dps)
    res = await rotate(env, "navigation", deg, rate, 1 if err_rad > 0 else -1, progress)
    if res.ok:
        return None
    cause = res.metadata.get("achieved", {}).get("cause")
    return StopCause(cause) if cause else StopCause.REFUSED, res.outcome


class _Run:
    """One follow's state shared by the control step and the loop around it."""

    def __init__(self, env: RobotEnv, nav: NavContext, tracker: PathTracker, goal: Goal) -> None:
        self.env, self.nav, self.tracker, self.goal = env, nav, tracker, goal
        lim = env.profile.limits
        self.v_max = min(SPEED_MPS, lim.max_linear_mps)
        self.w_max = math.radians(min(TURN_DPS, lim.max_angular_dps))
        self.travelled = 0.0
        self.turned = 0.0
        self.last: Pose | None = None
        self.replan = False
        self.next_check = env.robot.clock.now() + CHECK_EVERY_S
        self.costmap_id = id(nav.costmap())

    def account(self, pose: Pose) -> None:
        if self.last is not None:
            self.travelled += math.hypot(pose.x_m - self.last.x_m, pose.y_m - self.last.y_m)
            self.turned += math.degrees(normalize_angle(pose.yaw_rad - self.last.yaw_rad))
        self.last = pose
        self.nav.trail.append((pose.x_m, pose.y_m))

    def arrived(self, pose: Pose) -> bool:
        d = math.hypot(self.goal.x_m - pose.x_m, self.goal.y_m - pose.y_m)
        if d <= GOAL_TOL_M:
            return True
        if d <= PASSED_TOL_M:  # the goal is behind: it was passed within the tolerance
            bearing = math.atan2(self.goal.y_m - pose.y_m, self.goal.x_m - pose.x_m)
            return abs(normalize_angle(bearing - pose.yaw_rad)) > math.radians(100)
        return False

    async def step(self, lease: MotionLease, odom: Pose) -> bool:
        """One control period: True to end this motion (arrived, turn first, replan).

        ``odom`` is what :func:`run_motion` read; the follower steers on the map pose.
        """
        pose = odom if odom.frame == "map" else await self.env.map_pose()
        self.account(pose)
        if self.arrived(pose):
            return True
        if self._cut():
            self.replan = True
            return True
        tr = self.tracker
        tr.update(pose.x_m, pose.y_m)
        tx, ty = tr.target(pose.x_m, pose.y_m, LOOKAHEAD_M)
        dx, dy = tx - pose.x_m, ty - pose.y_m
        alpha = normalize_angle(math.atan2(dy, dx) - pose.yaw_rad)
        if abs(alpha) > math.radians(80):
            return True  # the loop turns in place first
        to_goal = math.hypot(self.goal.x_m - pose.x_m, self.goal.y_m - pose.y_m)
        v = min(self.v_max, max(0.06, 1.0 * to_goal)) * max(0.25, math.cos(alpha))
        reach = max(math.hypot(dx, dy), 0.1)
        w = 2.0 * v * math.sin(alpha) / reach
        if abs(w) > self.w_max:
            v *= self.w_max / abs(w)
            w = math.copysign(self.w_max, w)
        elif abs(w) < MIN_ANGULAR_RADPS and abs(alpha) > math.radians(8):
            w = math.copysign(min(self.w_max, K_ANGULAR * abs(alpha)), alpha)
        await self.env.governor.command(lease, Twist(v, w))
        return False

    def _cut(self) -> bool:
        now = self.env.robot.clock.now()
        if now < self.next_check:
            return False
        self.next_check = now + CHECK_EVERY_S
        cm = self.nav.costmap()
        if id(cm) == self.costmap_id:
            return False
        self.costmap_id = id(cm)
        return path_cut(self.nav, self.tracker.ahead())

    def ended(
        self,
        outcome: str,
        pose: Pose,
        cause: StopCause | None = None,
        why: Phrase | None = None,
    ) -> Followed:
        self.account(pose)
        return Followed(outcome, self.travelled, self.turned, pose, cause, why)
