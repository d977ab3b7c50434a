"""Docs stay true and the public surface stays curated (SPEC F5, H1; CONVENTIONS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loopact
from loopact import i18n
from loopact.config import STARTER_CONFIG
from loopact.config.starter import starter_sections

ROOT = Path(__file__).resolve().parents[1]


def test_config_docs_show_the_current_starter_config() -> None:
    """docs/config*.md show the starter file in parts: every section on exactly one page, as
    it is now (``scripts/sync-config-docs.py`` rewrites them)."""
    marker = re.compile(
        r"<!-- loopact\.config\.STARTER_CONFIG: ([\w, ]+) -->\n```yaml\n(.*?)```\n", re.S
    )
    sections = starter_sections()
    shown: list[str] = []
    for page in sorted((ROOT / "docs").glob("config*.md")):
        for m in marker.finditer(page.read_text(encoding="utf-8")):
            names = [n.strip() for n in m.group(1).split(",")]
            shown += names
            assert m.group(2) == "\n".join(sections[n] for n in names), (
                f"{page.name} shows an old {', '.join(names)}: run scripts/sync-config-docs.py"
            )
    assert sorted(shown) == sorted(sections), "each section of the starter file on one page"
    assert "".join(sections.values()).split() == STARTER_CONFIG.split()


def test_public_surface_is_exactly_all() -> None:
    # The providers and the robot are imported on first use: dir() lists them before that,
    # and once every name of __all__ is resolved the namespace holds exactly __all__.
    listed = {name for name in dir(loopact) if not name.startswith("_")}
    for name in loopact.__all__:
        assert getattr(loopact, name) is not None, name
    public = {name for name in vars(loopact) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(loopact, name)).__name__ == "module"}
    assert public - modules == set(loopact.__all__) - {"__version__"}
    assert listed - modules == public - modules
    assert len(loopact.__all__) == len(set(loopact.__all__))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        loopact.Nope  # noqa: B018


def test_every_message_has_english_and_chinese() -> None:
    missing = [key for key in i18n.all_keys() if not i18n.has_all_languages(key)]
    assert missing == []
    assert i18n.t("term.reset", "zh") != i18n.t("term.reset", "en")


def test_readme_has_exactly_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up: two commands", 1)[1].split("##", 1)[0]
    commands = [
        line.split("#")[0].strip() for line in setup.splitlines() if line.startswith("make ")
    ]
    assert commands == ["make run", "make test"]
