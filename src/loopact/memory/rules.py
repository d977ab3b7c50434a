"""The rule files of the memory folder and how they enter the system prompt (SPEC E2).

``RULE.md``, ``MASTER.md``, ``METHOD.md`` and ``WORLD.md`` are created from templates when
missing; :func:`rules_prompt_text` renders the ones a person filled in, each under a
``## NAME`` heading, with comments and the file's own title removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from loopact.memory.merge import is_template_only

_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)

#: The rule files, in system-prompt order, with their templates (SPEC E2).
RULE_FILES: dict[str, str] = {
    "RULE.md": "# Rules\n\n<!-- Rules the agent always follows (safety, etiquette), "
    "one per line. -->\n",
    "MASTER.md": "# Master\n\n<!-- Who the agent serves: names, roles, how to address them. -->\n",
    "METHOD.md": "# Methods\n\n<!-- How to do recurring jobs well: methods that worked, "
    "mistakes to avoid. -->\n",
    "WORLD.md": "# World\n\n<!-- Facts about the site: rooms, waypoints, where things are "
    "kept. -->\n",
}


def rules_prompt_text(read: Callable[[str], str]) -> str:
    """The filled-in rule files for the system prompt ("" when none is filled in).

    Args:
        read: Returns a rule file's text by name ("" when it is missing).
    """
    sections = []
    for name in RULE_FILES:
        text = read(name)
        if is_template_only(text):
            continue
        body = _COMMENT_RE.sub("", text).strip()
        lines = body.splitlines()
        if lines and lines[0].startswith("# "):
            body = "\n".join(lines[1:]).strip()
        sections.append(f"## {name}\n{body}")
    return "\n\n".join(sections)
