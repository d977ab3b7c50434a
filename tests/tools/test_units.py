"""Unit-aware argument normalisation (loopact.tools.units; SPEC B7, issue 6)."""

from __future__ import annotations

import math

import pytest

from loopact.tools.units import (
    UnitConflict,
    find_quantities,
    in_unit_of,
    normalize_units,
    quantity_spans,
    unit_conflicts,
    unit_of,
)


@pytest.mark.parametrize(
    ("text", "value", "kind", "factor"),
    [
        ("move forward 50 centimeters", 50, "length", 0.01),
        ("move forward 50 cm", 50, "length", 0.01),
        ("往前走50厘米", 50, "length", 0.01),
        ("往前走五十厘米", 50, "length", 0.01),
        ("走一百二十厘米", 120, "length", 0.01),
        ("向前走两米", 2, "length", 1.0),
        ("go 500 mm", 500, "length", 0.001),
        ("move fifty cm", 50, "length", 0.01),
        ("move twenty five centimetres", 25, "length", 0.01),
        ("back up 3 feet", 3, "length", 0.3048),
        ("turn 90°", 90, "angle", 1.0),
        ("转十五度", 15, "angle", 1.0),
        ("wait 2 minutes", 2, "time", 60.0),
        ("hold it for 1500 ms", 1500, "time", 0.001),
        ("drive at 30 cm/s", 30, "speed", 0.01),
        ("drive at 30 centimeters per second", 30, "speed", 0.01),
        ("以30厘米每秒前进", 30, "speed", 0.01),
        ("以每秒50米的速度前进", 50, "speed", 1.0),
        ("每秒钟三十厘米地往前开", 30, "speed", 0.01),
        ("每小时5公里", 5, "speed", 1000.0 / 3600.0),
        ("以每秒90度的速度左转", 90, "angular_speed", 1.0),
    ],
)
def test_find_quantities_reads_number_and_unit(
    text: str, value: float, kind: str, factor: float
) -> None:
    qs = find_quantities(text)
    assert len(qs) == 1, qs
    assert qs[0].value == value
    assert qs[0].kind == kind
    assert math.isclose(qs[0].factor, factor)


def test_find_quantities_several_in_order() -> None:
    qs = find_quantities("drive 2 m at 30 cm/s, then turn 1.5 rad")
    assert [(q.value, q.kind) for q in qs] == [(2, "length"), (30, "speed"), (1.5, "angle")]
    assert math.isclose(qs[2].factor, 180 / math.pi)


@pytest.mark.parametrize(
    "text",
    [
        "move 2 in the hallway",  # "in" is a word, not inches
        "turn left 90 in place",
        "someone said hello",
        "go to the kitchen",
        "move 1,000 forward",
    ],
)
def test_find_quantities_ignores_numbers_without_units(text: str) -> None:
    assert find_quantities(text) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("distance_m", ("length", 1.0)),
        ("speed_mps", ("speed", 1.0)),
        ("angle_deg", ("angle", 1.0)),
        ("pan_deg", ("angle", 1.0)),
        ("duration_s", ("time", 1.0)),
        ("speed_dps", ("angular_speed", 1.0)),
        ("offset_cm", ("length", 0.01)),
        ("delay_ms", ("time", 0.001)),
        ("color", None),
        ("m", None),
    ],
)
def test_unit_of_reads_the_argument_suffix(name: str, expected: tuple[str, float] | None) -> None:
    assert unit_of(name) == expected


def test_centimetres_for_a_metre_argument_become_metres() -> None:
    args, norm = normalize_units(
        {"distance_m": 50, "speed_mps": 0.2}, "move forward 50 centimeters"
    )
    assert args == {"distance_m": 0.5, "speed_mps": 0.2}
    assert norm == {"distance_m": {"from": 50, "to": 0.5, "unit": "m", "because": "50 centimeters"}}


@pytest.mark.parametrize(
    ("arguments", "text", "expected"),
    [
        ({"distance_m": 50}, "往前走50厘米", {"distance_m": 0.5}),
        ({"distance_m": 500.0}, "go 500 mm ahead", {"distance_m": 0.5}),
        ({"distance_m": 3}, "back up 3 feet", {"distance_m": 0.9144}),
        ({"duration_s": 2}, "drive for 2 minutes", {"duration_s": 120}),
        ({"speed_mps": 30}, "drive 2 m at 30 cm/s", {"speed_mps": 0.3}),
        ({"angle_deg": 2}, "旋转两圈", {"angle_deg": 720}),
        ({"linear_mps": -30}, "reverse at 30 cm/s", {"linear_mps": -0.3}),
    ],
)
def test_other_units_are_converted(
    arguments: dict[str, float], text: str, expected: dict[str, float]
) -> None:
    args, norm = normalize_units(arguments, text)
    assert args == expected
    assert set(norm) == set(expected)


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"distance_m": 0.5}, "move forward 50 centimeters"),  # already converted
        ({"distance_m": 1}, "move forward 1 meter"),  # same unit
        ({"distance_m": 50}, "move 50 cm, then 50 m"),  # also written in the field's unit
        ({"distance_m": 50}, "move 50 cm or 50 mm"),  # two other units: ambiguous
        ({"duration_s": 50}, "move forward 50 centimeters"),  # other kind of quantity
        ({"distance": 50}, "move forward 50 centimeters"),  # no unit in the name
        ({"distance_m": "50"}, "move forward 50 centimeters"),  # not a number
        ({"enabled_s": True}, "wait 1 minute"),  # bools are not numbers
        ({"distance_m": 50}, ""),  # no instruction
    ],
)
def test_nothing_changes_without_a_clear_unit_mismatch(
    arguments: dict[str, object], text: str
) -> None:
    args, norm = normalize_units(arguments, text)
    assert args == arguments
    assert norm == {}


def test_arguments_are_not_modified_in_place() -> None:
    original = {"distance_m": 50}
    args, _ = normalize_units(original, "50 cm")
    assert original == {"distance_m": 50}
    assert args == {"distance_m": 0.5}


def test_a_length_given_to_a_speed_argument_is_a_conflict() -> None:
    drive = {"linear_mps": 0.3, "angular_dps": 0, "duration_s": 1}
    assert unit_conflicts(drive, "drive ahead 0.3 m") == [
        UnitConflict("linear_mps", 0.3, "speed", "0.3 m", "length")
    ]
    assert unit_conflicts({"linear_mps": 0.4, "duration_s": 1}, "前进0.4米") == [
        UnitConflict("linear_mps", 0.4, "speed", "0.4米", "length")
    ]
    # a speed written time first (每秒50米) given as a distance: refused like "50 m/s"
    assert unit_conflicts({"distance_m": 50}, "以每秒50米的速度前进") == [
        UnitConflict("distance_m", 50.0, "length", "每秒50米", "speed")
    ]
    # a time in a speed argument: the call has no time argument to hold "10 seconds"
    assert unit_conflicts({"distance_m": 2, "speed_mps": 10}, "go 2 meters in 10 seconds") == [
        UnitConflict("speed_mps", 10.0, "speed", "10 seconds", "time")
    ]


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"linear_mps": 0.3, "duration_s": 2}, "drive at 0.3 m/s for 2 seconds"),  # right kinds
        ({"distance_m": 2, "speed_mps": 2}, "go 2 meters at 2 m/s"),  # also a speed
        ({"angle_deg": 90, "speed_dps": 90}, "turn left 90 degrees"),  # 90 deg is held
        ({"linear_mps": 0.3, "duration_s": 1}, "drive 0.3 m at speed 0.3"),  # also bare
        ({"distance_m": 50}, "move forward 50 centimeters"),  # same kind: normalisation's job
        ({"speed": 0.3}, "drive ahead 0.3 m"),  # no unit in the name
        ({"linear_mps": 0.2}, "drive ahead 0.3 m"),  # not the user's number
        ({"linear_mps": 0.3}, ""),  # no instruction
        ({"linear_mps": True}, "drive ahead 1 m"),  # bools are not numbers
    ],
)
def test_no_conflict_when_the_quantity_fits_or_is_not_the_users(
    arguments: dict[str, object], text: str
) -> None:
    assert unit_conflicts(arguments, text) == []


def test_quantity_spans_and_the_value_in_an_arguments_unit() -> None:
    text = "go  50 cm , then turn 1.5 rad"
    spans = quantity_spans(text)
    assert [text[a:b] for a, b, _ in spans] == ["50 cm", "1.5 rad"]
    length, angle = (q for _, _, q in spans)
    assert in_unit_of("distance_m", length) == 0.5
    assert in_unit_of("distance_cm", length) == 50
    assert in_unit_of("angle_deg", angle) == pytest.approx(85.9437, abs=1e-4)
    assert in_unit_of("angle_deg", length) is None  # another kind
    assert in_unit_of("text", length) is None  # no unit in the name
