"""The reply after a bound says what ran, not what the model claims (SPEC A2, A5; issue 13).

With ``split_steps`` (the local brain) a task that ends on a bound is answered from the results
of the calls it ran, with no final request; a hosted model keeps its final answer. Real HTTP
through the scripted model server, the real OpenAI-compatible provider.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.tools.base import SafetyClass, Tool, tool

#: The final answer the 0.5B brain wrote after a ``turn_left`` that did not parse
#: (2026-12-05): the skills of its system prompt, told as done.
INVENTED = (
    "The tool budget was used up. The robot turned to face it and drive up to about 0.5 m "
    "from it. The robot visited the site's named waypoints one after another."
)


def turning_tool(turns: list[float]) -> Tool:
    @tool(safety=SafetyClass.MOTION)
    def turn_left(angle_deg: float, speed_dps: float = 45) -> dict[str, str]:
        """Turn the robot left in place."""
        turns.append(angle_deg)
        return {"result": f"turned left {angle_deg:.1f} degrees and reached the target"}

    return turn_left


def agent_for(
    server: Any, tmp_path: Path, turns: list[float], bounds: Bounds | None = None, **options: Any
) -> tuple[Agent, Recorder]:
    model = OpenAIChatModel("scripted", server.base_url, "k", current_task_only=True)
    bounds = bounds or Bounds(backoff_base_s=0.01)
    opts = AgentOptions(bounds=bounds, workspace=tmp_path, **options)
    agent = Agent(model, [turning_tool(turns)], opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


async def test_action_text_bound_tells_the_refused_action_not_the_models_final_words(
    scripted_server: Any, tmp_path: Path
) -> None:
    """The newcomer's run: an action that could not be used, then an echo of it, then the
    invalid-rounds bound. The reply said "The robot ... visited the site's named waypoints"
    from a final request without tools; the pose log showed the robot never moved."""
    server = scripted_server(
        [
            {"text": "turn_left(angle=90)"},
            {"text": "The result says turn_left(angle=90) failed."},
        ]
    )
    turns: list[float] = []
    agent, _ = agent_for(server, tmp_path, turns, tool_calling="text", split_steps=True)
    outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees"), 60)
    await agent.close()
    assert outcome.status == "bounded", outcome
    notice, told = outcome.reply.split("\n\n")
    assert notice.startswith("I stopped: 2 rounds in a row had tool calls that could not run")
    assert told.startswith(
        "“turn left 90 degrees” did not succeed (turn_left: invalid action turn_left(angle=90): "
        "turn_left has no parameter 'angle'"
    ), told
    assert len(server.requests) == 2  # no final request: its words would not be the reply
    assert turns == []


async def test_native_bound_tells_each_clause_from_its_results(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A turn that ran, then a call of a tool that does not exist, then the round limit: the
    reply tells the turn by its own sentence, the failure, and the clause never started."""
    server = scripted_server(
        [
            {"tool_calls": [call("turn_left", {"angle_deg": 90}, "t1")]},
            {"tool_calls": [call("fly", {"height_m": 2}, "f1")]},
        ]
    )
    turns: list[float] = []
    bounds = Bounds(backoff_base_s=0.01, max_rounds=2)
    agent, rec = agent_for(server, tmp_path, turns, bounds, split_steps=True)
    outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees, then nod"), 60)
    await agent.close()
    assert outcome.status == "bounded", outcome
    notice, told = outcome.reply.split("\n\n")
    assert notice == "I stopped after 2 tool rounds (the limit for one task)."
    assert told.startswith(
        "Turned left 90.0 degrees and reached the target. "
        "Then “turn left 90 degrees” did not succeed (fly: "
    ), told
    assert told.endswith("So I did not do: “nod”."), told
    assert turns == [90]
    assert len(server.requests) == 2
    assert [e.data["text"] for e in rec.of("reply")] == [outcome.reply]


async def test_a_bound_before_any_call_says_nothing_was_done(
    scripted_server: Any, tmp_path: Path
) -> None:
    """An answer past its output limit (a server that ignores max_tokens) ended the task
    with the start of that answer; with split_steps it says that nothing ran."""
    server = scripted_server([{"text": INVENTED * 20}])
    bounds = Bounds(backoff_base_s=0.01, max_tokens_round=50)
    agent, _ = agent_for(server, tmp_path, [], bounds, split_steps=True)
    outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees"), 60)
    await agent.close()
    assert outcome.status == "bounded", outcome
    assert outcome.reply.endswith("\n\nNothing was done: no action ran."), outcome.reply
    assert "waypoints" not in outcome.reply


async def test_a_hosted_model_keeps_its_final_answer_after_a_bound(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Without split_steps (hosted models) the final request without tools is made and its
    answer, written with every result in view, follows the notice."""
    server = scripted_server(
        [
            {"tool_calls": [call("turn_left", {"angle_deg": 90}, "t1")]},
            {"text": "I turned left 90 degrees.", "expect": {"no_tools": True}},
        ]
    )
    turns: list[float] = []
    agent, _ = agent_for(server, tmp_path, turns, Bounds(backoff_base_s=0.01, max_rounds=1))
    outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees"), 60)
    await agent.close()
    assert outcome.status == "bounded", outcome
    assert outcome.reply.endswith("\n\nI turned left 90 degrees."), outcome.reply
    assert turns == [90]


async def test_an_action_text_motion_is_told_from_its_result(
    scripted_server: Any, tmp_path: Path
) -> None:
    """After ``turn_left(90 degrees)`` ran, the 0.5B brain answered with its result echoed as
    JSON, which was the reply (2026-12-05); with split_steps the reply is what ran, as in
    native mode."""
    echo = '{"ok": true, "data": {"result": "turned left 90.0 degrees and reached the target"}}'
    server = scripted_server([{"text": "turn_left(90 degrees)"}, {"text": echo}])
    turns: list[float] = []
    agent, rec = agent_for(server, tmp_path, turns, tool_calling="text", split_steps=True)
    outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees"), 60)
    await agent.close()
    assert (outcome.status, outcome.reply) == (
        "completed",
        "Turned left 90.0 degrees and reached the target.",
    )
    assert turns == [90]
    assert not [e for e in rec.of("text_delta") if "ok" in e.data["text"]]  # never streamed
