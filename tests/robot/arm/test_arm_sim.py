"""The arm in the simulator, graded by ground truth (issue 43 acceptance 1 and 3).

A recorded script drives ``loopact run --robot sim --scenario arm --once "put the red cube in
the bin" --yes``; the sim log (ground truth) shows where the cube ends. The tools' refusals and
the stop during a pick are checked against the simulator's state, never the tools' words.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.test_cli import run_cli

from loopact.robot.session import RobotSession
from loopact.sim import open_sim
from loopact.sim.arm_scene import OBJECTS
from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.sim

BIN = next(o for o in OBJECTS if o.name == "bin")


def in_bin(p: dict[str, float] | tuple[float, float, float]) -> bool:
    """Inside the bin's walls and below their top (ground truth, the bin where it started)."""
    x, y, z = (p["x_m"], p["y_m"], p["z_m"]) if isinstance(p, dict) else p
    hx, hy = BIN.size_m[0] / 2 - BIN.wall_m, BIN.size_m[1] / 2 - BIN.wall_m
    return abs(x - BIN.x_m) < hx and abs(y - BIN.y_m) < hy and z < BIN.z_m + BIN.size_m[2] / 2


def test_put_the_red_cube_in_the_bin_from_the_command_line(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("pick", {"target": "red cube"})]},
            {"tool_calls": [call("place", {"target": "bin"})]},
            {"text": "The red cube is in the bin."},
        ]
    )
    log = tmp_path / "sim.jsonl"
    proc = run_cli(
        [
            *("run", "--robot", "sim", "--scenario", "arm"),
            *("--once", "put the red cube in the bin", "--yes"),
            *("--base-url", server.base_url, "--model", "m", "--no-memory"),
            *("--workspace", str(tmp_path / "ws"), "--sim-speed", "4", "--sim-log", str(log)),
        ],
        tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    samples = list(read_sim_log(log))
    start, end = samples[0]["objects"]["red_cube"], samples[-1]["objects"]["red_cube"]
    assert not in_bin(start) and in_bin(end), (start, end)
    # never dropped on the way: from the lift to the bin it is never back at the table's height
    heights = [s["objects"]["red_cube"]["z_m"] for s in samples]
    top = heights.index(max(heights))
    after = heights[top:]
    assert min(after) > end["z_m"] - 0.005, "the cube fell below where it ended"


async def _session() -> RobotSession:
    return await asyncio.wait_for(open_sim(speed=float("inf"), scenario="arm"), 60)


def _tools(session: RobotSession) -> dict[str, Any]:
    return {t.name: t for t in session.tools}


async def test_stop_during_a_pick_stops_the_arm_within_a_tenth_of_a_second() -> None:
    session = await _session()
    try:
        tools, sim = _tools(session), session.robot.sim  # type: ignore[attr-defined]
        task = asyncio.create_task(tools["pick"](target="red cube"))
        # wait (robot time) until the arm is on its way: a joint faster than 0.3 rad/s
        clock = session.robot.clock
        deadline = clock.now() + 20
        while max(abs(v) for v in sim.state().arm.velocities_radps) < 0.3:
            assert clock.now() < deadline and not task.done()
            await clock.sleep(0.01)
        t_stop = sim.now()
        await tools["stop"]()
        result = await asyncio.wait_for(task, 30)
        assert not result.ok and result.metadata["achieved"]["stopped_by"] == "cancelled"
        # ground truth: every joint slower than 0.05 rad/s within 0.1 s of robot time
        while sim.now() < t_stop + 0.1:
            await clock.sleep(0.005)
        assert max(abs(v) for v in sim.state().arm.velocities_radps) < 0.05
        q = sim.state().arm.positions_rad
        await clock.sleep(0.5)
        assert max(abs(a - b) for a, b in zip(q, sim.state().arm.positions_rad, strict=True)) < 0.01
    finally:
        await session.close()


async def test_refusals_move_nothing() -> None:
    session = await _session()
    try:
        tools, sim = _tools(session), session.robot.sim  # type: ignore[attr-defined]
        q0 = sim.state().arm.positions_rad
        far = await tools["arm_move"](x_m=1.5, y_m=0.0, z_m=0.3)
        assert (
            not far.ok and "out of reach" in far.outcome.text() and "reaches" in far.outcome.text()
        )
        nan = await tools["arm_move"](x_m=math.nan, y_m=0.0, z_m=0.3)
        assert not nan.ok and "x_m" in nan.outcome.text()
        table = await tools["arm_move"](x_m=0.34, y_m=-0.08, z_m=0.10)  # inside the table
        assert not table.ok and "table" in table.outcome.text(), table.outcome.text()
        ghost = await tools["pick"](target="white cube")
        assert not ghost.ok and "no white cube" in ghost.outcome.text()
        nobox = await tools["pick"](target="[0, 0, 20, 20]")
        assert not nobox.ok
        nothing = await tools["place"](target="bin")
        assert not nothing.ok and "holds nothing" in nothing.outcome.text()
        force = await tools["gripper"](action="close", force_n=500)
        assert not force.ok and "15" in force.outcome.text()
        await session.governor.emergency_stop("test")
        stopped = await tools["gripper"](action="close")
        assert not stopped.ok
        q1 = sim.state().arm.positions_rad
        assert max(abs(a - b) for a, b in zip(q0, q1, strict=True)) < 0.01
        assert sim.state().arm.gap_m > 0.07  # the gripper never closed
        assert not sim.state().arm.table_contact
    finally:
        await session.close()


def test_describe_of_the_arm_scene_lists_its_objects_and_table() -> None:
    from loopact.sim.describe import describe_world

    desc = describe_world("arm")
    assert {o["name"] for o in desc["objects"]} == {o.name for o in OBJECTS}
    red = next(o for o in desc["objects"] if o["name"] == "red_cube")
    assert set(red["position_m"]) == {"x_m", "y_m", "z_m"} and red["movable"]
    assert "arm_table" in {o["name"] for o in desc["obstacles"]}


async def test_an_operator_takes_the_arm_through_the_same_lease_table_as_the_base() -> None:
    """One lease per resource (issues 41, 43): an operator's hold on the arm ends the agent's
    pick ``taken_over`` (the arm stops by ground truth), refuses the agent's next arm motion,
    and the deadman hands the arm back like the base."""
    session = await _session()
    try:
        tools, sim = _tools(session), session.robot.sim  # type: ignore[attr-defined]
        gov, clock = session.governor, session.robot.clock
        task = asyncio.create_task(tools["pick"](target="red cube"))
        deadline = clock.now() + 20
        while max(abs(v) for v in sim.state().arm.velocities_radps) < 0.3:
            assert clock.now() < deadline and not task.done()
            await clock.sleep(0.01)
        hold = gov.take_over("arm", "pendant", "test")
        assert gov.lease_of("arm") is hold.lease and hold.lease is not None
        assert gov.status()["operator"] == {
            "arm": {"who": "pendant", "source": "test", "commands": 1}
        }
        result = await asyncio.wait_for(task, 30)
        assert not result.ok and result.metadata["achieved"]["stopped_by"] == "taken_over"
        t_taken = sim.now()
        while sim.now() < t_taken + 0.1:
            await clock.sleep(0.005)
        assert max(abs(v) for v in sim.state().arm.velocities_radps) < 0.05
        refused = await tools["arm_home"]()
        assert not refused.ok and refused.metadata["achieved"]["stopped_by"] == "taken_over"
        # the operator's commands stop: the watchdog's deadman hands the arm back
        deadline = clock.now() + 5
        while gov.operator.holder("arm") is not None:
            assert clock.now() < deadline
            await clock.sleep(0.05)
        assert gov.lease_of("arm") is None and not hold.lease.active
        back = await tools["arm_home"]()
        assert back.ok, back.outcome.text()
    finally:
        await session.close()
