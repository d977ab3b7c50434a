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
from tests.agent.helpers import call, make_agent
from tests.mcp.helpers import FAST, REFERENCE

from loopact.config import McpServerConfig
from loopact.mcp.hub import McpHub

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
