"""``structuredContent`` as the model reads it: no base64 of binary data, an error's reason
(issue 39 items 4 and 5). The whole path, with a server process, is in test_reference.py."""

from __future__ import annotations

import base64
import hashlib
import os

import mcp.types as mt

from loopact.mcp.convert import to_tool_result
from loopact.mcp.structured import error_reason, without_binary


def _refuse(data: bytes) -> str:
    return "not an image"


def test_base64_strings_become_notes_and_text_stays_text() -> None:
    blob = base64.b64encode(os.urandom(3000)).decode()
    plain = {
        "sha256": hashlib.sha256(b"x").hexdigest(),  # 64 hex digits: an identifier
        "long_word": "x" * 500,
        "sentence": "The quick brown fox " * 30,
        "n": 3,
    }
    assert without_binary(plain, {}) is plain  # nothing changed, not even copied
    masked = without_binary({"a": [{"b": blob}], "url": f"data:image/png;base64,{blob}"}, {})
    assert masked["a"][0]["b"] == "[base64 data, about 3000 bytes, not shown as text]"
    assert masked["url"] == masked["a"][0]["b"]


def test_a_text_block_that_echoes_an_image_block_is_a_note() -> None:
    data = base64.b64encode(os.urandom(600)).decode()
    result = mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="here it is"),
            mt.TextContent(type="text", text=data),
            mt.ImageContent(type="image", data=data, mime_type="image/png"),
        ]
    )
    converted = to_tool_result(result, server="s", gate=_refuse)
    assert converted.data == "here it is"
    notes = " ".join(converted.metadata["notes"])
    assert "base64 of the result's image/png block, 600 bytes, not shown as text" in notes
    assert data not in str(converted)


def test_the_reason_of_an_error_is_found_in_its_structure() -> None:
    assert error_reason({"error": {"code": "E", "message": "disk full"}}) == "disk full"
    assert error_reason({"detail": "  bad\n  input "}) == "bad input"
    assert error_reason({"code": 7, "items": [1]}) == '{"code": 7, "items": [1]}'
    assert len(error_reason({"message": "m" * 1000})) == 300
