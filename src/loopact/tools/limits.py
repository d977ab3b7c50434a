"""How much of a tool from elsewhere is offered to the model (SPEC C2, C7; issue 39 item 12).

Every model request carries every offered tool's name, description and parameter schema (and,
for models that write calls as text, its examples). A tool announced by someone else — an MCP
server, an output node's heartbeat over ROS 2 or MQTT — could make every request too long for
the model ("about 253097 tokens" from one 1 MB description), so one set of limits applies to
all of them:

- a description is cut to :data:`MAX_DESCRIPTION_CHARS` (:func:`short_description`);
- a parameter schema of more than :data:`MAX_SCHEMA_CHARS` characters of JSON is not offered
  (:func:`schema_chars`);
- one source (an MCP server, a node process) offers at most :data:`MAX_TOOLS_PER_SOURCE`
  tools, and nodes on a shared graph or broker together at most :data:`MAX_NODE_TOOLS`;
- examples are kept up to :data:`MAX_EXAMPLES` and :data:`MAX_EXAMPLE_CHARS` in all
  (:func:`bounded_examples`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

MAX_DESCRIPTION_CHARS = 2_000
"""Characters of a remote tool's description offered to the model."""

MAX_SCHEMA_CHARS = 16_000
"""Characters of JSON a remote tool's parameter schema may have; every model request carries
it, so a larger one is not offered."""

MAX_TOOLS_PER_SOURCE = 128
"""Tools one MCP server or one node process (one heartbeat ``instance``) offers at most."""

MAX_NODE_TOOLS = 256
"""Tools all output nodes together offer at most (anyone on the graph or the broker can start
a node, under any instance id)."""

MAX_EXAMPLES = 8
"""Examples of one remote tool kept."""

MAX_EXAMPLE_CHARS = 2_000
"""Characters of one remote tool's examples kept in all (instruction plus JSON arguments)."""


def short_description(text: str | None, fallback: str) -> str:
    """``text`` (or ``fallback`` when it is empty) cut to :data:`MAX_DESCRIPTION_CHARS`,
    ending in ``...`` when cut."""
    text = (text or "").strip() or fallback
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 3] + "..."
    return text


def schema_chars(schema: Any) -> int:
    """Characters of ``schema`` as compact JSON (what a request carries, near enough)."""
    return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":"), default=str))


def schema_refusal(schema: Any) -> str | None:
    """Why ``schema`` is too large to offer, or None when it is within
    :data:`MAX_SCHEMA_CHARS`."""
    size = schema_chars(schema)
    if size <= MAX_SCHEMA_CHARS:
        return None
    return (
        f"its parameter schema is {size} characters of JSON, more than {MAX_SCHEMA_CHARS} "
        "(every model request would carry it)"
    )


def bounded_examples(
    examples: Sequence[tuple[str, dict[str, Any]]],
) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The first examples that fit :data:`MAX_EXAMPLES` and :data:`MAX_EXAMPLE_CHARS`."""
    kept: list[tuple[str, dict[str, Any]]] = []
    used = 0
    for instruction, arguments in examples[:MAX_EXAMPLES]:
        used += len(instruction) + schema_chars(arguments)
        if used > MAX_EXAMPLE_CHARS:
            break
        kept.append((instruction, arguments))
    return tuple(kept)
