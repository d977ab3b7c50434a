"""An MCP tool's input schema in the form every model API accepts (issue 39 item 3; SPEC C1,
C8).

A server's ``inputSchema`` may be any JSON Schema with ``type: "object"`` at its root, and a
top-level ``oneOf`` / ``anyOf`` / ``allOf`` is valid and common ("give a path or a URL").
The model APIs refuse such a tool, and with it the whole request (HTTP 400), so one server's
tool would take every request down:

- Anthropic Messages refuses ``oneOf``, ``allOf`` and ``anyOf`` at the top level of
  ``input_schema`` ("input_schema does not support oneOf, allOf, or anyOf at the top level";
  the tool-use docs define ``input_schema`` as "a JSON Schema object defining the expected
  parameters for the tool": platform.claude.com/docs/en/agents-and-tools/tool-use/
  define-tools).
- OpenAI chat completions wants ``type: "object"`` and none of ``oneOf``, ``anyOf``,
  ``allOf``, ``enum``, ``not`` at the top level of ``parameters`` ("schema must have type
  'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level"; the
  Structured Outputs guide, "Supported schemas": the root must be an object, not ``anyOf``).
  Nested combiners are accepted by both (non-strict function calling).

:func:`offered_schema` gives the one form both accept, for every provider: the branches'
properties merged into the top level, ``required`` kept only where every branch requires it
(``allOf``: all of them), and what the combiner said moved into a sentence for the
description ("Give exactly one of: path; url."). Nothing is lost: loopact validates every
call against the server's own schema before it is sent, so a call that breaks the
combiner's rule gets a clear argument error. A schema that cannot be written so (a branch
that is not an object schema) is :class:`Unofferable`: the tool is left out, with a
``node_error`` naming why, and the server's other tools are offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopact.errors import LoopactError

REFUSED_AT_TOP = ("oneOf", "anyOf", "allOf", "enum", "not")
"""Top-level keywords a model API refuses in a tool's schema (see the module docstring)."""

_MAX_NOTE_CHARS = 400
_RULES = {"oneOf": "Give exactly one of", "anyOf": "Give at least one of"}


class Unofferable(LoopactError):
    """A tool's input schema has no form every model API accepts (the message says why)."""


@dataclass(frozen=True)
class OfferedSchema:
    """A tool's schema as offered to the model.

    Attributes:
        schema: The schema every model API accepts.
        note: What the server's top-level combiner said, for the tool's description ("" when
            the schema was accepted as it is).
    """

    schema: dict[str, Any]
    note: str = ""


def offered_schema(schema: dict[str, Any]) -> OfferedSchema:
    """``schema`` (a server's ``inputSchema``) in the form every model API accepts.

    Args:
        schema: The tool's input schema (``type: "object"`` at its root; MCP requires it).

    Returns:
        ``schema`` itself when no top-level keyword is refused, else the rewritten schema
        and the sentence for the description (see the module docstring).

    Raises:
        Unofferable: A ``oneOf``/``anyOf``/``allOf`` branch is not an object schema.
    """
    if not any(key in schema for key in REFUSED_AT_TOP):
        return OfferedSchema(schema)
    out = {k: v for k, v in schema.items() if k not in REFUSED_AT_TOP}
    out["type"] = "object"
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required: list[str] = [str(r) for r in schema.get("required") or []]
    notes: list[str] = []
    for key in ("allOf", "oneOf", "anyOf"):
        if key not in schema:
            continue
        branches = [_branch(schema, key, i, b) for i, b in enumerate(schema[key])]
        for branch in branches:
            for name, sub in (branch.get("properties") or {}).items():
                properties.setdefault(name, sub)
        needs = [[str(r) for r in b.get("required") or []] for b in branches]
        if key == "allOf":
            required += [name for need in needs for name in need]
        else:
            common = set.intersection(*(set(n) for n in needs)) if needs else set()
            required += [name for name in needs[0] if name in common] if needs else []
            forms = "; ".join(_shown(b, n) for b, n in zip(branches, needs, strict=True))
            notes.append(f"{_RULES[key]}: {forms}.")
    if "enum" in schema or "not" in schema:
        notes.append("Some combinations of arguments are refused (checked when called).")
    if properties:
        out["properties"] = properties
    if required:
        out["required"] = list(dict.fromkeys(required))
    note = " ".join(notes)
    if len(note) > _MAX_NOTE_CHARS:
        note = note[: _MAX_NOTE_CHARS - 3] + "..."
    return OfferedSchema(out, note)


def _branch(schema: dict[str, Any], key: str, index: int, branch: Any) -> dict[str, Any]:
    """A combiner's branch, with a local ``$ref`` followed; Unofferable if not an object."""
    if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
        branch = _local(schema, branch["$ref"]) or branch
    kind = branch.get("type", "object") if isinstance(branch, dict) else None
    if not isinstance(branch, dict) or kind not in ("object", ["object"]):
        raise Unofferable(
            f"its inputSchema has a top-level {key} whose branch {index} is not an object "
            "schema, which no model API accepts at the top of a tool's parameters"
        )
    return branch


def _local(schema: dict[str, Any], ref: str) -> Any:
    """What a local ``#/...`` reference points to, or None."""
    if not ref.startswith("#/"):
        return None
    node: Any = schema
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _shown(branch: dict[str, Any], needs: list[str]) -> str:
    """One branch in a few words: the arguments it requires (or has), or its description."""
    names = needs or list(branch.get("properties") or {})
    if names:
        return " and ".join(names)
    return str(branch.get("description") or branch.get("title") or "another form")
