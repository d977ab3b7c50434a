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
the first one; later ones (on later lines, or on the same line: ``move_forward(0.3)
turn_left(90)``) are reported back as ignored, unknown names are reported as errors and never
run, and ``finishtask()`` ends the task. An action runs only when it starts its line; one that a
sentence mentions is listed in ``mentions`` and never run, and a known action whose arguments do
not parse is a failed call, never prose (:mod:`loopact.agent.actionlines`). The text around the
actions is progress for the user.

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

from loopact.agent.actionlines import (
    MAX_CALL_CHARS,
    MAX_LITERAL_DEPTH,
    QUANTITY_MARKER,
    Line,
    call_name,
    scan_line,
)
from loopact.errors import ToolArgumentError
from loopact.llm.arguments import too_long_error
from loopact.llm.base import ToolSpec
from loopact.llm.messages import ToolCall
from loopact.llm.toolnames import resolve_tool_name
from loopact.tools.units import find_quantities, in_unit_of, unit_of

__all__ = [
    "FINISH_ACTION",
    "ActionParse",
    "empty_feedback",
    "observation_text",
    "parse_actions",
    "render_catalogue",
    "signature",
]

logger = logging.getLogger(__name__)

FINISH_ACTION = "finishtask"
"""The action that ends the task (SPEC A5)."""

_FINISH_ALIASES = frozenset({"finishtask", "finish_task"})

# The start of an action line, for lines too long to be parsed as one.
_ACTION_START = re.compile(
    r"^\s*(?:[-*\u2022>]\s+|\d{1,3}[.)]\s+)?`*\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\("
)
_FENCE_LINE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*$")
_WORD_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "none": None,
    "True": True,
    "False": False,
    "None": None,
}


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
        mentions: Known actions written inside sentences, as written; never run. When the
            answer has no action line, the model is asked to write the action on its own
            line (:meth:`mention_feedback`) rather than the sentence taken as the answer.
    """

    call: ToolCall | None = None
    finished: bool = False
    ignored: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    progress: str = ""
    mentions: tuple[str, ...] = ()

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

    def mention_feedback(self) -> str:
        """Text for the model when its answer mentioned actions only inside sentences.

        Returns:
            E.g. ``"Not run: move_forward(0.3) was inside a sentence. ..."``, or an empty
            string when there were no mentions.
        """
        if not self.mentions:
            return ""
        return (
            f"Not run: {', '.join(self.mentions)} was inside a sentence. An action runs only "
            "when it is alone on its own line (text for the user goes on other lines). Write "
            f"the action you mean on a line of its own, or {FINISH_ACTION}() when the task is "
            "done."
        )


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
    parser = _Parser({s.name: s for s in specs})
    for line in text.splitlines():
        if not _FENCE_LINE.match(line):
            parser.line(line)
    return parser.result()


class _Parser:
    """The state of one :func:`parse_actions`: the first action of the answer decides."""

    def __init__(self, by_name: dict[str, ToolSpec]) -> None:
        self.by_name = by_name
        self.known = [*by_name, *_FINISH_ALIASES]
        self.call: ToolCall | None = None
        self.finished = False
        self.decided = False
        self.ignored: list[str] = []
        self.errors: list[str] = []
        self.mentions: list[str] = []
        self.progress: list[str] = []

    def line(self, line: str) -> None:
        scan = scan_line(line, self.known)
        if scan.calls:
            first = call_name(scan.calls[0][1])
            if "." in first and resolve_tool_name(first, self.known) is None:
                self.progress.append(line)  # "e.g.(...)", "os.path(...)": prose, not an action
                return
            for source, node in scan.calls:
                self.action(source, node)
            return
        failed = _too_long_call(line, self.by_name) or self._broken_call(line, scan)
        if failed is None:
            self.progress.append(line)
            self.mentions.extend(scan.mentions)
        elif self.decided:
            self.ignored.append(f"{failed.name}(...)")
        else:
            self.call, self.decided = failed, True

    def action(self, source: str, node: ast.Call) -> None:
        name = call_name(node)
        name = resolve_tool_name(name, self.known) or name
        if self.decided:
            self.ignored.append(source)
            return
        self.decided = True
        if name in _FINISH_ALIASES:
            self.finished = True
            return
        spec = self.by_name.get(name)
        if spec is None:
            valid = ", ".join([*sorted(self.by_name), FINISH_ACTION + "()"])
            self.errors.append(f"Unknown action {name}() was not run; valid actions: {valid}.")
            return
        self.call = _build_call(spec, node, source)

    def _broken_call(self, line: str, scan: Line) -> ToolCall | None:
        """A failed call for a line that starts with a known tool whose arguments do not
        parse (``move_forward({"distance_m": 0.3)``): the model is told, nothing runs."""
        spec = self.by_name.get(scan.broken) if scan.broken else None
        if spec is None:
            return None
        written = line.strip()
        shown = written if len(written) <= 120 else written[:117] + "..."
        return ToolCall(
            id="act_" + uuid.uuid4().hex[:16],
            name=spec.name,
            arguments={},
            raw_arguments=written[:200],
            error=f"invalid action {shown}: its arguments do not parse ({scan.error}); "
            f"write it as {signature(spec)}",
        )

    def result(self) -> ActionParse:
        return ActionParse(
            call=self.call,
            finished=self.finished,
            ignored=tuple(self.ignored),
            errors=tuple(self.errors),
            progress="\n".join(self.progress).strip(),
            mentions=tuple(self.mentions),
        )


def signature(spec: ToolSpec) -> str:
    """The action signature of a tool, as the catalogue shows it (SPEC A5).

    Returns:
        E.g. ``move_forward(distance_m: number, speed_mps: number = 0.2)``.
    """
    props = _properties(spec)
    required = set(_required(spec))
    return (
        f"{spec.name}({', '.join(_param_signature(n, p, n in required) for n, p in props.items())})"
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
        desc = _first_line(spec.description)
        lines.append(f"- {signature(spec)}" + (f" - {desc}" if desc else ""))
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


def empty_feedback() -> str:
    """The text for the model after an empty answer (SPEC A5): asked once more."""
    return (
        "Your last reply was empty. Write the next action as name(args) on its own line, "
        f"or {FINISH_ACTION}() when the task is done."
    )


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


def _too_long_call(line: str, by_name: Mapping[str, ToolSpec]) -> ToolCall | None:
    """A failed call for a line that starts as a known action but is longer than an action
    line may be (issue 21 item 7: a clear error, not a line taken for prose); else None."""
    if len(line) <= MAX_CALL_CHARS:
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
        error=too_long_error(len(line), MAX_CALL_CHARS),
    )


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
            arguments[props[pos]] = _argument(props[pos], arg_node)
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
            arguments[kw.arg] = _argument(kw.arg, kw.value)
    except _ActionArgError as exc:
        return ToolCall(
            id=call_id,
            name=spec.name,
            arguments={},
            raw_arguments=source,
            error=f"invalid action {source}: {exc}; write it as {signature(spec)}",
        )
    return ToolCall(id=call_id, name=spec.name, arguments=arguments, raw_arguments=source)


class _ActionArgError(ToolArgumentError):
    pass


def _argument(name: str, node: ast.expr) -> Any:
    """The value of argument ``name``: a literal, or a number written with its unit read in
    the unit the name declares (SPEC A5, B7).

    ``turn_left(90 degrees)`` gives ``angle_deg`` 90, ``move_forward(50 cm)`` gives
    ``distance_m`` 0.5 (:func:`~loopact.tools.units.in_unit_of`); a unit of another kind
    than the name's (``move_forward(90 degrees)``), or a unit for an argument whose name
    declares none, is an error that says what to write instead.
    """
    sign, inner = 1, node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign, inner = (-1 if isinstance(node.op, ast.USub) else 1), node.operand
    if not (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Name)
        and inner.func.id == QUANTITY_MARKER
    ):
        return _literal(node, 0)
    first = inner.args[0] if len(inner.args) == 1 else None
    written = first.value if isinstance(first, ast.Constant) else None
    quantities = find_quantities(written) if isinstance(written, str) else []
    if len(quantities) != 1:
        raise _ActionArgError(f"{ast.unparse(node)} is not a literal value")
    quantity = quantities[0]
    value = in_unit_of(name, quantity)
    if value is None:
        declared = unit_of(name)
        takes = f"takes {_a(declared[0])}" if declared else "takes no unit"
        raise _ActionArgError(f'"{quantity.text}" is {_a(quantity.kind)}, but {name} {takes}')
    return _finite(sign * value)


def _a(kind: str) -> str:
    """``a length``, ``an angle``, ``an angular speed``."""
    words = kind.replace("_", " ")
    return f"an {words}" if words[0] in "aeiou" else f"a {words}"


def _literal(node: ast.expr, depth: int) -> Any:
    """Convert a literal node to a JSON value; anything else raises :class:`_ActionArgError`."""
    if depth > MAX_LITERAL_DEPTH:
        raise _ActionArgError(f"arguments nested too deeply (more than {MAX_LITERAL_DEPTH} levels)")
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
