"""One ``tools/call`` on a live MCP connection, raced against the connection's loss
(SPEC C8, B8; issue 18).

A call comes from another task than the link's supervisor, so it is raced against the
connection's ``lost`` event: a call on a server that dies or hangs ends with a clear
:class:`~loopact.errors.NodeError` within its timeout, never a hang (python-sdk issue 1577).
Cancelling a call cancels the MCP request (the SDK sends ``notifications/cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp.types as mt
from mcp import Client
from mcp.shared.exceptions import MCPError

from loopact._compat import timeout_after, wait_within
from loopact.errors import NodeError
from loopact.mcp.sessions import HttpFailure, HttpWatch
from loopact.mcp.transport import one_line

log = logging.getLogger(__name__)

ProgressFn = Callable[[str], None]
"""Receives a server's progress notifications of a call as text."""

Linked = list[mt.TextResourceContents | mt.BlobResourceContents]
"""The contents of the resource links a result points to, as read."""

LINK_READS = 2
"""Resource links of one result that are read (``resources/read``)."""
LINK_READ_TIMEOUT_S = 5.0
"""Bound on reading one resource link, seconds."""


@dataclass
class Connection:
    """What one live connection holds (replaced on every reconnect)."""

    client: Client
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str = ""
    resources: bool = False
    http: HttpWatch | None = None
    """The HTTP answers of a streamable HTTP server (failures, a lost session)."""


async def call_tool(
    conn: Connection,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    timeout_s: float,
    report: ProgressFn | None = None,
) -> mt.CallToolResult:
    """Call ``tool`` on ``conn``; its result, or a :class:`NodeError` that says why not.

    Args:
        conn: The live connection.
        server: The server's name (for the messages).
        tool: The tool's name on the server.
        arguments: Schema-valid arguments.
        timeout_s: Seconds the call may take; then it is cancelled on the server.
        report: Receives the server's progress notifications as text.

    Raises:
        NodeError: The connection was lost during the call, the server did not answer within
            ``timeout_s``, answered with a protocol error or sent a result loopact cannot read.
        asyncio.CancelledError: The caller was cancelled (the MCP request is cancelled).
    """

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if report is not None:
            of = f"/{total:g}" if total else ""
            report(f"{message or tool} ({progress:g}{of})")

    seen = conn.http.failures if conn.http is not None else 0
    request = asyncio.ensure_future(
        conn.client.call_tool(
            tool, arguments, read_timeout_seconds=timeout_s, progress_callback=on_progress
        )
    )
    lost = asyncio.ensure_future(conn.lost.wait())
    try:
        done, _ = await asyncio.wait(
            {request, lost}, timeout=timeout_s + 1.0, return_when=asyncio.FIRST_COMPLETED
        )
    except asyncio.CancelledError:
        await abandon(request, lost)
        raise
    if request not in done:
        await abandon(request, lost)
        if lost in done:
            raise NodeError(
                f"MCP server {server} was lost during the call to {tool}: {conn.reason}"
            )
        raise NodeError(
            f"MCP server {server} did not answer {tool} within {timeout_s:g} s; "
            "the call was cancelled"
        )
    lost.cancel()
    failed = conn.http.since(seen) if conn.http is not None else None
    return _result(request, server, tool, timeout_s, failed)


def _result(
    request: asyncio.Future[mt.CallToolResult],
    server: str,
    tool: str,
    timeout_s: float,
    failed: HttpFailure | None,
) -> mt.CallToolResult:
    """The finished request's result, its failure as a :class:`NodeError` (naming the HTTP
    answer of a streamable HTTP server that failed during the call, issue 39 item 6)."""
    try:
        return request.result()
    except MCPError as exc:
        # -32000 is also what servers built on the TypeScript SDK answer for a lost session
        if exc.code == mt.CONNECTION_CLOSED and (failed is None or not failed.session_lost):
            raise NodeError(
                f"MCP server {server} was lost during the call to {tool} (the connection "
                "closed: it exited or crashed)"
            ) from None
        said = str(exc)
        if failed is not None:  # the status the SDK dropped
            said = str(failed) if failed.message == said else f"{said} ({failed})"
        raise NodeError(f"MCP server {server} refused {tool}: {said}") from None
    except (TimeoutError, asyncio.TimeoutError):
        raise NodeError(
            f"MCP server {server} did not answer {tool} within {timeout_s:g} s; "
            "the call was cancelled"
        ) from None
    except Exception as exc:  # pydantic ValidationError, transport errors
        raise NodeError(
            f"MCP server {server} sent a result for {tool} that loopact cannot read: "
            f"{one_line(exc)}"
        ) from None


async def read_links(conn: Connection, result: mt.CallToolResult, server: str) -> Linked:
    """Read up to :data:`LINK_READS` resource links of a result (each bounded by
    :data:`LINK_READ_TIMEOUT_S`) so their contents reach the model; a failed read is
    logged and skipped."""
    out: Linked = []
    if not conn.resources:
        return out
    links = [b for b in result.content if isinstance(b, mt.ResourceLink)][:LINK_READS]
    for link in links:
        try:
            async with timeout_after(LINK_READ_TIMEOUT_S):  # not wait_for (it can swallow a cancel)
                read = await conn.client.read_resource(str(link.uri))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("MCP server %s: reading %s failed: %r", server, link.uri, exc)
            continue
        out.extend(read.contents[:4])
    return out


async def abandon(*futures: asyncio.Future[Any]) -> None:
    """Cancel ``futures`` and wait (bounded) so the SDK can send its courtesy cancel."""
    for fut in futures:
        fut.cancel()
    with contextlib.suppress(asyncio.TimeoutError, Exception):
        await wait_within(asyncio.gather(*futures, return_exceptions=True), 2.0)
