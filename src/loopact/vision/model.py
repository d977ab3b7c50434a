"""A vision-capable model for perception tools: descriptions and box selection (SPEC D5, G2).

:class:`VisionModel` wraps any :class:`~loopact.llm.base.Model` whose endpoint takes images
(the main brain when it has vision, or the separate ``vision.model``). Box selection asks for
strict JSON ``{found, target, bbox: [x1, y1, x2, y2], confidence, reason}`` with the colour
detector's candidates offered to choose from; the answer is repaired (json-repair) or refused,
never trusted blindly (:func:`validate_box_answer`): a box outside the frame, with ``x2 <= x1``
or on an object of another colour than the one named is an error, and the model gets one more
try with the error before the tool falls back to the detector.
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
from loopact.vision.scene import LINE_COLOR, TargetQuery

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
        The answer as a dict matching :data:`BOX_SCHEMA`, bbox as integer pixels.

    Raises:
        BoxAnswerError: Prose instead of JSON, a schema violation, a box outside the frame or
            with no area, or a box on an object of another colour than the phrase names.
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
    box = [round(x1), round(y1), round(x2), round(y2)]
    if query.color is not None:
        hits = [d for d in candidates if iou(box, d.bbox) > 0.3]
        if hits and all(d.color != query.color for d in hits):
            seen = ", ".join(sorted({d.color for d in hits}))
            raise BoxAnswerError(
                f"bbox {box} is on a {seen} object, not on a {query.color} one ({query.text!r})"
            )
    return {**data, "bbox": box}


def candidates_text(candidates: list[Detection]) -> str:
    """The detector's candidates as JSON lines for the prompt."""
    rows = [
        {
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
            f"Candidate boxes from a colour detector (prefer one of these): "
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
