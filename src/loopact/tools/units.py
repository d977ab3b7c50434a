"""Unit-aware argument normalisation against the user's own words (SPEC B7, issue 6).

Tool arguments carry their unit in their name (``distance_m``, ``angle_deg``, ``speed_mps``,
``duration_s``, ``pan_deg``). Models, small ones above all, often copy the number the user
wrote and drop the unit: "move forward 50 centimeters" becomes ``distance_m: 50``. This module
finds the quantities written in an instruction ("50 centimeters", "50 cm", "50厘米", "五十厘米",
"500 mm", "2 minutes", "30 cm/s") and, when a numeric argument equals one of those numbers
and that number was written in a different unit of the same kind as the argument's unit,
converts it (50 cm for a ``_m`` field -> 0.5).

Conservative by design: nothing changes when the argument's name has no known unit suffix,
when the number does not occur with a unit in the instruction, when it also occurs with the
argument's own unit, or when it occurs with two different units of that kind (ambiguous).
The module is pure (no I/O) and knows no tool or model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# kind -> unit words -> factor to the kind's base unit (metre, degree, second, m/s, deg/s)
_LENGTH: dict[str, float] = {
    "m": 1.0,
    "meter": 1.0,
    "meters": 1.0,
    "metre": 1.0,
    "metres": 1.0,
    "米": 1.0,
    "公尺": 1.0,
    "cm": 0.01,
    "centimeter": 0.01,
    "centimeters": 0.01,
    "centimetre": 0.01,
    "centimetres": 0.01,
    "厘米": 0.01,
    "公分": 0.01,
    "mm": 0.001,
    "millimeter": 0.001,
    "millimeters": 0.001,
    "millimetre": 0.001,
    "millimetres": 0.001,
    "毫米": 0.001,
    "dm": 0.1,
    "decimeter": 0.1,
    "decimeters": 0.1,
    "decimetre": 0.1,
    "decimetres": 0.1,
    "分米": 0.1,
    "km": 1000.0,
    "kilometer": 1000.0,
    "kilometers": 1000.0,
    "kilometre": 1000.0,
    "kilometres": 1000.0,
    "公里": 1000.0,
    "千米": 1000.0,
    "inch": 0.0254,
    "inches": 0.0254,
    "英寸": 0.0254,
    "ft": 0.3048,
    "foot": 0.3048,
    "feet": 0.3048,
    "英尺": 0.3048,
}
_ANGLE: dict[str, float] = {
    "deg": 1.0,
    "degs": 1.0,
    "degree": 1.0,
    "degrees": 1.0,
    "°": 1.0,
    "度": 1.0,
    "rad": 180.0 / math.pi,
    "rads": 180.0 / math.pi,
    "radian": 180.0 / math.pi,
    "radians": 180.0 / math.pi,
    "弧度": 180.0 / math.pi,
    "revolution": 360.0,
    "revolutions": 360.0,
    "圈": 360.0,
}
_TIME: dict[str, float] = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "秒": 1.0,
    "秒钟": 1.0,
    "ms": 0.001,
    "millisecond": 0.001,
    "milliseconds": 0.001,
    "毫秒": 0.001,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "分钟": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "小时": 3600.0,
}

# Argument-name suffix -> (kind, factor of the argument's unit to the kind's base unit).
# Longest suffix first so that ``_mps`` is not read as ``_s``.
_SUFFIXES: tuple[tuple[str, str, float], ...] = (
    ("_radps", "angular_speed", 180.0 / math.pi),
    ("_cmps", "speed", 0.01),
    ("_kmh", "speed", 1000.0 / 3600.0),
    ("_mps", "speed", 1.0),
    ("_dps", "angular_speed", 1.0),
    ("_deg", "angle", 1.0),
    ("_rad", "angle", 180.0 / math.pi),
    ("_min", "time", 60.0),
    ("_cm", "length", 0.01),
    ("_mm", "length", 0.001),
    ("_km", "length", 1000.0),
    ("_ms", "time", 0.001),
    ("_m", "length", 1.0),
    ("_s", "time", 1.0),
)

_EN_NUMBERS: dict[str, int] = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_ZH_DIGITS.update({"七": 7, "八": 8, "九": 9})
_ZH_SCALES = {"十": 10, "百": 100, "千": 1000}


@dataclass(frozen=True)
class Quantity:
    """A number written with a unit in an instruction.

    Attributes:
        value: The number as written (50 for "50 cm").
        kind: ``length``, ``angle``, ``time``, ``speed`` or ``angular_speed``.
        factor: The unit's size in the kind's base unit (metre, degree, second, m/s, deg/s).
        text: The words matched, e.g. ``"50 centimeters"``.
    """

    value: float
    kind: str
    factor: float
    text: str


def _alternation(words: Mapping[str, float]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_LEN_ALT = _alternation(_LENGTH)
_ANG_ALT = _alternation(_ANGLE)
_TIME_ALT = _alternation(_TIME)
_PER_SECOND = r"(?:\s*/\s*s(?:ec)?\b|\s+per\s+second\b|\s*每秒(?:钟)?)"
_PER_HOUR = r"(?:\s*/\s*h\b|\s+per\s+hour\b|\s*每小时)"
_EN_ALT = "|".join(sorted(_EN_NUMBERS, key=len, reverse=True))
_NUMBER = (
    r"(?P<num>\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千]+"
    rf"|(?:{_EN_ALT})(?:[\s-]+(?:{_EN_ALT}))?)"
)
_UNIT = rf"(?P<unit>{_LEN_ALT}|{_ANG_ALT}|{_TIME_ALT})"
_PER_PREFIX = r"(?P<pre>每秒(?:钟)?|每小时)\s*"
"""Chinese also puts the time first: 每秒50米 (50 m/s), 每小时5公里 (5 km/h)."""
_QUANTITY = re.compile(
    rf"(?:{_PER_PREFIX})?(?<![A-Za-z0-9.]){_NUMBER}\s*(?:个)?\s*{_UNIT}"
    rf"(?P<per>{_PER_SECOND}|{_PER_HOUR})?(?![a-zA-Z])",
    re.IGNORECASE,
)


def _zh_number(text: str) -> float | None:
    """A Chinese numeral up to the thousands ("五十" -> 50, "两" -> 2), or None."""
    total, current = 0, None
    for ch in text:
        if ch in _ZH_DIGITS:
            current = _ZH_DIGITS[ch]
        elif ch in _ZH_SCALES:
            total += (1 if current is None else current) * _ZH_SCALES[ch]
            current = None
        else:
            return None
    return float(total + (current or 0))


def _en_number(text: str) -> float | None:
    """An English number word or pair ("fifty", "twenty five", "one hundred"), or None."""
    parts = re.split(r"[\s-]+", text.lower().strip())
    if not parts or any(p not in _EN_NUMBERS for p in parts):
        return None
    if len(parts) == 2 and parts[1] == "hundred":
        return float(_EN_NUMBERS[parts[0]] * 100)
    if len(parts) == 2 and _EN_NUMBERS[parts[0]] >= 20 and _EN_NUMBERS[parts[1]] < 10:
        return float(_EN_NUMBERS[parts[0]] + _EN_NUMBERS[parts[1]])
    if len(parts) == 1:
        return float(_EN_NUMBERS[parts[0]])
    return None


def _parse_number(text: str) -> float | None:
    if text[0].isdigit():
        return float(text)
    if text[0] in _ZH_DIGITS or text[0] in _ZH_SCALES:
        return _zh_number(text)
    return _en_number(text)


def find_quantities(text: str) -> list[Quantity]:
    """Every number-with-unit in ``text``, in order of appearance.

    Args:
        text: An instruction in any language (English and Chinese units are recognised).

    Returns:
        The quantities found; speeds are length-per-second/-hour or angle-per-second.
    """
    return [q for _, _, q in quantity_spans(text)]


def quantity_spans(text: str) -> list[tuple[int, int, Quantity]]:
    """Every number-with-unit in ``text`` with where it is: ``(start, end, quantity)``.

    Args:
        text: Any text (an instruction, the arguments of an action line).

    Returns:
        The quantities of :func:`find_quantities`, each with its character span in ``text``
        (surrounding spaces not included).
    """
    out: list[tuple[int, int, Quantity]] = []
    for m in _QUANTITY.finditer(text):
        value = _parse_number(m.group("num"))
        if value is None:
            continue
        unit = m.group("unit").lower()
        per = (m.group("per") or m.group("pre") or "").strip().lower()
        per_hour = bool(per) and ("h" in per or "小时" in per)
        if unit in _LENGTH:
            kind, factor = "length", _LENGTH[unit]
            if per:
                kind, factor = "speed", factor / (3600.0 if per_hour else 1.0)
        elif unit in _ANGLE:
            kind, factor = "angle", _ANGLE[unit]
            if per:
                if per_hour:
                    continue
                kind = "angular_speed"
        else:
            if per:
                continue
            kind, factor = "time", _TIME[unit]
        written = m.group(0)
        start = m.start() + len(written) - len(written.lstrip())
        end = m.end() - len(written) + len(written.rstrip())
        out.append((start, end, Quantity(value, kind, factor, written.strip())))
    return out


def in_unit_of(argument: str, quantity: Quantity) -> float | int | None:
    """``quantity`` in the unit the name ``argument`` declares, or None when it declares
    none or one of another kind.

    Example: ``in_unit_of("distance_m", <50 cm>) == 0.5``; ``in_unit_of("angle_deg",
    <90 degrees>) == 90``; ``in_unit_of("distance_m", <90 degrees>) is None``.
    """
    declared = unit_of(argument)
    if declared is None or declared[0] != quantity.kind:
        return None
    return _round(quantity.value * quantity.factor / declared[1])


def unit_of(name: str) -> tuple[str, float] | None:
    """The kind and unit factor an argument name declares by its suffix, or None.

    Example: ``unit_of("distance_m") == ("length", 1.0)``;
    ``unit_of("speed_mps") == ("speed", 1.0)``; ``unit_of("color") is None``.
    """
    low = name.lower()
    for suffix, kind, factor in _SUFFIXES:
        if low.endswith(suffix) and len(low) > len(suffix):
            return kind, factor
    return None


def _unit_arguments(
    arguments: Mapping[str, Any],
) -> Iterator[tuple[str, int | float, tuple[str, float]]]:
    """``(name, value, (kind, factor))`` of each finite non-zero number whose name has a unit."""
    for name, value in arguments.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(float(value)) or value == 0:
            continue
        declared = unit_of(name)
        if declared is not None:
            yield name, value, declared


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _round(value: float) -> float | int:
    out = float(f"{value:.6g}")
    return int(out) if out.is_integer() and abs(out) < 1e15 else out


def normalize_units(
    arguments: Mapping[str, Any], instruction: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Convert numeric arguments the model copied from the instruction without its unit.

    A top-level argument is converted when its name ends with a unit suffix (``_m``,
    ``_deg``, ``_s``, ``_mps``, ``_dps``, ``_cm``, ...), its value is a number (not a bool),
    and that number appears in ``instruction`` with exactly one unit of the same kind that
    differs from the argument's unit, and never with the argument's own unit. Example:
    instruction "move forward 50 centimeters", ``{"distance_m": 50}`` ->
    ``{"distance_m": 0.5}``. The sign is kept (-50 with "50 cm" becomes -0.5).

    Args:
        arguments: The call's arguments (not modified).
        instruction: The user's instruction text for the task.

    Returns:
        ``(arguments, normalized)``: a new argument dict, and per converted argument
        ``{"from": 50, "to": 0.5, "unit": "m", "because": "50 centimeters"}`` (empty when
        nothing changed).
    """
    out = dict(arguments)
    normalized: dict[str, dict[str, Any]] = {}
    if not instruction or not arguments:
        return out, normalized
    quantities: list[Quantity] | None = None
    for name, value, (kind, field_factor) in _unit_arguments(arguments):
        if quantities is None:
            quantities = find_quantities(instruction)
        same_number = [
            q for q in quantities if q.kind == kind and _same(q.value, abs(float(value)))
        ]
        if not same_number or any(_same(q.factor, field_factor) for q in same_number):
            continue
        factors = {round(q.factor, 12) for q in same_number}
        if len(factors) != 1:
            continue  # the same number with two different units: ambiguous
        q = same_number[0]
        converted = _round(float(value) * q.factor / field_factor)
        out[name] = converted
        normalized[name] = {
            "from": value,
            "to": converted,
            "unit": name.rsplit("_", 1)[-1],
            "because": q.text,
        }
    return out, normalized


@dataclass(frozen=True)
class UnitConflict:
    """A number the user wrote as one kind of quantity, given to an argument of another kind.

    Attributes:
        argument: The argument's name (``linear_mps``).
        value: The value the model gave it (0.3).
        kind: The argument's kind by its name (``speed``).
        said: The user's words for that number (``"0.3 m"``).
        said_kind: Their kind (``length``).
    """

    argument: str
    value: float
    kind: str
    said: str
    said_kind: str


_DIGITS = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?(?![0-9])")


def unit_conflicts(arguments: Mapping[str, Any], instruction: str) -> list[UnitConflict]:
    """Numbers the user wrote with a unit of one kind, put into an argument of another kind.

    "drive ahead 0.3 m" answered with ``drive(linear_mps=0.3, ...)`` puts a length into a
    speed: the call cannot mean what the user said, whatever its other arguments are, because
    none of them takes a length. An argument is reported when its name declares a kind
    (:func:`unit_of`), its value equals a number the instruction wrote only with units of
    other kinds (never with a unit of the argument's kind, never without a unit), and no
    argument of the call with such another kind holds that quantity. Same-kind mix-ups
    ("50 centimeters" as ``distance_m: 50``) are :func:`normalize_units`' job, not conflicts.

    Args:
        arguments: The call's arguments, after :func:`normalize_units`.
        instruction: The user's instruction text for the task.

    Returns:
        One :class:`UnitConflict` per such argument, in argument order (empty: no conflict).
    """
    if not instruction or not arguments:
        return []
    quantities = find_quantities(instruction)
    if not quantities:
        return []
    kinds: dict[str, list[tuple[float, float]]] = {}  # kind -> (value, factor) of arguments
    for _name, value, (kind, factor) in _unit_arguments(arguments):
        kinds.setdefault(kind, []).append((float(value), factor))
    bare = [float(m.group(0)) for m in _DIGITS.finditer(instruction)]
    out: list[UnitConflict] = []
    for name, value, declared in _unit_arguments(arguments):
        number = abs(float(value))
        same = [q for q in quantities if _same(q.value, number)]
        if not same or any(q.kind == declared[0] for q in same):
            continue
        written = [q for q in same if any(ch.isdigit() for ch in q.text)]  # 每秒50米 too
        if sum(_same(b, number) for b in bare) > len(written):
            continue  # the number also stands without a unit somewhere
        q = same[0]
        held = any(_same(abs(v) * f, q.value * q.factor) for v, f in kinds.get(q.kind, []))
        if held:
            continue
        out.append(UnitConflict(name, float(value), declared[0], q.text, q.kind))
    return out
