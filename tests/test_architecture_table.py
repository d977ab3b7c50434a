"""The README's architecture table agrees with the import contracts, and the README and docs
name only files that exist (issue 38 item 5; SPEC H1).

The table's rows are the layers of ``[tool.importlinter]``'s ``layers`` contract in
pyproject.toml, in order and numbered from 1 (row 1 also holds ``__init__.py``, the public API
above them all). Its "may import" column names only packages of lower rows and exactly the
packages of rows 1-12 that the row's code imports (the row-13 basics, which every package may
use, may be named or not; a name may carry a note in parentheses), or says so in a shorthand:
``anything`` (row 1), ``every package below``, ``X and below``, ``nothing of loopact`` (the last
row). The sub-packages that have contracts of their own (``llm/local/``, ``nodes/ros2/``,
``nodes/mqtt/``) are named in their package's row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "loopact"
README = ROOT / "README.md"
SHORTHANDS = ("anything", "every package below", "nothing of loopact")


@dataclass(frozen=True)
class Row:
    number: int
    packages: tuple[str, ...]
    text: str
    imports: str


def _table() -> list[Row]:
    """The architecture table of the README, one entry per line of it."""
    section = README.read_text(encoding="utf-8").split("## Architecture", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            names = re.findall(r"`([^`]+)`", cells[1])
            packages = tuple(n.removesuffix("/").removesuffix(".py") for n in names)
            rows.append(Row(int(cells[0]), packages, cells[2], cells[3]))
    return rows


def _contracts() -> list[dict[str, object]]:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _layers(contract: dict[str, object]) -> list[set[str]]:
    layers = contract["layers"]
    assert isinstance(layers, list)
    return [
        {name.strip().strip("()") for name in re.split(r"[|:]", layer) if name.strip()}
        for layer in layers
    ]


def _root_layers() -> list[set[str]]:
    (contract,) = [c for c in _contracts() if c.get("containers") == ["loopact"]]
    return _layers(contract)


def _row_of(layers: list[set[str]]) -> dict[str, int]:
    return {name: i for i, layer in enumerate(layers, 1) for name in layer}


def test_the_rows_are_the_layers_of_the_contract() -> None:
    layers = _root_layers()
    by_row: dict[int, set[str]] = {}
    for row in _table():
        by_row.setdefault(row.number, set()).update(row.packages)
    assert "__init__" in by_row.get(1, set()), "row 1 is the public API, loopact/__init__.py"
    by_row[1].discard("__init__")
    assert by_row == dict(enumerate(layers, 1))


def _imported() -> dict[str, set[str]]:
    """Each top-level package or module of loopact -> the others its code imports."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("loopact", include_external_packages=False, cache_dir=None)
    found: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == "loopact":
            continue
        mine = module.split(".")[1]
        for other in graph.find_modules_directly_imported_by(module):
            theirs = other.split(".")[1] if "." in other else other
            if theirs != mine:
                found.setdefault(mine, set()).add(theirs)
    return found


def test_the_may_import_column_agrees_with_the_contract_and_the_code() -> None:
    layers = _root_layers()
    row_of = _row_of(layers)
    basics = layers[-1]
    imported = _imported()
    problems = []
    for row in _table():
        cell = re.sub(r"\s*\([^)]*\)", "", row.imports.replace("`", "")).strip()  # (why) notes
        uses = set().union(*(imported.get(p, set()) for p in row.packages))
        if cell in SHORTHANDS:
            if (cell == "anything") != (row.number == 1) or (cell == "nothing of loopact") != (
                row.number == len(layers)
            ):
                problems.append(f"row {row.number}: {cell!r} is not said of this row")
            continue
        below = re.fullmatch(r"(\w+) and below", cell)
        named = {below.group(1)} if below else {n.strip() for n in cell.split(",")}
        for name in sorted(named):
            if row_of.get(name, 0) <= row.number:
                problems.append(f"row {row.number} {row.packages}: {name} is not in a lower row")
        if below:
            lowest = row_of.get(below.group(1), 0)
            beyond = sorted(u for u in uses if row_of[u] < lowest)
            if beyond:
                problems.append(f"row {row.number} {row.packages}: imports {beyond} too")
        elif named - basics != uses - basics:
            problems.append(
                f"row {row.number} {row.packages}: says {sorted(named - basics)}, "
                f"imports {sorted(uses - basics)}"
            )
    assert problems == []


def test_the_sub_packages_with_contracts_are_named_in_their_row() -> None:
    text_of = {p: row.text for row in _table() for p in row.packages}
    for contract in _contracts():
        (container,) = contract.get("containers", [None])  # type: ignore[misc]
        if container in (None, "loopact"):
            continue
        package = str(container).split(".")[1]
        subs = sorted(
            name
            for layer in _layers(contract)
            for name in layer
            if (SRC / package / name / "__init__.py").exists()
        )
        assert subs, contract
        for sub in subs:
            assert f"`{sub}/`" in text_of[package], (package, sub)


# ------------------------------------------------------------ files the docs name

_PATH = re.compile(
    r"(?<![\w./\[-])((?:src|tests|docs|scripts|bench|ros2|\.ci)/(?:[\w.-]+/)*(?:[\w-]+\.\w+)?)"
)
"""A repository path in prose or code: a folder (``tests/ros2/``) or a file (``docs/trace.md``)."""


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def _named_files(text: str, base: Path, names: bool = False) -> list[tuple[str, Path]]:
    """``(as written, where it must be)`` for every link and every repository path in the
    text of a document in the folder ``base``; with ``names`` also every file named alone
    (``CONVENTIONS.md``: the README names files of the project; the docs name the user's, such
    as a memory's ``facts.md``, in their examples)."""
    found = []
    prose = re.sub(r"`[^`]*`", "", text)  # a link inside code is an example
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if not re.match(r"[a-z]+:|#", target):
            found.append((target, base / target.split("#", 1)[0]))
    for path in _PATH.findall(text):
        found.append((path, ROOT / path))
    for name in re.findall(r"`(loopact/[\w./-]+\.py)`", text):
        found.append((name, ROOT / "src" / name))
    for name in re.findall(r"`([\w.-]+\.md)`", text) if names else []:
        found.append((name, ROOT / name if (ROOT / name).exists() else base / name))
    return found


def test_the_readme_and_docs_name_only_files_that_exist() -> None:
    missing = [
        f"{doc.relative_to(ROOT)}: {written}"
        for doc in _documents()
        for written, where in _named_files(
            doc.read_text(encoding="utf-8"), doc.parent, doc == README
        )
        if not where.exists()
    ]
    assert missing == []


def test_the_file_check_reads_links_paths_and_names() -> None:
    text = (
        "See [the trace](trace.md#order), `src/loopact/errors.py`, tests/test_layers.py,\n"
        "`loopact/events/kinds.py`, `CONVENTIONS.md`, https://example.com/x.md, [a](#order),\n"
        "[ros2/rclpy#1452](https://github.com/ros2/rclpy/issues/1452), `![c](path)`, `src/`.\n"
    )
    found = _named_files(text, ROOT / "docs", names=True)
    assert [written for written, _where in found] == [
        "trace.md#order",
        "src/loopact/errors.py",
        "tests/test_layers.py",
        "src/",
        "loopact/events/kinds.py",
        "CONVENTIONS.md",
    ]
    assert [where.exists() for _written, where in found] == [True, True, True, True, True, False]
    assert [w for w, _where in _named_files(text, ROOT / "docs")][-1] == "loopact/events/kinds.py"
