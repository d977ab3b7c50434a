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
    with pytest.raises(BoxAnswerError) as err:
        validate_box_answer(_answer(bbox=list(yellow.bbox)), 320, 240, QUERY, dets)
    assert str(err.value) == (
        "bbox [123, 60, 143, 75] is on the yellow box at [123, 60, 143, 75]; 'the red box' asks"
        " for a red, box-shaped object; the candidates that fit: the red box at [267, 61, 306, 87]"
    )


def _with_a_red_ball() -> tuple[Any, list[Any]]:
    """The red_ahead frame with a red ball painted on the floor: two red objects in view."""
    import cv2

    rgb = FRAME["rgb"].copy()
    cv2.circle(rgb, (240, 200), 14, (200, 20, 20), -1)
    dets = detect_colors(rgb, FRAME["depth"], hfov_deg=70)
    return rgb, dets


async def test_a_box_on_another_object_of_the_same_colour_or_on_bare_floor_is_refused(
    scripted_server: Any,
) -> None:
    """Issue 15 bad input "a box for a different object": the colour check alone let both
    through (a red ball for "the red box"; a patch of floor)."""
    rgb, dets = _with_a_red_ball()
    ball = next(d for d in dets if d.color == "red" and d.bbox != RED.bbox)
    floor = [20, 190, 80, 230]
    server = scripted_server(
        [{"text": _answer(bbox=list(ball.bbox))}, {"text": _answer(bbox=floor)}]
    )
    vm = VisionModel(OpenAIChatModel("vlm", server.base_url, None), timeout_s=10)
    image = ImageGate().process(rgb).image
    assert image is not None
    answer, problems = await vm.select_box(image, QUERY, dets, 320, 240)
    assert answer is None and len(problems) == 2  # the detector decides then
    fit = f"the candidates that fit: the red box at {RED_BOX}"
    assert problems[0] == (
        f"bbox {list(ball.bbox)} is on the red ball at {list(ball.bbox)}; 'the red box' asks for"
        f" a red, box-shaped object; {fit}"
    )
    assert problems[1] == (
        f"bbox {floor} covers no detected object (IoU < 0.3 with each candidate); 'the red box'"
        f" asks for a red, box-shaped object; {fit}"
    )
    retry = next(
        p["text"] for p in server.requests[1].body["messages"][1]["content"] if "text" in p
    )
    assert problems[0] in retry  # the model was told why
    # the red ball is still what "the red ball" names
    ok = validate_box_answer(
        _answer(bbox=list(ball.bbox)), 320, 240, parse_target("red ball"), dets
    )
    assert ok["bbox"] == list(ball.bbox)


def test_a_box_on_the_named_object_is_snapped_to_the_detector_box() -> None:
    x1, y1, x2, y2 = RED_BOX
    loose = [x1 - 8, y1 + 6, x2 + 5, y2 + 9]  # the model's own drawing of the red box
    got = validate_box_answer(_answer(bbox=loose, reason="on the right"), 320, 240, QUERY, DETS)
    assert got["bbox"] == RED_BOX
    assert got["reason"].startswith(f"the vision model chose the red box at {RED_BOX} (IoU 0.")
    assert got["reason"].endswith(f"with its box {loose}), model confidence 0.90; on the right")


def test_a_phrase_the_detector_cannot_check_keeps_the_model_box_with_its_confidence() -> None:
    box = [200, 150, 260, 200]  # no candidate there
    plain = validate_box_answer(
        _answer(bbox=box, confidence=0.4, reason="a chair leg"),
        320,
        240,
        parse_target("the chair on the left"),
        DETS,
    )
    assert plain["bbox"] == box and plain["confidence"] == 0.4
    assert plain["reason"] == (
        "the vision model's box, unchecked (the phrase names no colour or shape the detector"
        " could check), model confidence 0.40; a chair leg"
    )
    # a colour the detector has no range for: kept off the candidates, refused on one
    orange = parse_target("the orange box")
    kept = validate_box_answer(_answer(bbox=box, reason=""), 320, 240, orange, DETS)
    assert kept["bbox"] == box and kept["reason"] == (
        "the vision model's box, not confirmed by the colour detector (it sees no orange,"
        " box-shaped object in this frame), model confidence 0.90"
    )
    with pytest.raises(BoxAnswerError) as err:
        validate_box_answer(_answer(bbox=RED_BOX), 320, 240, orange, DETS)
    assert str(err.value) == (
        f"bbox {RED_BOX} is on the red box at {RED_BOX}; 'the orange box' asks for an orange,"
        " box-shaped object; the detector sees none in this frame"
    )


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
