"""One builder per form of a tool result (issue 38 item 4): the JSON the model and MCP clients
read (``result_json``) and the ``tool_result`` event's fields (``tool_result_event``); the
agent's tool message, ``loopact mcp``'s result and both emitters use them."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image as PILImage

from loopact.agent.stream import result_text
from loopact.events import Event, EventBus, EventType
from loopact.i18n import Phrase
from loopact.llm.messages import Image
from loopact.mcp.convert import to_call_result
from loopact.mcp.server import Decision, ToolServer
from loopact.tools.base import ToolResult, tool
from loopact.tools.registry import ToolRegistry
from loopact.tools.report import result_json, tool_result_event


def _image() -> Image:
    out = io.BytesIO()
    PILImage.new("RGB", (4, 2), (0, 0, 255)).save(out, "JPEG")
    return Image(out.getvalue(), "image/jpeg", 4, 2)


SEEN = ToolResult.success({"colour": "blue"}, images=[_image()], confidence=0.75)
FAILED = ToolResult.failure("the path is blocked", stopped_by="obstacle")


def test_the_json_leaves_out_what_is_empty() -> None:
    assert result_json(SEEN) == {
        "ok": True,
        "data": {"colour": "blue"},
        "metadata": {"confidence": 0.75},
        "images": 1,
    }
    assert result_json(FAILED) == {
        "ok": False,
        "error": "the path is blocked",
        "metadata": {"stopped_by": "obstacle"},
    }
    assert result_json(ToolResult.success()) == {"ok": True}


def test_the_model_and_mcp_clients_read_the_same_json() -> None:
    for result in (SEEN, FAILED):
        assert json.loads(result_text(result)) == result_json(result)
        served = to_call_result(result)
        assert served.structured_content == result_json(result)
        assert json.loads(served.content[0].text) == result_json(result)  # type: ignore[union-attr]


def test_the_event_has_every_field_and_images_by_their_hash() -> None:
    fields = tool_result_event("c1", "look", SEEN, "en")
    image = SEEN.images[0]
    assert fields == {
        "id": "c1",
        "name": "look",
        "ok": True,
        "data": {"colour": "blue"},
        "metadata": {"confidence": 0.75},
        "error": None,
        "n_images": 1,
        "images": [
            {
                "sha256": image.sha256,
                "bytes": len(image.data),
                "media_type": "image/jpeg",
                "width_px": 4,
                "height_px": 2,
            }
        ],
        "outcome": None,
        "outcome_text": None,
    }


def test_a_robot_tools_outcome_is_its_phrase_and_its_text_in_the_readers_language() -> None:
    moved = ToolResult.said(Phrase("motion.moved_forward", distance_m=0.498))
    fields = tool_result_event("c2", "move_forward", moved, "zh")
    assert fields["outcome"] == {"id": "motion.moved_forward", "params": {"distance_m": 0.498}}
    assert fields["outcome_text"] == "前进了 0.50 米，到达目标"
    assert result_json(moved)["data"] == {"result": "moved forward 0.50 m and reached the target"}


@tool
async def look() -> ToolResult:
    """Look (a test tool)."""
    return SEEN


async def _nobody(call_id: str, name: str, arguments: object) -> Decision:
    return Decision(False, "no one to ask")


async def test_loopact_mcp_emits_the_built_event(tmp_path: Path) -> None:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    server = ToolServer(ToolRegistry([look]), confirm=_nobody, workspace=tmp_path, bus=bus)
    await server.call("look", {})
    (result,) = [e for e in seen if e.type == EventType.TOOL_RESULT]
    assert result.data == tool_result_event(result.data["id"], "look", SEEN, server.lang)
