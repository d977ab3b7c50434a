"""The safety governor under random motion commands (issue 20 reliability; SPEC X3, C5).

Random tools with random values (NaN, inf, huge, negative, zero, strings, missing), random
preemptions (the call is cancelled, as a new command cancels it) and random stops
(``stop_all``, as a person's "stop"), through the real tool registry, the real motion tools
and the real governor, on a kinematic base with a stepped clock (``kinematic.py``). Checked on
every step: no command beyond the profile's limits reaches the base (finite, within the speed
and turn-rate limits, no sideways speed, head within its limits), the robot's centre never
leaves the geofence; after every command: the base was last commanded zero and nothing owns
it. ``make test`` runs 10,000 commands (``LOOPACT_FUZZ_COMMANDS`` changes the count).
"""

from __future__ import annotations

import asyncio
import math
import os
import random
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.kinematic import InlineExecutor, KinematicRobot

from loopact.llm.messages import ToolCall
from loopact.robot.governor import SafetyGovernor
from loopact.robot.profile import load_profile, load_site
from loopact.robot.session import make_robot_tools
from loopact.tools.base import ToolContext
from loopact.tools.registry import ToolRegistry
from loopact.vision.gate import ImageGate

COMMANDS = int(os.environ.get("LOOPACT_FUZZ_COMMANDS", "10000"))
SEED = 20
DT_S = 0.05
YIELDS = 4  # loop turns per step: every woken coroutine reaches its next clock sleep
MAX_STEPS = 2400  # 120 s of robot time: far beyond the 30 s a motion may last
TOOLS = (
    "move_forward",
    "move_backward",
    "turn_left",
    "turn_right",
    "drive",
    "navigation",
    "stop",
    "servo_move",
    "get_current_pose",
)
SPECIAL = (math.nan, math.inf, -math.inf, 1e9, -1e9, 1e308, -1.0, 0.0, 1e-9, 50.0, -50.0)


def value(rng: random.Random, scale: float) -> Any:
    """A random argument value: mostly plausible numbers, often hostile ones."""
    r = rng.random()
    if r < 0.55:
        return round(rng.uniform(-0.2, 1.0) * scale, 3)
    if r < 0.85:
        return rng.choice(SPECIAL)
    if r < 0.9:
        return str(round(rng.uniform(0, scale), 2))
    if r < 0.95:
        return rng.choice(["fast", None, [], {}, True])
    return round(rng.uniform(-10, 10) * scale, 1)


def arguments(rng: random.Random, name: str) -> dict[str, Any]:
    scales = {
        "move_forward": {"distance_m": 2.0, "speed_mps": 0.6},
        "move_backward": {"distance_m": 1.0, "speed_mps": 0.6},
        "turn_left": {"angle_deg": 200.0, "speed_dps": 120.0},
        "turn_right": {"angle_deg": 200.0, "speed_dps": 120.0},
        "drive": {"linear_mps": 0.8, "angular_dps": 120.0, "duration_s": 4.0},
        "servo_move": {"pan_deg": 120.0, "tilt_deg": 60.0},
    }
    if name == "navigation":
        return {"waypoint": rng.choice(["kitchen", "door", "window", "charger", "start", "moon"])}
    args = {k: value(rng, s) for k, s in scales.get(name, {}).items()}
    if args and rng.random() < 0.1:
        args.pop(rng.choice(list(args)))  # a missing argument
    return args


class Fuzz:
    def __init__(self) -> None:
        self.robot = KinematicRobot()
        self.profile = load_profile("sim")
        self.site = load_site("sim_room")
        self.governor = SafetyGovernor(self.robot, self.profile, self.site)  # type: ignore[arg-type]
        tools = make_robot_tools(
            self.robot,
            self.governor,
            self.profile,
            self.site,
            ImageGate(),  # type: ignore[arg-type]
        )
        self.registry = ToolRegistry(tools)
        self.checked = 0
        self.exits = 0
        self.violations: list[str] = []

    async def step(self) -> None:
        self.robot.step(DT_S)
        for _ in range(YIELDS):
            await asyncio.sleep(0)
        self.inspect()

    def inspect(self) -> None:
        lim = self.profile.limits
        w_max = math.radians(lim.max_angular_dps)
        for t, tw in self.robot.twists[self.checked :]:
            parts = (tw.linear_mps, tw.angular_radps, tw.lateral_mps)
            if not all(math.isfinite(p) for p in parts):
                self.violations.append(f"t={t:.2f}: non-finite twist {tw}")
            elif (
                abs(tw.linear_mps) > lim.max_linear_mps + 1e-9
                or abs(tw.angular_radps) > w_max + 1e-9
            ):
                self.violations.append(f"t={t:.2f}: twist beyond the limits {tw}")
            elif tw.lateral_mps != 0.0:
                self.violations.append(f"t={t:.2f}: sideways speed on a differential base {tw}")
        self.checked = len(self.robot.twists)
        head = self.profile.head
        for pan, tilt in self.robot.heads:
            pan_d, tilt_d = math.degrees(pan), math.degrees(tilt)
            if not (
                head.pan_limits_deg[0] - 1e-6 <= pan_d <= head.pan_limits_deg[1] + 1e-6
            ) or not (head.tilt_limits_deg[0] - 1e-6 <= tilt_d <= head.tilt_limits_deg[1] + 1e-6):
                self.violations.append(f"head command beyond its limits: {pan_d}, {tilt_d}")
        self.robot.heads.clear()
        if not self.site.contains(self.robot.x_m, self.robot.y_m):
            self.exits += 1

    async def command(self, n: int, rng: random.Random) -> str:
        name = rng.choice(TOOLS)
        call = ToolCall(f"c{n}", name, arguments(rng, name))
        ctx = ToolContext(task_id="fuzz", call_id=call.id, workspace=Path("."))
        run = asyncio.ensure_future(self.registry.execute(call, ctx, 300.0))
        preempt = rng.randrange(1, 80) if rng.random() < 0.15 else None  # mostly mid-motion
        stop = rng.randrange(1, 80) if rng.random() < 0.1 else None
        steps = 0
        while not run.done():
            await self.step()
            steps += 1
            if steps == preempt:
                run.cancel()
            if steps == stop:
                await self.governor.stop_all("fuzz: a person said stop")
            assert steps < MAX_STEPS, f"{call} did not end within {MAX_STEPS * DT_S:.0f} s"
        outcome = "cancelled" if run.cancelled() else ("ok" if run.result().ok else "failed")
        for _ in range(3):
            await self.step()
        last = self.robot.twists[-1][1] if self.robot.twists else None
        if last is not None and (last.linear_mps, last.angular_radps) != (0.0, 0.0):
            self.violations.append(f"{call.name}{call.arguments} ended ({outcome}) with {last}")
        if self.governor.base_lease is not None:
            self.violations.append(f"{call.name}{call.arguments} left the base owned")
        return outcome


@pytest.mark.timeout(600)  # ~45 s of CPU; minutes of wall time on a loaded machine
async def test_random_motion_commands_never_break_the_limits_geofence_or_stop() -> None:
    asyncio.get_running_loop().set_default_executor(InlineExecutor())
    rng = random.Random(SEED)
    fuzz = Fuzz()
    fuzz.governor.start()
    outcomes: dict[str, int] = {}
    try:
        for n in range(COMMANDS):
            outcome = await fuzz.command(n, rng)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            assert not fuzz.violations, fuzz.violations[:5]
    finally:
        await fuzz.governor.close()
    assert fuzz.exits == 0, f"the robot left the geofence in {fuzz.exits} steps"
    assert sum(outcomes.values()) == COMMANDS
    # the fuzz really drove the robot: motions ran to their end, were refused and cancelled
    assert outcomes.get("ok", 0) > COMMANDS // 10, outcomes
    assert outcomes.get("failed", 0) > COMMANDS // 10, outcomes
    assert outcomes.get("cancelled", 0) > COMMANDS // 50, outcomes
    print(f"\n{COMMANDS} commands: {outcomes}; robot time {fuzz.robot.clock.t:.0f} s")
