"""Finding the actions in one line of an action-text answer (SPEC A5).

An action runs only when it starts its line (after a bullet, a number or a short label such as
``Action:`` / ``动作：``): a call that a sentence mentions is never run, since models echo what
already ran ("I did move_forward(0.3)") and write what they will not do. What a line can be:

- **actions**: one call, or several in a row (``move_forward(0.3) turn_left(90)``,
  ``move_forward(0.3); turn_left(90)``, ``move_forward(0.3)，然后 turn_left(90)``), with at most
  a full stop, ``;`` or a comment after the last; full-width brackets and commas
  (``move_forward（0.3）``, as Chinese input methods write them) are read as ASCII ones;
- **broken**: a known action starts the line but its arguments do not parse
  (``move_forward({"distance_m": 0.3)``): a failed call the model is told about, never prose;
- a number written with its unit (``turn_left(90 degrees)``, ``move_forward(50 cm)``,
  ``drive(linear_mps=0.3 m/s)``: the words of :mod:`loopact.tools.units`) is parsed as the
  call ``__quantity__("90 degrees")`` in its place (:data:`QUANTITY_MARKER`), which
  :mod:`loopact.agent.actiontext` reads against the unit the argument's name declares;
- **prose**: anything else; known actions it mentions (``好的 move_forward(0.3)，然后停下``)
  are listed so that the loop can ask for the action on a line of its own.

The call syntax is parsed with :mod:`ast` and nothing is ever evaluated
(:mod:`loopact.agent.actiontext` turns the nodes into arguments).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass

from loopact.llm.arguments import cut_deeper_than, nesting_depth
from loopact.tools.units import quantity_spans

__all__ = [
    "MAX_CALL_CHARS",
    "MAX_LITERAL_DEPTH",
    "QUANTITY_MARKER",
    "Line",
    "call_name",
    "scan_line",
]

MAX_LITERAL_DEPTH = 8
"""Nesting of lists and objects an argument may have."""
MAX_CALL_CHARS = 4000
"""Characters an action line may have."""
QUANTITY_MARKER = "__quantity__"
"""The name a number written with its unit is parsed as: ``__quantity__("90 degrees")``."""

# Where a line's call starts: optional bullet / number, optional short label, optional
# backticks, then ``[ns.]name(``.
_PREFIX = r"""^\s*
    (?:[-*\u2022>]\s+|\d{1,3}[.)]\s+)?             # bullet or "1." / "1)"
    (?:[^\W\d][\w ]{0,30}?\s*[:\uff1a]\s*)?        # a short label: "Action:", "Step 2:"
    `*\s*"""
_ACTION_LINE = re.compile(
    _PREFIX + r"""(?P<call>(?:[A-Za-z_]\w*\.)?[A-Za-z_][A-Za-z0-9_-]*\(.*\))(?P<tail>.*)$""",
    re.VERBOSE,
)
_CALL_START = re.compile(
    _PREFIX + r"""(?P<name>(?:[A-Za-z_]\w*\.)?[A-Za-z_][A-Za-z0-9_-]*)\(""", re.VERBOSE
)
# The start of a further call on the same line (separators and backticks already skipped).
_NEXT_CALL = re.compile(r"(?:[A-Za-z_]\w*\.)?[A-Za-z_][A-Za-z0-9_-]*\(")
# What may follow an action on its line: backticks, a full stop, a comment.
_TAIL = re.compile(r"^\s*`*\s*[;.\u3002]?\s*(?:(?:#|//).*)?$")
# What may stand between two actions on one line.
_BETWEEN = re.compile(
    r"^`*\s*(?:[,;\uff0c\uff1b\u3001]\s*)?(?:(?:and\s+then|then|and)\s+|(?:然后|再|接着|之后)\s*)?`*\s*",
    re.IGNORECASE,
)
_CURLY_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_FULLWIDTH_BRACKETS = str.maketrans({"\uff08": "(", "\uff09": ")"})
_FULLWIDTH = str.maketrans({"\uff08": "(", "\uff09": ")", "\uff0c": ",", "\uff1d": "="})


@dataclass(frozen=True)
class Line:
    """What one line of an action-text answer holds.

    Attributes:
        calls: The actions of the line, in order, as ``(source, call node)`` pairs; empty
            when the line is not an action line.
        broken: The name of a known action that starts the line with arguments that do not
            parse, or None.
        error: Why they do not parse (``broken`` only).
        mentions: Known actions the line mentions without being an action line, as written
            (``move_forward(0.3)``), for the model to be told they were not run.
    """

    calls: tuple[tuple[str, ast.Call], ...] = ()
    broken: str | None = None
    error: str = ""
    mentions: tuple[str, ...] = ()


def scan_line(line: str, known: Collection[str]) -> Line:
    """Read one line of an action-text answer (see the module docstring).

    Args:
        line: The line, without its newline.
        known: The action names that count for ``broken`` and ``mentions`` (the declared
            tools and ``finishtask``); any name can be an action (an unknown one is
            reported by the caller).

    Returns:
        The :class:`Line`. Never raises.
    """
    if "(" not in line and "\uff08" not in line:
        return Line()
    if len(line) > MAX_CALL_CHARS:
        return Line()
    variants = [line]
    for table in (_FULLWIDTH_BRACKETS, _FULLWIDTH):
        translated = line.translate(table)
        if translated not in variants:
            variants.append(translated)
    for text in variants:
        calls = _line_calls(text)
        if calls:
            return Line(calls=calls)
    text = variants[-1]
    m = _CALL_START.match(text)
    if m is not None and m.group("name") in known and _first_call(text, m.start("name")) is None:
        return Line(broken=m.group("name"), error=_syntax_error(text[m.end() :]))
    return Line(mentions=_mentions(text, known))


def call_name(node: ast.Call) -> str:
    """The name a parsed call node calls (``move_forward``, ``functions.move_forward``)."""
    assert isinstance(node.func, ast.Name)
    return node.func.id


def _line_calls(line: str) -> tuple[tuple[str, ast.Call], ...]:
    """The actions of an action line, or () when it is not one."""
    single = _match_call(line)
    if single is not None:
        return (single,)
    m = _ACTION_LINE.match(line)
    if m is None:
        return ()
    calls: list[tuple[str, ast.Call]] = []
    pos = m.start("call")
    while True:
        found = _first_call(line, pos)
        if found is None:
            return ()
        calls.append(found[:2])
        pos = found[2]
        if _TAIL.match(line[pos:]):
            return tuple(calls)
        gap = _BETWEEN.match(line[pos:])
        pos += gap.end() if gap is not None else 0
        if _NEXT_CALL.match(line[pos:]) is None:
            return ()  # prose after the call: "move_forward(1.0) and then look around"


def _match_call(line: str) -> tuple[str, ast.Call] | None:
    """``(source, call node)`` when ``line`` is a line of one action, else None."""
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


def _first_call(line: str, start: int) -> tuple[str, ast.Call, int] | None:
    """The shortest call that starts at ``start``: ``(source, node, end)``, or None."""
    for end in range(start + 1, len(line) + 1):
        if line[end - 1] != ")":
            continue
        source = line[start:end]
        for candidate in (source, source.translate(_CURLY_QUOTES)):
            node = _parse_call(candidate)
            if node is not None:
                return source, node, end
    return None


def _parse_call(source: str) -> ast.Call | None:
    """The call node of ``name(...)`` with literal-looking arguments, or None."""
    # Hyphens are legal in tool names but not in Python: parse with a stand-in name.
    name, _, rest = source.partition("(")
    tree = _parse_arguments(rest) or _parse_arguments(_with_quantities(rest))
    if tree is None:
        # Python's parser refuses 200 nested brackets ("too many nested parentheses"): the
        # line would pass as prose. Parse it with the depths past the limit cut, so that it
        # is one failed call "arguments nested too deeply" (issue 21 item 9).
        if nesting_depth(rest) <= MAX_LITERAL_DEPTH:
            return None
        tree = _parse_arguments(cut_deeper_than(rest, MAX_LITERAL_DEPTH + 1))
        if tree is None:
            return None
    body = tree.body
    if not isinstance(body, ast.Call) or not isinstance(body.func, ast.Name):
        return None
    body.func.id = name
    return body


def _parse_arguments(rest: str | None) -> ast.Expression | None:
    """``_(<rest>`` parsed as an expression, or None when it does not parse."""
    if rest is None:
        return None
    try:
        return ast.parse("_(" + rest, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


#: A string literal of an action's arguments (a quantity inside one stays text).
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')


def _with_quantities(rest: str) -> str | None:
    """``rest`` (what follows ``name(``) with each number written with its unit outside
    string literals put as ``__quantity__("<number unit>")``, or None when it has none.

    ``90 degrees)`` -> ``__quantity__("90 degrees"))``: small models write the unit they
    read in the instruction ("turn left 90 degrees" -> ``turn_left(90 degrees)``, the 0.5B
    brain in action-text mode, 2026-12-05), which Python's syntax refuses.
    """
    out: list[str] = []
    pos, changed = 0, False
    for gap_end, next_pos in [
        *((m.start(), m.end()) for m in _STRING.finditer(rest)),
        (len(rest), len(rest)),
    ]:
        gap = rest[pos:gap_end]
        last = 0
        for start, end, _ in quantity_spans(gap):
            out.append(gap[last:start] + f'{QUANTITY_MARKER}("{gap[start:end]}")')
            last, changed = end, True
        out.append(gap[last:] + rest[gap_end:next_pos])
        pos = next_pos
    return "".join(out) if changed else None


def _syntax_error(arguments: str) -> str:
    """Why ``arguments`` (what follows ``name(``) does not parse, in a few words."""
    try:
        ast.parse("_(" + arguments.translate(_CURLY_QUOTES), mode="eval")
    except SyntaxError as exc:
        return exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return type(exc).__name__
    return "text after the closing bracket"


def _mentions(line: str, known: Collection[str]) -> tuple[str, ...]:
    """The known actions written inside ``line`` (``name(...)`` as written, or ``name(...)``
    with the arguments left out when they do not parse)."""
    if not known:
        return ()
    names = "|".join(re.escape(n) for n in sorted(known, key=len, reverse=True))
    found: list[str] = []
    for m in re.finditer(rf"(?<![A-Za-z0-9_.])(?:{names})(?=\()", line):
        call = _first_call(line, m.start())
        found.append(call[0] if call is not None else f"{m.group(0)}(...)")
    return tuple(found)
