"""Texts for people in English and Chinese (SPEC F5).

Every sentence a person reads (fallback texts, CLI hints, terminal labels, what a robot tool
did) comes from one catalogue (:mod:`loopact.i18n.catalogue`), so a robot's operators can
choose their language in the config (``agent.lang``) or with ``--lang``. :func:`t` formats a
key at once; a :class:`Phrase` keeps the key and its parameters as a value, so that a robot
tool's outcome is rendered in each reader's language where it is shown
(:mod:`loopact.i18n.phrase`). Keys are stable; add both languages when adding one.
"""

from __future__ import annotations

from loopact.i18n.catalogue import LANGS, all_keys, has_all_languages, t
from loopact.i18n.names import colour_name
from loopact.i18n.phrase import Name, ParamValue, Phrase

__all__ = [
    "LANGS",
    "Name",
    "ParamValue",
    "Phrase",
    "all_keys",
    "colour_name",
    "has_all_languages",
    "t",
]
