"""Names in both languages for the things the robot's tools name (SPEC F5)."""

from __future__ import annotations

from loopact.i18n.perception import COLOUR_NAMES
from loopact.i18n.phrase import Name


def colour_name(colour: str) -> Name:
    """A detector colour (``"red"``, a ``vision.colors`` key) as a :class:`Name` with its
    Chinese name when :data:`~loopact.i18n.perception.COLOUR_NAMES` has one."""
    return Name(colour, COLOUR_NAMES.get(colour.strip().lower(), ""))
