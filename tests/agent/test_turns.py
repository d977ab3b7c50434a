"""The seam between the task loop and its policy, and the one round counter (issue 38 item 3).

The same loop runs the ordinary policy (the model's answer is the reply), the small model's
step policy (one turn per clause, the reply from what ran) and a policy written here, which
builds a turn from an earlier turn's result and stops the rest after a failure: the loop only
asks the policy. Real HTTP through the scripted model server, the real OpenAI-compatible
provider, real tools.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.agent.rounds import TaskEnv
from loopact.agent.steps import split_clauses
from loopact.agent.task import TaskRun
from loopact.agent.turns import Outcomes, TaskView, Turn
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool


def robot_tools(turns: list[float]) -> list[Tool]:
    """A motion that works, a nod that fails, and a look-up."""

    @tool(safety=SafetyClass.MOTION)
    def turn_left(angle_deg: float) -> dict[str, str]:
        """Turn the robot left in place."""
        turns.append(angle_deg)
        return {"result": f"turned left {angle_deg:.1f} degrees and reached the target"}

    @tool(safety=SafetyClass.MOTION)
    def servo_nod() -> dict[str, str]:
        """Nod the camera head."""
        raise RuntimeError("the head servo is not powered")

    @tool(safety=SafetyClass.READ_ONLY)
    def find_object(name: str) -> dict[str, str]:
        """Where an object is."""
        return {"result": f"the {name} is next to the door"}

    return [turn_left, servo_nod, find_object]


def agent_for(
    server: Any, tmp_path: Path, turns: list[float], **options: Any
) -> tuple[Agent, Recorder]:
    model = OpenAIChatModel("scripted", server.base_url, "k", current_task_only=True)
    bounds = options.pop("bounds", None) or Bounds(backoff_base_s=0.01)
    opts = AgentOptions(bounds=bounds, workspace=tmp_path, **options)
    agent = Agent(model, robot_tools(turns), opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def rounds_of(rec: Recorder) -> list[int]:
    return [e.data["round"] for e in rec.of("model_request")]


async def test_one_loop_two_policies_reply_differently_to_the_same_motion(
    scripted_server: Any, tmp_path: Path
) -> None:
    """The ordinary policy streams the model's words and replies with them; the step policy
    (split_steps) replies with what the motion did and never streams the words."""
    script = [
        {"tool_calls": [call("turn_left", {"angle_deg": 90})]},
        {"text": "I turned left and found the red box."},
    ]
    replies = []
    for split in (False, True):
        turns: list[float] = []
        agent, rec = agent_for(scripted_server(script), tmp_path, turns, split_steps=split)
        outcome = await asyncio.wait_for(agent.run_task("turn left 90 degrees"), 60)
        await agent.close()
        assert outcome.status == "completed" and turns == [90], outcome
        streamed = "".join(e.data["text"] for e in rec.of("text_delta"))
        replies.append((outcome.reply, streamed, outcome.rounds, rounds_of(rec)))
    assert replies == [
        ("I turned left and found the red box.", "I turned left and found the red box.", 2, [1, 2]),
        ("Turned left 90.0 degrees and reached the target.", "", 2, [1, 2]),
    ]


async def test_every_request_of_a_task_has_its_own_number_and_is_counted_once(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Tool rounds to the round limit, then the final request without tools (SPEC A2): the
    requests are numbered 1, 2, 3 in their events, and the task counts three."""
    server = scripted_server(
        [
            {"tool_calls": [call("turn_left", {"angle_deg": 10}, "a")]},
            {"tool_calls": [call("turn_left", {"angle_deg": 20}, "b")]},
            {"text": "I turned twice.", "expect": {"no_tools": True}},
        ]
    )
    turns: list[float] = []
    bounds = Bounds(backoff_base_s=0.01, max_rounds=2)
    agent, rec = agent_for(server, tmp_path, turns, bounds=bounds)
    outcome = await asyncio.wait_for(agent.run_task("turn left a little, twice"), 60)
    await agent.close()
    assert outcome.status == "bounded" and outcome.reply.endswith("I turned twice."), outcome
    assert turns == [10, 20]
    assert rounds_of(rec) == [1, 2, 3]
    assert [e.data["round"] for e in rec.of("model_response")] == [1, 2, 3]
    assert outcome.rounds == 3 and rec.of("task_end")[0].data["rounds"] == 3


async def test_the_step_policy_numbers_rounds_across_steps_and_stops_after_a_failed_one(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Three clauses; the second fails, so the third is never asked. Each clause is a turn
    whose first request must be a call; the round numbers run on across the turns."""
    server = scripted_server(
        [
            {"tool_calls": [call("turn_left", {"angle_deg": 90})]},
            {"text": "Turned."},
            {"tool_calls": [call("servo_nod", {})], "expect": {"last_user_contains": "nod"}},
            {"text": "I nodded."},  # claims what failed
        ]
    )
    turns: list[float] = []
    agent, rec = agent_for(server, tmp_path, turns, split_steps=True)
    text = "turn left 90 degrees, then nod, then turn left 90 degrees"
    outcome = await asyncio.wait_for(agent.run_task(text), 60)
    await agent.close()
    assert outcome.status == "completed", outcome
    assert turns == [90]
    assert outcome.reply.startswith("Turned left 90.0 degrees and reached the target. Then ")
    assert "“nod” did not succeed (servo_nod: " in outcome.reply
    assert outcome.reply.endswith("So I did not do: “turn left 90 degrees”."), outcome.reply
    assert "I nodded" not in outcome.reply
    assert rec.of("steps")[0].data["clauses"] == text.replace("then ", "").split(", ")
    assert [(e.data["n"], e.data["of"]) for e in rec.of("clause_start")] == [(1, 3), (2, 3)]
    assert [e.data["ok"] for e in rec.of("clause_end")] == [True, False]
    assert [r.body.get("tool_choice") for r in server.requests] == [
        "required",
        None,
        "required",
        None,
    ]
    assert rounds_of(rec) == [1, 2, 3, 4] and outcome.rounds == 4
    assert not rec.of("text_delta")  # a step's own answer is not the reply


async def test_steps_in_action_text_mode_run_with_the_tools_in_the_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    """As the step loop has always run them (issue 13): a split instruction's steps are
    ReAct rounds with the tools in the request even with ``tool_calling: text``, so that a
    step's first response can be required to be a call."""
    turn = {"tool_calls": [call("turn_left", {"angle_deg": 45})]}
    server = scripted_server([turn, {"text": "ok"}, turn, {"text": "ok"}])
    turns: list[float] = []
    agent, _ = agent_for(server, tmp_path, turns, split_steps=True, tool_calling="text")
    outcome = await asyncio.wait_for(
        agent.run_task("turn left 45 degrees, then turn left 45 degrees again"), 60
    )
    await agent.close()
    assert outcome.status == "completed" and turns == [45, 45], outcome
    assert [r.body.get("tool_choice") for r in server.requests][::2] == ["required"] * 2
    assert all("turn_left" in str(r.body.get("tools")) for r in server.requests)


class Relay:
    """A policy written against the seam alone: the second turn carries what the first
    found; a turn whose last call failed stops the turns after it."""

    asks_final_answer = True

    def __init__(self, task: TaskView) -> None:
        self.task = task
        self.quiet = True
        self.asked = ["find the red box", "drive to the red box", "nod"]
        self.results: list[tuple[str, Outcomes]] = []
        self.stopped = False
        self.rounds_seen: list[int] = []

    def next_turn(self) -> Turn | None:
        if self.stopped or len(self.results) == len(self.asked):
            return None
        text = self.asked[len(self.results)]
        if self.results:  # an earlier turn's result, for this one
            _, first_ran = self.results[0]
            text += f" ({first_ran[-1][1].data['result']})"
        return Turn(text, act_first=True)

    def round_done(self, ran: Outcomes) -> None:
        self.rounds_seen.append(len(ran))

    def turn_done(self, answer: str, ran: Outcomes) -> None:
        self.results.append((answer, ran))
        self.stopped = not ran[-1][1].ok

    def reply(self) -> str:
        return " / ".join(f"{r.ok}:{c.name}" for _, ran in self.results for c, r in ran)

    def bounded_text(self, notice: str, said: str) -> str:
        return notice


async def test_a_policy_builds_a_turn_from_an_earlier_result_and_stops_the_rest(
    scripted_server: Any, tmp_path: Path
) -> None:
    """What dependent steps need (issue 45) is there: the task loop sends the turns the
    policy asks for, hands it what each round and turn ran, and stops when it says so."""

    @tool(safety=SafetyClass.MOTION)
    def drive_to(target: str) -> ToolResult:
        """Drive to a target."""
        return ToolResult.failure(f"no path to {target}")

    server = scripted_server(
        [
            {"tool_calls": [call("find_object", {"name": "red box"})]},
            {"text": "Found it."},
            {
                "tool_calls": [call("drive_to", {"target": "door"})],
                "expect": {"last_user_contains": "(the red box is next to the door)"},
            },
            {"text": "Arrived."},
        ]
    )
    turns: list[float] = []
    agent, rec = agent_for(server, tmp_path, turns)
    agent.registry.add(drive_to)
    policies: list[Relay] = []

    def new_policy(task: TaskView, _options: AgentOptions) -> Relay:
        policies.append(Relay(task))
        return policies[-1]

    env = TaskEnv(
        conversation=agent.conversation,
        options=agent.options,
        bus=agent.bus,
        model=lambda: agent.model,
        tool_specs=agent.tool_specs,
        new_dispatcher=agent.new_dispatcher,
        new_policy=new_policy,
    )
    run = TaskRun(env, "relay", "find the red box and drive to it, then nod", ())
    reply = await asyncio.wait_for(run.body(), 60)
    await agent.close()
    assert reply == "True:find_object / False:drive_to"  # "nod" was never asked
    assert policies[0].rounds_seen == [1, 1]
    assert [e.data["name"] for e in rec.of("tool_call")] == ["find_object", "drive_to"]
    assert not rec.of("text_delta")  # the policy said the words are not the reply
    assert run.rounds == 4 and rounds_of(rec) == [1, 2, 3, 4]
    users = [m.text for m in agent.conversation.history if m.role == "user"]
    assert users == ["find the red box", "drive to the red box (the red box is next to the door)"]


_PIECES = st.sampled_from(
    [
        "move forward 1 m", "turn left", "nod", "then", "and", "and then", ", ", "; ", " -> ",
        "→", "first", "finally", "if", "stop", "within", "look", "what you see", "write",
        "前进一米", "然后", "再", "先", "，", "点头", "你看到的", "如果", "\n", " ", "x",
    ]
)  # fmt: skip


@settings(derandomize=True, database=None, deadline=None, max_examples=300)
@given(st.lists(_PIECES | st.text(max_size=6), max_size=12).map("".join))
def test_splitting_never_fails_and_keeps_one_step_whole(text: str) -> None:
    """The step policy splits when its task is made (before the task's error handling):
    any text splits without an error, into the text itself or into non-empty clauses."""
    clauses = split_clauses(text)
    assert clauses == [text] or (len(clauses) > 1 and all(c.strip() for c in clauses)), clauses
