"""Preemption and stop at task level (SPEC A6), confirmation of writes (SPEC C5)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.agent import Bounds, is_stop
from loopact.errors import StopCause, StopReason
from loopact.tools.base import tool


@pytest.mark.parametrize("text", ["/stop", "stop", "STOP!", " 停 ", "停止", "停止。"])
def test_stop_words(text: str) -> None:
    assert is_stop(text)


@pytest.mark.parametrize("text", ["stop at the door", "don't stop", "停下来看看", ""])
def test_not_stop_words(text: str) -> None:
    assert not is_stop(text)


async def test_new_command_during_wait_preempts_before_next_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("wait", {"seconds": 30}, "w1")]},
            {"text": "second task done", "expect": {"contains": "cancelled"}},
        ]
    )
    stopped: list[str] = []

    async def hook(reason: str) -> None:
        stopped.append(reason)

    agent, rec = make_agent(server, tmp_path, stop_hooks=(hook,))
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit("wait half a minute")
    await rec.wait_for(lambda e: e.type == "tool_call" and e.data["name"] == "wait")
    second = agent.submit("never mind, say hi")
    end2 = await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second)
    await agent.close()
    runner.cancel()

    assert end2.data["status"] == "completed"
    seq = [
        (e.type, e.task_id)
        for e in rec.events
        if e.type in ("task_end", "model_request", "task_start")
    ]
    end1 = seq.index(("task_end", first))
    req2 = seq.index(("model_request", second))
    assert end1 < req2
    first_end = [e for e in rec.of("task_end") if e.task_id == first][0]
    assert first_end.data["status"] == "preempted"
    assert stopped and "new command" in stopped[0]
    # typed: the governor's stop_all ends the motions as preempted (issue 38)
    assert isinstance(stopped[0], StopReason) and stopped[0].cause is StopCause.PREEMPTED
    # The cancelled wait got a result, so the second request has no orphan tool call.
    msgs = server.requests[1].body["messages"]
    assert any(m["role"] == "tool" and m["tool_call_id"] == "w1" for m in msgs)


async def test_stop_cancels_without_model_request(scripted_server: Any, tmp_path: Path) -> None:
    cancelled = asyncio.Event()

    @tool(safety="motion")
    async def crawl() -> str:
        """Move slowly forever."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    server = scripted_server([{"tool_calls": [call("crawl", {}, "c")]}])
    reasons: list[str] = []

    async def hook(reason: str) -> None:
        reasons.append(reason)

    agent, rec = make_agent(server, tmp_path, tools=[crawl], stop_hooks=(hook,))
    runner = asyncio.ensure_future(agent.run())
    task_id = agent.submit("crawl")
    await rec.wait_for(lambda e: e.type == "tool_call")
    assert agent.submit("停") is None
    end = await rec.wait_for(lambda e: e.type == "task_end")
    await agent.close()
    runner.cancel()
    assert end.task_id == task_id and end.data["status"] == "preempted"
    assert cancelled.is_set()
    assert len(server.requests) == 1
    assert rec.of("stop")[0].data["source"] == "terminal"
    # a new command preempts, a stop stops: the hooks hear which, typed (issue 38)
    assert [(str(r), r.cause) for r in reasons if isinstance(r, StopReason)] == [
        ("new command from terminal", StopCause.PREEMPTED),
        ("stop from terminal", StopCause.STOPPED),
        ("shutdown", StopCause.STOPPED),  # agent.close()
    ]


async def test_superseded_queued_command_never_reaches_the_model(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "third"}])
    agent, rec = make_agent(server, tmp_path)
    a = agent.submit("first")
    b = agent.submit("second")
    c = agent.submit("third")
    runner = asyncio.ensure_future(agent.run())
    await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == c)
    await agent.close()
    runner.cancel()
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends == {a: "preempted", b: "preempted", c: "completed"}
    assert len(server.requests) == 1


async def test_write_needs_confirmation_and_can_be_allowed(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "note.txt", "content": "hi"}, "fw")]},
            {"text": "written"},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    task = asyncio.ensure_future(agent.run_task("write a note"))
    req = await rec.wait_for(lambda e: e.type == "confirm_request")
    assert req.data["name"] == "file_write"
    assert not (tmp_path / "note.txt").exists()
    assert agent.answer_confirmation(req.data["id"], True, "web")
    outcome = await asyncio.wait_for(task, 20)
    await agent.close()
    assert outcome.status == "completed"
    assert (tmp_path / "note.txt").read_text() == "hi"
    assert rec.of("confirm_response")[0].data == {
        "id": req.data["id"],
        "allowed": True,
        "by": "web",
    }


async def test_write_denied_on_timeout(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "x.txt", "content": "x"}, "fw")]},
            {"text": "not written", "expect": {"contains": "no confirmation"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, confirm_timeout_s=0.1)
    outcome = await agent.run_task("write")
    await agent.close()
    assert outcome.status == "completed"
    assert not (tmp_path / "x.txt").exists()
    assert rec.of("confirm_response")[0].data["by"] == "timeout"


async def test_write_refused_when_nobody_can_confirm(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "x.txt", "content": "x"}, "fw")]},
            {"text": "I need --yes", "expect": {"contains": "--yes"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, interactive=False)
    outcome = await asyncio.wait_for(agent.run_task("write"), 20)
    await agent.close()
    assert outcome.status == "completed"
    assert not rec.of("confirm_request")
    err = rec.of("tool_result")[0].data["error"]
    assert "--yes" in err and "confirm.allow" in err
    assert err.startswith("file_write is a write tool (it changes files, devices or the world")


async def test_allow_list_preapproves(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "y.txt", "content": "y"}, "fw")]},
            {"text": "ok"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, interactive=False, allow=frozenset({"file_write"}))
    await agent.run_task("write")
    await agent.close()
    assert (tmp_path / "y.txt").read_text() == "y"


async def test_reset_clears_history(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"text": "one"}, {"text": "two", "expect": {"contains": "again"}}])
    agent, _ = make_agent(server, tmp_path, bounds=Bounds())
    await agent.run_task("first")
    agent.reset()
    assert [m.role for m in agent.history] == ["system"]
    await agent.run_task("again")
    await agent.close()
    assert len(server.requests[1].body["messages"]) == 2
