"""The SDK's two client transports, watched (issue 18): stdio and streamable HTTP.

:func:`watched_transport` opens the official SDK's ``stdio_client`` (a subprocess speaking
newline-delimited JSON-RPC) or ``streamable_http_client`` (with the configured headers) and
wraps the read side so that the link learns at once when the server's side ends (EOF: the
process exited or crashed) and when the server prints lines that are not JSON-RPC.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import pydantic
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from loopact.config import McpServerConfig
from loopact.mcp.sessions import HttpWatch

_TAIL_LINES = 3
_MARK = "--- loopact:"


class WatchedRead:
    """A read stream that sets ``eof`` when the server's side ends and reports garbage.

    Args:
        inner: The SDK transport's read stream.
        eof: Set when the stream ends.
        on_garbage: Called with the parse error of each stdout line that is not JSON-RPC.
    """

    def __init__(
        self, inner: Any, eof: asyncio.Event, on_garbage: Callable[[Exception], None]
    ) -> None:
        self._inner = inner
        self._eof = eof
        self._on_garbage = on_garbage

    async def receive(self) -> Any:
        """The next message (or parse error); sets ``eof`` at the end."""
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._eof.set()
            raise
        if isinstance(item, Exception):
            self._on_garbage(item)
        return item

    def __aiter__(self) -> WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the inner stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)


def watched_transport(
    cfg: McpServerConfig,
    eof: asyncio.Event,
    on_garbage: Callable[[Exception], None],
    errlog: TextIO | None = None,
    http: HttpWatch | None = None,
) -> Any:
    """An SDK transport (async context manager of ``(read, write)``) for ``cfg``, watched.

    Args:
        cfg: A stdio (``command``) or streamable HTTP (``url``) server.
        eof: Set when the server's side of the connection ends.
        on_garbage: See :class:`WatchedRead`.
        errlog: Where a stdio server's stderr goes (default: ours).
        http: Sees every HTTP answer of a streamable HTTP server (its failures, a lost
            session); unused for stdio.
    """

    @asynccontextmanager
    async def transport() -> AsyncIterator[tuple[Any, Any]]:
        async with _open(cfg, errlog, http) as (read, write):
            yield WatchedRead(read, eof, on_garbage), write
        eof.set()

    return transport()


@asynccontextmanager
async def _open(
    cfg: McpServerConfig, errlog: TextIO | None, watch: HttpWatch | None
) -> AsyncIterator[tuple[Any, Any]]:
    if cfg.command is not None:
        params = StdioServerParameters(
            command=cfg.command,
            args=list(cfg.args),
            env=dict(cfg.env) or None,
            cwd=cfg.cwd,
            encoding_error_handler="replace",
        )
        async with stdio_client(params, errlog=errlog or sys.stderr) as streams:
            yield streams
        return
    assert cfg.url is not None
    http = httpx2.AsyncClient(
        headers=dict(cfg.headers),
        timeout=httpx2.Timeout(cfg.connect_timeout_s, read=300.0),
        event_hooks={"response": [_refused] + ([watch.hook] if watch is not None else [])},
    )
    async with http, streamable_http_client(cfg.url, http_client=http) as streams:
        yield streams


async def _refused(response: httpx2.Response) -> None:
    """Raise on 401 and 403 so the note names them (the SDK says only "Server returned an
    error response"): a missing or wrong ``headers`` entry, such as the token."""
    if response.status_code in (401, 403):
        url = response.url.copy_with(query=None, fragment=None, userinfo=b"")  # no secrets
        raise httpx2.HTTPStatusError(
            f"HTTP {response.status_code} {response.reason_phrase} from {url}: "
            "check the server's `headers` (its token)",
            request=response.request,
            response=response,
        )


def open_log(path: Path, stack: AsyncExitStack, what: str) -> TextIO | None:
    """Open a stdio server's stderr log for appending (closed by ``stack``); None if it can't."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        out: TextIO = stack.enter_context(path.open("a", encoding="utf-8"))
    except OSError:
        return None
    out.write(f"{_MARK} starting {what} (pid {os.getpid()})\n")
    out.flush()
    return out


def tail(path: Path) -> str:
    """The last few lines the latest start of a server wrote to its log, joined by `` | ``."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    text = text.rsplit(_MARK, 1)[-1].split("\n", 1)[-1] if _MARK in text else text
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][-_TAIL_LINES:]
    return " | ".join(lines)[:400]


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (the first member of an exception group)."""
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio task groups)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    if isinstance(exc, pydantic.ValidationError):
        return invalid_mcp(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def invalid_mcp(exc: pydantic.ValidationError) -> str:
    """What the SDK found wrong in a server's message, in one line: where and what.

    ``ListToolsResult is not valid MCP: tools.1.inputSchema: Input should be a valid
    dictionary``; for a content block of a type MCP does not define: ``content.0 fits none
    of the shapes MCP defines (its type 'hologram' is none of MCP's)``.
    """
    errors = exc.errors()
    if not errors:
        return f"{exc.title} is not valid MCP"
    locs = [tuple(e.get("loc") or ()) for e in errors]
    prefix: list[Any] = []
    for parts in zip(*locs, strict=False):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    first = errors[0]
    where = ".".join(str(x) for x in prefix) or "the message"
    got = first.get("input")
    shown = f", got {got!r}"[:80] if isinstance(got, (str, int, float, bool)) else ""
    if len(errors) == 1:
        return f"{exc.title} is not valid MCP: {where}: {first.get('msg')}{shown}"
    head = f"{exc.title} is not valid MCP: {where} fits none of the shapes MCP defines"
    block: dict[str, Any] = next(
        (e["input"] for e in errors if isinstance(e.get("input"), dict)), {}
    )
    if isinstance(block.get("type"), str):
        return f"{head} (its type {str(block['type'])[:40]!r} is none of MCP's)"
    detail = ".".join(str(x) for x in locs[0][len(prefix) :])
    return f"{head} (e.g. {detail}: {first.get('msg')}{shown})"


def garbage_line(exc: Exception, limit: int = 80) -> str:
    """The start of a stdout line that was not JSON-RPC, quoted (``'Starting server...'``),
    from the SDK's parse error; the error's first line when it holds no input."""
    errors = exc.errors() if isinstance(exc, pydantic.ValidationError) else []
    value = errors[0].get("input") if errors else None
    if value is None:
        return str(exc).strip().splitlines()[0][:160] if str(exc).strip() else repr(exc)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return repr(text[:limit]) + (f" ... ({len(text)} characters)" if len(text) > limit else "")


def file_safe(name: str) -> str:
    """``name`` usable in a file name."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:64] or "server"
