"""No event type is a bare string in src/loopact: each is a member of ``EventType`` (issue 38).

An event type written as a string where events are built or read (the first argument of an
``emit``, a comparison with an event's ``type``, a table of types, a ``"type"`` key) is found
here by reading the code's syntax tree. Wire protocols whose own message types share a name
(Anthropic's ``tool_result`` content block, its ``text_delta`` and ``error`` stream events) are
listed in :data:`NOT_EVENTS` with the reason.

To convert code written with strings (a branch merged later), run from the repository root::

    .venv/bin/python tests/test_event_type_names.py --fix

which replaces each string found by ``EventType.NAME`` and adds the import (then ``ruff check
--fix`` sorts the imports); mypy then checks each event's fields.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from loopact.events import EventType

SRC = Path(__file__).resolve().parents[1] / "src" / "loopact"
NAMES = {str(member): member.name for member in EventType}
_EMITTERS = re.compile(r"emit|^Event$|^put$|^_dispatch$")
_TYPE_NAMES = frozenset({"typ", "type_", "kind", "event_type", "type"})

# path under src/loopact -> names that are not loopact events there, and why
NOT_EVENTS: dict[str, tuple[frozenset[str], str]] = {
    "llm/anthropic_messages.py": (frozenset({"tool_result"}), "Anthropic content block type"),
    "llm/anthropic_stream.py": (
        frozenset({"error", "message", "text_delta"}),
        "Anthropic stream event and delta types",
    ),
    "llm/dify_stream.py": (frozenset({"error"}), "Dify stream event type"),
    "testing/anthropic_protocol.py": (
        frozenset({"tool_result", "message", "error", "text_delta"}),
        "the Anthropic wire protocol the scripted server speaks",
    ),
    "voice/device.py": (frozenset({"input"}), "a sound device's direction"),
}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_type(node: ast.expr) -> bool:
    """Whether ``node`` reads an event's type: ``ev.type``, ``typ``, ``ev.get("type")``,
    ``ev["type"]``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    if isinstance(node, ast.Name):
        return node.id in _TYPE_NAMES
    if isinstance(node, ast.Call):
        first = node.args[0] if node.args else None
        return _callee(node) == "get" and isinstance(first, ast.Constant) and first.value == "type"
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "type"
    )


def _strings(node: ast.expr | None) -> list[ast.Constant]:
    """The string constants of ``node``: itself, a tuple/list/set of them, ``frozenset(...)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Call) and _callee(node) in ("frozenset", "set", "tuple") and node.args:
        return _strings(node.args[0])
    return []


def _all_names(nodes: list[ast.expr | None]) -> list[ast.Constant]:
    """Constants of a literal collection whose two or more items are all event types."""
    found = [n for n in nodes if isinstance(n, ast.Constant) and n.value in NAMES]
    return found if len(found) >= 2 and len(found) == len(nodes) else []


def _candidates(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Call):
        found = [c for kw in node.keywords if kw.arg == "type" for c in _strings(kw.value)]
        if _EMITTERS.search(_callee(node)):
            found += [a for a in node.args if isinstance(a, ast.Constant)]
        return found
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return [c for s in sides for c in _strings(s)] if any(map(_is_type, sides)) else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return _all_names(list(node.elts))
    if isinstance(node, ast.Dict):
        typed = [v for k, v in zip(node.keys, node.values) if _is_key(k, "type")]
        return [c for v in typed for c in _strings(v)] + _all_names(list(node.keys))
    return []


def _is_key(node: ast.expr | None, name: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == name


def bare_event_types(path: Path) -> list[tuple[int, int, int, str]]:
    """``(line, column, end column, name)`` of each event type written as a string."""
    rel = path.relative_to(SRC).as_posix()
    allowed = NOT_EVENTS.get(rel, (frozenset(), ""))[0]
    found = {
        (c.lineno, c.col_offset, c.end_col_offset or 0, c.value)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for c in _candidates(node)
        if isinstance(c.value, str) and c.value in NAMES and c.value not in allowed
    }
    return sorted(found)


def _sources() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "events"]


def test_no_event_type_is_a_bare_string() -> None:
    found = [
        f"src/loopact/{p.relative_to(SRC).as_posix()}:{line}: {name!r} -> EventType.{NAMES[name]}"
        for p in _sources()
        for line, _col, _end, name in bare_event_types(p)
    ]
    hint = "write event types as EventType members (or run this file with --fix):"
    assert found == [], "\n".join([hint, *found])


def test_the_finder_sees_each_way_a_type_is_written() -> None:
    code = (
        'bus.emit("tool_call", t)\nif ev.type == "reply": pass\nif typ in ("stop", "error"): pass\n'
        'x = ev.get("type") != "task_end"\nT = frozenset({"text_delta", "reasoning_delta"})\n'
        'h = {"trace_start": 1, "plan": 2}\nline = {"type": "trace_start"}\n'
        'ok = d.get("error")\nfor key in ("error", "note"): pass\ns = "message"\n'
    )
    found = {
        (c.lineno, c.col_offset, c.value)
        for node in ast.walk(ast.parse(code))
        for c in _candidates(node)
        if c.value in NAMES
    }
    assert sorted(name for _line, _col, name in found) == sorted(
        ["tool_call", "reply", "stop", "error", "task_end", "text_delta", "reasoning_delta"]
        + ["trace_start", "plan", "trace_start"]
    )


def _fix(path: Path) -> int:
    """Replace the bare event types of ``path`` by ``EventType`` members; returns how many."""
    spots = bare_event_types(path)
    if not spots:
        return 0
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for line, col, end, name in sorted(spots, reverse=True):
        text = lines[line - 1]
        lines[line - 1] = text[:col] + f"EventType.{NAMES[name]}" + text[end:]
    text = "".join(lines)
    if not re.search(r"^from loopact\.events import .*\bEventType\b", text, re.MULTILINE):
        first = re.search(r"^from loopact\S* import ", text, re.MULTILINE)
        at = first.start() if first else text.index("\n\n", text.index('"""', 3)) + 2
        text = text[:at] + "from loopact.events import EventType\n" + text[at:]
    path.write_text(text, encoding="utf-8")
    return len(spots)


if __name__ == "__main__" and sys.argv[1:] == ["--fix"]:
    for source in _sources():
        if n := _fix(source):
            print(f"{source}: {n}")
