"""Box selection by a vision model: validated, repaired or refused (SPEC D5, G2; issue 15)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.vision.conftest import load_frame

from loopact.llm.openai_chat import OpenAIChatModel
from loopact.vision.detect import detect_colors
from loopact.vision.gate import ImageGate
from loopact.vision.model import BoxAnswerError, VisionModel, validate_box_answer
from loopact.vision.scene import parse_target

FRAME = load_frame("red_ahead")
DETS = detect_colors(FRAME["rgb"], FRAME["depth"], hfov_deg=70)
RED = next(d for d in DETS if d.color == "red")
RED_BOX = list(RED.bbox)
QUERY = parse_target("the red box")


def _answer(**over: Any) -> str:
    base = {"found": True, "target": "red box", "bbox": RED_BOX, "confidence": 0.9, "reason": "x"}
    return json.dumps({**base, **over})


def test_a_valid_answer_passes_and_a_code_fence_is_repaired() -> None:
    assert validate_box_answer(_answer(), 320, 240, QUERY, DETS)["bbox"] == RED_BOX
    fenced = "```json\n" + _answer()[:-1] + ",}\n```"  # trailing comma, fence
    assert validate_box_answer(fenced, 320, 240, QUERY, DETS)["found"] is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think the red box is in the middle of the image.", "not JSON"),
        (_answer(bbox=[10, 10, 5, 50]), "no area"),
        (_answer(bbox=[-5, 10, 50, 50]), "outside the 320x240 frame"),
        (_answer(bbox=[10, 10, 400, 50]), "outside the 320x240 frame"),
        (_answer(confidence=3), "schema"),
        (_answer(bbox=[1, 2, 3]), "schema"),
    ],
)
def test_bad_answers_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(BoxAnswerError, match=message):
        validate_box_answer(text, 320, 240, QUERY, DETS)


def test_a_box_on_an_object_of_another_colour_is_refused() -> None:
    f = load_frame("start")
    dets = detect_colors(f["rgb"], f["depth"], hfov_deg=70)
    yellow = next(d for d in dets if d.color == "yellow")
    with pytest.raises(BoxAnswerError, match="yellow object, not on a red one"):
        validate_box_answer(_answer(bbox=list(yellow.bbox)), 320, 240, QUERY, dets)


async def test_select_box_retries_once_with_the_error_then_accepts(scripted_server: Any) -> None:
    server = scripted_server(
        [
            {"text": "The red box is on the right."},
            {"text": _answer()},
        ]
    )
    vm = VisionModel(OpenAIChatModel("vlm", server.base_url, None), timeout_s=10)
    image = ImageGate().process(FRAME["rgb"]).image
    assert image is not None
    answer, problems = await vm.select_box(image, QUERY, DETS, 320, 240)
    assert answer is not None and answer["bbox"] == RED_BOX
    assert len(problems) == 1 and "not JSON" in problems[0]
    first, second = (r.body for r in server.requests)
    content = first["messages"][1]["content"]
    assert any(part.get("type") == "image_url" for part in content)  # the frame went along
    prompt = next(p["text"] for p in content if p.get("type") == "text")
    assert json.dumps(RED_BOX) in prompt.replace(", ", ", ")  # candidates offered
    assert "refused" in next(
        p["text"] for p in second["messages"][1]["content"] if p.get("type") == "text"
    )


async def test_select_box_gives_up_after_two_refusals(scripted_server: Any) -> None:
    server = scripted_server([{"text": _answer(bbox=[0, 0, 999, 5])}, {"text": "no idea"}])
    vm = VisionModel(OpenAIChatModel("vlm", server.base_url, None), timeout_s=10)
    image = ImageGate().process(FRAME["rgb"]).image
    assert image is not None
    answer, problems = await vm.select_box(image, QUERY, DETS, 320, 240)
    assert answer is None and len(problems) == 2


async def test_an_endpoint_that_ignores_max_tokens_is_not_read_on(scripted_server: Any) -> None:
    """Issue 21 item 6 for the vision model's requests (the main model's endpoint when
    vision.use_main_model): a 10 MB description was read to its end into memory."""
    text = "A red box on the right. " * 420_000  # about 10 MB
    server = scripted_server([{"text": text, "chunk_size": 4096, "usage_chunk": False}])
    vm = VisionModel(OpenAIChatModel("vlm", server.base_url, None), timeout_s=30)
    image = ImageGate().process(FRAME["rgb"]).image
    assert image is not None
    answer = await vm.describe(image, None, "red box ahead")
    assert server.requests[0].body["max_tokens"] == vm.max_output_tokens == 400
    assert answer.startswith("A red box on the right.") and len(answer) <= 400 * 8
