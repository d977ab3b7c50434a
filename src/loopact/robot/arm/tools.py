"""The arm tools: ``pick``, ``place``, ``arm_move``, ``arm_home``, ``gripper``, ``arm_state``.

Issue 43 (SPEC D2, D5, X3). ``pick(target)`` finds the target with the camera (a colour, a
name with a colour, or a bbox from perception), locates it in 3D from depth
(:mod:`loopact.robot.arm.locate`), plans a top-down grasp (:mod:`loopact.robot.arm.planner`),
approaches, closes the gripper, verifies the grasp (the gap did not close: something is between
the pads; where the arm can tell, both pads touch it), lifts and watches it on the way.
``place(target)`` puts what the gripper holds into a container (or onto a place) the camera
finds, opens, and rises. Every motion goes through :class:`~loopact.robot.arm.guard.ArmGuard`
(the governor's ``arm`` lease, the arm's rules). Results are typed phrases (``arm.*``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopact.errors import MotionStopped, RobotError, SafetyError
from loopact.i18n import Phrase
from loopact.robot.arm.guard import ArmGuard, finite_target
from loopact.robot.arm.locate import Located, locate
from loopact.robot.arm.planner import Grasp, Planner, Stage
from loopact.robot.arm.rules import Held
from loopact.robot.interface import CameraFrame, DepthFrame, HeadState
from loopact.robot.lease import cause_phrase
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import achieved, said_by
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.detect import ColorRanges

GRASP_OPEN_M = 0.07
"""The gap the gripper opens to before a grasp, metres."""
MIN_HELD_GAP_M = 0.008
"""A closed gripper with a smaller gap holds nothing, metres."""
PLACE_ABOVE_M = 0.02
"""A held object is let go this far above a container's floor (or a place), metres."""
ARM_LEASE_S = 30.0
SETTLED_VIEW_S = 0.25
"""A view is taken from frames captured this long after the head stood still, seconds."""
FRESH_VIEW_WAIT_S = 5.0
"""How long to wait for such frames before the view is an error, seconds."""
HEAD_STILL_RAD = 0.002
"""The head stands still when two joint states in a row differ by less than this, radians."""
HEAD_STILL_WAIT_S = 3.0
"""How long to wait for the head to stand still before taking the view anyway, seconds."""
CONTAINERS = ("bin", "tray", "box", "basket", "盒", "筐", "托盘")


@dataclass
class ArmTools:
    """What the arm tools share: the robot's env, the guard, the planner, the colours."""

    env: RobotEnv
    guard: ArmGuard
    planner: Planner
    colours: ColorRanges

    async def view(self) -> tuple[CameraFrame, DepthFrame, HeadState]:
        """A frame and a depth image captured after the head stood still: within 2 degrees of
        its target it may still be moving (more so on a loaded machine), and a camera over
        ROS 2 sends frames a while after it took them, so frames taken on the way there would
        locate the object wrong.

        Raises:
            RobotError: No frame captured after the head stood still within
                :data:`FRESH_VIEW_WAIT_S`.
        """
        robot = self.env.robot
        clock = robot.clock
        since = max(await self._head_still() + SETTLED_VIEW_S, clock.now())  # a new frame
        deadline = clock.now() + SETTLED_VIEW_S + FRESH_VIEW_WAIT_S
        while True:
            rgb, depth = await robot.get_frame(), await robot.get_depth()
            if min(rgb.stamp_s, depth.stamp_s) >= since:
                return rgb, depth, await robot.get_head()
            if clock.now() > deadline:
                age = clock.now() - min(rgb.stamp_s, depth.stamp_s)
                raise RobotError(Phrase("arm.no_fresh_view", age_s=age))
            await clock.sleep(0.02)

    async def _head_still(self) -> float:
        """When (robot clock) two joint states of the head in a row showed it standing still
        (within :data:`HEAD_STILL_RAD`); now after :data:`HEAD_STILL_WAIT_S` without."""
        robot, clock = self.env.robot, self.env.robot.clock
        last = await robot.get_head()
        deadline = clock.now() + HEAD_STILL_WAIT_S
        while clock.now() < deadline:
            await clock.sleep(0.02)
            head = await robot.get_head()
            if head.stamp_s == last.stamp_s:
                continue
            moved = max(abs(head.pan_rad - last.pan_rad), abs(head.tilt_rad - last.tilt_rad))
            if moved < HEAD_STILL_RAD:
                return head.stamp_s
            last = head
        return clock.now()

    async def look(self, target: str, container: bool = False) -> Located | None:
        """Look at the workspace and find ``target``; re-aim the head when it is at the edge."""
        gov, cfg = self.env.governor, self.guard.cfg
        pan, tilt = 0.0, cfg.look_tilt_deg
        found: Located | None = None
        for _ in range(2):
            lease = await gov.begin_head("look")
            try:
                await gov.set_head(lease, pan, tilt)
                await gov.wait_head(lease, pan, tilt, timeout_s=3.0)
            finally:
                gov.end_head(lease)
            rgb, depth, head = await self.view()
            exclude = ("cyan", "brown") if not container else ()
            found = locate(target, rgb.rgb, depth.depth_m, self.env.profile, head.pan_rad,
                           head.tilt_rad, self.colours, exclude, container)  # fmt: skip
            if found is None:
                return None
            x1, _, x2, _ = found.bbox
            if x1 > 2 and x2 < rgb.rgb.shape[1] - 2:
                return found
            px, py, _ = cfg.camera_pivot_m
            pan = math.degrees(math.atan2(found.centre_m[1] - py, found.centre_m[0] - px))
        return found

    async def run(self, name: str, stages: list[Stage], watch: str | None = None) -> None:
        """Run planned stages under one arm lease (raises as :meth:`ArmGuard.follow`)."""
        lease = self.guard.take(name, ARM_LEASE_S)
        try:
            for stage in stages:
                await self.guard.follow(lease, stage.trajectory, watch)
        finally:
            self.guard.release(lease)

    async def grip(self, name: str, gap_m: float, force_n: float) -> Any:
        lease = self.guard.take(name, ARM_LEASE_S)
        try:
            return await self.guard.grip(lease, gap_m, force_n)
        finally:
            self.guard.release(lease)


def _stopped(exc: MotionStopped) -> ToolResult:
    why = exc.said if isinstance(exc.said, Phrase) else Phrase("stop.reason", reason=str(exc))
    said = Phrase("arm.stopped", cause=cause_phrase(exc.cause), why=why)
    return ToolResult(ok=False, outcome=said, metadata={"achieved": achieved(0, 0, exc.cause)})


def _failed(exc: Exception) -> ToolResult:
    if isinstance(exc, MotionStopped):
        return _stopped(exc)
    if isinstance(exc, (SafetyError, RobotError)):
        return ToolResult.failure(said_by(exc))
    raise exc


async def pick(t: ArmTools, target: str) -> ToolResult:
    """Find, grasp and lift ``target`` (see the module docstring)."""
    if t.guard.held is not None:
        return ToolResult.failure(Phrase("arm.already_holding", name=t.guard.held.name))
    try:
        found = await t.look(target)
        if found is None:
            return ToolResult.failure(Phrase("arm.not_found", target=target))
        p = t.planner
        centre = found.centre_m
        g = Grasp(centre, found.size_m, p.natural_yaw(centre), found.surface_m, found.name)
        scene = await t.guard.scene()
        plan = p.pick(await t.guard.joints(), g, GRASP_OPEN_M, scene)
        await t.grip("pick", GRASP_OPEN_M, t.guard.cfg.grip_force_n)
        await t.run("pick", plan["approach"])
        reading = await t.grip("pick", 0.0, t.guard.cfg.grip_force_n)
        touching = reading.touching
        if reading.gap_m < MIN_HELD_GAP_M or (touching is not None and not touching):
            await t.grip("pick", GRASP_OPEN_M, t.guard.cfg.grip_force_n)
            return ToolResult.failure(Phrase("arm.missed", name=found.name, gap_m=reading.gap_m))
        held_name = touching[0] if touching else found.name
        t.guard.set_held(Held(held_name, *_held_box(plan)))
        await t.run("pick", plan["lift"], watch=held_name)
    except (MotionStopped, SafetyError, RobotError) as exc:
        return _failed(exc)
    st = await t.guard.read()
    data = {"object": held_name, "at_m": [round(v, 3) for v in centre], "gap_m": round(st.gap_m, 4)}
    return ToolResult.said(Phrase("arm.picked", name=found.name, gap_m=st.gap_m), data)


def _held_box(
    plan: dict[str, list[Stage]],
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    held = plan["lift"][0].held
    assert held is not None
    return held.half_m, held.offset_m


async def place(t: ArmTools, target: str) -> ToolResult:
    """Put what the gripper holds into ``target`` (a container the camera finds)."""
    held = t.guard.held
    if held is None:
        return ToolResult.failure(Phrase("arm.nothing_held"))
    try:
        found = await t.look(target, container=True)
        if found is None:
            return ToolResult.failure(Phrase("arm.not_found", target=target))
        cx, cy, _ = found.centre_m
        inside = any(w in target.lower() for w in CONTAINERS) or found.colour in ("cyan", "brown")
        floor = found.surface_m + (0.006 if inside else found.size_m[2])
        # the grasp point sits offset above the object's centre: its bottom clears the floor
        release_z = floor + held.half_m[0] - held.offset_m[0] + PLACE_ABOVE_M
        p = t.planner
        scene = await t.guard.scene()
        plan = p.place(await t.guard.joints(), (cx, cy, release_z), p.natural_yaw((cx, cy)),
                       held, t.guard.gap_m, GRASP_OPEN_M, scene)  # fmt: skip
        await t.run("place", plan["approach"], watch=held.name)
        await t.grip("place", GRASP_OPEN_M, t.guard.cfg.grip_force_n)
        t.guard.set_held(None)
        await t.run("place", plan["leave"])
    except (MotionStopped, SafetyError, RobotError) as exc:
        return _failed(exc)
    data = {"object": held.name, "in": found.name, "at_m": [round(cx, 3), round(cy, 3)]}
    return ToolResult.said(
        Phrase("arm.placed", name=held.name.replace("_", " "), target=found.name), data
    )


def make_arm_tools(t: ArmTools) -> list[Tool]:
    """The arm tools bound to ``t`` (issue 43): ``pick``, ``place``, ``arm_move``,
    ``arm_home``, ``gripper``, ``arm_state``."""

    @tool(
        name="pick",
        safety=SafetyClass.MOTION,
        timeout_s=90,
        examples=[
            ("pick up the red cube", {"target": "red cube"}),
            ("把蓝色方块拿起来", {"target": "blue cube"}),
        ],
    )
    async def pick_tool(ctx: ToolContext, target: str) -> ToolResult:
        """Pick up an object with the arm: find it with the camera, grasp it and lift it. 抓取。

        Args:
            target: What to pick: an object with its colour (``red cube``), or a bbox
                ``[x1, y1, x2, y2]`` in pixels from detect_objects.
        """
        ctx.progress(f"pick: looking for {target}")
        return await pick(t, target)

    @tool(
        name="place",
        safety=SafetyClass.MOTION,
        timeout_s=90,
        examples=[("put it in the bin", {"target": "bin"})],
    )
    async def place_tool(ctx: ToolContext, target: str) -> ToolResult:
        """Put down what the arm holds: in a container (``bin``, ``tray``) the camera finds. 放下。

        Args:
            target: Where: a container (``bin``, ``cyan bin``, ``tray``).
        """
        ctx.progress(f"place: looking for {target}")
        return await place(t, _container(target))

    return [pick_tool, place_tool, *_arm_tools(t)]


def _arm_tools(t: ArmTools) -> list[Tool]:
    """``arm_move``, ``arm_home``, ``gripper``, ``arm_state``."""
    cfg = t.guard.cfg

    @tool(safety=SafetyClass.MOTION, timeout_s=60)
    async def arm_move(x_m: float, y_m: float, z_m: float, yaw_deg: float = 90.0) -> ToolResult:
        """Move the gripper (pointing down) to a point in the robot's frame. 移动机械臂。

        Args:
            x_m: Forward of the robot's centre, metres.
            y_m: Left of it, metres.
            z_m: Above the floor, metres.
            yaw_deg: Direction the fingers close along, degrees (90: across the robot).
        """
        try:
            p = [finite_target(n, v) for n, v in (("x_m", x_m), ("y_m", y_m), ("z_m", z_m))]
            yaw = math.radians(finite_target("yaw_deg", yaw_deg))
            stages = t.planner.move(await t.guard.joints(), p, yaw, t.guard.held, t.guard.gap_m,
                                    await t.guard.scene())  # fmt: skip
            watch = t.guard.held.name if t.guard.held else None
            await t.run("arm_move", stages, watch)
        except (MotionStopped, SafetyError, RobotError) as exc:
            return _failed(exc)
        return ToolResult.said(Phrase("arm.moved", x_m=p[0], y_m=p[1], z_m=p[2]))

    @tool(safety=SafetyClass.MOTION, timeout_s=60)
    async def arm_home() -> ToolResult:
        """Stow the arm in its home pose (the base drives with the arm stowed). 机械臂归位。"""
        try:
            stages = t.planner.home_stages(await t.guard.joints(), t.guard.held, t.guard.gap_m,
                                           await t.guard.scene())  # fmt: skip
            watch = t.guard.held.name if t.guard.held else None
            await t.run("arm_home", stages, watch)
        except (MotionStopped, SafetyError, RobotError) as exc:
            return _failed(exc)
        return ToolResult.said(Phrase("arm.homed"))

    @tool(safety=SafetyClass.MOTION, timeout_s=15)
    async def gripper(action: str, force_n: float = cfg.grip_force_n) -> ToolResult:
        """Open or close the gripper. 张开或合上夹爪。

        Args:
            action: ``open`` or ``close``.
            force_n: Squeezing force when closing, newtons (limited by the robot).
        """
        word = action.strip().lower()
        if word not in ("open", "close"):
            return ToolResult.failure(Phrase("arm.gripper_action", action=action))
        try:
            gap = GRASP_OPEN_M if word == "open" else 0.0
            reading = await t.grip("gripper", gap, force_n)
        except (MotionStopped, SafetyError, RobotError) as exc:
            return _failed(exc)
        if word == "open":
            t.guard.set_held(None)
        return ToolResult.said(Phrase("arm.gripper_done", action=word, gap_m=reading.gap_m))

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=5, reentrant=True)
    async def arm_state() -> ToolResult:
        """Where the arm is: joint angles, gripper gap, what it holds. 机械臂状态。"""
        return await arm_state_of(t)

    return [arm_move, arm_home, gripper, arm_state]


def _container(target: str) -> str:
    """A container name without a colour gets the colour the camera knows it by."""
    t = target.strip().lower()
    if "bin" in t and "cyan" not in t:
        return f"cyan {t}"
    if "tray" in t and "brown" not in t:
        return f"brown {t}"
    return target


async def arm_state_of(t: ArmTools) -> ToolResult:
    """The ``arm_state`` result: joint angles, gripper gap, grasp point, what it holds."""
    cfg = t.guard.cfg
    try:
        r = await t.guard.read()
    except RobotError as exc:
        return ToolResult.failure(said_by(exc))
    q = np.array(r.positions_rad)
    tcp, _ = t.planner.kin.fk(q)
    held = t.guard.held.name if t.guard.held else None
    data = {
        "joints_deg": {n: round(math.degrees(v), 1) for n, v in zip(cfg.joints, q, strict=True)},
        "gripper_gap_m": round(r.gap_m, 4),
        "tcp_m": [round(float(v), 3) for v in tcp],
        "holding": held,
    }
    said = Phrase(
        "arm.state",
        gap_m=r.gap_m,
        x_m=float(tcp[0]),
        y_m=float(tcp[1]),
        z_m=float(tcp[2]),
        holding=held or "-",
    )
    return ToolResult.said(said, data)
