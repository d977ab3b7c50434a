#!/usr/bin/env python3
"""Rewrite the configuration file shown in docs/config*.md from loopact.config.STARTER_CONFIG.

Each page holds a marker line naming the sections it shows, followed by a ```yaml block:

    <!-- loopact.config.STARTER_CONFIG: _header, model, agent -->

This script replaces each such block with those sections of the starter file (docs only; run
it after changing src/loopact/config/starter.py). tests/test_docs_and_surface.py fails when a
page is out of date or a section is shown on no page or on two.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from loopact.config.starter import starter_sections

MARKER = re.compile(r"<!-- loopact\.config\.STARTER_CONFIG: ([\w, ]+) -->\n```yaml\n.*?```\n", re.S)


def render(names: list[str]) -> str:
    """The yaml block of these sections, as the docs show it."""
    sections = starter_sections()
    return "\n".join(sections[name] for name in names)


def main() -> int:
    docs = Path(__file__).resolve().parents[1] / "docs"
    for page in sorted(docs.glob("config*.md")):
        text = page.read_text(encoding="utf-8")

        def block(m: re.Match[str]) -> str:
            names = [n.strip() for n in m.group(1).split(",")]
            head = f"<!-- loopact.config.STARTER_CONFIG: {m.group(1)} -->"
            return f"{head}\n```yaml\n{render(names)}```\n"

        new = MARKER.sub(block, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(docs.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
