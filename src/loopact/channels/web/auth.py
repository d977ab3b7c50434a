"""Request guard of the web console: token auth and same-origin checks (SPEC F2).

When the console has a token (required to bind beyond loopback), every HTTP request and every
WebSocket must carry it: ``Authorization: Bearer <token>``, the ``loopact_token`` cookie, or
``?token=<token>``. A page loaded with ``?token=`` is redirected to the same path without it and
gets an HttpOnly cookie, so the token leaves the address bar. Refused: HTTP 401, WebSocket
close code 4401.

Independently of the token, state-changing requests and WebSockets whose ``Origin`` is not the
console itself are refused with 403: a web page on another site must not be able to drive the
robot through a console on localhost (browsers do not apply CORS to WebSockets). Without a token
(loopback only) the ``Host`` header must name this machine, which defeats DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

COOKIE_NAME = "loopact_token"
#: WebSocket close code for a missing or wrong token.
WS_UNAUTHORIZED = 4401
#: WebSocket close code for a cross-origin WebSocket.
WS_FORBIDDEN = 4403
_PAGE_PATHS = frozenset({"/", "/settings"})


def _loopback_host(host: str) -> bool:
    """True if a ``Host`` header names this machine (``localhost``, 127.x, ``[::1]``)."""
    name = urlsplit(f"//{host}").hostname or ""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


class RequestGuard:
    """ASGI middleware enforcing the token and the same-origin rule.

    Args:
        app: The wrapped ASGI app.
        token: The token, or None for no token check (loopback binding).
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._token = token.encode() if token else None

    def _matches(self, candidate: str | None) -> bool:
        if self._token is None or not candidate:
            return False
        return hmac.compare_digest(candidate.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if not self._same_origin(scope, headers):
            log.warning("refused a cross-origin %s request to %s", scope["type"], scope["path"])
            await self._refuse(scope, receive, send, 403, WS_FORBIDDEN, "cross-origin request")
            return
        if self._token is None:
            if not _loopback_host(headers.get("host", "")):
                # DNS rebinding: a foreign name resolved to 127.0.0.1 by someone else's page
                log.warning("refused a request for host %r", headers.get("host", ""))
                await self._refuse(scope, receive, send, 403, WS_FORBIDDEN, "unexpected Host")
                return
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        auth = headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:
            pass
        from_cookie = cookie[COOKIE_NAME].value if COOKIE_NAME in cookie else None
        from_query = query.get("token")
        if self._matches(bearer) or self._matches(from_cookie):
            await self.app(scope, receive, send)
            return
        if self._matches(from_query):
            if (
                scope["type"] == "http"
                and scope["method"] == "GET"
                and scope["path"] in _PAGE_PATHS
            ):
                await self._redirect_with_cookie(scope, query, send)
                return
            await self.app(scope, receive, send)
            return
        await self._refuse(scope, receive, send, 401, WS_UNAUTHORIZED, "missing or wrong token")

    @staticmethod
    def _same_origin(scope: Scope, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if not origin:
            return True  # not a browser cross-site request (curl, scripts, same-origin GET)
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return True
        return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()

    async def _redirect_with_cookie(self, scope: Scope, query: dict[str, str], send: Send) -> None:
        rest = {k: v for k, v in query.items() if k != "token"}
        location = scope["path"] + ("?" + urlencode(rest) if rest else "")
        token = self._token.decode() if self._token else ""
        cookie = f"{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"content-length", b"0"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _refuse(
        scope: Scope, receive: Receive, send: Send, status: int, ws_code: int, reason: str
    ) -> None:
        if scope["type"] == "websocket":
            message: Any = await receive()
            if message.get("type") == "websocket.connect":
                # Accept then close, so the client sees the code (a refused handshake loses it).
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": ws_code, "reason": reason})
            return
        body = json.dumps({"detail": reason}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
