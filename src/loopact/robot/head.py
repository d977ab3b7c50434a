"""Pan-tilt head tools (SPEC D4): move, re-centre, shake ("no"), nod ("yes").

Angles are in degrees at the tool edge (pan left positive, tilt down positive) and radians on the
robot interface. Targets past the profile's joint limits are refused with the limits in the
message. Every head command goes through the governor (X3), which gives the head to one motion
at a time.
"""

from __future__ import annotations

import math

from loopact.errors import RobotError, SafetyError
from loopact.robot.lease import MotionLease
from loopact.robot.motion import RobotEnv
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool

SHAKE_PAN_DEG = 25.0
NOD_TILT_DEG = 15.0


async def _sequence(
    env: RobotEnv, name: str, targets: list[tuple[float, float]], summary: str | None = None
) -> ToolResult:
    """Move the head through ``targets`` (pan, tilt in degrees); ``summary`` becomes
    ``data.result`` on success (a plain sentence models can retell), by default where the
    camera now looks ("the camera now looks 44 degrees right and 0 degrees down")."""
    gov = env.governor
    try:
        for pan, tilt in targets:
            gov.check_head(pan, tilt)
        lease: MotionLease = await gov.begin_head(name)
    except (SafetyError, RobotError) as exc:
        return ToolResult.failure(str(exc))
    reached = True
    try:
        for pan, tilt in targets:
            if not await gov.set_head(lease, pan, tilt):
                break
            reached = await gov.wait_head(lease, pan, tilt, timeout_s=3.0)
            if not reached:
                break
    except (SafetyError, RobotError) as exc:
        return ToolResult.failure(str(exc))
    finally:
        gov.end_head(lease)
    head = await env.robot.get_head()
    data: dict[str, float | str] = {
        "pan_deg": round(math.degrees(head.pan_rad), 1),
        "tilt_deg": round(math.degrees(head.tilt_rad), 1),
    }
    if lease.stopped_by not in (None, "target") and lease.detail != "finished":
        return ToolResult.failure(f"interrupted: {lease.detail}", data=data)
    if not reached:
        return ToolResult.failure("the head did not reach its target in time", data=data)
    data["result"] = summary or looks(float(data["pan_deg"]), float(data["tilt_deg"]))
    return ToolResult.success(data)


def looks(pan_deg: float, tilt_deg: float) -> str:
    """Where the camera looks, in words: pan left positive, tilt down positive (degrees)."""
    pan = (
        "straight ahead"
        if abs(pan_deg) < 1
        else (f"{abs(pan_deg):.0f} degrees {'left' if pan_deg > 0 else 'right'}")
    )
    tilt = f"{abs(tilt_deg):.0f} degrees {'down' if tilt_deg >= 0 else 'up'}"
    return f"the camera now looks {pan} and {tilt}"


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
        return await _sequence(env, "servo_init", [home(env)], "centred the camera")

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
            'shook the head ("no")',
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
            env, "servo_nod", [(p, t + a), (p, t - a), (p, t + a), (p, t)], 'nodded ("yes")'
        )

    return [servo_move, servo_init, servo_shake, servo_nod]
