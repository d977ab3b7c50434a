"""``loopact mcp --http HOST:PORT``: the tool server over streamable HTTP (issue 18).

The SDK's streamable HTTP app (``/mcp``) behind a bearer-token check, served by uvicorn
inside the running asyncio loop (like the web console): every request must carry
``Authorization: Bearer <token>`` when a token is set, and a token is required to bind
beyond loopback (:class:`~loopact.errors.ConfigError` otherwise). A request without the
right token gets ``401`` with ``WWW-Authenticate: Bearer`` and never reaches the MCP
session; the token must be at least 16 characters without spaces, and an address that sent
5 different wrong tokens is locked out (``429`` with ``Retry-After``; :mod:`loopact.access`,
issue 21 item 12). On loopback without a token the SDK's DNS-rebinding protection (Host and
Origin checks) is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from loopact._compat import wait_within
from loopact.access import LoginLimiter, is_loopback, listen_socket
from loopact.errors import ConfigError
from loopact.mcp.address import check_access
from loopact.mcp.server import ToolServer

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 5.0


class BearerAuth:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>`` matches.

    Wrong tokens are counted per client address by a :class:`~loopact.access.LoginLimiter`
    (issue 21 item 12, as the web console does): after
    :data:`~loopact.access.FREE_FAILURES` different wrong ones the address is locked out
    (1 s, doubling up to :data:`~loopact.access.MAX_LOCKOUT_S`), and every request from it is
    answered ``429`` with ``Retry-After`` (seconds) until then, even one with the right token.

    Args:
        app: The wrapped ASGI app.
        token: The expected token (compared in constant time).
        limiter: Counts wrong tokens; None for a new :class:`~loopact.access.LoginLimiter`.
    """

    def __init__(self, app: Any, token: str, limiter: LoginLimiter | None = None) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()
        self.limiter = limiter or LoginLimiter()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else "?"
        wait_s = self.limiter.retry_after(address)
        if wait_s > 0:
            await _refuse(
                send,
                429,
                "too_many_requests",
                f"too many wrong bearer tokens from {address}: locked out, retry in "
                f"{math.ceil(wait_s)} s",
                [(b"retry-after", str(math.ceil(wait_s)).encode())],
            )
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self._expected):
            self.limiter.succeeded(address)
            await self.app(scope, receive, send)
            return
        if given:
            lockout = self.limiter.failed(address, given.decode("latin-1"))
            if lockout:
                log.warning(
                    "wrong MCP bearer tokens from %s: locked out for %.0f s", address, lockout
                )
        what = "a wrong bearer token" if given else "no bearer token"
        await _refuse(
            send,
            401,
            "unauthorized",
            f"{what}: send Authorization: Bearer <the --token of loopact mcp>",
            [(b"www-authenticate", b'Bearer realm="loopact"')],
        )


async def _refuse(
    send: Any, status: int, error: str, description: str, headers: list[tuple[bytes, bytes]]
) -> None:
    """Answer ``status`` with a JSON ``{"error", "error_description"}`` body (OAuth style)."""
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                *headers,
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers (the CLI owns the signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class HttpHandle:
    """A running HTTP MCP server.

    Attributes:
        host: The bound host.
        port: The bound port (the real one when 0 was asked for).
        url: ``http://HOST:PORT/mcp``.
    """

    host: str
    port: int
    url: str
    _server: _Server
    _task: asyncio.Task[None]

    async def wait(self) -> None:
        """Until the server stops."""
        await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Stop serving (bounded)."""
        self._server.should_exit = True
        try:
            await wait_within(asyncio.shield(self._task), _STOP_TIMEOUT_S)
        except (asyncio.TimeoutError, Exception):
            self._server.force_exit = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def _bind(host: str, port: int) -> socket.socket:
    """The server's listening socket (:func:`loopact.access.listen_socket`).

    Raises:
        ConfigError: The host cannot be resolved or the port cannot be bound (key ``--http``).
    """
    try:
        return listen_socket(host, port)
    except socket.gaierror as exc:
        raise ConfigError(f"--http host {host!r} cannot be resolved: {exc}", key="--http") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot serve MCP on {host}:{port}: {exc.strerror or exc}; choose another port",
            key="--http",
        ) from None


async def serve_http(
    tools: ToolServer,
    host: str,
    port: int,
    token: str | None,
    limiter: LoginLimiter | None = None,
) -> HttpHandle:
    """Serve ``tools`` over streamable HTTP at ``http://host:port/mcp``; returns once it listens.

    Args:
        tools: The tool server.
        host: Interface to bind; beyond loopback ``token`` is required.
        port: TCP port (0: a free one, see :attr:`HttpHandle.port`).
        token: Bearer token every request must carry (None: none, loopback only); at least
            16 characters without spaces.
        limiter: Counts wrong tokens per client address (None: a new
            :class:`~loopact.access.LoginLimiter`; tests pass one with their own clock).

    Raises:
        ConfigError: No token beyond loopback, an empty or weak token, or the address cannot be
            bound (key ``--token`` or ``--http``).
    """
    check_access(host, token)
    security = None
    if is_loopback(host) and not token:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    app: Any = tools.server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, transport_security=security
    )
    if token:
        app = BearerAuth(app, token, limiter)
    sock = _bind(host, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    server = _Server(config)
    task = asyncio.get_running_loop().create_task(
        server.serve(sockets=[sock]), name="loopact-mcp-http"
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _START_TIMEOUT_S
    while not server.started:
        if task.done():
            sock.close()
            exc = task.exception()
            raise ConfigError(f"MCP HTTP server did not start: {exc!r}", key="--http")
        if loop.time() > deadline:
            task.cancel()
            raise ConfigError("MCP HTTP server did not start within 10 s", key="--http")
        await asyncio.sleep(0.01)
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return HttpHandle(host, bound_port, f"http://{shown}:{bound_port}{MCP_PATH}", server, task)
