"""The one catalogue and typed phrases (SPEC F5, issue 38): a sentence for people is a key and
its parameters, rendered in English or Chinese where it is shown; a trace keeps both."""

from __future__ import annotations

import json
import string

import pytest

from loopact import i18n
from loopact.i18n import Name, Phrase
from loopact.i18n.catalogue import CATALOGUE, DOMAINS, LANGS


def test_every_key_is_in_one_domain_and_has_every_language() -> None:
    seen: dict[str, str] = {}
    for domain, entries in DOMAINS.items():
        for key in entries:
            assert key not in seen, f"{key} is in both {seen[key]} and {domain}"
            seen[key] = domain
    assert set(seen) == set(CATALOGUE)
    assert [k for k in CATALOGUE if set(CATALOGUE[k]) != set(LANGS)] == []
    assert [k for k in i18n.all_keys() if not i18n.has_all_languages(k)] == []


def test_a_phrase_renders_in_each_language_and_survives_a_trace() -> None:
    said = Phrase("nav.reached_around", goal=Name("the door", "门"), distance_m=4.741, detours=2)
    assert said.text("en") == "reached the door after 4.74 m, going around 2 obstacles"
    # no space between Chinese words: "到达 {goal}" names a Chinese place without one
    assert said.text("zh") == "走了 4.74 米，到达门，绕过了 2 个障碍物"
    assert Phrase("nav.reached", goal=Name("door"), distance_m=1.0).text("zh") == (
        "走了 1.00 米，到达 door"
    )
    assert said.text("fr") == said.text("en")  # an unknown language: English
    encoded = json.loads(json.dumps(said.to_json()))
    assert encoded == {
        "id": "nav.reached_around",
        "params": {"goal": {"en": "the door", "zh": "门"}, "distance_m": 4.741, "detours": 2},
    }
    assert Phrase.from_json(encoded) == said
    assert str(said) == said.text("en")


def test_nested_phrases_and_lists_join_per_language() -> None:
    red_box = Phrase("thing.box", color=i18n.colour_name("red"))
    seen = Phrase(
        "scene.seen",
        items=(
            Phrase("scene.thing_at", what=red_box, distance_m=2.84, where=Phrase("scene.ahead")),
            Phrase("scene.thing", what=red_box, where=Phrase("scene.left", angle_deg=30.2)),
            Phrase("scene.line", color=i18n.colour_name("purple")),
        ),
    )
    assert seen.text("en") == (
        "I see a red box 2.8 m away, straight ahead; a red box 30 degrees left; "
        "and the purple line on the floor."
    )
    assert seen.text("zh") == (
        "我看到红色盒子（2.8 米，正前方）；红色盒子（左方 30 度）；地面上的紫色线"
    )
    assert Phrase.from_json(json.loads(json.dumps(seen.to_json()))) == seen
    one = Phrase("scene.seen", items=(Phrase("scene.line", color=Name("pink")),))
    assert one.text("en") == "I see the pink line on the floor."  # no colour name: as given
    assert one.text("zh") == "我看到地面上的pink线"


def test_bad_parameters_and_unknown_keys_are_programming_errors() -> None:
    with pytest.raises(TypeError, match="'where' must be"):
        Phrase("scene.thing", what="box", where=object())  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        Phrase("no.such.key").text()
    with pytest.raises(KeyError):
        Phrase("motion.moved_forward").text()  # its template needs distance_m
    with pytest.raises(ValueError, match="not a phrase"):
        Phrase.from_json({"params": {}})


def test_both_languages_of_a_key_use_the_same_parameters() -> None:
    """A parameter the Chinese text leaves out would be a fact lost for its readers."""

    def fields(text: str) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(text) if f}

    differ = {k: v for k, v in CATALOGUE.items() if fields(v["en"]) != fields(v["zh"])}
    assert differ == {}
