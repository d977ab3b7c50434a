"""Fault injection through the scripted model server and the tools (issue 20 reliability).

Every fault of the issue's list that reaches the agent through its model endpoint or its tools,
each against the real agent on the real OpenAI provider over HTTP, with the real robot tools and
safety governor on a kinematic base (``kinematic.Driven``). After each fault the same checks:

- the task ends as specified (a clear reply or a clear error, never a hang or a crash);
- the robot is stopped: last base command zero, nothing owns the base, the base at rest;
- every tool call got exactly one result;
- nothing is lost from memory and the agent still serves: the next command on the same
  agent is answered, and its request carries the faulted command (the script's ``expect``).

The node faults (a node process killed mid-call, restarted with another schema) are in
``test_node_faults.py``, the simulator's camera failing in ``test_camera_fault.py``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, call
from tests.reliability.kinematic import Driven

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.testing.mqtt_broker import free_port
from loopact.tools.base import Tool, tool
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

FIRST = "the faulted command"
NEXT = {"text": "Still here.", "expect": {"contains": FIRST}}
HTML_502 = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)
HTML_500 = "<html><body><h1>Internal Server Error</h1><p>Something broke.</p></body></html>"
HTML_503 = "<html><head><title>503 Service Unavailable</title></head><body>busy</body></html>"


@tool
async def explode() -> str:
    """A tool that raises."""
    raise RuntimeError("boom: the gripper driver crashed")


HANG_CANCELLED: list[bool] = []


@tool(timeout_s=0.5)
async def hang() -> str:
    """A tool that never returns."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        HANG_CANCELLED.append(True)
        raise
    return "never"


@tool
async def huge() -> str:
    """A tool that returns 50 MB of text."""
    return "x" * 50_000_000


def build_agent(
    base_url: str, workspace: Path, rig: Driven, bounds: Bounds
) -> tuple[Agent, Recorder]:
    """The agent as ``loopact run`` assembles it for a robot: built-in, robot and fault tools,
    the governor's ``stop_all`` as the stop hook."""
    registry = ToolRegistry(make_builtin_tools(workspace))
    extra: list[Tool] = [*rig.tools, explode, hang, huge]
    for t in extra:
        registry.add(t)
    model = OpenAIChatModel(model="scripted", base_url=base_url, api_key="sk-test")
    options = AgentOptions(
        bounds=bounds,
        system_prompt="You are a test robot.",
        workspace=workspace,
        stop_hooks=(rig.governor.stop_all,),
    )
    agent = Agent(model, registry, options)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def fast_bounds(**over: Any) -> Bounds:
    values: dict[str, Any] = {
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.2,
        "request_timeout_s": 10.0,
        "stream_idle_timeout_s": 10.0,
        "task_timeout_s": 60.0,
    }
    values.update(over)
    return Bounds(**values)


def one_result_per_call(rec: Recorder) -> None:
    calls = [e.data["id"] for e in rec.of("tool_call")]
    results = [e.data["id"] for e in rec.of("tool_result")]
    assert sorted(calls) == sorted(results), f"calls {calls}, results {results}"
    assert len(set(results)) == len(results), f"a call got two results: {results}"


async def still_serving(agent: Agent, rig: Driven, rec: Recorder) -> None:
    """The shared after-fault checks: robot stopped, one result per call, the next command."""
    await rig.settle()
    assert rig.stopped() is None, rig.stopped()
    one_result_per_call(rec)
    nxt = await asyncio.wait_for(agent.run_task("are you still there?"), 30)
    assert nxt.status == "completed" and nxt.reply == "Still here.", nxt


def moved_m(rig: Driven) -> float:
    return float((rig.robot.x_m**2 + rig.robot.y_m**2) ** 0.5)


def _chunk(delta: dict[str, Any]) -> str:
    body = {
        "id": "chatcmpl-stall",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }
    return f"data: {json.dumps(body)}\n\n"


def stalled_after(delta: dict[str, Any]) -> dict[str, Any]:
    """A turn whose stream sends one chunk with ``delta``, then nothing, never closing."""
    return {
        "wire": [_chunk({"role": "assistant", **delta}), "data: [DONE]\n\n"],
        "chunk_delay_s": 60,
    }


def stalled_after_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A turn whose stream sends one complete tool call, then nothing, never closing."""
    call_delta = {"index": 0, "id": "stalled_call", "type": "function"}
    call_delta["function"] = {"name": name, "arguments": json.dumps(args)}
    return stalled_after({"tool_calls": [call_delta]})


@dataclass
class Fault:
    """One injected fault: the turns answering the faulted command and what must follow."""

    turns: list[dict[str, Any]]
    status: str
    says: tuple[str, ...] = ()  # in the reply (completed/bounded) or the error (failed)
    never_says: tuple[str, ...] = ()
    bounds: dict[str, Any] = field(default_factory=dict)
    retries: int = 0
    moved_m: float | None = None  # the base's true displacement afterwards, +- 0.05 m
    failed_results: tuple[str, ...] = ()  # text in the error of the one failed tool result


def fail(status: int, body: str | None = None, **extra: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"status": status, "message": "upstream refused", **extra}
    if body is not None:
        error["body"] = body
    return {"error": error}


MOVE = call("move_forward", {"distance_m": 0.3}, "m1")

FAULTS: dict[str, Fault] = {
    "429_with_retry_after": Fault(
        [fail(429, retry_after="0.05"), {"text": "Done after a pause."}],
        "completed",
        says=("Done after a pause.",),
        retries=1,
    ),
    "429_without_retry_after": Fault(
        [fail(429), fail(429), {"text": "Done after two pauses."}],
        "completed",
        says=("Done after two pauses.",),
        retries=2,
    ),
    "429_on_every_try": Fault(
        [fail(429), fail(429), fail(429)],
        "failed",
        says=("429",),
        retries=2,
    ),
    "5xx_html_pages_then_success": Fault(
        [fail(500, HTML_500), fail(502, HTML_502), {"text": "Back."}],
        "completed",
        says=("Back.",),
        retries=2,
    ),
    "503_html_on_every_try": Fault(
        [fail(503, HTML_503), fail(502, HTML_502), fail(503, HTML_503)],
        "failed",
        says=("503 Service Unavailable",),
        never_says=("<html", "<title", "<body"),
        retries=2,
    ),
    "5xx_after_a_motion": Fault(
        [{"tool_calls": [MOVE]}, fail(502, HTML_502), fail(502, HTML_502), fail(502, HTML_502)],
        "failed",
        says=("502 Bad Gateway",),
        never_says=("<html",),
        retries=2,
        moved_m=0.3,
    ),
    "stream_cut_after_a_tool_call_started": Fault(
        [
            {
                "tool_calls": [MOVE, call("wait", {"seconds": 0.01}, "w1")],
                "chunk_size": 200,
                "cut_after_chunks": 3,
            },
            {"text": "Moved 0.3 m."},
        ],
        "completed",
        says=("Moved 0.3 m.",),
        moved_m=0.3,
    ),
    "stream_cut_before_any_call": Fault(
        [
            {"text": "I will move forwa", "chunk_size": 4, "cut_after_chunks": 2},
            {"tool_calls": [MOVE]},
            {"text": "Moved."},
        ],
        "completed",
        says=("Moved.",),
        retries=1,
        moved_m=0.3,
    ),
    "stream_stops_sending_without_closing": Fault(
        [stalled_after({"content": "Let me think about"}), {"text": "Hello."}],
        "completed",
        says=("Hello.",),
        bounds={"stream_idle_timeout_s": 0.3},
        retries=1,
    ),
    "stream_stops_after_a_tool_call_started": Fault(
        [stalled_after_call("move_forward", {"distance_m": 0.3}), {"text": "Moved once."}],
        "completed",
        says=("Moved once.",),
        bounds={"stream_idle_timeout_s": 0.3},
        moved_m=0.3,
    ),
    "stream_sends_only_its_role_chunk_then_stops": Fault(
        [{"text": "never sent", "chunk_size": 4, "chunk_delay_s": 60}, {"text": "Hello."}],
        "completed",
        says=("Hello.",),
        bounds={"request_timeout_s": 0.3},  # no event yet: the first-event timeout applies
        retries=1,
    ),
    "model_never_starts_answering": Fault(
        [{"text": "late", "delay_s": 60}, {"text": "late", "delay_s": 60}],
        "failed",
        says=("did not start answering within 0.3 s",),
        bounds={"request_timeout_s": 0.3, "max_tries": 2},
        retries=1,
    ),
    "tool_raises": Fault(
        [{"tool_calls": [call("explode", {}, "e1")]}, {"text": "The gripper failed."}],
        "completed",
        says=("The gripper failed.",),
        failed_results=("boom: the gripper driver crashed",),
    ),
    "tool_hangs": Fault(
        [{"tool_calls": [call("hang", {}, "h1")]}, {"text": "It hung."}],
        "completed",
        says=("It hung.",),
        failed_results=("timed out",),
    ),
    "wall_clock_bound_during_a_motion": Fault(
        [
            {
                "tool_calls": [
                    call("drive", {"linear_mps": 0.1, "angular_dps": 0, "duration_s": 25}, "d1")
                ]
            },
        ],
        "bounded",
        says=("1 s",),
        bounds={"task_timeout_s": 1.0},
    ),
    "tool_returns_50_mb": Fault(
        [{"tool_calls": [call("huge", {}, "u1")]}, {"text": "That was a lot."}],
        "completed",
        says=("That was a lot.",),
    ),
}


@pytest.mark.parametrize("name", list(FAULTS))
async def test_an_injected_fault_ends_as_specified_and_the_agent_serves_on(
    name: str, tmp_path: Path
) -> None:
    fault = FAULTS[name]
    HANG_CANCELLED.clear()
    async with Driven() as rig:
        with ScriptedModelServer({"turns": [*fault.turns, NEXT]}) as server:
            agent, rec = build_agent(server.base_url, tmp_path, rig, fast_bounds(**fault.bounds))
            try:
                outcome = await asyncio.wait_for(agent.run_task(FIRST), 60)
                text = outcome.error if outcome.status == "failed" else outcome.reply
                assert outcome.status == fault.status, outcome
                for part in fault.says:
                    assert part in (text or ""), (part, outcome)
                for part in fault.never_says:
                    assert part not in (text or ""), (part, outcome)
                assert len(rec.of("model_retry")) == fault.retries, rec.types()
                if fault.moved_m is not None:
                    await rig.settle()
                    assert abs(moved_m(rig) - fault.moved_m) < 0.05, moved_m(rig)
                failed = [e.data for e in rec.of("tool_result") if not e.data["ok"]]
                for part in fault.failed_results:
                    assert len(failed) == 1 and part in failed[0]["error"], failed
                await still_serving(agent, rig, rec)
            finally:
                await agent.close()
            server.assert_consumed()
            # checks of particular faults, on what really happened
            if name == "tool_hangs":
                assert HANG_CANCELLED == [True]  # the hung tool was cancelled, not left running
            if name == "stream_cut_after_a_tool_call_started":
                sent = server.requests[1].body["messages"]
                answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
                assert answered == ["m1"], answered  # what arrived before the cut, once
            if name.startswith("stream_s"):  # the retry says which timeout ended the stream
                why = {
                    "stream_stops_sending_without_closing": "went silent for 0.3 s",
                    "stream_sends_only_its_role_chunk_then_stops": "did not start answering",
                }.get(name)
                if why is not None:
                    assert why in rec.of("model_retry")[0].data["error"], rec.of("model_retry")
            if name == "429_with_retry_after":  # waited as the server said, not the backoff
                assert rec.of("model_retry")[0].data["delay_s"] >= 0.05, rec.of("model_retry")
            if name == "429_without_retry_after":  # the backoff of fast_bounds (0.01 s, x2)
                assert all(e.data["delay_s"] < 0.05 for e in rec.of("model_retry"))
            if name == "wall_clock_bound_during_a_motion":
                assert 0.0 < moved_m(rig) < 2.0  # it drove, then the bound stopped it
            if name == "tool_returns_50_mb":
                sent = server.requests[1].raw_body
                assert len(sent) < 200_000, f"the 50 MB result went to the model: {len(sent)} B"
                assert "x" * 1000 in sent.decode()  # a bounded part of it did


async def test_model_down_at_start_then_up(tmp_path: Path) -> None:
    """Nothing listens on the endpoint: a clear error at once, and the next command is served
    once the endpoint is up (same agent, same port)."""
    port = free_port()
    async with Driven() as rig:
        agent, rec = build_agent(f"http://127.0.0.1:{port}/v1", tmp_path, rig, fast_bounds())
        try:
            outcome = await asyncio.wait_for(agent.run_task(FIRST), 30)
            assert outcome.status == "failed", outcome
            assert f"cannot reach http://127.0.0.1:{port}/v1" in (outcome.error or ""), outcome
            assert len(rec.of("model_retry")) == Bounds().max_tries - 1
            with ScriptedModelServer({"turns": [NEXT]}, port=port) as server:
                await still_serving(agent, rig, rec)
                server.assert_consumed()
        finally:
            await agent.close()


async def test_connection_refused_mid_task_then_back(tmp_path: Path) -> None:
    """The endpoint goes away while a motion runs: the motion ends (once), the task fails with
    a clear error, the robot is stopped, and the next command is served once it is back."""
    port = free_port()
    first = ScriptedModelServer(
        {"turns": [{"tool_calls": [MOVE, call("unplug", {}, "u")]}]}, port=port
    )

    @tool
    async def unplug() -> str:
        """Take the model endpoint down."""
        await asyncio.to_thread(first.stop)
        return "unplugged"

    async with Driven() as rig:
        first.start()
        agent, rec = build_agent(first.base_url, tmp_path, rig, fast_bounds())
        agent.registry.add(unplug)
        try:
            outcome = await asyncio.wait_for(agent.run_task(FIRST), 30)
            first.assert_consumed()
            assert outcome.status == "failed", outcome
            assert f"cannot reach http://127.0.0.1:{port}/v1" in (outcome.error or ""), outcome
            results = {e.data["id"]: e.data["ok"] for e in rec.of("tool_result")}
            assert results == {"m1": True, "u": True}
            await rig.settle()
            assert abs(moved_m(rig) - 0.3) < 0.05, moved_m(rig)
            with ScriptedModelServer({"turns": [NEXT]}, port=port) as again:
                await still_serving(agent, rig, rec)
                again.assert_consumed()
        finally:
            await agent.close()
