"""Sign conventions checked against the user's direction words (SPEC B7, issue 6).

Signed robot arguments have a convention: ``pan_deg`` is left positive, ``tilt_deg`` down
positive, ``angular_dps`` left (counter-clockwise) positive, ``linear_mps`` forward positive
(REP 103 for the base). Models, small ones above all, often get the sign wrong: "look right 45
degrees" becomes ``pan_deg: 45``, which turns the head left. A tool declares the convention of
such an argument (``@tool(directions={"pan_deg": ("left", "right")})``: positive means left,
negative means right), and :func:`normalize_directions` flips the sign when the instruction
names exactly one of the two directions and the value points the other way.

Conservative by design: nothing changes when the instruction names both directions of the
pair, or neither, or the value is zero. English and Chinese words are recognised; Chinese
上/下/前/后 count only in phrases that mean a direction (向上, 往下, 抬头, 低头, 前进, 后退,
...), because they also occur in everyday words (看一下, 晚上, 然后). The module is pure
(no I/O) and knows no tool or model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

DIRECTION_WORDS: dict[str, tuple[str, ...]] = {
    "left": ("left", "counter-clockwise", "counterclockwise", "anticlockwise", "左"),
    "right": ("right", "clockwise", "右"),
    "up": ("up", "upward", "upwards", "raise", "向上", "往上", "朝上", "抬"),
    "down": ("down", "downward", "downwards", "lower", "向下", "往下", "朝下", "低头", "俯"),
    "forward": ("forward", "forwards", "ahead", "前进", "向前", "往前"),
    "backward": (
        "backward",
        "backwards",
        "back",
        "reverse",
        "后退",
        "向后",
        "往后",
        "倒车",
        "倒退",
    ),
}
"""Words naming each direction (English matched as whole words, case-insensitive)."""

OPPOSITE: dict[str, str] = {
    "left": "right",
    "right": "left",
    "up": "down",
    "down": "up",
    "forward": "backward",
    "backward": "forward",
}

_NOT_CLOCKWISE = re.compile(r"(counter|anti)-?clockwise", re.IGNORECASE)


def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    latin = [re.escape(w) for w in words if w.isascii()]
    cjk = [re.escape(w) for w in words if not w.isascii()]
    parts = []
    if latin:
        parts.append(r"(?<![A-Za-z-])(?:" + "|".join(latin) + r")(?![A-Za-z-])")
    parts += cjk
    return re.compile("|".join(parts), re.IGNORECASE)


_PATTERNS = {d: _pattern(w) for d, w in DIRECTION_WORDS.items()}


def mentioned(direction: str, instruction: str) -> str | None:
    """The first word in ``instruction`` naming ``direction``, or None.

    "clockwise" inside "counter-clockwise" does not count as "right".

    Raises:
        KeyError: ``direction`` is not a key of :data:`DIRECTION_WORDS`.
    """
    text = instruction
    if direction == "right":
        text = _NOT_CLOCKWISE.sub(" ", text)
    m = _PATTERNS[direction].search(text)
    return m.group(0) if m else None


def check_directions(directions: Mapping[str, tuple[str, str]]) -> None:
    """Raise ValueError unless every value is a pair of opposite known directions."""
    for name, pair in directions.items():
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or pair[0] not in OPPOSITE
            or OPPOSITE[pair[0]] != pair[1]
        ):
            raise ValueError(
                f"directions[{name!r}] must be a pair of opposite directions such as "
                f"('left', 'right'), ('up', 'down') or ('forward', 'backward'), got {pair!r}"
            )


def normalize_directions(
    arguments: Mapping[str, Any], directions: Mapping[str, tuple[str, str]], instruction: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Flip signed arguments that point the other way than the user's one direction word.

    Example: instruction "look right 45 degrees", ``directions={"pan_deg": ("left",
    "right")}``, ``{"pan_deg": 45}`` -> ``{"pan_deg": -45}``.

    Args:
        arguments: The call's arguments (not modified).
        directions: Argument name -> (direction of positive values, of negative values).
        instruction: The user's instruction text for the task.

    Returns:
        ``(arguments, normalized)``: a new argument dict, and per flipped argument
        ``{"from": 45, "to": -45, "because": "right", "convention": "left positive"}``
        (empty when nothing changed).
    """
    out = dict(arguments)
    normalized: dict[str, dict[str, Any]] = {}
    if not instruction or not directions:
        return out, normalized
    for name, (positive, negative) in directions.items():
        value = arguments.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(float(value)) or value == 0:
            continue
        pos_word = mentioned(positive, instruction)
        neg_word = mentioned(negative, instruction)
        if (pos_word is None) == (neg_word is None):
            continue  # neither or both: nothing to go by
        word = pos_word or neg_word
        if (value > 0) == (pos_word is not None):
            continue  # the sign already agrees
        out[name] = -value
        normalized[name] = {
            "from": value,
            "to": -value,
            "because": word,
            "convention": f"{positive} positive",
        }
    return out, normalized
