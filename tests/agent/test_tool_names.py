"""Mangled tool names from real models resolve to the declared tool (issue 22 items 3, 4).

Whitespace and newlines around the name, a ``functions.`` (or ``default_api.``) prefix, a
chat-template token glued on, another letter case: the declared tool runs, the history keeps
the clean name (the next request shows it), and the result records what was normalised. An
unresolvable name stays an "unknown tool" result. Real HTTP, real providers, real files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, make_agent

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.base import Capabilities
from loopact.llm.dify import DifyModel
from loopact.llm.textcalls import find_bare_json_calls
from loopact.llm.toolnames import resolve_tool_name
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
FAST = Bounds(backoff_base_s=0.01, backoff_max_s=0.05)
ARGS = {"path": "note.txt", "content": "hello"}


@pytest.mark.parametrize(
    "name",
    [
        "file_write\n",
        " file_write ",
        "functions.file_write",
        "functions.file_write\n",
        "default_api.file_write",
        "tools:file_write",
        "`file_write`",
        "file_write<|channel|>commentary",
        "File_Write",
        "\u00a0file_write\u3000",  # no-break and ideographic spaces
        "file_write\u200b\ufeff",  # zero-width space, byte-order mark
        "\vfunctions.functions.file_write\f",  # the prefix twice
    ],
)
async def test_a_mangled_name_runs_the_declared_tool(
    scripted_server: Factory, tmp_path: Path, name: str
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [{"id": "c1", "name": name, "arguments": ARGS}]},
            {"text": "Written.", "expect": {"contains": '"ok": true'}},
        ]
    )
    workspace = tmp_path / "ws"
    agent, rec = make_agent(server, workspace, bounds=FAST, auto_approve=True)
    outcome = await agent.run_task("write hello into note.txt")
    await agent.close()
    assert (workspace / "note.txt").read_text() == "hello"
    assert outcome.reply == "Written."
    (call,) = rec.of("tool_call")
    (result,) = rec.of("tool_result")
    assert call.data["name"] == result.data["name"] == "file_write"
    assert result.data["metadata"]["normalized"]["tool"] == {"from": name, "to": "file_write"}
    # The history holds the clean name, so the next request does too.
    sent = server.requests[1].json()["messages"]
    (assistant,) = [m for m in sent if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["file_write"]
    assert agent.history[-3].tool_calls[0].name == "file_write"


@pytest.mark.parametrize("name", ["functions.nope", "file_writer", "functions.", "\n"])
async def test_an_unresolvable_name_stays_an_unknown_tool(
    scripted_server: Factory, tmp_path: Path, name: str
) -> None:
    server = scripted_server(
        [{"tool_calls": [{"id": "c1", "name": name, "arguments": ARGS}]}, {"text": "Sorry."}]
    )
    agent, rec = make_agent(server, tmp_path / "ws", bounds=FAST, auto_approve=True)
    await agent.run_task("write hello into note.txt")
    await agent.close()
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False
    assert "unknown tool" in result.data["error"] and "normalized" not in result.data["metadata"]
    assert not (tmp_path / "ws" / "note.txt").exists()


async def test_action_text_with_a_functions_prefix(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Dify (action text): ``functions.file_write(...)`` is the action file_write(...)."""
    server = scripted_server(
        [
            {"text": 'Writing.\nfunctions.file_write(path="note.txt", content="hello")'},
            {"text": "functions.finishtask()"},
        ]
    )
    workspace = tmp_path / "ws"
    model = DifyModel(base_url=server.base_url, api_key="app-k", request_timeout_s=10)
    agent = Agent(
        model,
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(bounds=FAST, workspace=workspace, auto_approve=True),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    outcome = await agent.run_task("write hello into note.txt")
    await agent.close()
    assert (workspace / "note.txt").read_text() == "hello"
    assert [e.data["name"] for e in rec.of("tool_call")] == ["file_write"]
    assert outcome.status == "completed"


@pytest.mark.parametrize(
    "name", ["functions.file_write", " file_write\n", "default_api.File_Write"]
)
async def test_a_bare_json_call_with_a_mangled_name_is_a_call(
    scripted_server: Factory, tmp_path: Path, name: str
) -> None:
    """Endpoints without native calls, tools in the prompt (``tool_calling: native``, or a
    server that ignores the grammar): a bare JSON object is a call when its name resolves
    to a declared tool, not only when it is one exactly (it was answer text before)."""
    text = json.dumps({"name": name, "arguments": ARGS})
    server = scripted_server(
        [{"text": f"```json\n{text}\n```"}, {"text": "Written.", "expect": {"contains": "ok"}}]
    )
    workspace = tmp_path / "ws"
    agent, rec = make_agent(
        server,
        workspace,
        bounds=FAST,
        auto_approve=True,
        tool_calling="native",
        capabilities=Capabilities(native_tool_calls=False),
    )
    outcome = await agent.run_task("write hello into note.txt")
    await agent.close()
    assert (workspace / "note.txt").read_text() == "hello"
    assert outcome.reply == "Written."
    (result,) = rec.of("tool_result")
    assert result.data["name"] == "file_write"
    assert result.data["metadata"]["normalized"]["tool"] == {"from": name, "to": "file_write"}


async def test_plan_steps_with_mangled_tool_names_run(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Plan mode: a step naming ``functions.file_write`` or ``" file_read\n"`` is the declared
    tool; the whole plan used to be rejected ("unknown tool") and the task failed."""
    steps = [
        {"id": 1, "tool": "functions.file_write", "parameters": ARGS},
        {"id": 2, "tool": " file_read\n", "parameters": {"path": "note.txt"}},
    ]
    plan = "```json\n" + json.dumps({"steps": steps}) + "\n```"
    server = scripted_server([{"text": plan, "expect": {"no_tools": True}}])
    workspace = tmp_path / "ws"
    agent, rec = make_agent(server, workspace, bounds=FAST, auto_approve=True, mode="plan")
    outcome = await agent.run_task("write hello into note.txt and read it back")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert (workspace / "note.txt").read_text() == "hello"
    assert [s["tool"] for s in rec.of("plan")[0].data["steps"]] == ["file_write", "file_read"]
    assert [e.data["name"] for e in rec.of("tool_call")] == ["file_write", "file_read"]
    assert all(e.data["ok"] for e in rec.of("tool_result"))


def test_a_bare_json_object_naming_no_tool_stays_text() -> None:
    text = '{"name": "functions.nope", "arguments": {}}'
    assert find_bare_json_calls(text, ["file_write"]) == (text, [])


def test_resolution_rules() -> None:
    declared = ["file_write", "file_read", "Wait", "wait"]
    assert resolve_tool_name("file_write", declared) == "file_write"
    assert resolve_tool_name("FUNCTIONS.FILE_READ", declared) == "file_read"
    assert resolve_tool_name("functions/file_read()", declared) == "file_read"
    assert resolve_tool_name("WAIT", declared) is None  # two tools differ only by case
    assert resolve_tool_name("myns.file_read", declared) is None  # not a known namespace
    assert resolve_tool_name("", declared) is None
