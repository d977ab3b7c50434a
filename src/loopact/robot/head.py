"""Pan-tilt head tools (SPEC D4): move, re-centre, shake ("no"), nod ("yes").

Angles are in degrees at the tool edge (pan left positive, tilt down positive) and radians on the
robot interface. Targets past the profile's joint limits are refused with the limits in the
message. Every head command goes through the governor (X3), which gives the head to one motion
at a time.
"""

from __future__ import annotations

import math

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase
from loopact.robot.lease import MotionLease
from loopact.robot.motion import RobotEnv
from loopact.robot.outcome import said_by
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool

SHAKE_PAN_DEG = 25.0
NOD_TILT_DEG = 15.0


async def _sequence(
    env: RobotEnv, name: str, targets: list[tuple[float, float]], summary: Phrase | None = None
) -> ToolResult:
    """Move the head through ``targets`` (pan, tilt in degrees); ``summary`` is the outcome
    (``data.result``) on success (a plain sentence models can retell), by default where the
    camera now looks ("the camera now looks 44 degrees right and 0 degrees down")."""
    gov = env.governor
    try:
        for pan, tilt in targets:
            gov.check_head(pan, tilt)
        lease: MotionLease = await gov.begin_head(name)
    except RobotError as exc:
        return ToolResult.failure(said_by(exc))
    reached = True
    try:
        for pan, tilt in targets:
            if not await gov.set_head(lease, pan, tilt):
                break
            reached = await gov.wait_head(lease, pan, tilt, timeout_s=3.0)
            if not reached:
                break
    except RobotError as exc:
        return ToolResult.failure(said_by(exc))
    finally:
        gov.end_head(lease)
    head = await env.robot.get_head()
    data: dict[str, float | str] = {
        "pan_deg": round(math.degrees(head.pan_rad), 1),
        "tilt_deg": round(math.degrees(head.tilt_rad), 1),
    }
    if lease.cause not in (None, StopCause.TARGET):
        why = lease.why or Phrase("stop.reason", reason="")
        return ToolResult.failure(Phrase("head.interrupted", why=why), data=data)
    if not reached:
        return ToolResult.failure(Phrase("head.too_slow"), data=data)
    said = summary or looks(float(data["pan_deg"]), float(data["tilt_deg"]))
    return ToolResult.said(said, data)


def looks(pan_deg: float, tilt_deg: float) -> Phrase:
    """Where the camera looks: pan left positive, tilt down positive (degrees)."""
    if abs(pan_deg) < 1:
        pan = Phrase("head.ahead")
    else:
        pan = Phrase("head.left" if pan_deg > 0 else "head.right", angle_deg=abs(pan_deg))
    tilt = Phrase("head.down" if tilt_deg >= 0 else "head.up", angle_deg=abs(tilt_deg))
    return Phrase("head.looks", pan=pan, tilt=tilt)


def home(env: RobotEnv) -> tuple[float, float]:
    """The head's home position ``(pan_deg, tilt_deg)`` from the profile."""
    h = env.profile.head
    return h.home_pan_deg, h.home_tilt_deg


def make_head_tools(env: RobotEnv) -> list[Tool]:
    """The pan-tilt tools bound to ``env`` (SPEC D4); empty without a head."""
    if not (env.profile.head.present and env.robot.has_head):
        return []
    lim = env.profile.head

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=15,
        examples=[
            ("look to the right 20 degrees", {"pan_deg": -20, "tilt_deg": 0}),
            ("抬头看", {"pan_deg": 0, "tilt_deg": -20}),
        ],
        directions={"pan_deg": ("left", "right"), "tilt_deg": ("down", "up")},
    )
    async def servo_move(pan_deg: float, tilt_deg: float) -> ToolResult:
        """Turn only the camera head to look left/right/up/down (robot stays put). 转动摄像头。

        Args:
            pan_deg: Pan in degrees, left positive.
            tilt_deg: Tilt in degrees, down positive.
        """
        return await _sequence(env, "servo_move", [(pan_deg, tilt_deg)])

    servo_move.description += (
        f" Limits: pan {lim.pan_limits_deg[0]:g}..{lim.pan_limits_deg[1]:g} deg, "
        f"tilt {lim.tilt_limits_deg[0]:g}..{lim.tilt_limits_deg[1]:g} deg."
    )

    @tool(safety=SafetyClass.MOTION, timeout_s=15)
    async def servo_init() -> ToolResult:
        """Centre the camera: turn the camera head back to its home position. 摄像头回正。"""
        return await _sequence(env, "servo_init", [home(env)], Phrase("head.centred"))

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=20,
        examples=[("say no with your head", {}), ("摇摇头表示不同意", {})],
    )
    async def servo_shake() -> ToolResult:
        """Shake the camera head left and right (gesture for "no"). 摇头。"""
        p, t = home(env)
        a = min(SHAKE_PAN_DEG, lim.pan_limits_deg[1] - p, p - lim.pan_limits_deg[0])
        return await _sequence(
            env,
            "servo_shake",
            [(p + a, t), (p - a, t), (p + a, t), (p - a, t), (p, t)],
            Phrase("head.shook"),
        )

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=20,
        examples=[("say yes with your head", {}), ("点点头表示同意", {})],
    )
    async def servo_nod() -> ToolResult:
        """Nod the camera head up and down (gesture for "yes"). 点头。"""
        p, t = home(env)
        a = min(NOD_TILT_DEG, lim.tilt_limits_deg[1] - t, t - lim.tilt_limits_deg[0])
        return await _sequence(
            env,
            "servo_nod",
            [(p, t + a), (p, t - a), (p, t + a), (p, t)],
            Phrase("head.nodded"),
        )

    return [servo_move, servo_init, servo_shake, servo_nod]
