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

Hardening (issue 21, docs/security.md):

- Every response carries ``X-Frame-Options: DENY`` and ``Content-Security-Policy:
  frame-ancestors 'none'`` (no other site can frame the console and trick clicks on Allow or
  Stop), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.
- A browser request another site makes for a sub-resource or a frame (``Sec-Fetch-Site:
  cross-site`` and not a top-level navigation: an ``<img>`` of the camera, an ``<iframe>``, a
  ``fetch``) is refused with 403 before the token is looked at.
- Wrong tokens are counted per client address (:class:`loopact.access.LoginLimiter`, shared
  with ``loopact mcp --http``; the same wrong token again, e.g. the cookie of an old token,
  counts once): after :data:`~loopact.access.FREE_FAILURES` different ones the address is
  locked out, for 1 s, then twice as long after every further failure, up to
  :data:`~loopact.access.MAX_LOCKOUT_S`. While locked out every request that needs the token
  is answered 429 with ``Retry-After`` (WebSocket close code 4429), even one
  with the right token; a success clears the count.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import math
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopact.access import LoginLimiter

log = logging.getLogger(__name__)

COOKIE_NAME = "loopact_token"
#: WebSocket close code for a missing or wrong token.
WS_UNAUTHORIZED = 4401
#: WebSocket close code for a cross-origin WebSocket.
WS_FORBIDDEN = 4403
#: WebSocket close code while the client address is locked out after wrong tokens.
WS_LOCKED = 4429
#: Headers on every HTTP response of the console (issue 21).
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
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


def _with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _v in message.get("headers", [])}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return wrapped


def _cross_site_subresource(scope: Scope, headers: dict[str, str]) -> bool:
    """A request another site's page made for an image, frame, script or fetch (not a link)."""
    if headers.get("sec-fetch-site") != "cross-site":
        return False
    if scope["type"] != "http":
        return True
    navigate = headers.get("sec-fetch-mode") == "navigate"
    return not (navigate and headers.get("sec-fetch-dest", "document") == "document")


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


class RequestGuard:
    """ASGI middleware enforcing the token and the same-origin rule.

    Args:
        app: The wrapped ASGI app.
        token: The token, or None for no token check (loopback binding).
        limiter: Counts wrong tokens per client address; None for a new
            :class:`LoginLimiter`.
    """

    def __init__(
        self, app: ASGIApp, token: str | None, limiter: LoginLimiter | None = None
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self.limiter = limiter or LoginLimiter()

    def _matches(self, candidate: str | None) -> bool:
        if self._token is None or not candidate:
            return False
        return hmac.compare_digest(candidate.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _with_security_headers(send)
        headers = _headers(scope)
        if _cross_site_subresource(scope, headers):
            log.warning("refused a cross-site %s request to %s", scope["type"], scope["path"])
            await self._refuse(scope, receive, send, 403, WS_FORBIDDEN, "cross-site request")
            return
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
        address = _client(scope)
        wait_s = self.limiter.retry_after(address)
        if wait_s > 0:
            await self._refuse(
                scope, receive, send, 429, WS_LOCKED, "too many wrong tokens", retry_after=wait_s
            )
            return
        if self._matches(bearer) or self._matches(from_cookie):
            self.limiter.succeeded(address)
            await self.app(scope, receive, send)
            return
        if self._matches(from_query):
            self.limiter.succeeded(address)
            if (
                scope["type"] == "http"
                and scope["method"] == "GET"
                and scope["path"] in _PAGE_PATHS
            ):
                await self._redirect_with_cookie(scope, query, send)
                return
            await self.app(scope, receive, send)
            return
        lockout = 0.0
        for tried in {t for t in (bearer, from_cookie, from_query) if t}:  # wrong ones
            lockout = max(lockout, self.limiter.failed(address, tried))
        if lockout:
            log.warning("wrong console tokens from %s: locked out for %.0f s", address, lockout)
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
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        ws_code: int,
        reason: str,
        retry_after: float = 0.0,
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
        if retry_after:
            headers.append((b"retry-after", str(math.ceil(retry_after)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
