"""Docs a user reads in minutes (issue 38 item 6, acceptance 4).

Every page under docs/ stays under 300 lines and opens with the commands to type; every
relative link of the README and the docs reaches a file and, when it names one, a heading;
and every figure the README or a page quotes from docs/performance.md (or performance-brain.md)
is written as a link to
the section it comes from (``[1.21 s](docs/performance.md#local-brain)``), whose text must hold
that figure exactly, so a figure cannot drift from the current table it quotes.
"""

from __future__ import annotations

import re
from pathlib import Path

from loopact.eval.tasks import TASKS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MAX_LINES = 300
PAGES = sorted(DOCS.glob("*.md"))
TABLES = (DOCS / "performance.md", DOCS / "performance-brain.md")
"""The pages of measured figures that other pages quote (each quote a link to its section)."""
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _sections(path: Path) -> dict[str, str]:
    """Anchor -> the text from that heading to the next heading of the same or a higher level."""
    lines = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text("utf-8")).split("\n")
    raw = path.read_text(encoding="utf-8").split("\n")
    heads = [(i, len(ln) - len(ln.lstrip("#"))) for i, ln in enumerate(lines) if ln.startswith("#")]
    sections: dict[str, str] = {}
    for n, (start, level) in enumerate(heads):
        end = next((i for i, lv in heads[n + 1 :] if lv <= level), len(raw))
        anchor, k = _slug(raw[start]), 1
        while anchor in sections:
            anchor, k = f"{_slug(raw[start])}-{k}", k + 1
        sections[anchor] = "\n".join(raw[start:end])
    return sections


def _links(path: Path) -> list[tuple[str, Path, str]]:
    """(text, target file, anchor) of every relative link outside code blocks."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found = []
    for label, href in LINK.findall(text):
        if re.match(r"[a-z]+:", href):
            continue
        file, _, anchor = href.partition("#")
        found.append((label, (path.parent / file).resolve() if file else path, anchor))
    return found


def test_every_doc_is_under_300_lines() -> None:
    long = {p.name: n for p in PAGES if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert not long, (
        f"over {MAX_LINES} lines: {long}; split by what a user looks for (a how-to page beside "
        "a reference page), link the pieces and list them in the README"
    )


def test_every_doc_opens_with_the_commands() -> None:
    late = [
        p.name
        for p in PAGES
        if not re.search(r"^```(bash|sh)\n", p.read_text("utf-8").split("\n## ", 1)[0], re.M)
    ]
    assert not late, f"no block of commands before the first section: {late}"


def test_the_readme_lists_every_doc() -> None:
    listed = {target.name for _, target, _ in _links(ROOT / "README.md")}
    assert {p.name for p in PAGES} <= listed, {p.name for p in PAGES} - listed


def test_relative_links_reach_a_file_and_a_heading() -> None:
    broken = []
    for page in [ROOT / "README.md", ROOT / "bench" / "HISTORY.md", *PAGES]:
        for label, target, anchor in _links(page):
            if not target.exists():
                broken.append(f"{page.name}: [{label}] -> {target} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in _sections(target):
                broken.append(f"{page.name}: [{label}] -> {target.name}#{anchor} (no such heading)")
    assert not broken, "\n".join(broken)


def _wrong_figures(pages: list[Path]) -> list[str]:
    """Every link into a page of measured figures (:data:`TABLES`) whose text holds a digit (a
    quoted figure) and does not appear, exactly, in the section the link names."""
    sections = {table.resolve(): _sections(table) for table in TABLES}
    return [
        f"{page.name}: {label!r} is not in {target.name}#{anchor}"
        for page in pages
        for label, target, anchor in _links(page)
        if target in sections
        and re.search(r"\d", label)
        and not (anchor in sections[target] and _holds(sections[target][anchor], label))
    ]


def _holds(section: str, figure: str) -> bool:
    """Whether the figure is in the section as written, not as a piece of a longer number."""
    pattern = rf"(?<![\d.]){re.escape(figure)}(?![\d])"
    return re.search(pattern, section.replace("**", "")) is not None


def test_quoted_figures_equal_the_current_tables() -> None:
    assert _wrong_figures([ROOT / "README.md", *PAGES]) == []
    tables = {table.resolve() for table in TABLES}
    readme = [t for t in _links(ROOT / "README.md") if t[1] in tables and re.search(r"\d", t[0])]
    assert len(readme) >= 6, f"the README's local-brain figures are no longer marked: {readme}"


def test_a_figure_that_is_not_in_its_table_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    perf = DOCS / "performance.md"
    page.write_text(
        f"[1.21 s]({perf}#local-brain), [1.22 s]({perf}#local-brain), [1.21 s]({perf}#nowhere)\n",
        encoding="utf-8",
    )
    assert _holds("RTF 0.12;", "0.12") and not _holds("RTF 10.12;", "0.12")
    assert not _holds("p50 1.213 s", "1.21")
    assert _wrong_figures([page]) == [
        "page.md: '1.22 s' is not in performance.md#local-brain",
        "page.md: '1.21 s' is not in performance.md#nowhere",
    ]


def test_the_readme_counts_the_graded_tasks_there_are() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    suite = _sections(DOCS / "performance.md")["graded-task-suite"]
    assert f"# {len(TASKS)} graded tasks" in readme
    assert suite.count(f"/{len(TASKS)}") == 2, "each run of the table is out of every task"
