"""What the scripted model server and its wire protocols share (SPEC X2).

A wire protocol is a small plug-in (:class:`Protocol`) that names the paths it serves, says
what a request offers (:meth:`Protocol.summarize`, for ``expect`` checks) and renders a turn
into a :class:`ResponsePlan`; the server hands it each :class:`RecordedRequest`. The types live
here, apart from the server, so that the protocols and the server both import them and not
each other (:mod:`loopact.testing.protocols` lists the protocols the server speaks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import ScriptError
from loopact.testing.script import Turn

_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_json(value: Any) -> str:
    """``value`` as JSON text with non-ASCII characters as they are, except lone surrogates,
    which are written as JSON escapes (``"\\udcff"``): they cannot be UTF-8 bytes, but a
    broken model or proxy may send the escape, and tests need that shape."""
    text = json.dumps(value, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _mask(name: str, value: str) -> str:
    if name.lower() not in _SECRET_HEADERS:
        return value
    scheme, _, secret = value.partition(" ")
    if secret:
        return f"{scheme} ***"
    return "***"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        index: 0-based position among all requests this server received.
        method: HTTP method (``POST``).
        path: The request path without the query string (``/v1/chat/completions``).
        headers: Request headers, names lower-cased. Holds the real ``authorization`` value
            (tests may check it) but ``repr`` masks it.
        body: The body parsed as JSON, or the raw bytes when it is not JSON.
        raw_body: The body exactly as received.
        ts: Arrival time, ``time.time()`` seconds.
        query: The query string (without ``?``), empty when none.
        turn_index: 0-based index of the turn that answered it; None when no turn did
            (script exhausted, unknown path, or a path that consumes no turn).
        client_port: The client's TCP port: requests with the same port came over one
            (kept-alive) connection.
    """

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    ts: float
    query: str = ""
    turn_index: int | None = None
    client_port: int = 0

    def json(self) -> dict[str, Any]:
        """The body as a JSON object.

        Raises:
            ScriptError: The body is not a JSON object.
        """
        if not isinstance(self.body, dict):
            raise ScriptError(f"request {self.index + 1} to {self.path} has no JSON object body")
        return self.body

    def masked_headers(self) -> dict[str, str]:
        """The headers with credentials replaced by ``***``."""
        return {name: _mask(name, value) for name, value in self.headers.items()}

    def __repr__(self) -> str:
        return (
            f"RecordedRequest(index={self.index}, method={self.method!r}, path={self.path!r}, "
            f"turn_index={self.turn_index}, headers={self.masked_headers()!r}, "
            f"body={self.body!r})"
        )


@dataclass(frozen=True)
class RequestSummary:
    """What a request offers and says, in protocol-neutral terms (for ``expect`` checks).

    Attributes:
        tool_names: Names of the tools the request offers.
        last_user_text: Text of the last user message ("" when none).
        all_text: All message text (system included), joined with newlines.
        stream: Whether the request asks for a streamed response.
        last_user_audio: Audio parts in the last user message (OpenAI ``input_audio``).
    """

    tool_names: tuple[str, ...] = ()
    last_user_text: str = ""
    all_text: str = ""
    stream: bool = False
    last_user_audio: int = 0


@dataclass(frozen=True)
class ResponsePlan:
    """How to answer one request.

    Exactly one of ``body`` (a whole response, sent with ``Content-Length``) and ``chunks``
    (stream events, each sent as one HTTP chunk) is used; ``chunks`` wins when not None.

    Attributes:
        status: HTTP status code.
        content_type: The ``Content-Type`` header.
        body: The whole body.
        chunks: Stream events, already encoded (``b"data: {...}\\n\\n"``).
        headers: Extra response headers.
        delay_s: Seconds to wait before sending anything.
        chunk_delay_s: Seconds to wait between chunks.
        cut_after_chunks: Close the connection abruptly after this many chunks (streamed) or
            right after the headers (whole body); None ends the response normally.
        write_size: Split every chunk (or the body) into TCP writes of at most this many
            bytes, each flushed on its own; None writes each chunk at once.
    """

    status: int = 200
    content_type: str = "application/json"
    body: bytes = b""
    chunks: Sequence[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    cut_after_chunks: int | None = None
    write_size: int | None = None


class Protocol:
    """A wire protocol the server speaks. Subclass it and register an instance.

    Attributes:
        name: Short name (``openai``); the key of the turn's protocol-specific ``extras``.
        paths: Exact request paths served (``/v1/chat/completions``).
    """

    name: str = "protocol"
    paths: tuple[str, ...] = ()
    lane: str | None = None
    """When set, requests take turns from ``script.lanes[lane]`` (answered by
    :meth:`render_static` when the script has no such lane), never from ``turns``."""

    def consumes_turn(self, request: RecordedRequest) -> bool:
        """Whether this request is answered by the next turn (False: :meth:`render_static`)."""
        return True

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """What the request offers and says, for ``expect`` checks."""
        return RequestSummary()

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """Render a successful turn (no ``error``) as a response to ``request``."""
        raise NotImplementedError

    def render_error(
        self, status: int, message: str, request: RecordedRequest, turn: Turn | None = None
    ) -> ResponsePlan:
        """Render an HTTP error in the protocol's error shape.

        Args:
            status: HTTP status code.
            message: The error message.
            request: The request being answered.
            turn: The scripted turn when the error is scripted (its ``error`` has the details);
                None for the server's own errors (script exhausted, bad request).
        """
        body = {"error": {"message": message, "code": status}}
        return ResponsePlan(status=status, body=json.dumps(body).encode())

    def render_static(self, request: RecordedRequest) -> ResponsePlan:
        """Answer a request that consumes no turn (for example a file upload)."""
        return self.render_error(404, "not served", request)

    def reject(self, request: RecordedRequest) -> str | None:
        """Why the real service would refuse ``request`` with HTTP 400, or None.

        The turn is still consumed; the answer is :meth:`render_error` with status 400.
        """
        return None
