"""Request body limits of the web console (issue 21 item 10, SPEC F2): size and nesting.

:class:`BodyLimit` refuses a request body that is too large before the app reads it: from
its ``Content-Length`` at once (nothing of the body is read), and for a body without one
(chunked) as soon as the bytes read pass the limit — reading stops there, nothing reaches
the app or the disk, and the client gets 413 with ``Connection: close``. Bodies within the
limit are handed to the app unchanged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopact.llm.arguments import MAX_ARGUMENT_DEPTH, nesting_depth

log = logging.getLogger(__name__)

#: Room for the multipart envelope (boundaries, part headers) around an upload, bytes.
MULTIPART_OVERHEAD_BYTES = 64 * 1024
#: Largest body of the other requests (JSON), bytes.
DEFAULT_BODY_BYTES = 1024 * 1024


class BodyLimit:
    """ASGI middleware: a byte limit per request body, chosen by path.

    Args:
        app: The wrapped app.
        limit_for: ``path -> limit`` in bytes for HTTP requests.
    """

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            log.warning("refused a %d byte body for %s (limit %d)", declared, scope["path"], limit)
            await _too_large(send, limit)
            return
        body: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                log.warning("stopped reading a body for %s at %d bytes", scope["path"], size)
                await _too_large(send, limit)
                return
            body.append(chunk)
            more = bool(message.get("more_body", False))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(body), "more_body": False}
            return await receive()  # after the body: a disconnect, when it comes

        await self.app(scope, replay, send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"request body larger than the {limit} byte limit"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


MAX_BODY_DEPTH = MAX_ARGUMENT_DEPTH
"""Deepest nesting of objects and arrays accepted in a JSON body (the console's are flat)."""


async def json_body(request: Request) -> dict[str, Any]:
    """The JSON object of a request body: the one place every JSON endpoint reads it.

    Raises:
        HTTPException: 400 when the body is not UTF-8, not JSON, not an object, or nests
            deeper than :data:`MAX_BODY_DEPTH` (checked before decoding: Python's decoder
            recurses once per level and a ``RecursionError`` was a 500 with a traceback).
    """
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(400, "body: not UTF-8 text; expected a JSON object") from exc
    if nesting_depth(text) > MAX_BODY_DEPTH:
        raise HTTPException(400, f"body: nested too deeply (more than {MAX_BODY_DEPTH} levels)")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HTTPException(400, "body: expected a JSON object") from exc
    if not isinstance(body, dict):
        raise HTTPException(400, "body: expected a JSON object")
    return body
