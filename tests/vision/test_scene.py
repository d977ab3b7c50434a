"""Offline description and target selection on recorded simulator frames (SPEC D5, G2)."""

from __future__ import annotations

import pytest
from tests.vision.conftest import load_frame

from loopact.sim.groundtruth import iou
from loopact.vision.detect import Detection, detect_colors
from loopact.vision.scene import describe, noun, parse_target, select_target


def _dets(name: str) -> tuple[list[Detection], dict[str, list[float] | None]]:
    f = load_frame(name)
    return detect_colors(f["rgb"], f["depth"], hfov_deg=70), f["gt"]


@pytest.mark.parametrize(
    ("text", "color", "shape", "place"),
    [
        ("the red box", "red", "boxy", None),
        ("红色的方块", "red", "boxy", None),
        ("the thing on the left", None, None, "left"),
        ("the blue ball", "blue", "round", None),
        ("最近的黄色盒子", "yellow", "boxy", "near"),
        ("something", None, None, None),
    ],
)
def test_parse_target_reads_colour_shape_and_place(
    text: str, color: str | None, shape: str | None, place: str | None
) -> None:
    q = parse_target(text)
    assert (q.color, q.shape, q.place) == (color, shape, place)


def test_colours_without_a_range_and_configured_colours_are_colour_words() -> None:
    assert parse_target("the magenta box").color == "magenta"  # not "any box"
    assert parse_target("粉红色的球").color == "pink"  # not red (红)
    assert parse_target("the white box").color == "white"
    assert parse_target("the pink box", ["red", "pink"]).color == "pink"
    assert parse_target("the teal box", ["teal"]).color == "teal"  # configured wins
    assert parse_target("the red box", ["red", "pink"]).color == "red"


def test_red_box_is_found_where_the_ground_truth_puts_it() -> None:
    dets, gt = _dets("red_ahead")
    sel = select_target(parse_target("the red box"), dets, 320)
    assert sel.detection is not None and sel.confidence >= 0.8
    assert gt["red_cube"] is not None
    assert iou(gt["red_cube"], sel.detection.bbox) >= 0.5
    zh = select_target(parse_target("红色的方块"), dets, 320)
    assert zh.detection == sel.detection


def test_thing_on_the_left_is_the_leftmost_object_not_the_line() -> None:
    dets, gt = _dets("start")
    sel = select_target(parse_target("the thing on the left"), dets, 320)
    assert sel.detection is not None and sel.detection.color != "purple"
    others = [d for d in dets if d.color != "purple"]
    assert sel.detection.bbox[0] == min(d.bbox[0] for d in others)
    assert gt["yellow_box"] is not None and iou(gt["yellow_box"], sel.detection.bbox) > 0.5


def test_target_not_in_view_is_not_found_and_says_what_is() -> None:
    dets, _ = _dets("start")
    sel = select_target(parse_target("the green cylinder"), dets, 320)
    assert sel.detection is None and sel.confidence == 0.0
    assert "no green object in view" in sel.reason and "red" in sel.reason


def test_the_floor_line_is_named_a_line_not_a_box() -> None:
    dets, _ = _dets("start")
    sel = select_target(parse_target("the purple line"), dets, 320)
    assert sel.detection is not None and noun(sel.detection) == "purple floor line"
    assert sel.reason.startswith("the purple floor line at bbox")


def test_wrong_shape_lowers_confidence() -> None:
    dets, _ = _dets("red_ahead")
    right = select_target(parse_target("the red box"), dets, 320)
    wrong = select_target(parse_target("the red ball"), dets, 320)
    assert wrong.detection == right.detection and wrong.confidence < 0.7 < right.confidence
    # the reason says the shape does not fit (a newcomer audit: it read as a plain find)
    assert wrong.reason.startswith("nothing round of that colour in view; the closest fit is ")
    assert "the red box at bbox" in wrong.reason and "closest" not in right.reason


def test_description_names_the_objects_in_view_and_only_those() -> None:
    dets, gt = _dets("start")
    text = describe(dets)
    in_view = {name.split("_")[0] for name, box in gt.items() if box is not None}
    assert in_view == {"red", "yellow"}
    for colour in in_view:
        assert colour in text
    for colour in ("green", "blue", "cyan"):
        assert colour not in text
    assert "purple line" in text and "m away" in text and "right" in text
