"""What MCP servers shaped like the reference servers send reaches the model right
(issue 39 items 3, 4, 5, 7; SPEC C8, B8, G1).

The server is ``servers/reference.py`` (the official SDK, run as a process, 2025-era like the
reference servers); the agent talks through the real provider code to loopact's scripted
model server, which refuses what the real APIs refuse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, call, make_agent
from tests.mcp.helpers import FAST, REFERENCE

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.config import McpServerConfig
from loopact.events import Event, EventBus
from loopact.llm.anthropic import AnthropicModel
from loopact.mcp.hub import McpHub
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.timeout(120)

#: The reference server's tools the operator grants read-only, so no confirmation is asked.
GRANTED = ("read_media_file", "get_tiny_image", "lookup", "fetch_doc", "search", "now")
READ_ONLY = dict.fromkeys(GRANTED, "read_only")


def reference(**extra: Any) -> McpServerConfig:
    """The reference-like server over stdio."""
    import sys

    return McpServerConfig(command=sys.executable, args=[str(REFERENCE)], **extra)


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def _images(body: dict[str, Any]) -> int:
    return json.dumps(body["messages"]).count("data:image/jpeg;base64,")


async def test_images_reach_the_model_as_images_and_never_as_base64_text(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Item 5: the filesystem server's ``read_media_file`` echoes its image's base64 in
    ``structuredContent`` (16 k characters); the model gets the image, and no base64 in the
    tool's text. The "everything" server's tiny PNG (a bad CRC in an ancillary chunk only,
    which libpng decodes) reaches the model as an image, not as "not an image"."""
    server = scripted_server(
        [
            {"tool_calls": [call("read_media_file", {})]},
            {"tool_calls": [call("get_tiny_image", {})]},
            {"text": "A noisy square and a tiny picture."},
        ]
    )
    agent, _ = make_agent(server, tmp_path)
    hub = McpHub({"ref": reference(safety=READ_ONLY)}, agent.registry, bus=agent.bus, **FAST)
    await hub.start(wait=True)
    try:
        outcome = await agent.run_task("show me the media file and the tiny image")
        assert outcome.status == "completed", outcome
        media = _tool_texts(server.requests[1].body)[-1]
        assert re.search(r"[A-Za-z0-9+/]{100,}", media) is None, media[:300]
        assert "base64" in media and "not shown as text" in media  # it says what was left out
        assert _images(server.requests[1].body) == 1
        tiny = _tool_texts(server.requests[2].body)[-1]
        assert "This is a tiny image:" in tiny and "not shown" not in tiny, tiny
        assert _images(server.requests[2].body) == 2
    finally:
        await hub.stop()
        await agent.close()


async def test_an_error_given_only_in_structured_content_reaches_the_model(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Item 4: ``isError`` with no content, the reason only in ``structuredContent``: the
    model reads the reason and the details, not "the tool reported an error"."""
    server = scripted_server(
        [{"tool_calls": [call("lookup", {"id": 42})]}, {"text": "There is no record 42."}]
    )
    agent, rec = make_agent(server, tmp_path)
    hub = McpHub({"ref": reference(safety=READ_ONLY)}, agent.registry, bus=agent.bus, **FAST)
    await hub.start(wait=True)
    try:
        outcome = await agent.run_task("look record 42 up")
        assert outcome.status == "completed", outcome
        text = _tool_texts(server.requests[1].body)[-1]
        body = json.loads(text)
        assert body["ok"] is False
        assert body["error"] == "MCP server ref: no record with id 42"
        assert body["data"]["error"]["code"] == "NOT_FOUND"
        assert body["data"]["known_ids"] == [1, 2, 3]
        assert "the tool reported an error" not in text
        result = next(e for e in rec.events if e.type == "tool_result")
        assert "no record with id 42" in str(result.data)  # what the terminal shows too
    finally:
        await hub.stop()
        await agent.close()


# ---------------------------------------------------------------------- schemas (item 3)
def _agent(server: Any, tmp_path: Path, provider: str) -> tuple[Agent, Recorder]:
    """The agent with the real provider code of ``provider`` against ``server``."""
    if provider == "openai":
        return make_agent(server, tmp_path)
    model = AnthropicModel("scripted", server.root_url, api_key="sk-ant-test", request_timeout_s=30)
    options = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, backoff_max_s=0.05),
        system_prompt="You are a test robot.",
        workspace=tmp_path,
    )
    agent = Agent(model, ToolRegistry(make_builtin_tools(tmp_path)), options)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def _offered(body: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool name -> (description, schema) as the request offers them (either API's shape)."""
    out = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function", tool)
        out[fn["name"]] = (fn["description"], fn.get("parameters", fn.get("input_schema")))
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_tools_with_top_level_combiners_are_offered_in_a_form_the_api_accepts(
    scripted_server: Any, tmp_path: Path, provider: str
) -> None:
    """Item 3: a top-level ``oneOf``/``anyOf``/``allOf`` (valid JSON Schema, common in MCP
    servers) is refused by both APIs, and with it every request (the scripted server refuses
    it as they do). Offered rewritten, the request goes through; the rule the combiner said
    is in the description and still enforced: a call that breaks it is refused by loopact.
    A schema with no such form is left out with a ``node_error``; the other tools work."""
    both = {"path": "a.txt", "url": "https://example.com/a.txt"}
    server = scripted_server(
        [
            {"tool_calls": [call("fetch_doc", both)]},
            {"tool_calls": [call("fetch_doc", {"path": "a.txt"})]},
            {"text": "Fetched a.txt."},
        ]
    )
    agent, rec = _agent(server, tmp_path, provider)
    hub = McpHub({"ref": reference(safety=READ_ONLY)}, agent.registry, bus=agent.bus, **FAST)
    await hub.start(wait=True)
    try:
        outcome = await agent.run_task("fetch a.txt")
        assert outcome.status == "completed", outcome
        offered = _offered(server.requests[0].body)
        for name in ("fetch_doc", "search", "move_file"):
            schema = offered[name][1]
            assert schema["type"] == "object" and not {"oneOf", "anyOf", "allOf"} & set(schema)
        assert offered["fetch_doc"][0].endswith("Give exactly one of: path; url.")
        assert set(offered["fetch_doc"][1]["properties"]) == {"path", "url"}
        assert offered["search"][0].endswith("Give at least one of: name; tag.")
        assert offered["move_file"][1]["required"] == ["src", "dst"]
        assert "odd_shape" not in offered and "odd_shape" not in agent.registry
        errors = [e.data for e in rec.events if e.type == "node_error"]
        odd = next(e["message"] for e in errors if e["topic"] == "mcp:ref/odd_shape")
        assert "top-level oneOf whose branch 0 is not an object schema" in odd
        refused = json.dumps(server.requests[1].body["messages"])
        assert "invalid arguments for fetch_doc" in refused and "is valid under each of" in refused
        ran = [e.data for e in rec.events if e.type == "tool_result"][-1]
        assert ran["ok"] and ran["data"] == 'fetch_doc {"path": "a.txt"}', ran
        assert "fetch_doc" in json.dumps(server.requests[2].body["messages"])
    finally:
        await hub.stop()
        await agent.close()


# ---------------------------------------------------------------------- tasks (item 7)
async def test_a_tool_that_requires_task_augmentation_is_not_offered(tmp_path: Path) -> None:
    """Item 7: ``execution.taskSupport: "required"`` means every plain call fails (-32601).
    The mcp SDK loopact uses has no client side for MCP tasks, so the tool is not offered,
    with a ``node_error`` saying why; the server's other tools are."""
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    registry = ToolRegistry()
    hub = McpHub({"ref": reference()}, registry, bus=bus, **FAST)
    await hub.start(wait=True)
    try:
        assert "now" in registry and "long_job" not in registry
        note = next(
            e.data["message"]
            for e in events
            if e.type == "node_error" and e.data["topic"] == "mcp:ref/long_job"
        )
        assert "requires task-augmented execution (execution.taskSupport: required)" in note
        assert "has no client support for MCP tasks" in note
    finally:
        await hub.stop()
