"""Sign conventions against the user's direction words (SPEC B7, issue 6)."""

from __future__ import annotations

import pytest

from loopact.tools.base import ToolResult, tool
from loopact.tools.directions import mentioned, normalize_directions

HEAD = {"pan_deg": ("left", "right"), "tilt_deg": ("down", "up")}
BASE = {"linear_mps": ("forward", "backward"), "angular_dps": ("left", "right")}


@pytest.mark.parametrize(
    ("text", "arguments", "directions", "expected", "because"),
    [
        ("look right 45 degrees", {"pan_deg": 45, "tilt_deg": 0}, HEAD, {"pan_deg": -45}, "right"),
        ("look down 15 degrees", {"pan_deg": 0, "tilt_deg": -15}, HEAD, {"tilt_deg": 15}, "down"),
        ("抬头看", {"pan_deg": 0, "tilt_deg": 20}, HEAD, {"tilt_deg": -20}, "抬"),
        ("向右看一下", {"pan_deg": 30, "tilt_deg": 5}, HEAD, {"pan_deg": -30}, "右"),
        ("spin counter-clockwise", {"pan_deg": -20}, HEAD, {"pan_deg": 20}, "counter-clockwise"),
        (
            "back up for 2 s",
            {"linear_mps": 0.2, "angular_dps": 0},
            BASE,
            {"linear_mps": -0.2},
            "back",
        ),
        ("倒车两秒", {"linear_mps": 0.3}, BASE, {"linear_mps": -0.3}, "倒车"),
    ],
)
def test_a_sign_against_the_one_direction_word_is_flipped(
    text: str,
    arguments: dict[str, float],
    directions: dict[str, tuple[str, str]],
    expected: dict[str, float],
    because: str,
) -> None:
    args, norm = normalize_directions(arguments, directions, text)
    assert args == {**arguments, **expected}
    assert set(norm) == set(expected)
    for name, value in expected.items():
        assert norm[name]["from"] == arguments[name]
        assert norm[name]["to"] == value
        assert norm[name]["because"] == because
        assert norm[name]["convention"] == f"{directions[name][0]} positive"


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("look to the right 20 degrees", {"pan_deg": -20, "tilt_deg": 0}),  # already right
        ("look left and right", {"pan_deg": -20}),  # both directions: nothing to go by
        ("look at the door", {"pan_deg": 30}),  # no direction word
        ("look right", {"pan_deg": 0}),  # zero has no sign
        ("看一下晚上的门", {"tilt_deg": -10}),  # 下 and 上 inside everyday words
        ("前进一米左右", {"pan_deg": 10}),  # 左右 ("about") names both sides
        ("drive, then stop", {"linear_mps": 0.2}),  # no forward/backward word
        ("开车然后停", {"linear_mps": 0.2}),  # 后 inside 然后 ("then")
        ("look right", {"pan_deg": True}),  # bools are not numbers
        ("", {"pan_deg": 10}),  # no instruction
    ],
)
def test_nothing_changes_without_one_clear_direction(
    text: str, arguments: dict[str, object]
) -> None:
    directions = {**HEAD, **BASE}
    args, norm = normalize_directions(arguments, directions, text)
    assert args == arguments
    assert norm == {}


def test_clockwise_inside_counter_clockwise_is_not_right() -> None:
    assert mentioned("right", "turn counter-clockwise") is None
    assert mentioned("left", "turn counter-clockwise") == "counter-clockwise"
    assert mentioned("right", "turn clockwise") == "clockwise"
    assert mentioned("right", "look upright") is None  # whole words only


def test_a_tool_declares_its_sign_conventions() -> None:
    @tool(directions={"pan_deg": ("left", "right")})
    async def look(pan_deg: float) -> ToolResult:
        """Pan the head.

        Args:
            pan_deg: Pan in degrees, left positive.
        """
        return ToolResult.success({})

    assert dict(look.directions) == {"pan_deg": ("left", "right")}
    assert "directions" not in str(look.spec())  # not shown to the model

    with pytest.raises(ValueError, match="unknown arguments \\['tilt_deg'\\]"):

        @tool(directions={"tilt_deg": ("down", "up")})
        async def pan(pan_deg: float) -> ToolResult:
            """Pan."""
            return ToolResult.success({})

    with pytest.raises(ValueError, match="pair of opposite directions"):

        @tool(directions={"pan_deg": ("left", "up")})
        async def pan2(pan_deg: float) -> ToolResult:
            """Pan."""
            return ToolResult.success({})
