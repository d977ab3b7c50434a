"""A Dify conversation that vanishes mid-task (issue 22 item 9, SPEC B3, B6).

Round 2 gets HTTP 404 "Conversation Not Exists.": the retry starts a new conversation, and
its first query must carry the task (the user's instruction and what already ran), not only
the last tool result. Real HTTP (the scripted Dify protocol), the real Dify provider and loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.dify import DifyModel, task_recap
from loopact.llm.messages import Message
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
TASK = "write hello into notes/a.txt, then list the notes folder"


async def test_a_new_conversation_carries_the_task(
    scripted_server: Factory, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"text": 'Writing it.\nfile_write(path="notes/a.txt", content="hello")'},
            {"error": {"status": 404, "message": "Conversation Not Exists.", "code": "not_found"}},
            {
                "text": 'file_list(path="notes")',
                "expect": {"contains": TASK},
                "extras": {"dify": {"conversation_id": "conv-new"}},
            },
            {"text": "finishtask()"},
        ]
    )
    workspace = tmp_path / "ws"
    model = DifyModel(base_url=server.base_url, api_key="app-k", request_timeout_s=10)
    agent = Agent(
        model,
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(
            bounds=Bounds(backoff_base_s=0.01, backoff_max_s=0.05),
            workspace=workspace,
            auto_approve=True,
        ),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    outcome = await agent.run_task(TASK)
    await agent.close()
    assert outcome.status == "completed"
    assert (workspace / "notes" / "a.txt").read_text() == "hello"
    assert [e.data["name"] for e in rec.of("tool_call")] == ["file_write", "file_list"]
    bodies = [r.json() for r in server.requests if r.path.endswith("/chat-messages")]
    lost, fresh, after = bodies[1], bodies[2], bodies[3]
    assert lost["conversation_id"] == "conv-scripted-1" and fresh["conversation_id"] == ""
    query = fresh["query"]
    # The instruction, what already ran and its result, then the new result.
    assert f"The task: {TASK}" in query
    assert 'You wrote: Writing it. file_write(path="notes/a.txt", content="hello")' in query
    assert query.index("The task:") < query.rindex("Result of file_write")
    # The action catalogue (the system prompt) leads, as on the first request.
    assert bodies[0]["query"].startswith("Available actions:")
    assert query.startswith("Available actions:")
    assert after["conversation_id"] == "conv-new" and "The task:" not in after["query"]


def test_recap_rules() -> None:
    history = [
        Message.system("catalogue"),
        Message.user("first task"),
        Message.assistant("done()"),
        Message.user("second task"),
        Message.assistant("look()"),
        Message.user("Result of look(): ok\na red ball"),
    ]
    tail = [Message.user("Result of wait(): ok")]
    recap = task_recap(history, tail, task="second task")
    assert "The task: second task" in recap and "first task" not in recap
    assert "You wrote: look()" in recap and "Result of look(): ok a red ball" in recap
    # Without the task given, the last user message that is not a result stands for it.
    assert "The task: second task" in task_recap(history, tail)
    # The task starts in the new text: nothing to carry over.
    assert task_recap(history, [Message.user("third task")]) == ""
    assert task_recap(history[:2], [Message.user("x")], task="x") == ""
    # Long histories keep the newest steps.
    many = [history[3], *[Message.assistant("step " + "x" * 400) for _ in range(30)]]
    long_recap = task_recap(many, tail, task="second task")
    assert len(long_recap) < 4000 and "(earlier steps left out)" in long_recap
