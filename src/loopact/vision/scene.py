"""Offline scene description and target selection from colour detections (SPEC D5, G2).

Pure functions of detections (``frame -> detections`` is :func:`loopact.vision.detect.
detect_colors`): no model, no robot. :func:`describe` turns what the detector and depth saw into
one plain paragraph a small model can retell ("what do you see?" with the local brain, issue
15); :func:`select_target` picks the detection a phrase such as "the red box", "红色的方块" or
"the thing on the left" names, with a confidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from loopact.i18n import ParamValue, Phrase, colour_name
from loopact.vision.detect import Detection

LINE_COLOR = "purple"
"""Colour of the floor line: not an object."""

COLOR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red", "红"),
    "yellow": ("yellow", "黄"),
    "green": ("green", "绿"),
    "cyan": ("cyan", "teal", "turquoise", "青"),
    "blue": ("blue", "蓝"),
    "purple": ("purple", "violet", "紫"),
    "brown": ("brown", "wooden", "棕", "褐"),
    "orange": ("orange", "橙", "橘"),
}
"""Colour words, English and Chinese, of the colours the default HSV ranges know (orange has
no default range: a phrase naming it is refused by the detector, not matched to another
colour)."""
OTHER_COLOR_WORDS: dict[str, tuple[str, ...]] = {
    "pink": ("pink", "粉色", "粉红"),
    "magenta": ("magenta", "品红", "洋红"),
    "white": ("white", "白色"),
    "black": ("black", "黑色"),
    "grey": ("grey", "gray", "灰色"),
    "silver": ("silver", "银色"),
    "gold": ("gold", "golden", "金色"),
}
"""Colours people name that the simulator's ranges do not know: recognised as colours so that
"the magenta box" is refused (no HSV range) instead of matching a box of any colour (issue 15,
bad input); checked before :data:`COLOR_WORDS` (粉红 is pink, not 红)."""
SHAPE_WORDS: dict[str, tuple[str, ...]] = {
    "round": ("ball", "sphere", "round", "球", "圆球"),
    "boxy": (
        "box",
        "cube",
        "block",
        "crate",
        "cylinder",
        "can",
        "方块",
        "盒",
        "箱",
        "立方",
        "圆柱",
    ),
}
PLACE_WORDS: dict[str, tuple[str, ...]] = {
    "left": ("left", "左"),
    "right": ("right", "右"),
    "middle": ("middle", "centre", "center", "ahead", "front", "中间", "前面", "正前"),
    "near": ("nearest", "closest", "near", "最近", "近"),
    "far": ("farthest", "furthest", "far", "最远", "远"),
    "big": ("biggest", "largest", "big", "large", "最大", "大"),
}


@dataclass(frozen=True)
class TargetQuery:
    """What a target phrase asks for.

    Attributes:
        text: The phrase as given.
        color: A colour name (:data:`COLOR_WORDS`, :data:`OTHER_COLOR_WORDS` or a configured
            one), or None.
        shape: ``round``, ``boxy`` or None.
        place: ``left``, ``right``, ``middle``, ``near``, ``far``, ``big`` or None.
    """

    text: str
    color: str | None
    shape: str | None
    place: str | None


def _find(text: str, table: dict[str, tuple[str, ...]]) -> str | None:
    low = text.lower()
    for key, words in table.items():
        for w in words:
            if w.isascii():
                if re.search(rf"\b{re.escape(w)}\b", low):
                    return key
            elif w in text:
                return key
    return None


def parse_target(text: str, colors: Iterable[str] = ()) -> TargetQuery:
    """Read colour, shape and place words (English or Chinese) from a target phrase.

    Args:
        text: The phrase, e.g. "the red box", "红色的方块", "the thing on the left".
        colors: Further colour names that count as colour words (the ``vision.colors``
            table's names, so a configured "pink" or "orange" is recognised).

    Returns:
        The query; ``color`` may be a colour without an HSV range ("magenta"): callers that
        use the detector check it against their ranges.
    """
    extra: dict[str, tuple[str, ...]] = {c: (c,) for c in colors if c not in COLOR_WORDS}
    color = _find(text, extra) or _find(text, OTHER_COLOR_WORDS) or _find(text, COLOR_WORDS)
    return TargetQuery(text, color, _find(text, SHAPE_WORDS), _find(text, PLACE_WORDS))


def shape_of(det: Detection) -> str:
    """``round`` for a blob whose outline is nearly a disc (ball), else ``boxy``."""
    return "round" if det.circularity >= 0.86 and 0.75 <= det.aspect <= 1.33 else "boxy"


def _wrapped(angle_deg: float) -> float:
    """``angle_deg`` in (-180, 180] degrees."""
    return -((-angle_deg + 180.0) % 360.0 - 180.0)


def _side(bearing_deg: float) -> Phrase:
    if bearing_deg > 5:
        return Phrase("scene.left", angle_deg=bearing_deg)
    if bearing_deg < -5:
        return Phrase("scene.right", angle_deg=-bearing_deg)
    return Phrase("scene.ahead")


def noun(det: Detection) -> str:
    """``red box``, ``cyan ball``, ``brown crate or table``, ``purple floor line``: what a
    person would call the blob (:func:`thing` in English)."""
    return thing(det).text("en")


def thing(det: Detection) -> Phrase:
    """What a person would call the blob, in their language: ``red box`` / ``红色盒子``."""
    if det.color == LINE_COLOR:
        kind = "thing.floor_line"
    elif det.color == "brown":
        kind = "thing.crate"
    else:
        kind = "thing.ball" if shape_of(det) == "round" else "thing.box"
    return Phrase(kind, color=colour_name(det.color))


def describe(dets: list[Detection], bearing_offset_deg: float = 0.0, limit: int = 6) -> str:
    """One paragraph of what is in view, nearest first (SPEC D5; the local brain's eyes):
    :func:`describe_phrase` in English.

    Args:
        dets: Detections of one frame (bearing relative to the camera).
        bearing_offset_deg: Added to each bearing (the head's pan, plus how far the robot has
            turned since a reference heading), so bearings are relative to the robot's heading
            (or that reference), left positive, wrapped to (-180, 180] degrees.
        limit: Most objects named.

    Distances are :attr:`Detection.range_m` (along the line of sight), not the depth.

    Returns:
        ``"I see a red box 3.3 m away, 28 degrees right; a yellow box ...; and the purple floor
        line."``, or ``"I see no coloured objects ..."``.
    """
    return describe_phrase(dets, bearing_offset_deg, limit).text("en")


def describe_phrase(
    dets: list[Detection], bearing_offset_deg: float = 0.0, limit: int = 6
) -> Phrase:
    """What :func:`describe` says, as a typed phrase (``scene.*``; issue 38), to be rendered
    in the reader's language ("我看到红色盒子（3.3 米，右方 28 度）；..."). Same arguments."""
    objects = [d for d in dets if d.color != LINE_COLOR]
    line = any(d.color == LINE_COLOR for d in dets)
    objects.sort(key=lambda d: (d.range_m is None, d.range_m or 0.0))
    parts: list[Phrase] = []
    for d in objects[:limit]:
        where = _side(_wrapped(d.bearing_deg + bearing_offset_deg))
        if d.range_m is None:
            parts.append(Phrase("scene.thing", what=thing(d), where=where))
        else:
            parts.append(Phrase("scene.thing_at", what=thing(d), distance_m=d.range_m, where=where))
    if line:
        parts.append(Phrase("scene.line", color=colour_name(LINE_COLOR)))
    if not parts:
        return Phrase("scene.nothing")
    return Phrase("scene.seen", items=tuple(parts))


@dataclass(frozen=True)
class Selection:
    """The detection a target phrase names, or none.

    Attributes:
        detection: The chosen blob, None when nothing fits.
        confidence: 0..1; below 0.5 the tool says it is unsure (SPEC G2).
        said: Why this one (or why none), one sentence as a typed phrase (``select.*``).
    """

    detection: Detection | None
    confidence: float
    said: Phrase

    @property
    def reason(self) -> str:
        """:attr:`said` in English (what the model reads)."""
        return self.said.text("en")


def select_target(query: TargetQuery, dets: list[Detection], width_px: int) -> Selection:
    """Pick the detection ``query`` names (offline box selection, SPEC D5).

    Colour and shape words filter; a place word (left, right, middle, nearest, farthest,
    biggest) orders what is left; otherwise the largest blob wins. The floor line is never an
    object. Confidence drops when the phrase names neither colour nor shape, when the shape
    does not fit, when several blobs fit equally, and for tiny blobs.

    Args:
        query: The parsed phrase.
        dets: Detections of one frame.
        width_px: The frame's width in pixels.
    """
    cands = [d for d in dets if d.color != LINE_COLOR or query.color == LINE_COLOR]
    if query.color is not None:
        cands = [d for d in cands if d.color == query.color]
        if not cands:
            seen = tuple(colour_name(c) for c in sorted({d.color for d in dets} - {LINE_COLOR}))
            colour = colour_name(query.color)
            if seen:
                return Selection(
                    None, 0.0, Phrase("select.no_colour_seen", color=colour, seen=seen)
                )
            return Selection(None, 0.0, Phrase("select.no_colour", color=colour))
    if not cands:
        return Selection(None, 0.0, Phrase("select.none"))
    confidence = 0.9 if query.color else 0.6
    shaped = [d for d in cands if query.shape is None or shape_of(d) == query.shape]
    if shaped:
        cands = shaped
    elif query.shape is not None:
        confidence -= 0.3  # e.g. "the red ball" when only a red box is there
    key: Any
    if query.place == "left":
        key = lambda d: d.bbox[0] + d.bbox[2]  # noqa: E731
    elif query.place == "right":
        key = lambda d: -(d.bbox[0] + d.bbox[2])  # noqa: E731
    elif query.place == "middle":
        key = lambda d: abs((d.bbox[0] + d.bbox[2]) / 2 - width_px / 2)  # noqa: E731
    elif query.place == "near":
        key = lambda d: d.distance_m if d.distance_m is not None else 1e9  # noqa: E731
    elif query.place == "far":
        key = lambda d: -(d.distance_m or 0.0)  # noqa: E731
    else:
        key = lambda d: -d.area_px  # noqa: E731
    cands = sorted(cands, key=key)
    best = cands[0]
    if len(cands) > 1 and query.place is None:
        confidence -= 0.25  # several fit and nothing says which
    if best.area_px < 150:
        confidence -= 0.2
    return Selection(
        best, round(max(0.05, min(1.0, confidence)), 2), _why(query, best, cands, shaped)
    )


def _why(
    query: TargetQuery, best: Detection, cands: list[Detection], shaped: list[Detection]
) -> Phrase:
    """Why :func:`select_target` chose ``best`` among ``cands``."""
    found: dict[str, ParamValue] = {"what": thing(best), "bbox": str(list(best.bbox))}
    if len(cands) < 2:
        why = Phrase("select.chose", **found)
    elif query.place in ("left", "right"):
        why = Phrase(f"select.chose_{query.place}most", n=len(cands), **found)
    else:
        why = Phrase("select.chose_among", n=len(cands), **found)
    if query.shape is not None and not shaped:  # "the yellow ball" with only a yellow box
        closest = "select.closest_round" if query.shape == "round" else "select.closest_boxy"
        why = Phrase(closest, chosen=why)
    return why
