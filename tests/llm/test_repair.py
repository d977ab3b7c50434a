"""Tool-argument repair (SPEC B7)."""

from __future__ import annotations

import pytest

from loopact.llm.repair import parse_tool_arguments


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('{"a": 1,}', {"a": 1}),
        ("{'a': 'x', 'b': 2}", {"a": "x", "b": 2}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"pose": {"x": 1.5, "y": -2', {"pose": {"x": 1.5, "y": -2}}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1,}\n```', {"a": 1}),
        ('Here are the arguments: {"a": 1} hope that helps', {"a": 1}),
        ('"{\\"a\\": 1}"', {"a": 1}),
        ('[{"a": 1}]', {"a": 1}),
        ('{"a": true, "b": null}', {"a": True, "b": None}),
    ],
)
def test_repairs_to_object(raw: str, expected: dict[str, object]) -> None:
    args, err = parse_tool_arguments(raw)
    assert err is None
    assert args == expected


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_empty_arguments_are_an_empty_object(raw: str | None) -> None:
    assert parse_tool_arguments(raw) == ({}, None)


def test_dict_passes_through() -> None:
    assert parse_tool_arguments({"speed_mps": 0.5}) == ({"speed_mps": 0.5}, None)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("not json at all", "not a JSON object"),
        ("[1, 2, 3]", "array"),
        ("42", "number"),
        ('{"a": 1}{"b": 2}', "2 JSON objects"),
        # json_repair turns this into an array; the error says the text was broken
        ("{not json at all", "not valid JSON and could not be repaired: {not json at all"),
    ],
)
def test_unrepairable_reports_why(raw: str, fragment: str) -> None:
    args, err = parse_tool_arguments(raw)
    assert args == {}
    assert err is not None
    assert fragment in err


def test_non_string_input_reports_type() -> None:
    args, err = parse_tool_arguments([1, 2])  # type: ignore[arg-type]
    assert args == {}
    assert err is not None and "array" in err


def test_long_garbage_does_not_crash() -> None:
    args, err = parse_tool_arguments("x" * 300_000)
    assert args == {}
    assert err is not None
