"""A vision-capable model for perception tools: descriptions and box selection (SPEC D5, G2).

:class:`VisionModel` wraps any :class:`~loopact.llm.base.Model` whose endpoint takes images
(the main brain when it has vision, or the separate ``vision.model``). Box selection asks for
strict JSON ``{found, target, bbox: [x1, y1, x2, y2], confidence, reason}`` with the colour
detector's candidates offered to choose from; the answer is repaired (json-repair) or refused,
never trusted blindly (:func:`validate_box_answer`): a box outside the frame or with ``x2 <= x1``
is an error, and the box is checked against the candidates (:func:`check_box`: the model
chooses which object, the detector knows where the objects are and what colour and shape they
have). A refused answer gets one more try with the reason before the tool falls back to the
detector.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from typing import Any

import json_repair
import jsonschema

from loopact._compat import wait_within
from loopact.errors import BoxAnswerError, ModelError, ModelRetryableError
from loopact.llm.base import Model, ModelRequest, TextDelta
from loopact.llm.messages import Image, Message
from loopact.vision.detect import Detection
from loopact.vision.scene import LINE_COLOR, TargetQuery, noun, shape_of

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN_LIMIT = 8
"""Characters a token may average before an answer counts as past its ``max_tokens`` (as the
agent's own output bound, :data:`loopact.agent.stream.CHARS_PER_TOKEN_LIMIT`)."""

BOX_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["found", "target", "bbox", "confidence", "reason"],
    "properties": {
        "found": {"type": "boolean"},
        "target": {"type": "string"},
        "bbox": {
            "oneOf": [
                {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                {"type": "null"},
            ]
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
}
"""JSON Schema of a box-selection answer (SPEC D5); ``bbox`` is null only when not found."""

MATCH_IOU = 0.3
"""A model's box is *on* a detector candidate when their IoU is at least this. Two boxes of one
object overlap far more (a box a quarter larger than the object, or shifted by a fifth of its
width, still has IoU >= 0.5), while boxes of two objects side by side, or a box of bare floor
next to an object, stay below it."""

_SHAPE_KIND = {"round": "round object", "boxy": "box-shaped object"}

_SYSTEM = "You are the robot's vision. Answer only with what the image shows. Never invent objects."


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two ``[x1, y1, x2, y2]`` boxes."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def validate_box_answer(
    text: str,
    width_px: int,
    height_px: int,
    query: TargetQuery,
    candidates: list[Detection],
) -> dict[str, Any]:
    """Parse, repair and check a model's box-selection answer.

    Args:
        text: The model's reply (JSON, maybe in a code fence or slightly broken).
        width_px: Frame width; boxes must lie in ``[0, width_px]``.
        height_px: Frame height; boxes must lie in ``[0, height_px]``.
        query: The parsed target phrase (its colour word is checked against the detector).
        candidates: The detector's blobs in the same frame.

    Returns:
        The answer as a dict matching :data:`BOX_SCHEMA`, bbox as integer pixels (snapped to
        the detector's box of the object chosen, :func:`check_box`); ``reason`` starts with
        how the box was checked.

    Raises:
        BoxAnswerError: Prose instead of JSON, a schema violation, a box outside the frame or
            with no area, or a box the detector's candidates contradict (:func:`check_box`).
    """
    stripped = text.strip()
    if "{" not in stripped:
        raise BoxAnswerError("the answer is not JSON (no object found); answer with JSON only")
    try:
        data = json_repair.loads(stripped[stripped.index("{") : stripped.rindex("}") + 1])
    except (ValueError, RecursionError) as exc:
        raise BoxAnswerError(f"the answer is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BoxAnswerError("the answer must be one JSON object")
    try:
        jsonschema.validate(data, BOX_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(answer)"
        raise BoxAnswerError(f"schema: {where}: {exc.message}") from None
    if not data["found"]:
        return {**data, "bbox": None}
    if data["bbox"] is None:
        raise BoxAnswerError("found is true but bbox is null")
    x1, y1, x2, y2 = (float(v) for v in data["bbox"])
    if x2 <= x1 or y2 <= y1:
        raise BoxAnswerError(f"bbox {data['bbox']} has no area (needs x2 > x1 and y2 > y1)")
    if x1 < 0 or y1 < 0 or x2 > width_px or y2 > height_px:
        raise BoxAnswerError(
            f"bbox {data['bbox']} is outside the {width_px}x{height_px} frame "
            f"(0 <= x1 < x2 <= {width_px}, 0 <= y1 < y2 <= {height_px})"
        )
    box, note = check_box([round(x1), round(y1), round(x2), round(y2)], query, candidates)
    note += f", model confidence {float(data['confidence']):.2f}"
    reason = f"{note}; {data['reason']}" if data["reason"] else note
    return {**data, "bbox": box, "reason": reason}


def _fits(query: TargetQuery, candidates: list[Detection]) -> list[Detection]:
    """The candidates that have the phrase's colour and shape. The shape is a soft word, as in
    :func:`~loopact.vision.scene.select_target` (a blob's outline is only a guess at it): when
    nothing of that colour has that shape ("the red ball" with only a red box in view), the
    colour alone decides."""
    by_color = [d for d in candidates if query.color is None or d.color == query.color]
    shaped = [d for d in by_color if query.shape is None or shape_of(d) == query.shape]
    return shaped or by_color


def _named(d: Detection) -> str:
    return f"the {noun(d)} at {list(d.bbox)}"


def check_box(
    box: list[int], query: TargetQuery, candidates: list[Detection]
) -> tuple[list[int], str]:
    """Check a model's box against the colour detector's candidates (SPEC D5, issue 15).

    The rule, with *on* meaning IoU >= :data:`MATCH_IOU` and the candidates that *fit* being
    those of the phrase's colour and shape (:func:`_fits`):

    1. The phrase names a colour or a shape, and some candidate fits: the box must be on one
       of them; it is then snapped to that candidate's box (the model chose the object, the
       detector's pixels say where it is). A box on another object (a red ball for "the red
       box") or on none (bare floor) is refused, naming what it is on and the candidates
       that fit.
    2. The phrase names a colour or a shape and nothing fits: a box on a detected object is
       refused (the detector knows that object's colour and shape); a box on no detected
       object is kept, and the reason says that the detector does not confirm it.
    3. The phrase names neither ("the thing on the left", "the chair"): the box is kept as
       the model drew it, and the reason says it is unchecked (:func:`validate_box_answer`
       adds the model's confidence to every note).

    Args:
        box: ``[x1, y1, x2, y2]`` in pixels, already inside the frame with positive area.
        query: The parsed target phrase.
        candidates: The detector's blobs in the same frame (the floor line counts only when
            the phrase names its colour).

    Returns:
        ``(box, note)``: the box to use and one sentence saying how it was checked.

    Raises:
        BoxAnswerError: The box is refused (rules 1 and 2); the message names why.
    """
    cands = [d for d in candidates if d.color != LINE_COLOR or query.color == LINE_COLOR]
    on = sorted(
        (d for d in cands if iou(box, d.bbox) >= MATCH_IOU), key=lambda d: -iou(box, d.bbox)
    )
    if query.color is None and query.shape is None:
        return box, (
            "the vision model's box, unchecked (the phrase names no colour or shape the "
            "detector could check)"
        )
    shape = _SHAPE_KIND.get(query.shape or "")
    wanted = ", ".join(w for w in (query.color, shape) if w) + ("" if shape else " object")
    fits = _fits(query, cands)
    fit_on = [d for d in on if d in fits]
    if fit_on:
        best = fit_on[0]
        return list(best.bbox), (
            f"the vision model chose {_named(best)} (IoU {iou(box, best.bbox):.2f} with its "
            f"box {box})"
        )
    where = (
        f"is on {_named(on[0])}"
        if on
        else f"covers no detected object (IoU < {MATCH_IOU:g} with each candidate)"
    )
    article = "an" if wanted[0] in "aeiou" else "a"
    asks = f"bbox {box} {where}; {query.text!r} asks for {article} {wanted}"
    if fits:
        listed = "; ".join(_named(d) for d in fits[:6])
        raise BoxAnswerError(f"{asks}; the candidates that fit: {listed}")
    if on:
        raise BoxAnswerError(f"{asks}; the detector sees none in this frame")
    return box, (
        f"the vision model's box, not confirmed by the colour detector (it sees no {wanted} "
        "in this frame)"
    )


def candidates_text(candidates: list[Detection]) -> str:
    """The detector's candidates as JSON lines for the prompt."""
    rows = [
        {
            "object": noun(d),
            "color": d.color,
            "bbox": list(d.bbox),
            "distance_m": None if d.distance_m is None else round(d.distance_m, 2),
        }
        for d in candidates
        if d.color != LINE_COLOR
    ]
    return json.dumps(rows) if rows else "[] (the colour detector found nothing)"


class VisionModel:
    """Perception requests to a vision-capable model (SPEC D5, G2).

    Args:
        model: A model whose endpoint accepts images.
        timeout_s: Wall-clock limit of one request, seconds.
        max_output_tokens: Answer length cap.
    """

    def __init__(self, model: Model, timeout_s: float = 30.0, max_output_tokens: int = 400) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.max_output_tokens = max_output_tokens

    @property
    def name(self) -> str:
        """``provider/model`` for results and traces."""
        return f"{self.model.provider}/{self.model.model}"

    async def ask(self, prompt: str, image: Image) -> str:
        """One image + text request; returns the answer text.

        Raises:
            ModelError: The endpoint failed (one retry on a retryable error) or timed out.
        """
        request = ModelRequest(
            messages=(Message.system(_SYSTEM), Message.user(prompt, (image,))),
            max_output_tokens=self.max_output_tokens,
            temperature=0.0,
        )
        for attempt in (1, 2):
            try:
                return await wait_within(self._collect(request), self.timeout_s)
            except asyncio.TimeoutError:
                raise ModelRetryableError(
                    f"the vision model did not answer within {self.timeout_s:.0f} s"
                ) from None
            except ModelRetryableError:
                if attempt == 2:
                    raise
                logger.debug("vision model: retryable error, trying once more")
        raise AssertionError("unreachable")

    async def _collect(self, request: ModelRequest) -> str:
        """The answer's text; a server that ignores ``max_tokens`` is not read on past
        :data:`CHARS_PER_TOKEN_LIMIT` characters a token (SPEC A2, issue 21 item 6): the
        stream is closed and the answer so far is the answer."""
        parts: list[str] = []
        size = 0
        limit = self.max_output_tokens * CHARS_PER_TOKEN_LIMIT
        stream = self.model.stream(request)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    size += len(event.text)
                    if size > limit:
                        logger.warning(
                            "vision model: the answer passed %d tokens; not read further",
                            self.max_output_tokens,
                        )
                        return "".join(parts)[:limit].strip()
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]
        return "".join(parts).strip()

    async def describe(self, image: Image, question: str | None, detections: str) -> str:
        """A short description of the image, or the answer to ``question``.

        Raises:
            ModelError: See :meth:`ask`.
        """
        q = question or "What do you see? Name the objects, their colours and where they are."
        prompt = (
            f"{q}\nAnswer in at most three sentences. A colour detector on the same image "
            f"reported: {detections}"
        )
        return await self.ask(prompt, image)

    async def select_box(
        self,
        image: Image,
        query: TargetQuery,
        candidates: list[Detection],
        width_px: int,
        height_px: int,
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """Ask for the box of ``query.text``; validate, give one retry with the error.

        Args:
            image: The frame (as sent to the model; boxes are in ``width_px x height_px``).
            query: The parsed target phrase.
            candidates: The detector's blobs, offered to choose from.
            width_px: Width of the frame the coordinates refer to.
            height_px: Height of that frame.

        Returns:
            ``(answer or None, problems)``: the validated answer, or None when both tries
            were refused or the model failed; ``problems`` lists each refusal.
        """
        prompt = (
            f"Find {query.text!r} in this {width_px}x{height_px} image. Reply with JSON only, "
            'exactly: {"found": true|false, "target": "<what you found>", "bbox": [x1, y1, x2, '
            'y2] in pixels (or null if not found), "confidence": 0..1, "reason": "<short>"}. '
            "Candidate boxes from a colour detector (choose one of these when one fits; a box "
            "on another object, or on bare floor while one fits, is refused): "
            f"{candidates_text(candidates)}"
        )
        problems: list[str] = []
        for _ in range(2):
            try:
                text = await self.ask(prompt, image)
            except ModelError as exc:
                problems.append(f"vision model failed: {exc}")
                return None, problems
            try:
                return validate_box_answer(text, width_px, height_px, query, candidates), problems
            except BoxAnswerError as exc:
                problems.append(str(exc))
                prompt += f"\nYour previous answer was refused: {exc}. Answer again, JSON only."
        return None, problems
