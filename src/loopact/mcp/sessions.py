"""What a streamable HTTP MCP server answered when it failed, and whether it lost our session
(SPEC C8; issue 39 item 6).

The SDK turns a failed HTTP answer into a JSON-RPC error and drops the status: a server that
restarted and no longer knows our ``Mcp-Session-Id`` looks like any server that refused one
request. :class:`HttpWatch` sees every answer of the connection's HTTP client (an httpx
response hook, :meth:`HttpWatch.hook`) and keeps the last failure with its status, so errors
can name it, and notes a lost session:

- ``404`` to a request that carried a session id: the MCP specification's answer for a
  session the server does not know (basic/transports, "Session Management");
- ``400`` whose body speaks of the session (``"Bad Request: No valid session ID provided"``):
  what servers built on the TypeScript SDK answer instead.

A lost session is not a failure of the request: the server refused it before running
anything, so the link initializes a new session, lists the tools again and retries the call
once (:class:`~loopact.mcp.client.McpServerLink`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import httpx2

SESSION_HEADER = "mcp-session-id"
"""The header that carries the session id (streamable HTTP transport)."""

_MAX_BODY_CHARS = 200


@dataclass(frozen=True)
class HttpFailure:
    """One failed HTTP answer of a streamable HTTP server.

    Attributes:
        status: The HTTP status code (400, 404, 500, ...).
        reason: Its reason phrase (``Bad Request``).
        message: The JSON-RPC error message of the body, else the body's start ("" if none).
        session_lost: The request carried a session id and the answer says the server does
            not know it (see the module docstring).
    """

    status: int
    reason: str
    message: str = ""
    session_lost: bool = False

    def __str__(self) -> str:
        said = f": {self.message!r}" if self.message else ""
        return f"HTTP {self.status} {self.reason}{said}"


@dataclass
class HttpWatch:
    """The failed answers of one connection (see the module docstring).

    Attributes:
        failures: How many failed answers came so far.
        last: The latest failure, None before the first.
        lost: The failure that said the session is gone, None while it is not.
        session_gone: Set when :attr:`lost` is.
    """

    failures: int = 0
    last: HttpFailure | None = None
    lost: HttpFailure | None = None
    session_gone: asyncio.Event = field(default_factory=asyncio.Event)

    async def hook(self, response: httpx2.Response) -> None:
        """An httpx response hook: note a failed answer (status >= 400). The body of a JSON
        or text answer is read here (the SDK reads it again from the cache)."""
        if response.status_code < 400:
            return
        message = ""
        kind = response.headers.get("content-type", "").lower()
        if kind.startswith(("application/json", "text/")):
            await response.aread()
            message = _said(response.text)
        carried = SESSION_HEADER in response.request.headers
        status = response.status_code
        lost = carried and (status == 404 or (status == 400 and "session" in message.lower()))
        failure = HttpFailure(status, response.reason_phrase, message, lost)
        self.failures += 1
        self.last = failure
        if lost and self.lost is None:
            self.lost = failure
            self.session_gone.set()

    def since(self, count: int) -> HttpFailure | None:
        """The latest failure if any came after the first ``count`` (:attr:`failures`)."""
        return self.last if self.failures > count else None


def _said(body: str) -> str:
    """The JSON-RPC error message of ``body``, else its first line, cut short."""
    text = body.strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        text = str(parsed["error"].get("message") or "")
    first = text.splitlines()[0] if text else ""
    return first[:_MAX_BODY_CHARS]
