"""Named arguments checked against the user's own words (SPEC B7; issue 40).

A tool may declare the names a string argument takes and the other words people use for them
(:attr:`loopact.tools.base.Tool.names`): ``navigation`` declares its places, ``{"waypoint":
{"bathroom": "bathroom", "卫生间": "bathroom", "living room": "living_room", ...}}``. When the
model writes a value that is none of them (the 0.5B brain answered 去卫生间 with
``navigation(waypoint="garage")``) and the instruction names exactly one of them, the value
becomes that one, and the result's ``metadata.normalized`` says so. A value that is a known
name, a value the user said themselves ("the red box": a located object), or an instruction
that names none or several changes nothing: the tool then decides, and refuses an unknown
name itself with the known ones listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _said(word: str, instruction: str) -> bool:
    """Whether ``instruction`` contains ``word``: as a whole word in English (any case,
    ``_`` read as a space), anywhere in Chinese."""
    if _HAN.search(word):
        return word in instruction
    spoken = re.escape(word.replace("_", " ").strip()).replace(r"\ ", r"[\s_]+")
    return re.search(rf"(?<![\w]){spoken}(?![\w])", instruction, re.I) is not None


def _known(value: str, names: Mapping[str, str]) -> bool:
    wanted = value.strip().lower().removeprefix("the ").strip().replace("_", " ")
    return any(wanted == n.lower().replace("_", " ") for n in (*names, *names.values()))


def align_names(
    arguments: Mapping[str, Any], names: Mapping[str, Mapping[str, str]], instruction: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Replace a named argument the user did not say with the one name they did say.

    Args:
        arguments: The call's arguments (not modified).
        names: Argument -> {a word people use -> the value it stands for}, e.g.
            ``{"waypoint": {"卫生间": "bathroom", "bathroom": "bathroom"}}``.
        instruction: The user's instruction for the task.

    Returns:
        ``(arguments, normalized)``: the arguments, and per changed argument ``{"from",
        "to", "because"}`` (empty when nothing changed).
    """
    out = dict(arguments)
    normalized: dict[str, dict[str, Any]] = {}
    if not instruction:
        return out, normalized
    for arg, words in names.items():
        value = arguments.get(arg)
        if not isinstance(value, str) or not words or _known(value, words):
            continue
        if value.strip() and _said(value.strip().removeprefix("the ").strip(), instruction):
            continue  # the user's own words ("the red box"): the tool decides what it is
        said = {words[w] for w in words if _said(w, instruction)}
        if len(said) != 1:
            continue  # the user named none of them, or several: nothing to go by
        (to,) = said
        word = next(w for w in words if words[w] == to and _said(w, instruction))
        out[arg] = to
        normalized[arg] = {"from": value, "to": to, "because": f"the instruction names {word}"}
    return out, normalized
