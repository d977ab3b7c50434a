"""What the real model APIs refuse in a tool's input schema, so the scripted model server
refuses it too (issue 39 item 3; SPEC X2).

Both APIs take a JSON Schema object for a tool's arguments and refuse the whole request
(HTTP 400) for one tool whose schema has a combiner at its top level:

- Anthropic Messages: ``input_schema`` is "a JSON Schema object defining the expected
  parameters for the tool" (platform.claude.com/docs/en/agents-and-tools/tool-use/
  define-tools); a top-level ``oneOf``, ``allOf`` or ``anyOf`` is answered
  ``tools.N.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the
  top level``.
- OpenAI chat completions: ``function.parameters`` must be ``type: "object"`` (the
  Structured Outputs guide, "Supported schemas": the root must be an object and not use
  ``anyOf``); an empty ``{}`` means no parameters. Another schema without ``type`` is
  answered ``Invalid schema for function 'NAME': schema must be a JSON Schema of 'type:
  "object"', got 'type: "None"'.``, and one with a top-level combiner, ``enum`` or ``not``
  ``Invalid schema for function 'NAME': schema must have type 'object' and not have
  'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level.``
"""

from __future__ import annotations

from typing import Any

_COMBINERS = ("oneOf", "anyOf", "allOf")
_OPENAI_TOP = (*_COMBINERS, "enum", "not")


def anthropic_problem(tools: Any) -> str | None:
    """Why the Messages API refuses the ``tools`` of a request, or None."""
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        schema = tool.get("input_schema") if isinstance(tool, dict) else None
        if isinstance(schema, dict) and any(k in schema for k in _COMBINERS):
            return (
                f"tools.{i}.custom.input_schema: input_schema does not support oneOf, allOf, "
                "or anyOf at the top level"
            )
    return None


def openai_problem(tools: Any) -> str | None:
    """Why chat completions refuses the ``tools`` of a request, or None."""
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or "parameters" not in function:
            continue
        name, schema = function.get("name"), function["parameters"]
        if schema == {}:  # no parameters: accepted
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object":
            got = schema.get("type") if isinstance(schema, dict) else None
            return (
                f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                f"'type: \"object\"', got 'type: \"{got}\"'."
            )
        if any(k in schema for k in _OPENAI_TOP):
            return (
                f"Invalid schema for function '{name}': schema must have type 'object' and "
                "not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level."
            )
    return None
