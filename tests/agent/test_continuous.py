"""Continuous LoopAct mode (SPEC A7) and context compression in the loop (SPEC E1)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from tests.agent.helpers import Recorder, call, make_agent

from loopact.agent import Agent, AgentOptions
from loopact.agent.compress import is_summary, pairing_problems
from loopact.agent.context import ContextManager
from loopact.agent.tools import make_send_message_tool
from loopact.app.nodes import attach_nodes
from loopact.channels.terminal import ProgressPrinter
from loopact.llm.base import Capabilities, Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.tokens import estimate_message_tokens, estimate_tool_tokens
from loopact.nodes.input import InputNode
from loopact.nodes.local import LocalBus, LocalConnector
from loopact.tools.base import tool
from loopact.tools.registry import ToolRegistry


def ack(text: str, id: str) -> dict[str, Any]:
    return {"tool_calls": [call("send_message", {"text": text}, id)]}


async def test_messages_during_work_are_injected_and_each_acknowledged(
    scripted_server: Any, tmp_path: Path
) -> None:
    release = asyncio.Event()
    working = asyncio.Event()

    @tool(safety="motion")
    async def patrol() -> str:
        """Patrol the room."""
        working.set()
        await release.wait()
        return "patrolled"

    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("send_message", {"text": "On it: patrolling."}, "a1"),
                    call("patrol", {}, "p1"),
                ]
            },
            # the two messages that arrived during the patrol come in one snapshot;
            # each is acknowledged on its own
            {
                "tool_calls": [
                    call("send_message", {"text": "OK, I will check the door."}, "a2"),
                    call("send_message", {"text": "OK, lights off after the patrol."}, "a2b"),
                ],
                "expect": {"contains": "check the door"},
            },
            {**ack("Patrol done.", "a3"), "expect": {"contains": "patrolled"}},
            {"text": ""},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[patrol], mode="continuous")
    agent.registry.add(make_send_message_tool(agent))
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit("patrol the room", source="terminal")
    await asyncio.wait_for(working.wait(), 20)
    agent.submit("also check the door", source="web")
    agent.submit("and switch off the lights", source="terminal")
    release.set()
    await rec.wait_for(lambda e: e.type == "task_end")
    n_requests = len(server.requests)
    # quiet period: nothing arrives, so no model request is made
    await asyncio.sleep(0.3)
    assert len(server.requests) == n_requests == 4
    await agent.close()
    runner.cancel()

    messages = [e.data["text"] for e in rec.of("message")]
    assert messages == [
        "On it: patrolling.",
        "OK, I will check the door.",
        "OK, lights off after the patrol.",
        "Patrol done.",
    ]
    ends = rec.of("task_end")
    assert len(ends) == 1 and ends[0].data["status"] == "completed" and ends[0].task_id == first
    assert not rec.of("reply")
    body = server.requests[1].body["messages"]
    texts = [m["content"] for m in body if m["role"] == "user"]
    assert any("check the door" in t and "switch off the lights" in t for t in texts)
    # the patrol was never preempted by the messages
    assert [e.data["ok"] for e in rec.of("tool_result") if e.data["name"] == "patrol"] == [True]


async def test_plain_text_answer_is_delivered_not_lost(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "Hello! I am here."}])
    agent, rec = make_agent(server, tmp_path, mode="continuous")
    runner = asyncio.ensure_future(agent.run())
    agent.submit("hi")
    await rec.wait_for(lambda e: e.type == "task_end")
    await agent.close()
    runner.cancel()
    assert [e.data["text"] for e in rec.of("message")] == ["Hello! I am here."]


async def test_stop_preempts_continuous_work(scripted_server: Any, tmp_path: Path) -> None:
    @tool(safety="motion")
    async def crawl() -> str:
        """Crawl forever."""
        await asyncio.Event().wait()
        return "never"

    server = scripted_server([{"tool_calls": [call("crawl", {}, "c")]}])
    agent, rec = make_agent(server, tmp_path, tools=[crawl], mode="continuous")
    runner = asyncio.ensure_future(agent.run())
    agent.submit("crawl")
    await rec.wait_for(lambda e: e.type == "tool_call")
    agent.submit("/stop")
    end = await rec.wait_for(lambda e: e.type == "task_end")
    await agent.close()
    runner.cancel()
    assert end.data["status"] == "preempted"


async def test_hourly_budget_pauses_work(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"tool_calls": [call("wait", {"seconds": 0.01}, "w")]}])
    agent, rec = make_agent(server, tmp_path, mode="continuous", hourly_rounds=1)
    runner = asyncio.ensure_future(agent.run())
    agent.submit("wait")
    end = await rec.wait_for(lambda e: e.type == "task_end")
    await agent.close()
    runner.cancel()
    assert end.data["status"] == "bounded"
    assert rec.of("bound")[0].data["name"] == "hourly_budget"
    assert len(server.requests) == 1


def _long_history_turns(n: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for i in range(n):
        turns.append(
            {
                "tool_calls": [call("wait", {"seconds": 0.001 * (i + 1)}, f"w{i}")],
                "usage": {"prompt_tokens": 500 + 400 * i, "completion_tokens": 10},
            }
        )
        turns.append(
            {
                "text": f"answer {i} " + "x" * 400,
                "usage": {"prompt_tokens": 700 + 400 * i, "completion_tokens": 100},
            }
        )
    return turns


async def test_compression_summarises_and_keeps_pairs(scripted_server: Any, tmp_path: Path) -> None:
    checkpoints: list[str] = []

    async def checkpoint(text: str) -> None:
        checkpoints.append(text)

    turns = _long_history_turns(3)
    turns.append(
        {
            "text": "Goal: keep waiting. Progress: waited three times.",
            "expect": {"no_tools": True, "contains": "answer 0"},
        }
    )
    turns.append({"text": "done", "expect": {"contains": "Progress: waited three times."}})
    server = scripted_server(turns)
    agent, rec = make_agent(server, tmp_path, context=ContextManager(1500, checkpoint=checkpoint))
    for i in range(3):
        await agent.run_task(f"wait number {i}")
    out = await agent.run_task("wait once more")
    await agent.close()
    assert out.reply == "done"
    ev = rec.of("context_compressed")[0].data
    assert ev["method"] == "summary" and ev["after_tokens"] < ev["before_tokens"]
    assert checkpoints and "goal: wait once more" in checkpoints[0]
    assert agent.history[0].role == "system"
    assert any(is_summary(m) for m in agent.history)
    assert pairing_problems(agent.history) == []
    last = server.requests[-1].body["messages"]
    assert last[0]["role"] == "system"
    call_ids = {c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    result_ids = {m["tool_call_id"] for m in last if m["role"] == "tool"}
    assert call_ids == result_ids


async def test_bad_summary_leaves_history_as_it_was(scripted_server: Any, tmp_path: Path) -> None:
    turns = _long_history_turns(3)
    turns.append({"tool_calls": [call("wait", {"seconds": 1}, "bad")]})  # summary with a call
    turns.append({"text": "done"})
    server = scripted_server(turns)
    agent, rec = make_agent(server, tmp_path, context=ContextManager(1500, 100_000))
    for i in range(3):
        await agent.run_task(f"wait number {i}")
    before = list(agent.history)
    shown = io.StringIO()
    agent.bus.subscribe(ProgressPrinter(Console(file=shown, width=200), stream_text=False))
    out = await agent.run_task("wait once more")
    await agent.close()
    assert out.reply == "done"
    [kept] = [e.data for e in rec.of("context_compressed")]
    assert kept["method"] == "kept" and kept["before_tokens"] == kept["after_tokens"]
    # the terminal says nothing was compressed, not "context kept: N -> N tokens"
    assert f"context at {kept['before_tokens']} tokens (limit 1500), nothing older" in (
        shown.getvalue()
    )
    assert " -> " not in shown.getvalue()
    assert agent.history[: len(before)] == before
    assert not any(is_summary(m) for m in agent.history)


async def test_sensor_data_wakes_an_idle_agent_without_a_user_message(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 14 acceptance 3: an accumulate-mode sensor message wakes an idle continuous-mode
    agent within 0.5 s, and it reacts, with no user message at all (SPEC A7, C3)."""
    server = scripted_server(
        [
            {
                **ack("Someone opened the front door.", "a1"),
                "expect": {"contains": "front door: opened"},
            },
            {"text": ""},
        ]
    )
    agent, rec = make_agent(server, tmp_path, mode="continuous")
    agent.registry.add(make_send_message_tool(agent))
    bus = LocalBus()
    nodes = await attach_nodes(agent, LocalConnector(bus), text_channel=False)
    door = InputNode(
        "door", LocalConnector(bus), mode="accumulate", kind="text", heartbeat_period_s=0.05
    )
    await door.start()
    runner = asyncio.ensure_future(agent.run())
    await rec.wait_for(lambda e: e.type == "node_added" and e.data.get("name") == "door")
    assert not rec.of("task_start") and not server.requests  # idle on a quiet input

    await door.publish("front door: opened")
    # woken: the model request goes out within 0.5 s of the sensor message
    request = await rec.wait_for(lambda e: e.type == "model_request", timeout=0.5)
    message = await rec.wait_for(lambda e: e.type == "message")
    await rec.wait_for(lambda e: e.type == "task_end")
    runner.cancel()
    await door.stop()
    await nodes.close()
    await agent.close()

    assert message.data == {"text": "Someone opened the front door.", "source": "agent"}
    start = rec.of("task_start")[0]
    assert start.data["source"] == "inputs" and request.task_id == start.task_id
    assert not rec.of("input")  # no user message was ever submitted
    assert "front door: opened" in json.dumps(server.requests[0].body["messages"])


def _log_chunk(n: int) -> str:
    return f"log chunk {n}: " + " ".join(f"line{n}-{i} ok" for i in range(170))


async def test_long_continuous_run_is_compressed_before_it_passes_the_context(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 14 acceptance 4: with no configured limit, the default threshold (60 % of the
    room the system prompt and the tools leave in the model's context size) applies; the
    history is summarised before any request passes the context size, and every tool call
    keeps its result (SPEC E1, B4)."""
    context_tokens = 4000

    @tool(safety="idempotent")
    async def read_log(chunk: int) -> str:
        """Read one chunk of the robot's log.

        Args:
            chunk: The chunk number.
        """
        return _log_chunk(chunk)

    def reads(first: int, last: int) -> list[dict[str, Any]]:
        return [
            {"tool_calls": [call("read_log", {"chunk": n}, f"r{n}")]}
            for n in range(first, last + 1)
        ]

    def summary(upto: int) -> dict[str, Any]:
        return {
            "text": f"Goal: watch the log. Progress: read chunks 1 to {upto}, all lines ok.",
            "expect": {"no_tools": True, "contains": f"log chunk {upto - 1}:"},
        }

    turns = [*reads(1, 4), summary(3), *reads(5, 6), summary(5), *reads(7, 8), summary(7)]
    turns += [{**ack("All log lines are ok.", "done"), "expect": {"contains": "read chunks 1"}}]
    turns.append({"text": ""})
    server = scripted_server(turns)
    model = OpenAIChatModel(
        model="scripted",
        base_url=server.base_url,
        api_key="sk-test",
        capabilities=Capabilities(context_tokens=context_tokens),
    )
    agent = Agent(
        model,
        ToolRegistry([read_log]),
        AgentOptions(system_prompt="You watch a robot.", mode="continuous", workspace=tmp_path),
    )
    agent.registry.add(make_send_message_tool(agent))
    rec = Recorder()
    agent.bus.subscribe(rec)
    runner = asyncio.ensure_future(agent.run())
    agent.submit("watch the log")
    await rec.wait_for(lambda e: e.type == "task_end")
    runner.cancel()
    await agent.close()
    # Without compression the log chunks alone would not fit in the context.
    assert sum(len(_log_chunk(n)) for n in range(1, 9)) // 4 > context_tokens
    compressions = [e.data for e in rec.of("context_compressed")]
    assert [c["method"] for c in compressions] == ["summary", "summary", "summary"]
    # no limit configured: the default threshold applies, 60 % of the room left by what
    # every request carries (the system message and the tools, as the server received them)
    first = server.requests[0].body
    system = [Message.system(m["content"]) for m in first["messages"] if m["role"] == "system"]
    sent = {t["function"]["name"] for t in first["tools"]}
    specs = [s for s in agent.registry.specs() if s.name in sent]
    assert len(specs) == len(sent) == 2
    fixed = estimate_message_tokens(system) + estimate_tool_tokens(specs)
    assert 0 < fixed < context_tokens // 4
    limit = int(fixed + 0.6 * (context_tokens - fixed))
    assert {c["limit"] for c in compressions} == {limit}
    assert all(c["after_tokens"] < c["before_tokens"] for c in compressions)
    # every request stayed inside the context, by the server's own count (body bytes / 4)
    sizes = [len(r.raw_body) // 4 for r in server.requests]
    assert max(sizes) < context_tokens, sizes
    # ... and sent every tool call with its result
    for r in server.requests:
        messages = r.body["messages"]
        calls = {
            c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
        }
        assert calls == {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert pairing_problems(agent.history) == []
    assert [e.data["text"] for e in rec.of("message")] == ["All log lines are ok."]
