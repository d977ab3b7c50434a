"""Tools for models without native tool calls: a compact catalogue and a call grammar (SPEC B4, B7).

Both are derived from the tools' JSON Schemas, so they help every model and special-case none
(issue 6):

* :func:`describe_tools_compact` writes the catalogue in the widespread Hermes layout (one
  compact JSON function object per tool inside ``<tools></tools>``, calls as a JSON object
  with ``name`` and ``arguments``) that many open models are trained on, with only the first
  sentence of each description and a unit-conversion hint. Small models pick the right tool
  far more often with it than with signatures or raw JSON Schema.
* :func:`tool_call_grammar` builds a llama.cpp GBNF grammar: the response is either plain
  answer text (no braces, fences or tags) or one JSON call object whose name is an offered
  tool and whose arguments have the schema's keys and JSON types (non-negative where the
  schema says ``minimum >= 0``; ``enum`` values are the only choices). Invalid JSON, unknown
  tools and misspelt keys become impossible; which tool and which value stay the model's
  choice. :func:`answer_only_grammar` allows the answer text only. With ``require_call`` the
  response must be a call; :data:`REPLY_TOOL` is then offered so that words stay possible
  (greetings, thanks) as a call the provider turns back into answer text.
* Tools' ``examples`` (instruction -> call) are listed after the catalogue, at most
  :data:`MAX_EXAMPLES`, in the same bare-JSON form the grammar produces: every tool's first
  example before any tool's second (:func:`pick_examples`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from loopact.llm.base import ToolSpec

_MAX_DESC_CHARS = 160
_RULE_SAFE = re.compile(r"[^a-zA-Z0-9-]")
MAX_EXAMPLES = 24
"""At most this many tool examples go into one catalogue (tokens are precious on a CPU: the
robot's 20-odd tools each have one, about 25 tokens apiece)."""

REPLY_TOOL = ToolSpec(
    "reply",
    "Answer the user in words only: greetings, thanks, questions about yourself. Not for "
    "what you see or where you are: call a robot function for those.",
    {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The answer."}},
        "required": ["text"],
    },
    examples=(("hi there", {"text": "Hello! How can I help?"}),),
)
"""The pseudo-tool offered when a call is required (first round of a task on a constrained
endpoint): its call is not run but becomes the answer text (issue 6)."""

RESULT_INSTRUCTION = "Tell the user in one short sentence what this result shows."
"""The line after a tool result written as text for a model without native tool calls."""
REFUSAL_INSTRUCTION = "Call one of those functions instead."
"""The line after a result the runtime refused for its units (its error names the functions)."""
TEXT_CALL_INSTRUCTIONS = (RESULT_INSTRUCTION, REFUSAL_INSTRUCTION)
"""The runtime's instruction lines in a text-call prompt: an answer that only repeats one is
not an answer (:class:`~loopact.llm.small_model.SmallModelPolicy`)."""


def echoes_instruction(text: str) -> bool:
    """Whether ``text`` is (or holds) one of :data:`TEXT_CALL_INSTRUCTIONS`, ignoring case,
    spacing and punctuation; small models answer a refusal with "Call one of those functions
    instead." (measured with the 0.5B brain on "drive at 50 m/s", 2026-12-02)."""
    said = _letters(text)
    if len(said.split()) < 3:  # "OK", "one": too short to be a copy
        return False
    return any(said in _letters(line) or _letters(line) in said for line in TEXT_CALL_INSTRUCTIONS)


def _letters(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


# --- compact catalogue ------------------------------------------------------------------


def _first_sentence(text: str) -> str:
    text = " ".join(text.split("\n\n")[0].split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z])|(?<=[。！？])", text)
    if m and m.start() < _MAX_DESC_CHARS:
        text = text[: m.start()].strip()
    if len(text) > _MAX_DESC_CHARS:
        text = text[: _MAX_DESC_CHARS - 3].rstrip() + "..."
    return text


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t if x != "null") or "null"
    if isinstance(t, str):
        if t == "array" and isinstance(schema.get("items"), Mapping):
            return f"list of {_type_name(schema['items'])}"
        return t
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            names = [_type_name(b) for b in branches if isinstance(b, Mapping)]
            return "|".join(n for n in names if n != "null") or "null"
    return "any"


def compact_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool as a small OpenAI-style function object for the prompt.

    Only ``name``, the first sentence of the description, and per argument its type, the
    first sentence of its description, ``enum`` and ``default``; the ``required`` list.
    """
    schema = spec.parameters or {}
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in props]
    out_props: dict[str, Any] = {}
    for name, sub in props.items():
        sub = sub if isinstance(sub, Mapping) else {}
        entry: dict[str, Any] = {"type": _type_name(sub)}
        if "enum" in sub:
            entry = {"enum": list(sub["enum"])}
        desc = sub.get("description")
        if isinstance(desc, str) and desc.strip():
            entry["description"] = _first_sentence(desc)
        if name not in required and "default" in sub and sub["default"] is not None:
            entry["default"] = sub["default"]
        out_props[name] = entry
    return {
        "name": spec.name,
        "description": _first_sentence(spec.description),
        "parameters": {"type": "object", "properties": out_props, "required": required},
    }


def describe_tool(spec: ToolSpec) -> str:
    """One tool as one line of compact JSON (see :func:`compact_schema`)."""
    return json.dumps({"type": "function", "function": compact_schema(spec)}, ensure_ascii=False)


def describe_tools_compact(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section offering ``tools`` to a model that writes calls as text.

    The layout is the widespread Hermes function-calling convention (tool signatures inside
    ``<tools></tools>``, calls inside ``<tool_call></tool_call>``) that many open models are
    trained on, with compact one-line JSON per tool and a unit-conversion hint.

    Args:
        tools: The tools offered in this request.

    Returns:
        The section text.
    """
    lines = [
        "# Tools",
        "",
        "You may call one or more functions to assist with the user query.",
        "",
        "You are provided with function signatures within <tools></tools> XML tags:",
        "<tools>",
        *(describe_tool(t) for t in tools),
        "</tools>",
        "",
        "For each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:",
        "<tool_call>",
        '{"name": <function-name>, "arguments": <args-json-object>}',
        "</tool_call>",
        "",
        "Arguments are JSON numbers in the unit the argument name ends with (_m metres, "
        "_deg degrees, _s seconds): convert first (centimetres: divide by 100; "
        "a quarter turn -> 90; turn around -> 180). Questions about what you see or where you "
        "are are answered by calling a function first, never guessed. "
        "When no function is needed or the task is done, answer in plain text.",
    ]
    examples = pick_examples(tools)
    if examples:
        lines += ["", "Examples:"]
        for text, call in examples:
            lines += [f"User: {text}", json.dumps(call, ensure_ascii=False)]
    return "\n".join(lines)


def pick_examples(
    tools: Sequence[ToolSpec], limit: int = MAX_EXAMPLES
) -> list[tuple[str, dict[str, Any]]]:
    """The catalogue's examples: each tool's first example, then each tool's second, ...

    A catalogue of many tools then shows one example of as many tools as ``limit`` allows
    instead of all the examples of the first few (a small model copies what it is shown).
    The first example of :data:`REPLY_TOOL` is never cut (it is what keeps "hello" from
    becoming a robot call); it keeps its place at the end of the first rank.

    Args:
        tools: The tools offered, in catalogue order.
        limit: At most this many examples.

    Returns:
        ``(instruction, {"name": tool, "arguments": {...}})`` pairs in catalogue order within
        each rank.
    """

    def row(rank: int, of: Sequence[ToolSpec]) -> list[tuple[str, dict[str, Any]]]:
        return [
            (t.examples[rank][0], {"name": t.name, "arguments": t.examples[rank][1]})
            for t in of
            if len(t.examples) > rank
        ]

    kept = [t for t in tools if t.name == REPLY_TOOL.name and t.examples][:1]
    others = [t for t in tools if t not in kept]
    budget = max(0, limit - len(kept))
    picked: list[tuple[str, dict[str, Any]]] = []
    rank = 0
    while len(picked) < budget and (examples := row(rank, others)):
        picked += examples[: budget - len(picked)]
        if rank == 0:
            picked += row(0, kept)[:limit]
        rank += 1
    if rank == 0:
        picked = row(0, kept)[:limit]
    return picked


# --- GBNF grammar -----------------------------------------------------------------------

_PRIMITIVES = r"""
ws ::= [ ]?
number ::= "-"? nonneg
nonneg ::= ("0" | [1-9] [0-9]{0,6}) ("." [0-9]{1,6})?
integer ::= "-"? nonnegint
nonnegint ::= "0" | [1-9] [0-9]{0,9}
boolean ::= "true" | "false"
null ::= "null"
string ::= "\"" char{0,200} "\""
char ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ( "," ws string ws ":" ws value ){0,15} )? ws "}"
array ::= "[" ws ( value ( "," ws value ){0,31} )? ws "]"
answer ::= [^<{`# \t\n] [^<{`]*
"""


def _lit(text: str) -> str:
    """A GBNF string literal for ``text``."""
    return json.dumps(text, ensure_ascii=False)


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def rule(self, base: str, body: str) -> str:
        name = _RULE_SAFE.sub("-", base).strip("-").lower() or "r"
        candidate, n = name, 1
        while candidate in self.rules and self.rules[candidate] != body:
            n += 1
            candidate = f"{name}-{n}"
        self.rules[candidate] = body
        return candidate

    def value(self, schema: Any, hint: str, depth: int = 0) -> str:
        if not isinstance(schema, Mapping) or depth > 4:
            return "value"
        if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
            choices = " | ".join(_lit(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            return self.rule(hint + "-enum", choices)
        if "const" in schema:
            return self.rule(hint + "-const", _lit(json.dumps(schema["const"], ensure_ascii=False)))
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                alts = [self.value(b, f"{hint}-{i}", depth + 1) for i, b in enumerate(branches)]
                return self.rule(hint + "-alt", " | ".join(dict.fromkeys(alts)))
        t = schema.get("type")
        if isinstance(t, list):
            alts = [self.value({**schema, "type": x}, f"{hint}-{x}", depth + 1) for x in t]
            return self.rule(hint + "-alt", " | ".join(dict.fromkeys(alts)))
        if t == "number":
            return "nonneg" if _non_negative(schema) else "number"
        if t == "integer":
            return "nonnegint" if _non_negative(schema) else "integer"
        if t in ("string", "boolean", "null"):
            return str(t)
        if t == "array":
            item = self.value(schema.get("items"), hint + "-item", depth + 1)
            body = f'"[" ws ( {item} ( "," ws {item} ){{0,31}} )? ws "]"'
            return self.rule(hint + "-array", body)
        if t == "object" or "properties" in schema:
            return self.object(schema, hint, depth)
        return "value"

    def object(self, schema: Mapping[str, Any], hint: str, depth: int) -> str:
        props: Mapping[str, Any] = schema.get("properties") or {}
        if not props:
            closed = schema.get("additionalProperties") is False
            return self.rule("empty-object", '"{" ws "}"') if closed else "object"
        required = [r for r in schema.get("required") or [] if r in props]
        optional = [p for p in props if p not in required]

        def kv(name: str) -> str:
            val = self.value(props[name], f"{hint}-{name}", depth + 1)
            return self.rule(f"{hint}-{name}-kv", f'{_lit(json.dumps(name))} ws ":" ws {val}')

        req = [kv(r) for r in required]
        opt = self.rule(hint + "-opt", " | ".join(kv(o) for o in optional)) if optional else None
        if req:
            body = ' "," ws '.join(req)
            if opt:
                body += f' ( "," ws {opt} ){{0,{len(optional)}}}'
        elif opt:
            tail = f' ( "," ws {opt} ){{0,{len(optional) - 1}}}' if len(optional) > 1 else ""
            body = f"( {opt}{tail} )?"
        else:
            body = ""
        return self.rule(hint + "-obj", f'"{{" ws {body} ws "}}"'.replace("  ", " "))


def _non_negative(schema: Mapping[str, Any]) -> bool:
    for key in ("minimum", "exclusiveMinimum"):
        v = schema.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            return True
    return False


def answer_only_grammar() -> str:
    """A GBNF grammar allowing only plain answer text (no call, no JSON, no fences)."""
    return "root ::= answer\n" + _PRIMITIVES.strip() + "\n"


def tool_call_grammar(
    tools: Sequence[ToolSpec], max_calls: int = 1, require_call: bool = False
) -> str:
    """A GBNF grammar: plain answer text, or up to ``max_calls`` JSON call objects.

    Args:
        tools: The tools offered (at least one).
        max_calls: How many calls one response may hold (1 unless the endpoint runs calls
            in parallel).
        require_call: No plain text: the response must be a call (offer :data:`REPLY_TOOL`
            among ``tools`` so that the model can still answer in words).

    Returns:
        Grammar text for llama.cpp's ``grammar`` request field (root rule ``root``).

    Raises:
        ValueError: ``tools`` is empty or ``max_calls`` < 1.
    """
    if not tools:
        raise ValueError("tool_call_grammar needs at least one tool")
    if max_calls < 1:
        raise ValueError(f"max_calls must be >= 1, got {max_calls}")
    b = _Builder()
    alts = []
    for t in tools:
        args = b.value(t.parameters or {"type": "object"}, "args-" + t.name)
        if args == "value":
            args = "object"
        head = _lit('{"name": ' + json.dumps(t.name) + ', "arguments": ')
        alts.append(b.rule("call-" + t.name, f'{head} ws {args} ws "}}"'))
    # The call is a bare JSON object: the provider reads it at the end of the response
    # (loopact.llm.textcalls.find_bare_json_calls). Tag literals are not forced, because
    # models that know <tool_call> as one special token derail when made to spell it.
    b.rules["call"] = " | ".join(alts)
    more = f' ( "\\n" call ){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    lines = [f"root ::= call{more}" if require_call else f"root ::= answer | call{more}"]
    lines += [f"{name} ::= {body}" for name, body in b.rules.items()]
    return "\n".join(lines) + "\n" + _PRIMITIVES.strip() + "\n"
