"""The size rule of the conventions: no module past ~600 lines, no function past ~80 (issue 14).

A function's length is counted from the first line of its body (its docstring included) to its
last line, so decorators and the signature do not count: a typer command's signature is its
list of CLI flags (a contract), not logic. Nested functions count inside their parent too.

What is over the limit today and cannot be split yet is named below with the size it may not
pass and the reason; an entry that is no longer needed makes the test fail too, so the lists
only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "loopact"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600

# "path:function" -> (lines it may not pass, why it is still long)
LONG_FUNCTIONS: dict[str, tuple[int, str]] = {}

# path -> (lines it may not pass, why it is still long); a ceiling leaves about 20 lines for
# work in progress in that module, not room to grow: split it instead.
LONG_MODULES: dict[str, tuple[int, str]] = {}


def _function_sizes(text: str, rel: str) -> dict[str, int]:
    """``"rel:name"`` -> body lines of the longest function of that name in the module."""
    sizes: dict[str, int] = {}
    for node in ast.walk(ast.parse(text, filename=rel)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.body[0].lineno + 1
            key = f"{rel}:{node.name}"
            sizes[key] = max(lines, sizes.get(key, 0))
    return sizes


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        modules[rel] = len(text.splitlines())
        functions.update(_function_sizes(text, rel))
    return functions, modules


def _over(sizes: dict[str, int], limit: int, allowed: dict[str, tuple[int, str]]) -> list[str]:
    problems = []
    for name, lines in sorted(sizes.items()):
        ceiling = allowed[name][0] if name in allowed else limit
        if lines > ceiling:
            where = f"its allowance of {ceiling}" if name in allowed else f"the limit of {limit}"
            problems.append(f"{name}: {lines} lines, over {where}")
    for name, (ceiling, _why) in sorted(allowed.items()):
        if sizes.get(name, 0) <= limit:
            problems.append(f"{name}: no longer over {limit} lines; remove it from the list")
    return problems


def test_no_core_function_is_past_80_lines() -> None:
    functions, _ = _sizes()
    problems = _over(functions, MAX_FUNCTION_LINES, LONG_FUNCTIONS)
    assert not problems, "split by meaning (named helpers with docstrings):\n" + "\n".join(problems)


def test_no_module_is_past_600_lines() -> None:
    _, modules = _sizes()
    problems = _over(modules, MAX_MODULE_LINES, LONG_MODULES)
    assert not problems, "a module past ~600 lines is usually two:\n" + "\n".join(problems)


def test_the_check_counts_bodies_and_finds_nested_functions() -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    text = f"@decorated\ndef outer(\n    a: int,\n) -> None:\n    def inner() -> None:\n{body}\n"
    found = _function_sizes(text, "m.py")
    assert found == {"m.py:outer": MAX_FUNCTION_LINES + 1, "m.py:inner": MAX_FUNCTION_LINES}
    assert _over(found, MAX_FUNCTION_LINES, {}) == [
        f"m.py:outer: {MAX_FUNCTION_LINES + 1} lines, over the limit of {MAX_FUNCTION_LINES}"
    ]
    allowed = {"m.py:outer": (MAX_FUNCTION_LINES + 1, "a reason")}
    assert _over(found, MAX_FUNCTION_LINES, allowed) == []
    assert _over({"m.py:outer": 3}, MAX_FUNCTION_LINES, allowed) == [
        f"m.py:outer: no longer over {MAX_FUNCTION_LINES} lines; remove it from the list"
    ]
