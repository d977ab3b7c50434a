"""One MCP server, connected and supervised: :class:`McpServerLink` (SPEC C8, C2; issue 18).

A link runs one supervisor task that owns the whole life of its connection: it spawns the
stdio server (or opens the streamable HTTP session), runs the initialize handshake and the
first ``tools/list`` within ``connect_timeout_s``, re-reads the list at once on
``notifications/tools/list_changed`` (and on ``subscriptions/listen`` events of 2026-era
servers), pings the server every ``ping_interval_s``, and on EOF, a failed ping or a crash
drops the server's tools, says why in one line, and reconnects with exponential back-off.

The SDK's session is entered and exited only inside that supervisor task (anyio cancel
scopes must not cross tasks: python-sdk issue 577). Calls come from other tasks and are
raced against the connection's loss (:mod:`loopact.mcp.calls`); the list, the liveness
probe and the list-change stream are in :mod:`loopact.mcp.listing`, the status records in
:mod:`loopact.mcp.status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import mcp.types as mt
from mcp import Client
from mcp.shared.exceptions import MCPError

from loopact._compat import timeout_after, wait_within
from loopact._version import __version__
from loopact.config import McpServerConfig
from loopact.config.mcp_secrets import server_secrets, shown_server
from loopact.errors import NodeError
from loopact.mcp.calls import Connection, Linked, ProgressFn, call_tool, read_links
from loopact.mcp.listing import (
    is_list_changed,
    list_tools,
    open_listener,
    probe,
    stop_listener,
)
from loopact.mcp.sessions import HttpFailure, HttpWatch
from loopact.mcp.status import LinkState, LinkStatus
from loopact.mcp.transport import (
    file_safe,
    garbage_line,
    one_line,
    open_log,
    tail,
    watched_transport,
)
from loopact.redact import Redactor

__all__ = ["LinkState", "LinkStatus", "McpServerLink"]

log = logging.getLogger(__name__)

PING_INTERVAL_S = 10.0
"""Seconds between liveness pings of a connected server."""
PING_TIMEOUT_S = 10.0
"""A ping unanswered for this long means the server hangs: it is dropped and restarted."""
BACKOFF_BASE_S = 1.0
"""First reconnect delay, seconds; doubled after each failure up to :data:`BACKOFF_MAX_S`."""
BACKOFF_MAX_S = 60.0
"""Longest reconnect delay, seconds."""
HEALTHY_AFTER_S = 30.0
"""A connection that lasted this long resets the back-off."""
LIST_TIMEOUT_S = 10.0
"""Bound on one ``tools/list`` (all pages) after a list_changed notification, seconds."""
CLOSE_TIMEOUT_S = 10.0
"""Bound on closing one connection (the SDK stops a stdio server within ~6 s), seconds."""


ToolsFn = Callable[["McpServerLink", list[mt.Tool]], None]
StatusFn = Callable[[LinkStatus], None]


class McpServerLink:
    """A configured MCP server, connected and supervised (issue 18). See the module docstring.

    Args:
        name: The server's name in ``mcp.servers``.
        cfg: Its settings (stdio ``command``/``args``/``env``/``cwd`` or ``url``/``headers``).
        on_tools: Called with the server's full tool list after each (re-)read, and with
            ``[]`` when the connection is lost.
        on_status: Called on every state change.
        log_dir: Folder for the stdio server's stderr (``mcp-<name>.log``); None: inherit.
        ping_interval_s: Seconds between liveness pings.
        ping_timeout_s: Seconds a ping may take before the server counts as hung.
        backoff_base_s: First reconnect delay, seconds (doubled per failure).
        backoff_max_s: Longest reconnect delay, seconds.
        mode: The SDK's protocol negotiation: ``auto`` (2026-era ``server/discover``, else
            the 2025-era initialize handshake) or ``legacy`` (the handshake only).
    """

    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        on_tools: ToolsFn,
        on_status: StatusFn,
        log_dir: Path | None = None,
        ping_interval_s: float = PING_INTERVAL_S,
        ping_timeout_s: float = PING_TIMEOUT_S,
        backoff_base_s: float = BACKOFF_BASE_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        mode: str = "auto",
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.on_tools = on_tools
        self.on_status = on_status
        self.log_path = (log_dir / f"mcp-{file_safe(name)}.log") if log_dir else None
        self.ping_interval_s = ping_interval_s
        self.ping_timeout_s = ping_timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.mode = mode
        self._mask = Redactor(value for _, value in server_secrets(name, cfg))
        self.restarts = 0
        self.state = LinkState.STOPPED
        self.detail = ""
        self.tools: list[mt.Tool] = []
        self.last_loss = ""
        self._conn: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._refresh = asyncio.Event()
        self._first_attempt = asyncio.Event()
        self._up = asyncio.Event()
        self._ending = ""
        self._renew = False
        self._listed = asyncio.Event()
        self._listed.set()
        self._garbage = 0
        self._garbage_first = ""
        self._inflight = 0

    # ------------------------------------------------------------------ lifecycle
    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return self.cfg.transport

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stopping.is_set()

    @property
    def connected(self) -> bool:
        """True while a connection is up."""
        return self._conn is not None

    def start(self) -> None:
        """Start the supervisor task on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping.clear()
            self._task = asyncio.get_running_loop().create_task(
                self._supervise(), name=f"loopact-mcp-{self.name}"
            )

    async def wait_first_attempt(self) -> None:
        """Wait until the first connection attempt has succeeded or failed."""
        await self._first_attempt.wait()

    async def stop(self) -> None:
        """End supervision; the connection is closed by its own task (bounded).

        A connected server is closed gracefully; one still starting (or waiting to be
        retried) is cancelled at once, inside the supervisor task, so the SDK's contexts
        unwind where they were entered.
        """
        self._stopping.set()
        task, self._task = self._task, None
        if task is None:
            return
        if self._conn is None:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S + 2.0)
        if not done:
            log.warning("MCP server %s did not close in time; abandoned", self.name)
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)
        if self.state is not LinkState.STOPPED:
            self._status(LinkState.STOPPED, "stopped")

    def request_refresh(self) -> None:
        """Re-read the tool list now (what ``notifications/tools/list_changed`` does)."""
        self._listed.clear()
        self._refresh.set()

    async def settled(self, timeout_s: float = 1.0) -> None:
        """Wait (at most ``timeout_s``) until a pending tool-list re-read has finished.

        A server that announces a new tool before answering a call has it offered by the
        time that call's result is back (issue 18: offered within 1 s).
        """
        with contextlib.suppress(asyncio.TimeoutError):
            await wait_within(self._listed.wait(), timeout_s)

    def note_garbage(self, exc: Exception) -> None:
        """Count a stdout line that was not JSON-RPC (logged once per connection, with the
        line's start; the count goes into the note when the server drops)."""
        self._garbage += 1
        if self._garbage == 1:
            self._garbage_first = self._mask.text(garbage_line(exc))
            log.warning(
                "MCP server %s printed a line that is not JSON-RPC on stdout (ignored; later "
                "ones are counted, not logged): %s",
                self.name,
                self._garbage_first,
            )

    # ------------------------------------------------------------------ calls
    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout_s: float,
        report: ProgressFn | None = None,
    ) -> tuple[mt.CallToolResult, Linked]:
        """Call ``tool`` on the server; returns its result and the resource links it read.

        Args:
            tool: The tool's name on the server.
            arguments: Schema-valid arguments.
            timeout_s: Seconds the call may take; then it is cancelled on the server.
            report: Receives the server's progress notifications as text.

        Raises:
            NodeError: The server is not connected, lost the connection during the call,
                did not answer within ``timeout_s``, or answered with a protocol error.
            asyncio.CancelledError: The caller was cancelled (the MCP request is cancelled).
        """
        conn = self._conn
        if conn is None:
            why = self.detail or "starting"
            raise NodeError(f"MCP server {self.name} is not connected ({why})")
        deadline = time.monotonic() + timeout_s
        try:
            result = await self._call_on(conn, tool, arguments, timeout_s, report)
        except NodeError as exc:
            lost = conn.http.lost if conn.http is not None else None
            if lost is None:
                raise
            # The server refused the call before running it: a new session, then once more.
            conn = await self._renewed(conn, tool, lost, deadline)
            left = max(1.0, deadline - time.monotonic())
            try:
                result = await self._call_on(conn, tool, arguments, left, report)
            except NodeError as again:
                raise NodeError(f"{again} (tried again after: {exc})") from None
        linked = await read_links(conn, result, self.name)
        await self.settled()
        return result, linked

    async def _call_on(
        self,
        conn: Connection,
        tool: str,
        arguments: dict[str, Any],
        timeout_s: float,
        report: ProgressFn | None,
    ) -> mt.CallToolResult:
        self._inflight += 1
        try:
            return await call_tool(conn, self.name, tool, arguments, timeout_s, report)
        finally:
            self._inflight -= 1

    async def _renewed(
        self, old: Connection, tool: str, lost: HttpFailure, deadline: float
    ) -> Connection:
        """The connection that replaces ``old``, whose session the server lost (its
        supervisor initializes a new one and lists the tools again, issue 39 item 6).

        Raises:
            NodeError: Not connected again before ``deadline`` (monotonic seconds), or
                stopped meanwhile; the message names the server's HTTP answer.
        """
        why = f"MCP server {self.name} lost its session during the call to {tool} ({lost})"
        up = asyncio.ensure_future(self._up.wait())
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(old.lost.wait(), deadline - time.monotonic())
            await asyncio.wait(
                {up, stop},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            up.cancel()
            stop.cancel()
        conn = self._conn
        if conn is None or conn is old:
            state = (
                "it was stopped"
                if self.stopping
                else f"not connected again in time ({self.detail})"
            )
            raise NodeError(f"{why}; {state}")
        return conn

    # ------------------------------------------------------------------ supervision
    def _status(self, state: LinkState, detail: str = "", **extra: Any) -> None:
        self.state = state
        self.detail = detail = self._mask.text(detail)  # its stderr, an error quoting a URL
        status = LinkStatus(self.name, self.transport, state, detail, self.restarts, **extra)
        try:
            self.on_status(status)
        except Exception:  # a listener must not stop supervision
            log.exception("MCP status listener failed")

    def _publish(self, tools: list[mt.Tool]) -> None:
        self.tools = tools
        try:
            self.on_tools(self, tools)
        except Exception:
            log.exception("MCP tool listener failed for %s", self.name)

    async def _supervise(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._status(LinkState.CONNECTING, f"connecting ({self._describe()})")
            began = time.monotonic()
            try:
                reason = await self._attempt()
            finally:
                self._first_attempt.set()
            if self._stopping.is_set():
                break
            if time.monotonic() - began >= HEALTHY_AFTER_S:
                failures = 0
            delay = min(self.backoff_max_s, self.backoff_base_s * 2**failures)
            if self._renew and not failures:  # a lost session: the server is up, renew now
                delay = 0.0
            failures += 1
            self.restarts += 1
            note = self._mask.text(f"MCP server {self.name} dropped: {reason}{self._stderr_note()}")
            log.info("%s; reconnecting in %g s", note, delay)  # the status event says it
            self._status(LinkState.RESTARTING, note, delay_s=delay)
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(self._stopping.wait(), delay)
        self._status(LinkState.STOPPED, "stopped")

    async def _attempt(self) -> str:
        """One connection in a task of its own; why it ended (stop: "stopped").

        The SDK's streamable HTTP transport fails by cancelling its task group, and so the
        task that entered it (a refused POST, a server gone during a ping): that task is
        this one's child, so supervision goes on and reconnects (issue 39 item 6).
        """
        self._ending = ""
        self._renew = False
        attempt = asyncio.ensure_future(self._connect_once())
        try:
            await asyncio.wait({attempt})
        except asyncio.CancelledError:  # stop() while starting: unwind where it was entered
            attempt.cancel()
            await asyncio.wait({attempt}, timeout=CLOSE_TIMEOUT_S)
            raise
        if attempt.cancelled():
            return self._ending or "its connection failed (the MCP SDK cancelled it)"
        exc = attempt.exception()
        if exc is not None:  # every failure is a reason to reconnect, never a crash
            return self._ending or one_line(exc)
        return attempt.result()

    async def _connect_once(self) -> str:
        """One connection, from spawn to close; returns why it ended (stop: "stopped")."""
        eof = asyncio.Event()
        http = HttpWatch() if self.cfg.url is not None else None
        self._garbage = 0
        async with AsyncExitStack() as stack:
            try:
                async with timeout_after(self.cfg.connect_timeout_s):
                    client = Client(
                        self._transport(eof, stack, http),
                        mode=self.mode,
                        message_handler=self._on_message,
                        client_info=mt.Implementation(name="loopact", version=__version__),
                        cache=None,
                    )
                    await stack.enter_async_context(client)
                    listener = await open_listener(
                        client,
                        server=self.name,
                        on_change=self.request_refresh,
                        listed=lambda: self._conn is not None,
                        ack_timeout_s=self.ping_timeout_s,
                    )
                    if listener is not None:  # closed before the session it listens on
                        stack.push_async_callback(stop_listener, listener)
                    tools = await list_tools(client)
            except (TimeoutError, asyncio.TimeoutError):
                return self._not_ready(eof)
            resources = client.server_capabilities.resources is not None
            conn = Connection(client, resources=resources, http=http)
            self._conn = conn
            self._up.set()
            self._listed.set()
            self._publish(tools)
            self._status(
                LinkState.CONNECTED,
                f"connected, {len(tools)} tools",
                protocol=client.protocol_version,
            )
            self._first_attempt.set()
            try:
                conn.reason = await self._serve(conn, eof)
            finally:
                conn.reason = conn.reason or "the connection failed"
                self._ending = self.last_loss = conn.reason
                self._conn = None
                self._up.clear()
                conn.lost.set()
                self._listed.set()
                self._publish([])
                closing = await _close(stack)
                if closing and conn.reason == "the connection failed":
                    self._ending = self.last_loss = f"its connection failed ({closing})"
            return self._ending

    def _not_ready(self, eof: asyncio.Event) -> str:
        if eof.is_set():
            return "the server exited or closed its output during start-up"
        what = "start and answer initialize and tools/list"
        return f"did not {what} within {self.cfg.connect_timeout_s:g} s"

    async def _serve(self, conn: Connection, eof: asyncio.Event) -> str:
        """Wait for a stop, the end of the connection, a lost session, a refresh or the
        next ping."""
        client = conn.client
        stop = asyncio.ensure_future(self._stopping.wait())
        ended = asyncio.ensure_future(eof.wait())
        gone = asyncio.ensure_future(conn.http.session_gone.wait() if conn.http else eof.wait())
        try:
            while True:
                refresh = asyncio.ensure_future(self._refresh.wait())
                done, _ = await asyncio.wait(
                    {stop, ended, gone, refresh},
                    timeout=self.ping_interval_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                refresh.cancel()
                if stop in done:
                    return "stopped"
                if conn.http is not None and conn.http.lost is not None:
                    return self._session_lost(conn.http.lost)
                if ended in done:
                    return "the server closed the connection (it exited or crashed)"
                if refresh in done:
                    self._refresh.clear()
                    try:
                        async with timeout_after(LIST_TIMEOUT_S):
                            tools = await list_tools(client)
                    except (TimeoutError, asyncio.TimeoutError):
                        return f"tools/list did not answer within {LIST_TIMEOUT_S:g} s"
                    self._publish(tools)
                    self._listed.set()
                    continue
                busy = self._inflight
                try:
                    async with timeout_after(self.ping_timeout_s):
                        await probe(client)
                except (TimeoutError, asyncio.TimeoutError):
                    if busy or self._inflight:
                        continue  # a large result may be on its way; the call has its timeout
                    return f"it did not answer a ping within {self.ping_timeout_s:g} s (hung)"
                except MCPError as exc:
                    # before the code: -32000 is also the TypeScript SDK's "no valid session"
                    if conn.http is not None and conn.http.lost is not None:
                        return self._session_lost(conn.http.lost)
                    if exc.code == mt.CONNECTION_CLOSED:
                        return "the connection closed (the server exited or crashed)"
                    # any other JSON-RPC error is an answer: the server is alive
                except Exception as exc:
                    return f"its connection failed ({one_line(exc)})"
        finally:
            stop.cancel()
            ended.cancel()
            gone.cancel()

    def _session_lost(self, answer: HttpFailure) -> str:
        """Why a connection ends whose session the server no longer knows (it restarted):
        reconnect at once (issue 39 item 6)."""
        self._renew = True
        return f"its session was lost: it answered {answer} (a restarted server); renewing it"

    async def _on_message(self, message: Any) -> None:
        """``notifications/tools/list_changed`` of a 2025-era server re-reads the list."""
        if is_list_changed(message):
            self.request_refresh()
        elif isinstance(message, Exception):
            log.debug("MCP server %s: %r", self.name, message)

    # ------------------------------------------------------------------ transports
    def _transport(self, eof: asyncio.Event, stack: AsyncExitStack, http: HttpWatch | None) -> Any:
        errlog = None
        if self.cfg.command is not None and self.log_path is not None:
            errlog = open_log(self.log_path, stack, self._describe())
        return watched_transport(self.cfg, eof, self.note_garbage, errlog, http)

    def _describe(self) -> str:
        """The server as events may show it: no credentials (issue 39 item 14)."""
        return shown_server(self.cfg)[:200]

    def _stderr_note(self) -> str:
        parts = []
        if self._garbage:
            parts.append(
                f"; it printed {self._garbage} line(s) on stdout that are not JSON-RPC "
                f"(first: {self._garbage_first})"
            )
        if self.log_path is not None and self.cfg.command is not None:
            last = tail(self.log_path)
            if last:
                parts.append(f"; its stderr ends with: {last}")
            parts.append(f" (log {self.log_path})")
        return "".join(parts)


async def _close(stack: AsyncExitStack) -> str:
    """Close a connection (bounded by :data:`CLOSE_TIMEOUT_S`); the transport's failure that
    surfaced while closing, in one line ("" if none): the SDK's task group raises it here."""
    try:
        async with timeout_after(CLOSE_TIMEOUT_S):
            await stack.aclose()
    except (TimeoutError, asyncio.TimeoutError):
        return ""
    except Exception as exc:
        return one_line(exc)
    return ""
