"""Plan (SPEC A4) and action-text (A5) tasks driving the MuJoCo robot, graded by the simulator.

Real provider code against the scripted model server, the real simulator on a simulated clock,
the real safety governor and robot tools; what the robot did is read from the simulator's own
state, never from what a tool or the model said.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.session import RobotSession
from loopact.sim.state import SimState
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        yield session
    finally:
        await session.close()


def truth(session: RobotSession) -> SimState:
    """The simulator's own state of the robot (ground truth)."""
    state: SimState = session.robot.sim.state()  # type: ignore[attr-defined]
    return state


def robot_agent(
    server: Any, session: RobotSession, tmp_path: Path, **options: Any
) -> tuple[Agent, Recorder]:
    model = OpenAIChatModel("scripted", server.base_url, "sk-test-secret")
    opts = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
        system_prompt="Drive the robot.",
        workspace=tmp_path,
        stop_hooks=(session.stop,),
        state_provider=session.state,
        **options,
    )
    agent = Agent(model, ToolRegistry(session.tools), opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def plan_text(steps: list[dict[str, Any]]) -> str:
    return json.dumps({"steps": steps})


async def test_a_plan_with_more_steps_of_one_tool_than_its_call_limit_runs_them_all(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """A checked plan is bounded by its step limit (A4), not by the per-tool call limit of the
    ReAct loop guard (A3, 10 for a motion): twelve 10-degree turns all run, instead of the
    robot stopping at 100 degrees with "turn_left was already called 10 times"."""
    steps = [
        {"id": n, "description": "turn", "tool": "turn_left", "parameters": {"angle_deg": 10}}
        for n in range(1, 13)
    ]
    server = scripted_server([{"text": plan_text(steps)}])
    agent, rec = robot_agent(server, robot, tmp_path, mode="plan")
    outcome = await agent.run_task("turn left 120 degrees in 10 degree steps")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert [e.data["ok"] for e in rec.of("step_end")] == [True] * 12
    assert math.degrees(truth(robot).yaw_rad) == pytest.approx(120.0, abs=6.0)


async def test_a_new_command_mid_plan_step_stops_the_robot_and_closes_the_step(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Preemption in the middle of a plan step (A6, A8): the robot stops (simulator), the
    step's ``tool_result`` is "cancelled", the step ends with ``step_end {ok: false}`` under
    the old command id, the later steps never run, the old task ends ``preempted`` before
    the new one's first request."""
    steps = [
        {"id": 1, "tool": "move_forward", "parameters": {"distance_m": 3.0, "speed_mps": 0.2}},
        {"id": 2, "tool": "turn_left", "parameters": {"angle_deg": 90}},
    ]
    pose_plan = [{"id": 1, "tool": "get_current_pose", "parameters": {}}]
    server = scripted_server([{"text": plan_text(steps)}, {"text": plan_text(pose_plan)}])
    agent, rec = robot_agent(server, robot, tmp_path, mode="plan")
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit("drive 3 m, then turn left")
    await rec.wait_for(lambda e: e.type == "tool_progress" and e.task_id == first)
    assert truth(robot).linear_mps > 0.1  # driving
    second = agent.submit("where am I")
    await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second, 60)
    stopped = truth(robot)
    await robot.robot.sim.clock.sleep(2.0)  # type: ignore[attr-defined]
    later = truth(robot)
    await agent.close()
    runner.cancel()

    assert abs(later.linear_mps) < 0.01 and later.x_m - stopped.x_m < 0.05  # it stopped
    assert later.x_m < 1.0 and abs(math.degrees(later.yaw_rad)) < 2.0  # no turn: step 2 never ran
    old = [e for e in rec.events if e.task_id == first]
    assert [e.data for e in old if e.type == "step_start"] == [
        {"n": 1, "of": 2, "tool": "move_forward"}
    ]
    assert [e.data for e in old if e.type == "step_end"] == [
        {"n": 1, "ok": False, "error": "cancelled"}
    ]
    (result,) = [e.data for e in old if e.type == "tool_result"]
    assert result["name"] == "move_forward" and result["metadata"]["error_kind"] == "cancelled"
    ends = [(e.task_id, e.data["status"]) for e in rec.of("task_end")]
    assert ends == [(first, "preempted"), (second, "completed")]
    types = [(e.type, e.task_id) for e in rec.events]
    assert types.index(("task_end", first)) < types.index(("model_request", second))


FINISH = {"text": "完成。\nfinishtask()"}


async def run_text_task(
    server: Any, session: RobotSession, tmp_path: Path, text: str, **bounds: Any
) -> tuple[Any, Recorder]:
    agent, rec = robot_agent(server, session, tmp_path, tool_calling="text")
    if bounds:
        agent.options.bounds = Bounds(backoff_base_s=0.01, tool_timeout_s=120, **bounds)
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    await agent.close()
    return outcome, rec


async def test_action_with_arguments_that_do_not_parse_is_refused_and_the_model_told(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Before, ``move_forward({"distance_m": 0.3)`` was the task's reply (exit 0), and the
    robot never moved. Now the model is told why and writes it again; the robot drives once."""
    server = scripted_server(
        [
            {"text": 'move_forward({"distance_m": 0.3)'},
            {"text": "move_forward(0.3)", "expect": {"last_user_contains": "do not parse"}},
            FINISH,
        ]
    )
    outcome, rec = await run_text_task(server, robot, tmp_path, "move forward 0.3 m")
    assert outcome.status == "completed" and outcome.reply == "完成。", outcome
    assert truth(robot).x_m == pytest.approx(0.3, abs=0.05)
    results = [e.data for e in rec.of("tool_result")]
    assert [r["ok"] for r in results] == [False, True]
    assert "write it as move_forward(" in results[0]["error"]
    assert "JSON object" not in results[0]["error"]  # action text is not JSON


async def test_action_inside_a_chinese_sentence_is_not_run_until_written_alone(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Before, the sentence was the reply and the robot stood still. The mention is never
    run (it may be an echo), the model is asked for the action on its own line, and the
    robot drives 0.3 m once, not twice."""
    server = scripted_server(
        [
            {"text": "好的，我先向前走 move_forward(0.3)，然后停下。"},
            {"text": "move_forward(0.3)", "expect": {"last_user_contains": "own line"}},
            FINISH,
        ]
    )
    outcome, rec = await run_text_task(server, robot, tmp_path, "向前走0.3米")
    assert outcome.status == "completed" and outcome.reply == "完成。", outcome
    assert truth(robot).x_m == pytest.approx(0.3, abs=0.05)
    assert [e.data["name"] for e in rec.of("tool_call")] == ["move_forward"]


async def test_two_actions_on_one_line_run_one_per_round(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"text": "move_forward(0.3) turn_left(90)"},
            {"text": "turn_left(90)", "expect": {"last_user_contains": "ignored: turn_left(90)"}},
            FINISH,
        ]
    )
    outcome, _ = await run_text_task(server, robot, tmp_path, "drive 0.3 m, then turn left")
    assert outcome.status == "completed", outcome
    state = truth(robot)
    assert state.x_m == pytest.approx(0.3, abs=0.05)
    assert math.degrees(state.yaw_rad) == pytest.approx(90.0, abs=5.0)  # one turn, not two


async def test_a_model_that_keeps_writing_actions_in_sentences_ends_on_a_bound(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Two rounds in a row with nothing runnable end on the invalid-round guard (A3): a clear
    bounded reply (exit 3), whose final answer shows no action lines as if they had run."""
    mention = {"text": "I will now move_forward(0.5) towards the box."}
    server = scripted_server(
        [mention, mention, {"text": "I could not move.\nmove_forward(0.5)\nfinishtask()"}]
    )
    outcome, rec = await run_text_task(server, robot, tmp_path, "drive to the box")
    assert outcome.status == "bounded", outcome
    assert rec.of("bound")[0].data["name"] == "invalid_rounds"
    assert "I could not move." in outcome.reply
    assert "move_forward" not in outcome.reply and "finishtask" not in outcome.reply
    assert not rec.of("tool_call")
    assert abs(truth(robot).x_m) < 0.01


async def test_the_round_limit_in_action_text_leaves_unrun_actions_out_of_the_reply(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"text": "I'll drive.\nmove_forward(0.3)"},
            {"text": "I drove 0.3 m.\nturn_left(90)\nfinishtask()", "expect": {"no_tools": True}},
        ]
    )
    outcome, rec = await run_text_task(server, robot, tmp_path, "drive, then turn", max_rounds=1)
    assert outcome.status == "bounded", outcome
    assert rec.of("bound")[0].data == {"name": "max_rounds", "limit": 1}
    assert outcome.reply.endswith("I drove 0.3 m."), outcome.reply
    assert "turn_left" not in outcome.reply
    state = truth(robot)
    assert state.x_m == pytest.approx(0.3, abs=0.05) and abs(math.degrees(state.yaw_rad)) < 2


MOVE = {"tool_calls": [{"id": "m1", "name": "move_forward", "arguments": {"distance_m": 0.3}}]}


async def test_an_empty_answer_is_asked_again_once(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """An empty answer after a motion used to end the task with "I could not produce a final
    answer." (exit 0); the model is asked once more for its answer."""
    server = scripted_server(
        [MOVE, {"text": ""}, {"text": "I drove 0.3 m.", "expect": {"last_user_contains": "empty"}}]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    outcome = await asyncio.wait_for(agent.run_task("move forward 0.3 m"), 120)
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "I drove 0.3 m.", outcome
    assert truth(robot).x_m == pytest.approx(0.3, abs=0.05)
    assert [e.data["text"] for e in rec.of("reply")] == ["I drove 0.3 m."]


async def test_an_answer_empty_twice_after_a_motion_is_told_from_what_ran(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server([MOVE, {"text": ""}, {"text": " \n"}])
    agent, _ = robot_agent(server, robot, tmp_path)
    outcome = await asyncio.wait_for(agent.run_task("move forward 0.3 m"), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    assert truth(robot).x_m == pytest.approx(0.3, abs=0.05)
    assert "could not produce" not in outcome.reply
    assert "moved forward 0.30 m" in outcome.reply.lower(), outcome.reply
