"""The node protocol: heartbeats and call results (SPEC C2, C3)."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image as PILImage

from loopact.errors import ProtocolError
from loopact.llm.messages import Image
from loopact.nodes.protocol import (
    InputInfo,
    OutputInfo,
    decode_result,
    encode_result,
    input_data_topic,
    input_info_topic,
    output_endpoint,
    output_info_topic,
)
from loopact.tools.base import SafetyClass, ToolResult, tool


@tool(safety="motion", reentrant=True, timeout_s=12)
def wave(times: int = 1) -> str:
    """Wave the arm.

    Args:
        times: How often.
    """
    return "waved" * times


def test_topic_names_follow_the_issue() -> None:
    assert output_info_topic("loopact", "wave") == "/loopact/output/wave/info"
    assert output_endpoint("loopact", "wave") == "/loopact/output/wave"
    assert input_info_topic("bot", "cam") == "/bot/input/cam/info"
    assert input_data_topic("bot", "cam") == "/bot/input/cam"


def test_output_heartbeat_is_an_openai_tool_object_with_x_loopact() -> None:
    info = OutputInfo.from_tool(wave, instance="abc")
    obj = json.loads(info.to_json())
    assert obj["type"] == "function"
    assert obj["function"]["name"] == "wave"
    assert obj["function"]["description"] == "Wave the arm."
    assert obj["function"]["parameters"]["properties"]["times"]["type"] == "integer"
    assert obj["x-loopact"] == {
        "safety": "motion",
        "reentrant": True,
        "timeout_s": 12,
        "instance": "abc",
    }
    back = OutputInfo.parse(info.to_json(), expected_name="wave")
    assert back == info


def test_third_party_heartbeat_without_extension_gets_defaults() -> None:
    text = json.dumps(
        {"type": "function", "function": {"name": "beep", "parameters": {"type": "object"}}}
    )
    info = OutputInfo.parse(text, expected_name="beep")
    assert info.safety is SafetyClass.READ_ONLY
    assert info.reentrant is False
    assert info.timeout_s == 30.0
    assert info.instance == ""


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not JSON"),
        ('{"type": "function"}', '"function" object'),
        ('{"type": "function", "function": {"name": "a b"}}', "function.name"),
        (
            '{"type": "function", "function": {"name": "x", "parameters": {"type": "array"}}}',
            "function.parameters",
        ),
        (
            '{"type": "function", "function": {"name": "x"}, "x-loopact": {"safety": "risky"}}',
            "x-loopact.safety",
        ),
        (
            '{"type": "function", "function": {"name": "x"}, "x-loopact": {"timeout_s": -1}}',
            "x-loopact.timeout_s",
        ),
    ],
)
def test_bad_heartbeats_are_refused_with_the_field_named(text: str, fragment: str) -> None:
    with pytest.raises(ProtocolError) as err:
        OutputInfo.parse(text, expected_name="x")
    assert fragment in str(err.value)


def test_heartbeat_name_must_match_topic() -> None:
    info = OutputInfo.from_tool(wave)
    with pytest.raises(ProtocolError, match="does not match"):
        OutputInfo.parse(info.to_json(), expected_name="other")


def test_input_heartbeat_round_trip_and_errors() -> None:
    info = InputInfo("cam", "front camera", "latest", "image", False, "i1")
    assert InputInfo.parse(info.to_json(), "cam") == info
    with pytest.raises(ProtocolError, match="mode"):
        InputInfo.parse('{"mode": "sometimes"}', "cam")
    with pytest.raises(ProtocolError, match="kind"):
        InputInfo.parse('{"kind": "audio"}', "cam")


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (8, 6), color).save(buf, format="PNG")
    return buf.getvalue()


def test_result_round_trip_with_an_image_as_base64_jpeg() -> None:
    res = ToolResult.success({"n": 1}, images=[Image(_png((255, 0, 0)), "image/png", 8, 6)], k="v")
    output_json, code = encode_result(res)
    assert code == 0
    obj = json.loads(output_json)
    assert set(obj) == {"ok", "data", "metadata", "error", "images"}
    jpeg = base64.b64decode(obj["images"][0])
    assert jpeg[:2] == b"\xff\xd8"  # re-encoded as JPEG
    back = decode_result(output_json, code)
    assert back.ok and back.data == {"n": 1}
    assert back.metadata["k"] == "v"
    assert back.images[0].media_type == "image/jpeg"
    assert (back.images[0].width_px, back.images[0].height_px) == (8, 6)
    pixel = np.asarray(PILImage.open(io.BytesIO(back.images[0].data)))[3, 4]
    assert pixel[0] > 200 and pixel[1] < 60


def test_failed_result_has_nonzero_exit_code() -> None:
    output_json, code = encode_result(ToolResult.failure("jammed"))
    assert code == 1
    back = decode_result(output_json, code)
    assert not back.ok and back.error == "jammed"


def test_output_json_that_is_not_json_is_a_clear_failure() -> None:
    res = decode_result("<html>oops</html>", 0, node="node beep")
    assert not res.ok
    assert "node beep returned output_json that is not JSON" in (res.error or "")


def test_exit_code_and_ok_disagreeing_count_as_failure() -> None:
    res = decode_result(json.dumps({"ok": True, "data": 1}), 2)
    assert not res.ok
    assert "disagree" in (res.error or "")
    res = decode_result(json.dumps({"ok": False, "error": "no"}), 0)
    assert not res.ok
    assert "no" in (res.error or "") and "disagree" in (res.error or "")


def test_undecodable_images_are_dropped_and_counted() -> None:
    res = decode_result(json.dumps({"ok": True, "images": ["!!!", "aGVsbG8="]}), 0)
    assert res.ok and res.images == ()
    assert res.metadata["bad_images"] == 2
