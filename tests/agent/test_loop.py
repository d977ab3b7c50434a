"""The ReAct loop end to end through the real OpenAI protocol (SPEC A1, A2, A3, A8, B6, X1)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.agent import Bounds
from loopact.agent.tools import AgentCallTool
from loopact.tools.base import tool
from loopact.trace import TraceWriter, read_trace


async def test_two_round_task_completes_with_trace_events(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_list", {"path": "."})], "expect": {"tools": ["file_list"]}},
            {"text": "The workspace is empty.", "expect": {"contains": "entries"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws")
    trace_path = tmp_path / "t.jsonl"
    writer = TraceWriter(trace_path, header={"model": "scripted"}).attach(agent.bus)
    outcome = await agent.run_task("what is in the workspace?")
    writer.close()
    await agent.close()

    assert outcome.status == "completed"
    assert outcome.reply == "The workspace is empty."
    assert outcome.rounds == 2
    lines = list(read_trace(trace_path))
    assert lines[0]["type"] == "trace_start" and lines[0]["schema"] == 1
    types = [e["type"] for e in lines[1:]]
    # Stream-early dispatch (X1): the call starts when its arguments are complete, before the
    # response ends, so a fast tool's result may come before or after the round's
    # model_response; everything else is in this order (docs/trace.md, Order).
    round_one = ["model_request", "tool_call", "model_response", "tool_result"]
    early = ["model_request", "tool_call", "tool_result", "model_response"]
    rest = ["model_request", "model_response", "reply", "task_end"]
    assert types in (["task_start", *round_one, *rest], ["task_start", *early, *rest]), types
    by_type = {e["type"]: e for e in lines[1:]}
    task_id = by_type["task_start"]["task_id"]
    assert all(e["task_id"] == task_id and isinstance(e["ts"], float) for e in lines[1:])
    assert by_type["task_start"]["text"] == "what is in the workspace?"
    req = lines[2]
    assert req["round"] == 1 and req["n_messages"] == 2 and "file_list" in req["tools"]
    resp = [e for e in lines if e["type"] == "model_response"][0]
    assert resp["tool_calls"] == [
        {"id": "call_file_list", "name": "file_list", "arguments": {"path": "."}}
    ]
    assert resp["finish_reason"] == "tool_calls"
    assert set(resp["usage"]) == {"input_tokens", "output_tokens"}
    assert by_type["tool_call"] == {
        **by_type["tool_call"],
        "id": "call_file_list",
        "name": "file_list",
        "arguments": {"path": "."},
    }
    res = by_type["tool_result"]
    assert res["ok"] is True and res["n_images"] == 0 and res["error"] is None
    assert by_type["reply"]["text"] == "The workspace is empty."
    assert by_type["task_end"]["status"] == "completed" and by_type["task_end"]["rounds"] == 2
    # The second request carried the tool result for the call id.
    body = server.requests[1].body
    tool_msgs = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["tool_call_id"] == "call_file_list"


async def test_every_call_gets_exactly_one_result_errors_included(
    scripted_server: Any, tmp_path: Path
) -> None:
    @tool
    async def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("no_such_tool", {}, "c1"),
                    call("wait", "{not json at all", "c2"),
                    call("wait", {"seconds": "soon"}, "c3"),
                    call("explode", {}, "c4"),
                ]
            },
            {"text": "done"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[explode])
    outcome = await agent.run_task("go")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    assert set(results) == {"c1", "c2", "c3", "c4"}
    assert all(r["ok"] is False for r in results.values())
    assert "unknown tool 'no_such_tool'" in results["c1"]["error"]
    assert "wait" in results["c1"]["error"]  # names the available tools
    assert "seconds" in results["c3"]["error"]
    assert "RuntimeError" in results["c4"]["error"] and "boom" in results["c4"]["error"]
    sent = server.requests[1].body["messages"]
    ids = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert ids == ["c1", "c2", "c3", "c4"]


async def test_max_rounds_then_final_answer_without_tools(
    scripted_server: Any, tmp_path: Path
) -> None:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("wait", {"seconds": 0.01 * (i + 1)}, f"c{i}")]} for i in range(3)
    ]
    turns.append({"text": "I waited three times.", "expect": {"no_tools": True}})
    server = scripted_server(turns)
    agent, rec = make_agent(server, tmp_path, bounds=Bounds(max_rounds=3, backoff_base_s=0.01))
    outcome = await agent.run_task("wait a lot")
    await agent.close()
    assert outcome.status == "bounded"
    assert "3 tool rounds" in outcome.reply
    assert "I waited three times." in outcome.reply
    assert rec.of("bound")[0].data == {"name": "max_rounds", "limit": 3}
    assert rec.of("task_end")[0].data["status"] == "bounded"


async def test_token_budget_trips(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [call("wait", {"seconds": 0.01})],
                "usage": {"prompt_tokens": 900, "completion_tokens": 200},
            }
        ]
    )
    agent, rec = make_agent(server, tmp_path, bounds=Bounds(token_budget=1000))
    outcome = await agent.run_task("go")
    await agent.close()
    assert outcome.status == "bounded"
    assert "1100 tokens" in outcome.reply and "1000" in outcome.reply
    assert rec.of("bound")[0].data["name"] == "tokens"


async def test_task_wall_clock_trips_without_hanging(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"tool_calls": [call("wait", {"seconds": 30})]}])
    agent, rec = make_agent(server, tmp_path, bounds=Bounds(task_timeout_s=0.5))
    outcome = await asyncio.wait_for(agent.run_task("wait long"), 20)
    await agent.close()
    assert outcome.status == "bounded"
    assert "0.5 s" in outcome.reply
    assert rec.of("bound")[0].data["name"] == "wall_clock"
    # The interrupted call still got a result in the history (no orphan tool call).
    assert agent.history[-1].role == "tool"


async def test_tool_timeout_cancels_tool(scripted_server: Any, tmp_path: Path) -> None:
    cancelled = asyncio.Event()

    @tool
    async def hang() -> str:
        """Hangs forever."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    server = scripted_server([{"tool_calls": [call("hang", {})]}, {"text": "it hung"}])
    agent, rec = make_agent(server, tmp_path, tools=[hang], bounds=Bounds(tool_timeout_s=0.2))
    outcome = await agent.run_task("go")
    await agent.close()
    assert outcome.status == "completed"
    assert cancelled.is_set()
    assert "timed out" in rec.of("tool_result")[0].data["error"]


async def test_model_request_timeout_retries_then_fails(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "late", "delay_s": 5}, {"text": "late", "delay_s": 5}])
    agent, rec = make_agent(
        server, tmp_path, bounds=Bounds(request_timeout_s=0.2, max_tries=2, backoff_base_s=0.01)
    )
    outcome = await asyncio.wait_for(agent.run_task("hello"), 20)
    await agent.close()
    assert outcome.status == "failed"
    assert "did not start answering within 0.2 s" in (outcome.error or "")
    assert len(rec.of("model_retry")) == 1


async def test_repeat_guard_answers_identical_call_of_a_constant_tool(
    scripted_server: Any, tmp_path: Path
) -> None:
    """SPEC A3: a tool that declares its answer constant is not run again."""
    runs = 0

    @tool(constant=True)
    async def manual() -> str:
        """Read the manual."""
        nonlocal runs
        runs += 1
        return "press the red button"

    server = scripted_server(
        [
            {"tool_calls": [call("manual", {}, "a")]},
            {"tool_calls": [call("manual", {}, "b")], "expect": {"contains": "red button"}},
            {"text": "Press it.", "expect": {"contains": "result unchanged, answer now"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[manual])
    outcome = await agent.run_task("what does the manual say")
    await agent.close()
    assert outcome.status == "completed"
    assert runs == 1
    second = [e for e in rec.of("tool_result") if e.data["id"] == "b"][0].data
    assert second["data"] == "press the red button" and second["metadata"]["repeat_of"] == "a"


async def test_a_read_of_the_world_runs_again_and_says_when_it_is_unchanged(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 39 item 1: a read-only tool that does not declare itself constant (a camera)
    runs again on an identical call; its fresh result, being the same, carries the repeat
    note, so the model still learns it is asking again. (Before: answered from the first
    result without running.)"""
    runs = 0

    @tool
    async def look() -> str:
        """Look around."""
        nonlocal runs
        runs += 1
        return "a red ball"

    server = scripted_server(
        [
            {"tool_calls": [call("look", {}, "a")]},
            {"tool_calls": [call("look", {}, "b")], "expect": {"contains": "a red ball"}},
            {"text": "I see a red ball.", "expect": {"contains": "result unchanged, answer now"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[look])
    outcome = await agent.run_task("what do you see")
    await agent.close()
    assert outcome.status == "completed"
    assert runs == 2
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    assert "repeat_of" not in results["a"]["metadata"]
    assert results["b"]["data"] == "a red ball" and results["b"]["metadata"]["repeat_of"] == "a"


async def test_a_clock_read_again_after_a_wait_gives_the_time_now(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 39 item 1: clock, wait, clock. The second reading is the time after the wait,
    graded by the real clock at the wait's end, and is not marked as a repeat. (Before: the
    first reading came back, "result unchanged, answer now".)"""

    @tool
    async def clock() -> float:
        """The time now, in seconds since the epoch."""
        return time.time()

    server = scripted_server(
        [
            {"tool_calls": [call("clock", {}, "a")]},
            {"tool_calls": [call("wait", {"seconds": 0.2}, "w")]},
            {"tool_calls": [call("clock", {}, "b")]},
            {"text": "It is later now."},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[clock])
    waited: list[float] = []
    agent.bus.subscribe(
        lambda e: (
            waited.append(time.time()) if e.type == "tool_result" and e.data["id"] == "w" else None
        )
    )
    outcome = await agent.run_task("what time is it, then wait, then again")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    assert results["w"]["ok"] is True and len(waited) == 1
    assert results["b"]["data"] >= waited[0] > results["a"]["data"]
    assert "repeat_of" not in results["b"]["metadata"]


async def test_state_change_between_identical_reads_reruns(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A motion between two identical calls of a constant tool runs it again (SPEC A3)."""
    runs = 0

    @tool(constant=True)
    async def look() -> str:
        """Look around."""
        nonlocal runs
        runs += 1
        return f"view {runs}"

    @tool(safety="motion")
    async def nudge() -> str:
        """Move a little."""
        return "moved"

    server = scripted_server(
        [
            {"tool_calls": [call("look", {}, "a")]},
            {"tool_calls": [call("nudge", {}, "m")]},
            {"tool_calls": [call("look", {}, "b")]},
            {"text": "ok"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[look, nudge])
    outcome = await agent.run_task("look, move, look")
    await agent.close()
    assert outcome.status == "completed"
    assert runs == 2


async def test_too_many_calls_two_invalid_rounds_force_text(
    scripted_server: Any, tmp_path: Path
) -> None:
    runs = 0

    @tool
    async def ping(n: int) -> int:
        """Ping."""
        nonlocal runs
        runs += 1
        return n

    server = scripted_server(
        [
            {"tool_calls": [call("ping", {"n": i}, f"p{i}") for i in range(4)]},
            {"tool_calls": [call("ping", {"n": 9}, "p9")]},
            {"text": "Pinged three times.", "expect": {"no_tools": True}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[ping])
    outcome = await agent.run_task("ping a lot")
    await agent.close()
    assert runs == 3  # the read-only limit is 3 per task
    assert outcome.status == "bounded"
    assert rec.of("bound")[0].data["name"] == "invalid_rounds"
    refused = [e.data for e in rec.of("tool_result") if not e.data["ok"]]
    assert [r["id"] for r in refused] == ["p3", "p9"]
    assert "already called 3 times" in refused[0]["error"]


async def test_motion_calls_are_never_deduplicated(scripted_server: Any, tmp_path: Path) -> None:
    turns = 0

    @tool(safety="motion")
    async def turn_left(angle_deg: float) -> str:
        """Turn."""
        nonlocal turns
        turns += 1
        return "turned"

    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("turn_left", {"angle_deg": 90}, "t1"),
                    call("turn_left", {"angle_deg": 90}, "t2"),
                ]
            },
            {"text": "Turned 180."},
        ]
    )
    agent, _ = make_agent(server, tmp_path, tools=[turn_left])
    await agent.run_task("turn around")
    await agent.close()
    assert turns == 2


async def test_retry_after_429_then_success(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"error": {"status": 429, "message": "slow down", "retry_after": "0.05"}},
            {"error": {"status": 503, "message": "busy"}},
            {"text": "hello"},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "hello"
    retries = rec.of("model_retry")
    assert [r.data["attempt"] for r in retries] == [1, 2]
    assert retries[0].data["delay_s"] >= 0.05


async def test_a_retry_never_goes_sooner_than_retry_after(
    scripted_server: Any, tmp_path: Path
) -> None:
    """SPEC B6. Before: a Retry-After longer than backoff_max_s was cut to it, so the retry
    came before the server allowed and was refused again."""
    server = scripted_server(
        [{"error": {"status": 429, "message": "slow down", "retry_after": "0.3"}}, {"text": "ok"}]
    )
    bounds = Bounds(backoff_base_s=0.01, backoff_max_s=0.05, retry_after_max_s=5)
    agent, rec = make_agent(server, tmp_path, bounds=bounds)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.reply == "ok"
    assert [r.data["delay_s"] for r in rec.of("model_retry")] == [0.3]


async def test_a_retry_after_longer_than_loopact_waits_fails_at_once_saying_so(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [{"error": {"status": 429, "message": "slow down", "retry_after": "3600"}}]
    )
    bounds = Bounds(backoff_base_s=0.01, backoff_max_s=0.05)  # retry_after_max_s: 60 s
    agent, rec = make_agent(server, tmp_path, bounds=bounds)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.status == "failed" and len(server.requests) == 1
    assert rec.of("model_retry") == []
    assert "the server asks to wait 3600 s before the next request, longer than loopact " in (
        outcome.error or ""
    )
    assert "waits (60 s): not retried, try again later" in (outcome.error or "")


async def test_no_retry_on_400_and_key_never_in_errors(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"error": {"status": 400, "message": "bad request body"}}])
    agent, rec = make_agent(server, tmp_path)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.status == "failed"
    assert "bad request body" in (outcome.error or "")
    assert not rec.of("model_retry")
    assert all("sk-test-secret" not in json.dumps(e.to_json(), default=str) for e in rec.events)


async def test_endpoint_down_is_a_clear_failure(tmp_path: Path) -> None:
    from loopact.agent import Agent, AgentOptions
    from loopact.llm.openai_chat import OpenAIChatModel
    from loopact.tools.registry import ToolRegistry

    model = OpenAIChatModel(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")
    agent = Agent(model, ToolRegistry(), AgentOptions(bounds=Bounds(backoff_base_s=0.01)))
    outcome = await asyncio.wait_for(agent.run_task("hi"), 20)
    await agent.close()
    assert outcome.status == "failed"
    assert outcome.error and "model request failed" in outcome.error.lower()
    assert "cannot reach http://127.0.0.1:9/v1" in outcome.error


async def test_tool_starts_before_stream_ends_and_results_in_call_order(
    scripted_server: Any, tmp_path: Path
) -> None:
    order: list[str] = []
    second_started = asyncio.Event()

    @tool
    async def first() -> str:
        """First."""
        order.append("first-start")
        # Overlap is shown by an event, not by time: first ends only once second has started
        # (were read-only calls run one after the other, this would time out and fail).
        await asyncio.wait_for(second_started.wait(), 20)
        order.append("first-end")
        return "1"

    @tool
    async def second() -> str:
        """Second."""
        order.append("second-start")
        second_started.set()
        return "2"

    server = scripted_server(
        [
            {
                "tool_calls": [call("first", {}, "a"), call("second", {}, "b")],
                "text": "",
                "chunk_size": 4,
                "chunk_delay_s": 0.02,
            },
            {"text": "ok"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[first, second])
    await agent.run_task("go")
    await agent.close()
    types = rec.types()
    # X1: the first call started (tool_call event) before the model response was complete.
    assert types.index("tool_call") < types.index("model_response")
    # Independent read-only calls overlap: second started before first ended.
    assert order.index("second-start") < order.index("first-end")
    sent = server.requests[1].body["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["a", "b"]


async def test_cut_stream_after_dispatch_is_not_replayed(
    scripted_server: Any, tmp_path: Path
) -> None:
    moves = 0

    @tool(safety="motion")
    async def step() -> str:
        """One step."""
        nonlocal moves
        moves += 1
        return "stepped"

    server = scripted_server(
        [
            {
                "tool_calls": [call("step", {}, "s1"), call("wait", {"seconds": 0.01}, "w")],
                "chunk_size": 200,
                "cut_after_chunks": 3,
            },
            {"text": "stepped once", "expect": {"contains": "stepped"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[step])
    outcome = await agent.run_task("step")
    await agent.close()
    assert outcome.status == "completed"
    assert moves == 1
    assert not rec.of("model_retry")
    sent = server.requests[1].body["messages"]
    assistant = [m for m in sent if m["role"] == "assistant"][0]
    assert [c["id"] for c in assistant["tool_calls"]] == ["s1"]


async def test_truncated_call_is_not_executed(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [call("file_write", '{"path": "a.txt", "content": "hel', "fw")],
                "finish_reason": "length",
            },
            {"text": "I will retry.", "expect": {"contains": "truncated"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, auto_approve=True)
    outcome = await agent.run_task("write a file")
    await agent.close()
    assert outcome.status == "completed"
    assert not (tmp_path / "a.txt").exists()
    res = rec.of("tool_result")[0].data
    assert res["ok"] is False and "truncated" in res["error"]


async def test_an_answer_cut_at_max_tokens_says_so(scripted_server: Any, tmp_path: Path) -> None:
    """A text answer the server ended with ``finish_reason: length`` is half an answer: the
    reply carries a note naming the limit (SPEC A2); a complete one carries none."""
    server = scripted_server(
        [
            {"text": "The robot is at x = 1.0 m and it faces", "finish_reason": "length"},
            {"text": "The robot is at x = 1.0 m."},
        ]
    )
    agent, rec = make_agent(server, tmp_path, bounds=Bounds(max_tokens_round=64))
    cut = await agent.run_task("where are you?")
    whole = await agent.run_task("where are you now?")
    await agent.close()
    assert cut.reply.startswith("The robot is at x = 1.0 m and it faces")
    assert "cut off at the limit of 64 output tokens" in cut.reply
    assert whole.reply == "The robot is at x = 1.0 m."
    assert [e.data["text"] for e in rec.of("reply")] == [cut.reply, whole.reply]


async def test_a_calls_arguments_are_validated_once(scripted_server: Any, tmp_path: Path) -> None:
    """Issue 14: the dispatcher checks a call once and runs it without checking again; the
    tool gets the normalised arguments (an integer field given 2.0 gets the int 2)."""
    seen: list[Any] = []

    @tool(safety="idempotent")
    async def beep(times: int) -> str:
        """Beep.

        Args:
            times: How often.
        """
        seen.append(times)
        return "beeped"

    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("beep", {"times": 2.0}, "b1"),
                    call("beep", {"times": "x"}, "b2"),
                ]
            },
            {"text": "Beeped twice."},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[beep])
    checks: list[str] = []
    check = agent.registry.check

    def counting_check(c: Any) -> Any:
        checks.append(c.id)
        return check(c)

    agent.registry.check = counting_check  # type: ignore[method-assign]
    outcome = await agent.run_task("beep twice")
    await agent.close()
    assert outcome.reply == "Beeped twice."
    assert checks == ["b1", "b2"]  # once per call, none again at run time
    assert seen == [2] and type(seen[0]) is int
    bad = next(e for e in rec.of("tool_result") if e.data["id"] == "b2")
    assert bad.data["ok"] is False and bad.data["metadata"]["error_kind"] == "arguments"


async def test_a_plan_request_inside_a_round_is_not_a_tool_round(
    scripted_server: Any, tmp_path: Path
) -> None:
    """``max_rounds`` counts tool rounds (SPEC A2): the planning request of an ``agent_call``
    is a model request of the task, not a round of its own, so with ``max_rounds=3`` an
    ``agent_call`` round, a call round and the answer all fit."""
    waited: list[float] = []

    @tool
    async def pause(seconds: float) -> str:
        """Pause a while."""
        waited.append(seconds)
        return "paused"

    plan = {"steps": [{"id": 1, "tool": "pause", "parameters": {"seconds": 0.01}}]}
    server = scripted_server(
        [
            {"tool_calls": [call("agent_call", {"task": "pause once"}, "ac")]},
            {"text": json.dumps(plan), "expect": {"no_tools": True}},
            {"tool_calls": [call("pause", {"seconds": 0.02}, "p2")]},
            {"text": "Paused twice."},
        ]
    )
    agent, rec = make_agent(
        server, tmp_path, tools=[pause], bounds=Bounds(max_rounds=3, backoff_base_s=0.01)
    )
    agent.registry.add(AgentCallTool(agent))
    outcome = await agent.run_task("pause, then pause again")
    await agent.close()
    assert waited == [0.01, 0.02]  # both tool rounds ran
    assert outcome.status == "completed", outcome
    assert outcome.reply == "Paused twice."
    assert not rec.of("bound")
    assert outcome.rounds == 4  # every model request is counted in the outcome
