"""Every robot tool outcome renders in English and Chinese from its typed value (issue 38,
acceptance 2; SPEC F5).

Each key of the robot's and the camera tools' catalogues (``loopact.i18n.robot``,
``loopact.i18n.perception``) is rendered from a phrase whose parameters are values of the
kind its template names (a number for ``distance_m``, a nested phrase for ``cause``, ...);
each must have both languages, render in each, and say it in Chinese. Every phrase id the
robot and vision code can build is in the catalogue (the literal ones found in the source,
the ones built from a cause, a view or a side listed here), and agent/result_zh.py, the 18
regular expressions that translated English sentences, is gone.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest

from loopact import i18n
from loopact.errors import StopCause
from loopact.i18n import Name, Phrase
from loopact.i18n.perception import PERCEPTION
from loopact.i18n.robot import ROBOT

SRC = Path(__file__).resolve().parents[2] / "src" / "loopact"
OUTCOMES = {**ROBOT, **PERCEPTION}
HAN = re.compile(r"[\u4e00-\u9fff]")
VERBATIM = {"stop.reason"}  # a person's words, as they said them: the same in every language

_PHRASES: dict[str, Phrase] = {
    "cause": Phrase("cause.obstacle"),
    "why": Phrase("stop.obstacle_ahead", clearance_m=0.31),
    "said": Phrase("motion.moved_forward", distance_m=0.5),
    "pan": Phrase("head.left", angle_deg=20.0),
    "tilt": Phrase("head.down", angle_deg=10.0),
    "where": Phrase("scene.right", angle_deg=29.0),
    "side": Phrase("detected.left", angle_deg=12.0),
    "what": Phrase("thing.box", color=i18n.colour_name("red")),
    "name": Phrase("thing.ball", color=i18n.colour_name("yellow")),
    "view": Phrase("around.left"),
    "chosen": Phrase(
        "select.chose", what=Phrase("thing.box", color=Name("red", "红色")), bbox="[1, 2, 30, 40]"
    ),
    "problem": Phrase("governor.view_panned"),
    "resource": Phrase("resource.base"),
    "laps": Phrase("line.laps", n=2),
    "reason": Phrase("select.none"),
    "seen": Phrase("scene.nothing"),
}
_NAMES: dict[str, Name] = {
    "place": Name("kitchen", "厨房"),
    "goal": Name("door", "门"),
    "origin": Name("the hallway", "走廊"),
    "room": Name("the bedroom", "卧室"),
    "color": i18n.colour_name("purple"),
}
_TEXTS: dict[str, str] = {
    "target": "red box",
    "known": "red, green, blue",
    "other": "move_backward",
    "bbox": "[10, 20, 50, 60]",
    "value": "nan",
    "located": "red box",
    "detail": "error code 9003 (TIMEOUT)",
    "frame": "map",
    "status": "status 7",
    "action": "navigate_to_pose",
    "sensors": "bumper",
    "who": "/joystick",
    "why": "deadman",
    "drive": "differential",
}


def example(key: str, template: str) -> Phrase:
    """A phrase for ``key`` with a value of the right kind for each field of ``template``."""
    params: dict[str, Any] = {}
    for _, field, spec, conversion in string.Formatter().parse(template):
        if not field:
            continue
        if spec in ("items", "comma", "semi", "lines"):
            params[field] = (
                Phrase("scene.line", color=Name("purple", "紫色")),
                Phrase("around.front"),
            )
        elif conversion == "r" or field in _TEXTS:
            params[field] = _TEXTS.get(field, "front-door")
        elif field in _PHRASES:
            params[field] = _PHRASES[field]
        elif field in _NAMES:
            params[field] = _NAMES[field]
        elif field in ("n", "detours", "tries"):
            params[field] = 3
        elif re.search(r"_(m|s|deg|mps|dps|pct)$", field) or field == "confidence":
            params[field] = 1.25
        else:
            raise AssertionError(f"{key}: no example value for a parameter called {field!r}")
    return Phrase(key, **params)


@pytest.mark.parametrize("key", sorted(OUTCOMES))
def test_every_outcome_renders_in_english_and_chinese(key: str) -> None:
    assert i18n.has_all_languages(key), f"{key} lacks a language"
    said = example(key, OUTCOMES[key]["en"])
    en, zh = said.text("en"), said.text("zh")
    assert en.strip() and zh.strip()
    assert "{" not in en and "{" not in zh and "Name(" not in en + zh
    if key not in VERBATIM:
        assert HAN.search(zh), (key, zh)
        assert zh != en
    assert Phrase.from_json(said.to_json()) == said  # what a trace keeps renders the same


def _built_ids() -> set[str]:
    """The ids the robot and vision code builds: literal ones in the source, and the ones it
    builds from a value (``f"cause.{cause.value}"``, ``f"around.{view}"``, ...)."""
    literal = set()
    for folder in ("robot", "vision"):
        for path in (SRC / folder).rglob("*.py"):
            literal |= set(re.findall(r'Phrase\(\s*"([a-z0-9_.]+)"', path.read_text("utf-8")))
            literal |= set(
                re.findall(
                    r'"((?:motion|head|nav|place|line|track|approach|face|'
                    r'select|scene|thing|detected|around)\.[a-z0-9_]+)"',
                    path.read_text("utf-8"),
                )
            )
    built = {f"cause.{c.value}" for c in StopCause}
    built |= {f"around.{v}" for v in ("front", "left", "behind", "right")}
    built |= {"select.chose_leftmost", "select.chose_rightmost"}
    built |= {"nav.unknown_waypoint", "nav.unknown_place"}
    built |= {"thing.box", "thing.ball", "thing.crate"}  # a located object's noun (goals.py)
    built |= {f"resource.{r}" for r in ("base", "head", "arm")}  # an operator's holds
    return literal | built


def test_every_id_the_robot_builds_is_in_the_catalogue() -> None:
    built = _built_ids()
    assert len(built) > 100, sorted(built)  # the scan found them
    assert sorted(built - set(OUTCOMES) - set(i18n.all_keys())) == []
    # and no catalogue entry is left that nothing builds
    unused = sorted(set(OUTCOMES) - built)
    assert unused == [], unused


def test_the_regular_expression_translator_is_gone() -> None:
    assert not (SRC / "agent" / "result_zh.py").exists()
    users = [p for p in SRC.rglob("*.py") if "result_zh" in p.read_text("utf-8")]
    assert users == []
