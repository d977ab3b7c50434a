"""Action-text mode: tool calls written as ``name(arg, ...)`` lines (SPEC A5).

Brains without native tool calling (Dify apps, small local models) answer in text and write
their actions as call lines::

    I can see a red box on the left. I will drive towards it.
    move_forward(1.0, speed_mps=0.3)

:func:`parse_actions` reads such an answer against the live tool schemas: positional arguments
map to the schema's properties in order, keyword arguments by name; values are Python/JSON
literals (quoted strings with escapes, numbers, ``true``/``false``/``True``/``False``,
``null``/``None``, lists and objects of those). The call syntax is parsed with :mod:`ast` and
only literal nodes are accepted: nothing is ever evaluated. Exactly one action runs per round:
the first one; later ones are reported back as ignored, unknown names are reported as errors
and never run, and ``finishtask()`` ends the task. The text around the actions is progress for
the user.

:func:`render_catalogue` renders the tools as action signatures for the prompt.
"""

from __future__ import annotations

import ast
import logging
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopact.errors import ToolArgumentError
from loopact.llm.arguments import cut_deeper_than, nesting_depth, too_long_error
from loopact.llm.base import ToolSpec
from loopact.llm.messages import ToolCall
from loopact.llm.toolnames import resolve_tool_name

__all__ = [
    "FINISH_ACTION",
    "ActionParse",
    "observation_text",
    "parse_actions",
    "render_catalogue",
]

logger = logging.getLogger(__name__)

FINISH_ACTION = "finishtask"
"""The action that ends the task (SPEC A5)."""

_FINISH_ALIASES = frozenset({"finishtask", "finish_task"})

# A line that looks like an action: optional bullet / number / "Action:" prefix, optional
# backticks, then ``identifier(`` ... ``)`` and at most a trailing ``;`` or ``.``.
_ACTION_LINE = re.compile(
    r"""^\s*
    (?:[-*\u2022>]\s+|\d{1,3}[.)]\s+)?             # bullet or "1." / "1)"
    (?:[^\W\d][\w ]{0,30}?\s*[:\uff1a]\s*)?        # a short label: "Action:", "Step 2:"
    `*\s*
    (?P<call>(?:[A-Za-z_]\w*\.)?[A-Za-z_][A-Za-z0-9_-]*\(.*\))  # [ns.]name(...), no space
    (?P<tail>.*)$""",
    re.VERBOSE,
)
# The start of an action line, for lines too long to be parsed as one.
_ACTION_START = re.compile(
    r"^\s*(?:[-*\u2022>]\s+|\d{1,3}[.)]\s+)?`*\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\("
)
# What may follow an action on its line: backticks, a full stop, a comment.
_TAIL = re.compile(r"^\s*`*\s*[;.\u3002]?\s*(?:(?:#|//).*)?$")
_FENCE_LINE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*$")
_CURLY_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_WORD_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "none": None,
    "True": True,
    "False": False,
    "None": None,
}
_MAX_LITERAL_DEPTH = 8
_MAX_CALL_CHARS = 4000


@dataclass(frozen=True)
class ActionParse:
    """What an action-text answer asks for (SPEC A5).

    Attributes:
        call: The action to run this round, as a tool call (arguments keyed by the schema's
            property names), or None. When its arguments could not be used (too many
            positional values, an unknown keyword, a value that is not a literal, a
            non-finite number) ``call.error`` says why: answer it with an error result,
            never run it.
        finished: True when the first action is ``finishtask()``: the task is done.
        ignored: Later actions in the same answer, as written; they are not run (one action
            per round) and should be reported back to the model.
        errors: Actions with unknown names (never run), each message naming the valid
            actions.
        progress: The answer text with the action lines removed: progress for the user.
    """

    call: ToolCall | None = None
    finished: bool = False
    ignored: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    progress: str = ""

    @property
    def has_action(self) -> bool:
        """True when the answer held any action line (known, unknown or ``finishtask()``)."""
        return self.call is not None or self.finished or bool(self.errors or self.ignored)

    def feedback(self) -> str:
        """Text for the model about what was not run (ignored and unknown actions).

        Returns:
            One line per problem, or an empty string when there is nothing to report.
        """
        lines = list(self.errors)
        if self.ignored:
            lines.append(
                "Only one action runs per reply; ignored: "
                + ", ".join(self.ignored)
                + ". Write the next action in your next reply."
            )
        return "\n".join(lines)


def parse_actions(text: str, specs: Sequence[ToolSpec]) -> ActionParse:
    """Parse an action-text answer against the tools' schemas (SPEC A5).

    Args:
        text: The model's answer (reasoning already removed).
        specs: The tools on offer; their ``parameters.properties`` order gives the order of
            positional arguments.

    Returns:
        The :class:`ActionParse`. The first recognised action decides the round: a known
        tool becomes ``call``, ``finishtask()`` sets ``finished``, an unknown name goes to
        ``errors``; every later action line goes to ``ignored``. Never raises.
    """
    by_name = {s.name: s for s in specs}
    call: ToolCall | None = None
    finished = False
    decided = False
    ignored: list[str] = []
    errors: list[str] = []
    progress_lines: list[str] = []
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            continue
        parsed = _match_call(line)
        if parsed is None:
            too_long = _too_long_call(line, by_name)
            if too_long is None:
                progress_lines.append(line)
            elif decided:
                ignored.append(f"{too_long.name}(...)")
            else:
                call, decided = too_long, True
            continue
        source, node = parsed
        name = _call_name(node)
        resolved = resolve_tool_name(name, [*by_name, *_FINISH_ALIASES])
        if "." in name and resolved is None:
            progress_lines.append(line)  # "e.g.(...)", "os.path(...)": prose, not an action
            continue
        name = resolved or name
        if decided:
            ignored.append(source)
            continue
        if name in _FINISH_ALIASES:
            finished = True
            decided = True
            continue
        spec = by_name.get(name)
        if spec is None:
            valid = ", ".join([*sorted(by_name), FINISH_ACTION + "()"])
            errors.append(f"Unknown action {name}() was not run; valid actions: {valid}.")
            decided = True
            continue
        call = _build_call(spec, node, source)
        decided = True
    progress = "\n".join(progress_lines).strip()
    return ActionParse(
        call=call,
        finished=finished,
        ignored=tuple(ignored),
        errors=tuple(errors),
        progress=progress,
    )


def render_catalogue(specs: Sequence[ToolSpec]) -> str:
    """Render the tools as action signatures for the prompt (SPEC A5).

    Each tool becomes ``name(param: type, param: type = default) - description`` (the first
    line of its description), followed by an indented line describing the parameters (their
    schema descriptions carry the units: metres, m/s, degrees, seconds). ``finishtask()`` and
    the one-action rule close the catalogue.

    Args:
        specs: The tools on offer.

    Returns:
        The catalogue text.
    """
    lines = ["Available actions:"]
    for spec in specs:
        props = _properties(spec)
        required = set(_required(spec))
        sig = ", ".join(_param_signature(n, p, n in required) for n, p in props.items())
        desc = _first_line(spec.description)
        lines.append(f"- {spec.name}({sig})" + (f" - {desc}" if desc else ""))
        details = [
            f"{n}: {_first_line(str(p.get('description', '')))}"
            for n, p in props.items()
            if isinstance(p, Mapping) and p.get("description")
        ]
        if details:
            lines.append("    " + "; ".join(details))
    lines.append(f"- {FINISH_ACTION}() - Say that the task is finished.")
    lines.append("")
    lines.append(
        "Rules: write exactly one action per reply as name(args) on its own line; "
        f"write {FINISH_ACTION}() when done. Arguments go in the order shown or as "
        "name=value; strings in double quotes. Text around the action is shown to the user."
    )
    return "\n".join(lines)


def observation_text(call: ToolCall, ok: bool, text: str, parse: ActionParse | None = None) -> str:
    """The feedback for the model after an action ran (SPEC A5).

    Args:
        call: The action that ran (or was refused).
        ok: Whether it succeeded.
        text: The tool's output or error, as text.
        parse: The answer's parse, so ignored and unknown actions are reported too.

    Returns:
        E.g. ``"Result of move_forward(distance_m=1.0): ok\n<text>\nWrite the next action
        as name(args), or finishtask() when the task is done."``
    """
    args = ", ".join(f"{k}={_render_value(v)}" for k, v in call.arguments.items())
    lines = [f"Result of {call.name}({args}): {'ok' if ok else 'failed'}"]
    if text.strip():
        lines.append(text.strip())
    if parse is not None and parse.feedback():
        lines.append(parse.feedback())
    lines.append(
        f"Write the next action as name(args), or {FINISH_ACTION}() when the task is done."
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- parsing


def _match_call(line: str) -> tuple[str, ast.Call] | None:
    """Return ``(source, call node)`` when ``line`` is an action line, else None."""
    if "(" not in line or len(line) > _MAX_CALL_CHARS:
        return None
    m = _ACTION_LINE.match(line)
    if m is None or not _TAIL.match(m.group("tail")):
        return None
    text = m.group("call")
    # The greedy match may run past the call into a comment: try each ")" from the right.
    ends = [i + 1 for i, ch in enumerate(text) if ch == ")"]
    for end in reversed(ends):
        source = text[:end]
        if end < len(text) and not _TAIL.match(text[end:]):
            continue
        for candidate in (source, source.translate(_CURLY_QUOTES)):
            node = _parse_call(candidate)
            if node is not None:
                return source, node
    return None


def _too_long_call(line: str, by_name: Mapping[str, ToolSpec]) -> ToolCall | None:
    """A failed call for a line that starts as a known action but is longer than an action
    line may be (issue 21 item 7: a clear error, not a line taken for prose); else None."""
    if len(line) <= _MAX_CALL_CHARS:
        return None
    m = _ACTION_START.match(line)
    name = resolve_tool_name(m.group("name"), list(by_name)) if m else None
    if name is None:
        return None
    return ToolCall(
        id="act_" + uuid.uuid4().hex[:16],
        name=name,
        arguments={},
        raw_arguments=line[:200] + "...",
        error=too_long_error(len(line), _MAX_CALL_CHARS),
    )


def _parse_call(source: str) -> ast.Call | None:
    # Hyphens are legal in tool names but not in Python: parse with a stand-in name.
    name, _, rest = source.partition("(")
    try:
        tree = ast.parse("_(" + rest, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Python's parser refuses 200 nested brackets ("too many nested parentheses"): the
        # line would pass as prose. Parse it with the depths past the limit cut, so that it
        # is one failed call "arguments nested too deeply" (issue 21 item 9).
        if nesting_depth(rest) <= _MAX_LITERAL_DEPTH:
            return None
        try:
            tree = ast.parse("_(" + cut_deeper_than(rest, _MAX_LITERAL_DEPTH + 1), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    body = tree.body
    if not isinstance(body, ast.Call) or not isinstance(body.func, ast.Name):
        return None
    body.func.id = name
    return body


def _call_name(node: ast.Call) -> str:
    assert isinstance(node.func, ast.Name)
    return node.func.id


def _build_call(spec: ToolSpec, node: ast.Call, source: str) -> ToolCall:
    """Map the call's arguments onto the schema; errors end up in ``ToolCall.error``."""
    call_id = "act_" + uuid.uuid4().hex[:16]
    props = list(_properties(spec))
    arguments: dict[str, Any] = {}
    try:
        if len(node.args) > len(props):
            raise _ActionArgError(
                f"{spec.name} takes {len(props)} argument(s) "
                f"({', '.join(props) or 'none'}) but {len(node.args)} were given"
            )
        for pos, arg_node in enumerate(node.args):
            if isinstance(arg_node, ast.Starred):
                raise _ActionArgError("*arguments are not allowed")
            arguments[props[pos]] = _literal(arg_node, 0)
        for kw in node.keywords:
            if kw.arg is None:
                raise _ActionArgError("**arguments are not allowed")
            if kw.arg not in props:
                raise _ActionArgError(
                    f"{spec.name} has no parameter {kw.arg!r}; "
                    f"parameters: {', '.join(props) or 'none'}"
                )
            if kw.arg in arguments:
                raise _ActionArgError(f"parameter {kw.arg!r} given twice")
            arguments[kw.arg] = _literal(kw.value, 0)
    except _ActionArgError as exc:
        return ToolCall(
            id=call_id,
            name=spec.name,
            arguments={},
            raw_arguments=source,
            error=f"invalid action {source}: {exc}",
        )
    return ToolCall(id=call_id, name=spec.name, arguments=arguments, raw_arguments=source)


class _ActionArgError(ToolArgumentError):
    pass


def _literal(node: ast.expr, depth: int) -> Any:
    """Convert a literal node to a JSON value; anything else raises :class:`_ActionArgError`."""
    if depth > _MAX_LITERAL_DEPTH:
        raise _ActionArgError(
            f"arguments nested too deeply (more than {_MAX_LITERAL_DEPTH} levels)"
        )
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)):
            return _finite(value)
        raise _ActionArgError(f"unsupported value {ast.unparse(node)}")
    if isinstance(node, ast.Name):
        if node.id in _WORD_LITERALS:
            return _WORD_LITERALS[node.id]
        raise _ActionArgError(
            f'{node.id} is not a value (quote strings, e.g. "{node.id}"; numbers must be finite)'
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand, depth + 1)
        if isinstance(operand, bool) or not isinstance(operand, (int, float)):
            raise _ActionArgError(f"unsupported value {ast.unparse(node)}")
        return _finite(-operand if isinstance(node.op, ast.USub) else operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values):  # noqa: B905 (same length by construction)
            if k is None:
                raise _ActionArgError("**mappings are not allowed")
            key = _literal(k, depth + 1)
            if not isinstance(key, str):
                raise _ActionArgError("object keys must be strings")
            out[key] = _literal(v, depth + 1)
        return out
    raise _ActionArgError(f"{ast.unparse(node)} is not a literal value")


def _finite(value: int | float) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise _ActionArgError(f"non-finite number {value} refused")
    return value


# ---------------------------------------------------------------------------- rendering


def _properties(spec: ToolSpec) -> dict[str, Any]:
    props = spec.parameters.get("properties") if spec.parameters else None
    return dict(props) if isinstance(props, Mapping) else {}


def _required(spec: ToolSpec) -> list[str]:
    req = spec.parameters.get("required") if spec.parameters else None
    return [str(r) for r in req] if isinstance(req, list) else []


def _param_signature(name: str, schema: Any, required: bool) -> str:
    text = f"{name}: {_type_name(schema)}"
    if isinstance(schema, Mapping) and "default" in schema:
        text += f" = {_render_value(schema['default'])}"
    elif not required:
        text += " = None"
    return text


def _type_name(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    if isinstance(schema.get("enum"), list):
        return " | ".join(_render_value(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if isinstance(kind, str):
        if kind == "array" and isinstance(schema.get("items"), Mapping):
            return f"array of {_type_name(schema['items'])}"
        return kind
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            names = [_type_name(b) for b in branches]
            return " | ".join(n for n in names if n != "null") or "any"
    return "any"


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "None"
    return repr(value)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""
