"""OpenAI ``POST /v1/images/generations`` for the scripted model server (SPEC X2; issue 19).

Answers with ``{"created": ..., "data": [{"b64_json": <PNG>, "revised_prompt": ...}]}``: a
PNG of the requested ``size`` (``"WxH"``, at most 2048 px a side; default 256x256) filled with
one colour and a diagonal stripe, so a test can tell the picture was decoded. A turn's
``error`` answers with the OpenAI error shape, like the chat protocol.

Extras under ``extras.images``: ``color`` (``[r, g, b]``, default ``[40, 120, 200]``), ``b64``
(send this text as ``b64_json`` instead of a PNG: non-image bytes for tests), ``url`` (send
``url`` instead of ``b64_json``).
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
from typing import Any

from loopact.testing.protocol import Protocol, RecordedRequest, RequestSummary, ResponsePlan
from loopact.testing.script import Turn

__all__ = ["ImagesProtocol"]

_SIZE = re.compile(r"^(\d{1,4})x(\d{1,4})$")
_MAX_SIDE = 2048


def _png(width: int, height: int, color: tuple[int, int, int]) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), color)
    ImageDraw.Draw(img).line((0, 0, width, height), fill=(255, 255, 255), width=max(1, width // 32))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


class ImagesProtocol(Protocol):
    """The OpenAI images generation endpoint (one image per request)."""

    name = "images"
    paths = ("/v1/images/generations",)

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """The prompt counts as the last user text."""
        body = request.body if isinstance(request.body, dict) else {}
        prompt = str(body.get("prompt", ""))
        return RequestSummary(last_user_text=prompt, all_text=prompt)

    def reject(self, request: RecordedRequest) -> str | None:
        """A request without a prompt, or with a size that is not ``WxH``, is a 400."""
        body = request.body if isinstance(request.body, dict) else {}
        if not str(body.get("prompt") or "").strip():
            return "prompt is required"
        size = body.get("size")
        if size is not None and size != "auto" and not _SIZE.match(str(size)):
            return f"Invalid value for 'size': {size!r}"
        return None

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """One generated image (see the module docstring)."""
        body = request.body if isinstance(request.body, dict) else {}
        extra: dict[str, Any] = turn.extra(self.name)
        item: dict[str, Any] = {"revised_prompt": str(body.get("prompt", ""))}
        if "url" in extra:
            item["url"] = str(extra["url"])
        elif "b64" in extra:
            item["b64_json"] = str(extra["b64"])
        else:
            m = _SIZE.match(str(body.get("size") or ""))
            w, h = (int(m.group(1)), int(m.group(2))) if m else (256, 256)
            w, h = min(max(w, 1), _MAX_SIDE), min(max(h, 1), _MAX_SIDE)
            r, g, b = (int(v) for v in extra.get("color", (40, 120, 200)))
            item["b64_json"] = base64.b64encode(_png(w, h, (r, g, b))).decode("ascii")
        payload = {"created": int(time.time()), "data": [item]}
        return ResponsePlan(body=json.dumps(payload).encode())
