"""``stopped_by`` from typed causes (issue 38, SPEC X3): the real governor on the real MuJoCo
robot ends or refuses each motion for a :class:`StopCause`; the tool's result carries it as
``metadata.achieved`` (``stopped_by``, the contract word, and ``cause``) and as the cause of
its outcome phrase. Nothing here reads an error's text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.robot.rig import Rig, make_rig

from loopact.errors import EmergencyStopError, MotionStopped, StopCause, StopReason
from loopact.i18n import Phrase
from loopact.robot.interface import Twist
from loopact.robot.profile import SiteMap
from loopact.tools.base import ToolResult

pytestmark = pytest.mark.sim

WALL_X = 6.0  # inner face of the +x wall of sim_room
RADIUS = 0.17


def assert_cause(res: ToolResult, cause: StopCause, *, moved: bool = True) -> None:
    """The result says ``cause`` in every typed place: achieved, and the outcome's cause."""
    achieved = res.metadata["achieved"]
    assert (achieved["stopped_by"], achieved["cause"]) == (cause.stopped_by, cause.value), res
    assert res.ok is (cause is StopCause.TARGET)
    assert res.outcome is not None
    if moved and not res.ok:  # stopped on the way: the phrase names the cause
        assert res.outcome.params["cause"] == Phrase(f"cause.{cause.value}"), res.outcome
        assert res.outcome.text("zh") != res.outcome.text("en")


@pytest.fixture
async def open_rig() -> AsyncIterator[Rig]:
    """A rig without geofence, for the obstacle stop."""
    r = await make_rig(site=SiteMap())
    try:
        yield r
    finally:
        await r.governor.close()
        await r.robot.close()


async def _moving(rig: Rig, name: str, **args: Any) -> asyncio.Task[ToolResult]:
    """Start a motion tool and return once the base is moving."""
    task: asyncio.Task[ToolResult] = asyncio.ensure_future(rig.call(name, **args))
    start = await rig.pose()

    async def moving() -> bool:
        now = await rig.pose()
        turned = abs(now.yaw_deg - start.yaw_deg) > 3
        return turned or abs(now.x_m - start.x_m) + abs(now.y_m - start.y_m) > 0.05

    await rig.wait_for(moving)
    return task


async def test_obstacle_ends_and_refuses_a_motion(open_rig: Rig) -> None:
    rig = open_rig
    await rig.robot.teleport(4.0, 0.0, 0.0)
    assert_cause(
        await rig.call("drive", linear_mps=0.5, angular_dps=0, duration_s=10), StopCause.OBSTACLE
    )
    await rig.robot.teleport(WALL_X - RADIUS - 0.2, 0.0, 0.0)
    refused = await rig.call("move_forward", distance_m=0.5)  # the governor's MotionStopped
    assert_cause(refused, StopCause.OBSTACLE, moved=False)
    assert refused.outcome is not None and refused.outcome.id == "governor.obstacle_ahead"
    with pytest.raises(MotionStopped) as raised:
        await rig.governor.begin_motion("x", 1.0, forward=True)
    assert raised.value.cause is StopCause.OBSTACLE


async def test_geofence_ends_and_refuses_a_motion() -> None:
    fence = SiteMap(geofence=[(-1.0, -1.0), (1.5, -1.0), (1.5, 1.0), (-1.0, 1.0)])
    rig = await make_rig(site=fence)
    try:
        assert_cause(
            await rig.call("move_forward", distance_m=2.5), StopCause.GEOFENCE, moved=False
        )
        res = await rig.call("drive", linear_mps=0.5, angular_dps=0, duration_s=10)
        assert_cause(res, StopCause.GEOFENCE)
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_a_stop_a_preemption_and_another_motion_are_told_apart(rig: Rig) -> None:
    """All three have always been ``stopped_by: cancelled``; the cause says which."""
    task = await _moving(rig, "move_forward", distance_m=2.0)
    assert (await rig.call("stop")).ok
    assert_cause(await asyncio.wait_for(task, 10), StopCause.STOPPED)

    task = await _moving(rig, "move_backward", distance_m=1.0)
    await rig.governor.stop_all(StopReason("new command from terminal", StopCause.PREEMPTED))
    assert_cause(await asyncio.wait_for(task, 10), StopCause.PREEMPTED)

    task = await _moving(rig, "drive", linear_mps=0.0, angular_dps=30, duration_s=5)
    assert (await rig.call("turn_right", angle_deg=10)).ok
    assert_cause(await asyncio.wait_for(task, 10), StopCause.REPLACED)
    assert_cause(await rig.call("turn_left", angle_deg=10), StopCause.TARGET)


async def test_the_emergency_stop_ends_and_refuses_a_motion(rig: Rig) -> None:
    task = await _moving(rig, "move_forward", distance_m=2.0)
    await rig.governor.emergency_stop("test button")
    assert_cause(await asyncio.wait_for(task, 10), StopCause.EMERGENCY_STOP)
    refused = await rig.call("turn_left", angle_deg=30)
    assert_cause(refused, StopCause.EMERGENCY_STOP, moved=False)
    with pytest.raises(EmergencyStopError) as raised:
        await rig.governor.begin_motion("x", 1.0)
    assert raised.value.cause is StopCause.EMERGENCY_STOP
    rig.governor.reset_emergency_stop("test")


async def test_deadline_and_watchdog_end_a_lease_with_their_cause(rig: Rig) -> None:
    """The governor's own clocks; a waiting tool learns the cause from the lease."""
    gov = rig.governor
    lease = await gov.begin_motion("short", 0.5)
    while lease.active:
        await gov.command(lease, Twist(0.0, 0.5))
        await rig.robot.clock.sleep(0.05)
    assert lease.cause is StopCause.DEADLINE and lease.stopped_by == "deadline"
    with pytest.raises(MotionStopped) as raised:
        lease.check()
    assert raised.value.cause is StopCause.DEADLINE

    lease = await gov.begin_motion("dead_agent", 20.0)
    await gov.command(lease, Twist(0.0, 0.5))  # then no command: the agent died

    async def ended() -> bool:
        return not lease.active

    await rig.wait_for(ended, 3.0)
    assert lease.cause is StopCause.WATCHDOG and lease.stopped_by == "watchdog"
    assert lease.why is not None and lease.why.id == "stop.watchdog"
