"""How two robots' copies of one memory file are merged (SPEC E2): pure functions, no I/O.

Several robots share one memory repository through a remote. When both changed the same file
since their common ancestor, :func:`merge_file` decides the merged content so that nothing is
lost:

* ``diaries/*.md`` are append-only: the merged diary is the union of both sides' entries
  (an entry is a ``- [machine HH:MM:SS] text`` line plus its indented continuation lines),
  ordered by the entry's UTC time, ties keeping local entries first. An entry both sides hold
  appears as many times as the side holding it most often (multiset union), so nothing is
  duplicated and nothing dropped.
* ``facts.md`` and ``preferences.md`` are line sets merged three-way: a line is kept unless one
  side deleted it (it was in the ancestor and one side no longer has it); lines either side
  added are kept, local order first, then the remote's new lines in the remote's order.
* Any other file (the rule files, skills): if one side is only a template (nothing but
  comments and headings) the other side wins; otherwise the local version is kept and the
  remote version is written beside it as ``<stem>.conflict-<sha7><suffix>`` for a person to
  reconcile. Nothing is lost, and a conflict copy never enters the system prompt.
* A file one side deleted and the other changed is kept (changed version).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter

_ENTRY_RE = re.compile(r"^- \[(?P<who>[^\]\s]+) (?P<time>\d{2}:\d{2}:\d{2})\]")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)

#: Files merged as line sets (see the module docstring).
LINE_SET_FILES = frozenset({"facts.md", "preferences.md"})


def is_template_only(text: str) -> bool:
    """True when ``text`` holds nothing but HTML comments, Markdown headings and blank lines."""
    body = _COMMENT_RE.sub("", text)
    return all(not line.strip() or line.lstrip().startswith("#") for line in body.splitlines())


def _split_diary(text: str) -> tuple[list[str], list[str]]:
    """Split a diary into its preamble lines and its entries (each entry one string)."""
    preamble: list[str] = []
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("- ["):
            entries.append(line)
        elif entries and (line.startswith("  ") or not line.strip()):
            if line.strip():
                entries[-1] += "\n" + line
        elif entries:
            # A stray line after the entries started: keep it with the previous entry.
            entries[-1] += "\n" + line
        else:
            preamble.append(line)
    while preamble and not preamble[-1].strip():
        preamble.pop()
    return preamble, entries


def merge_diary(local: str, remote: str) -> str:
    """Union of two versions of one append-only diary, ordered by entry time.

    Args:
        local: This robot's version of the file.
        remote: The other version.

    Returns:
        The merged diary text (ends with a newline).
    """
    pre_l, ent_l = _split_diary(local)
    pre_r, ent_r = _split_diary(remote)
    preamble = pre_l or pre_r
    have = Counter(ent_l)
    merged = list(ent_l)
    seen_r: Counter[str] = Counter()
    for e in ent_r:
        seen_r[e] += 1
        if seen_r[e] > have[e]:
            merged.append(e)
    keyed: list[tuple[str, int, str]] = []
    last_time = ""
    for i, e in enumerate(merged):
        m = _ENTRY_RE.match(e)
        if m:
            last_time = m.group("time")
        keyed.append((last_time if not m else m.group("time"), i, e))
    keyed.sort(key=lambda k: (k[0], k[1]))
    parts = []
    if preamble:
        parts.append("\n".join(preamble) + "\n\n")
    parts.append("".join(e + "\n" for _t, _i, e in keyed))
    return "".join(parts)


def merge_line_set(local: str, remote: str, base: str | None) -> str:
    """Three-way merge of a file whose lines are independent items (facts, preferences).

    Args:
        local: This robot's version.
        remote: The other version.
        base: The common ancestor's version, or None when there is none.

    Returns:
        The merged text: every line kept unless one side deleted it.
    """
    base_set = set(base.splitlines()) if base is not None else set()
    l_lines = local.splitlines()
    r_lines = remote.splitlines()
    l_set, r_set = set(l_lines), set(r_lines)
    out: list[str] = []
    emitted: set[str] = set()
    for line in l_lines:
        if not line.strip():
            if out and out[-1].strip():
                out.append(line)
            continue
        if line in emitted:
            continue
        if line in r_set or line not in base_set:
            out.append(line)
            emitted.add(line)
    for line in r_lines:
        if not line.strip() or line in emitted:
            continue
        if line not in l_set and line not in base_set:
            out.append(line)
            emitted.add(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def conflict_path(path: str, remote: bytes) -> str:
    """Where the remote version of a conflicting ``path`` is kept: ``RULE.conflict-ab12cd3.md``."""
    stem, suffix = posixpath.splitext(path)
    return f"{stem}.conflict-{hashlib.sha1(remote).hexdigest()[:7]}{suffix}"


def merge_file(
    path: str, local: bytes | None, remote: bytes | None, base: bytes | None
) -> dict[str, bytes | None]:
    """Merge one path both sides changed since ``base`` (see the module docstring).

    Args:
        path: The repository path, ``/``-separated (``diaries/20261130.md``).
        local: This robot's content, None if it deleted the file.
        remote: The remote content, None if it deleted the file.
        base: The ancestor's content, None if the file did not exist there.

    Returns:
        ``{path: content}`` for every path to write (None = delete); may hold a conflict copy.
    """
    if local is None and remote is None:
        return {path: None}
    if local is None or remote is None:
        return {path: local if local is not None else remote}
    name = posixpath.basename(path)
    l_txt = local.decode("utf-8", "replace")
    r_txt = remote.decode("utf-8", "replace")
    if path.startswith("diaries/") and name.endswith(".md"):
        return {path: merge_diary(l_txt, r_txt).encode()}
    if name in LINE_SET_FILES and "/" not in path:
        b_txt = base.decode("utf-8", "replace") if base is not None else None
        return {path: merge_line_set(l_txt, r_txt, b_txt).encode()}
    if name.endswith(".md") and is_template_only(l_txt):
        return {path: remote}
    if name.endswith(".md") and is_template_only(r_txt):
        return {path: local}
    return {path: local, conflict_path(path, remote): remote}
