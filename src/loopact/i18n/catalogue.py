"""The one catalogue of texts for people: every key, in English and Chinese (SPEC F5).

It joins the catalogues of each domain: the runtime's texts (:mod:`loopact.i18n.texts`), the
robot's outcomes (:mod:`loopact.i18n.robot`), what perception says
(:mod:`loopact.i18n.perception`), what the arm says (:mod:`loopact.i18n.arm`) and the web
console's (:mod:`loopact.i18n.console`). A key lives in exactly one of them
(``tests/test_i18n.py`` checks it, and that each has every language).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from loopact.i18n.arm import ARM
from loopact.i18n.console import CONSOLE
from loopact.i18n.perception import PERCEPTION
from loopact.i18n.robot import ROBOT
from loopact.i18n.texts import TEXTS

LANGS = ("en", "zh")
"""The languages of the catalogue: English and Chinese."""

DOMAINS: Mapping[str, Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {"texts": TEXTS, "robot": ROBOT, "perception": PERCEPTION, "arm": ARM, "console": CONSOLE}
)
"""Each domain's catalogue by name (for the tests that check no key is in two)."""

CATALOGUE: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {**TEXTS, **ROBOT, **PERCEPTION, **ARM, **CONSOLE}
)
"""Key -> ``{lang: template}``; a template is a :meth:`str.format` string."""


def template(key: str, lang: str) -> str:
    """The template of ``key`` in ``lang``, falling back to English.

    Raises:
        KeyError: ``key`` is not in the catalogue (a programming error).
    """
    entry = CATALOGUE[key]
    return entry.get(lang) or entry["en"]


def t(key: str, lang: str = "en", **kwargs: Any) -> str:
    """The message ``key`` in ``lang`` (falls back to English), formatted with ``kwargs``.

    Raises:
        KeyError: ``key`` is not in the catalogue (a programming error).
    """
    text = template(key, lang)
    return text.format(**kwargs) if kwargs else text


def all_keys() -> list[str]:
    """Every catalogue key (tests check each has both languages)."""
    return sorted(CATALOGUE)


def has_all_languages(key: str) -> bool:
    """True when ``key`` has a non-empty text in every language of :data:`LANGS`."""
    return all(CATALOGUE[key].get(lang) for lang in LANGS)
