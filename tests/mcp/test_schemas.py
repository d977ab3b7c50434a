"""A tool schema with a top-level combiner, offered in the form every model API accepts
(issue 39 item 3). The whole path, with a server process and both providers, is in
test_reference.py."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from loopact.mcp.schemas import Unofferable, offered_schema
from loopact.testing.schema_rules import anthropic_problem, openai_problem


def _accepted(schema: dict[str, Any]) -> None:
    assert anthropic_problem([{"name": "t", "input_schema": schema}]) is None
    assert openai_problem([{"function": {"name": "t", "parameters": schema}}]) is None
    jsonschema.Draft202012Validator.check_schema(schema)


def test_a_plain_schema_is_offered_as_it_is() -> None:
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}
    offered = offered_schema(schema)
    assert offered.schema is schema and offered.note == ""


def test_local_refs_enum_and_not_are_rewritten() -> None:
    schema = {
        "type": "object",
        "$defs": {"byId": {"properties": {"id": {"type": "integer"}}, "required": ["id"]}},
        "properties": {"verbose": {"type": "boolean"}},
        "oneOf": [{"$ref": "#/$defs/byId"}, {"properties": {"q": {"type": "string"}}}],
        "not": {"required": ["verbose", "q"]},
    }
    offered = offered_schema(schema)
    _accepted(offered.schema)
    assert set(offered.schema["properties"]) == {"verbose", "id", "q"}
    assert "required" not in offered.schema  # no name is required by every branch
    assert offered.schema["$defs"] == schema["$defs"]  # inner refs still resolve
    assert offered.note == (
        "Give exactly one of: id; q. Some combinations of arguments are refused "
        "(checked when called)."
    )


def test_a_branch_that_is_not_an_object_cannot_be_offered() -> None:
    with pytest.raises(Unofferable, match="top-level anyOf whose branch 1 is not an object"):
        offered_schema({"type": "object", "anyOf": [{"type": "object"}, {"type": "array"}]})
