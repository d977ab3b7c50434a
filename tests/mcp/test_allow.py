"""``confirm.allow`` entries say which MCP server they mean (issue 39 item 13, SPEC C5).

Two SDK-written servers both list ``echo``. The one that is listed first gets the plain name
``echo``; the other becomes ``lab_echo``. An entry ``echo`` used to allow whichever held the
plain name: an untrusted server that lists a tool name first took over the operator's
allow-listing. Now an MCP tool is allowed only by ``mcp:SERVER/TOOL``; plain names stay for
loopact's own tools. Whether a server's ``echo`` ran is read from the server: its first call
adds ``shout`` to its list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest
from tests.agent.helpers import call, make_agent
from tests.mcp.helpers import FAST, toy

from loopact.agent.confirm import AllowList
from loopact.app.mcp import allow_warnings
from loopact.config.sections import ConfirmConfig
from loopact.mcp.hub import McpHub
from loopact.tools.base import FunctionTool
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.timeout(120)


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


async def test_an_allow_entry_names_its_server_and_a_squatter_does_not_inherit_it(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("echo", {"text": "to the first server"}, id="c1"),
                    call("lab_echo", {"text": "to the lab"}, id="c2"),
                    call("file_write", {"path": "note.txt", "content": "hi"}, id="c3"),
                ]
            },
            {"text": "Done."},
        ]
    )
    allow = frozenset({"echo", "mcp:lab/echo", "file_write"})  # "echo": meant for the lab
    agent, _ = make_agent(server, tmp_path, interactive=False, allow=allow)
    (tmp_path / "squat").mkdir()
    (tmp_path / "lab").mkdir()
    squat = McpHub({"squat": toy(tmp_path / "squat")}, agent.registry, bus=agent.bus, **FAST)
    lab = McpHub({"lab": toy(tmp_path / "lab")}, agent.registry, bus=agent.bus, **FAST)
    await squat.start(wait=True)  # listed first: it gets the plain name
    await lab.start(wait=True)
    try:
        assert agent.registry.get("echo").allow_entry == "mcp:squat/echo"  # type: ignore[union-attr]
        assert agent.registry.get("lab_echo").allow_entry == "mcp:lab/echo"  # type: ignore[union-attr]
        outcome = await agent.run_task("echo twice and write a note")
        assert outcome.status == "completed", outcome
        squatted, labbed, wrote = _tool_texts(server.requests[1].body)
        assert "needs a person's confirmation" in squatted
        assert "add mcp:squat/echo to confirm.allow" in squatted  # the entry that would allow it
        assert "to the lab" in labbed
        assert "shout" not in squat.offered("squat")  # its echo never ran
        assert "shout" in lab.offered("lab")  # the lab's did
        assert '"ok": true' in wrote and (tmp_path / "note.txt").read_text() == "hi"
    finally:
        await squat.stop()
        await lab.stop()
        await agent.close()


def test_entries_that_allow_nothing_are_named_at_start(tmp_path: Path) -> None:
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    served = FunctionTool(echo)
    served.allow_entry = "mcp:lab/echo"  # as McpHub offers a server's tool
    registry = ToolRegistry([*make_builtin_tools(tmp_path), served])
    allowed = ["echo", "mcp:lbb/echo", "mcp:lab/echo", "fiel_write", "file_write"]
    lines = allow_warnings(allowed, registry, ["lab"])
    assert lines == [
        "confirm.allow: 'echo' is a tool of an MCP server, and a plain name allows loopact's "
        "own tools only (another server may list the name first): write 'mcp:lab/echo' to "
        "allow it",
        "confirm.allow: no tool is named 'fiel_write' yet; did you mean 'file_write'? (a tool "
        "of a node or MCP server that connects later is allowed when it comes)",
        "confirm.allow: 'mcp:lbb/echo' names no server of mcp.servers; did you mean 'lab'?",
    ]


def test_an_mcp_entry_must_name_a_server_and_a_tool() -> None:
    assert ConfirmConfig(allow=["mcp:lab/read_*", "file_write"]).allow[0] == "mcp:lab/read_*"
    with pytest.raises(pydantic.ValidationError, match="'mcp:lab' is not mcp:SERVER/TOOL"):
        ConfirmConfig(allow=["mcp:lab"])


def test_a_pattern_allows_the_tools_of_its_server_only() -> None:
    tools = {"a": "mcp:lab/read_file", "b": "mcp:other/read_file", "c": None}

    def lookup(name: str) -> Any:
        return type("T", (), {"allow_entry": tools[name]})() if name in tools else None

    allow = AllowList(["mcp:lab/read_*", "c", "b"], lookup)
    assert "a" in allow and "c" in allow
    assert "b" not in allow  # a plain name of an MCP tool allows nothing
    assert allow.entry_for("b") == "mcp:other/read_file" and allow.entry_for("zz") == "zz"
