"""An HTTP model server that replays a script over real wire protocols (SPEC X2).

The server answers one request with one :class:`~loopact.testing.script.Turn`, in order, and
records every request. It runs ``http.server.ThreadingHTTPServer`` in a daemon thread, so it
is independent of any asyncio loop: sync tests, async tests and the CLI use it the same way.

Wire protocols are small plug-ins: a :class:`Protocol` names the paths it serves, says what a
request offers (:meth:`Protocol.summarize`, used by ``expect`` checks) and renders a turn into
a :class:`ResponsePlan` (status, headers, and either a body or a list of stream chunks). The
server writes a streamed plan with ``Transfer-Encoding: chunked``, one HTTP chunk per stream
event, so that a deliberate cut (closing without the terminating zero-length chunk) reaches
the client as an incomplete body, a transport error, never as a normal end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from loopact.errors import ScriptError
from loopact.testing.framing import read_body, write_plan
from loopact.testing.protocol import Protocol, RecordedRequest, RequestSummary, ResponsePlan
from loopact.testing.protocols import default_protocols
from loopact.testing.script import Expect, Script, Turn

__all__ = [
    "Protocol",
    "RecordedRequest",
    "RequestSummary",
    "ResponsePlan",
    "ScriptedModelServer",
    "default_protocols",
    "serve_forever",
]

logger = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    do_GET = do_POST
    do_PUT = do_POST
    do_DELETE = do_POST

    def setup(self) -> None:
        super().setup()
        # Without this, Nagle + delayed ACK add ~40 ms to every response (headers and body
        # are separate writes).
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("scripted server: " + format, *args)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log instead of printing a traceback: clients that hang up mid-response (a cancelled
        or timed-out request) are normal here."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            logger.debug("scripted server: client %s went away: %r", client_address, exc)
            return
        logger.exception("scripted server: error in a request from %s", client_address)


class ScriptedModelServer:
    """Replays a script of turns over real model wire protocols (SPEC X2).

    One turn answers one request, in order; every request is recorded. Thread-safe.

    Example::

        with ScriptedModelServer({"turns": [{"text": "hello"}]}) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="k")
            ...
            server.assert_consumed()

    Args:
        script: A :class:`Script`, a dict ``{"turns": [...]}``, a list of turns, or the path of
            a JSON script file.
        host: Interface to listen on.
        port: TCP port; 0 picks a free one.
        protocols: The protocols to speak; None for :func:`default_protocols`.
        api_key: When set, a request without this key (``Authorization: Bearer KEY`` or
            ``x-api-key: KEY``) is answered 401 in its protocol's error shape, as a hosted
            service refuses a wrong key (``loopact doctor``'s key check, issue 44).

    Raises:
        ScriptError: The script is malformed (the message names the turn and field).
    """

    def __init__(
        self,
        script: Script | dict[str, Any] | list[Any] | str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        protocols: Sequence[Protocol] | None = None,
        api_key: str | None = None,
    ) -> None:
        self.script = Script.load(script)
        self.api_key = api_key
        self._host = host
        self._port = port
        self._routes: dict[str, Protocol] = {}
        for proto in default_protocols() if protocols is None else protocols:
            for path in proto.paths:
                if path in self._routes:
                    raise ScriptError(
                        f"protocols {self._routes[path].name!r} and {proto.name!r} "
                        f"both claim path {path}"
                    )
                self._routes[path] = proto
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[str] = []
        self._next_turn = 0
        self._lane_next: dict[str, int] = {}
        self._turn_requests = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        """Bind the port and serve in a daemon thread. Returns ``self``.

        Raises:
            ScriptError: Already started.
            OSError: The port cannot be bound.
        """
        if self._httpd is not None:
            raise ScriptError("scripted model server already started")
        self._stopping.clear()
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-model-server:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        logger.debug("scripted model server listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections. Safe to call twice."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._connections)
            self._connections.clear()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedModelServer:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)

    def load(self, script: Script | dict[str, Any] | list[Any] | str | Path) -> None:
        """Replace the script on a running server and start it from its first turn.

        The requests, failures and turn positions recorded so far are forgotten, so one
        server can serve many short scripted runs one after the other (the reliability
        suite's 1,000 adversarial runs, issue 20) without a new port and thread for each.
        A request still being answered finishes with the turn it already had.

        Raises:
            ScriptError: The script is malformed (the server keeps its old script).
        """
        new = Script.load(script)
        with self._lock:
            self.script = new
            self._requests = []
            self._failures = []
            self._next_turn = 0
            self._lane_next = {}
            self._turn_requests = 0

    # ---- observation -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            ScriptError: The server is not started.
        """
        if self._httpd is None:
            raise ScriptError("scripted model server is not started: call start() first")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT``, for SDKs that add ``/v1`` themselves (Anthropic)."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, the base URL to give an OpenAI-compatible SDK client."""
        return self.root_url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """How many turns have not been consumed yet."""
        with self._lock:
            return len(self.script.turns) - self._next_turn

    @property
    def failures(self) -> list[str]:
        """Failures recorded so far (exhausted script, ``expect`` mismatches, unknown paths)."""
        with self._lock:
            return list(self._failures)

    def assert_consumed(self) -> None:
        """Check that the script was used exactly as written.

        Raises:
            ScriptError: Turns remain unconsumed, a request came after the last turn, a request
                went to a path no protocol serves, or an ``expect`` check failed. The message
                lists every problem, naming the turn (1-based).
        """
        with self._lock:
            problems = list(self._failures)
            for lane, turns in self.script.lanes.items():
                unused = len(turns) - self._lane_next.get(lane, 0)
                if unused > 0:
                    problems.append(f"{unused} of {len(turns)} turns of lane {lane!r} not consumed")
            left = len(self.script.turns) - self._next_turn
            if left:
                problems.append(
                    f"{left} of {len(self.script.turns)} turns not consumed "
                    f"(next unconsumed: turn {self._next_turn + 1})"
                )
        if problems:
            raise ScriptError("scripted model server: " + "; ".join(problems))

    # ---- request handling (server threads) -------------------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _handle(self, handler: _Handler) -> None:
        try:
            raw = read_body(handler)
        except ValueError as exc:
            handler.close_connection = True
            write_plan(handler, _plain_error(400, str(exc)), self._stopping)
            return
        path, _, query = handler.path.partition("?")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        proto = self._routes.get(path)
        with self._lock:
            request = RecordedRequest(
                index=len(self._requests),
                method=handler.command,
                path=path,
                headers=headers,
                body=_parse_body(raw),
                raw_body=raw,
                ts=time.time(),
                query=query,
                client_port=int(handler.client_address[1]),
            )
            turn: Turn | None = None
            plan: ResponsePlan | None = None
            if proto is not None and not self._key_given(headers):
                plan = proto.render_error(401, "invalid api key (scripted model server)", request)
            elif proto is None:
                self._failures.append(
                    f"request {request.index + 1}: no protocol serves {handler.command} {path}"
                )
                plan = _plain_error(404, f"scripted model server: no protocol serves {path}")
            elif proto.lane is not None:
                request, turn, plan = self._lane_turn(proto, request)
            elif proto.consumes_turn(request):
                self._turn_requests += 1
                if self._next_turn >= len(self.script.turns):
                    msg = (
                        f"scripted model server: script exhausted after "
                        f"{len(self.script.turns)} turns (request {self._turn_requests})"
                    )
                    self._failures.append(msg)
                    plan = proto.render_error(500, msg, request)
                else:
                    request = dataclasses.replace(request, turn_index=self._next_turn)
                    turn = self.script.turns[self._next_turn]
                    self._next_turn += 1
            self._requests.append(request)
        if plan is None and proto is not None:
            plan = self._render(proto, turn, request)
        assert plan is not None
        write_plan(handler, plan, self._stopping)

    def _key_given(self, headers: dict[str, str]) -> bool:
        """True without :attr:`api_key`, or when the request carries it."""
        if self.api_key is None:
            return True
        given = {headers.get("authorization", ""), f"Bearer {headers.get('x-api-key', '')}"}
        return f"Bearer {self.api_key}" in given

    def _lane_turn(
        self, proto: Protocol, request: RecordedRequest
    ) -> tuple[RecordedRequest, Turn | None, ResponsePlan | None]:
        """The next turn of the protocol's lane (call with the lock held)."""
        assert proto.lane is not None
        lane = self.script.lanes.get(proto.lane)
        if lane is None:
            return request, None, None
        i = self._lane_next.get(proto.lane, 0)
        if i >= len(lane):
            msg = f"scripted model server: lane {proto.lane!r} exhausted after {len(lane)} turns"
            self._failures.append(msg)
            return request, None, proto.render_error(500, msg, request)
        self._lane_next[proto.lane] = i + 1
        return dataclasses.replace(request, turn_index=i), lane[i], None

    def _render(self, proto: Protocol, turn: Turn | None, request: RecordedRequest) -> ResponsePlan:
        try:
            if turn is None:
                return proto.render_static(request)
            if turn.expect is not None:
                self._check_expect(proto, turn.expect, request)
            refusal = proto.reject(request)
            if refusal is not None:
                return proto.render_error(400, refusal, request)
            plan = _shape(turn, self._render_turn(proto, turn, request))
        except Exception as exc:  # a bug in a protocol or a malformed request body
            logger.debug("scripted server: cannot render request %d", request.index, exc_info=True)
            with self._lock:
                self._failures.append(
                    f"request {request.index + 1} to {request.path}: cannot answer: {exc}"
                )
            return proto.render_error(400, f"scripted model server: {exc}", request)
        return plan

    def _render_turn(self, proto: Protocol, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        error = turn.error
        if error is not None and error.body is not None:
            plan = proto.render_error(error.status, error.message, request, turn)
            return dataclasses.replace(
                plan,
                content_type=error.content_type or "text/html; charset=utf-8",
                body=error.body.encode(),
            )
        if error is not None:
            return proto.render_error(error.status, error.message, request, turn)
        wire = turn.wire_chunks()
        if wire is not None:
            streamed = proto.summarize(request).stream
            return ResponsePlan(
                content_type="text/event-stream" if streamed else "application/json",
                chunks=wire,
                delay_s=turn.delay_s,
                chunk_delay_s=turn.chunk_delay_s,
                cut_after_chunks=turn.cut_after_chunks,
            )
        return proto.render(turn, request)

    def _check_expect(self, proto: Protocol, expect: Expect, request: RecordedRequest) -> None:
        summary = proto.summarize(request)
        turn_no = (request.turn_index or 0) + 1
        diffs: list[str] = []
        offered = set(summary.tool_names)
        if expect.tools is not None:
            missing = [name for name in expect.tools if name not in offered]
            if missing:
                diffs.append(f"tools {missing} not offered (offered: {sorted(offered) or 'none'})")
        if expect.no_tools and offered:
            diffs.append(f"expected no tools, got {sorted(offered)}")
        if (
            expect.last_user_contains is not None
            and expect.last_user_contains not in summary.last_user_text
        ):
            diffs.append(
                f"last user message does not contain {expect.last_user_contains!r} "
                f"(it is {_clip(summary.last_user_text)!r})"
            )
        if expect.contains is not None and expect.contains not in summary.all_text:
            diffs.append(f"no message contains {expect.contains!r}")
        if expect.stream is not None and expect.stream != summary.stream:
            diffs.append(f"expected stream={expect.stream}, got stream={summary.stream}")
        if expect.audio is not None and expect.audio != bool(summary.last_user_audio):
            diffs.append(
                f"expected audio={expect.audio}, the last user message has "
                f"{summary.last_user_audio} audio part(s)"
            )
        if diffs:
            with self._lock:
                self._failures.append(
                    f"turn {turn_no} (request {request.index + 1}) expect failed: "
                    + ", ".join(diffs)
                )


def _shape(turn: Turn, plan: ResponsePlan) -> ResponsePlan:
    """Apply the turn's wire-level knobs (``sse``, ``content_type``, ``write_size``)."""
    changes: dict[str, Any] = {}
    if turn.sse is not None and plan.chunks is not None and turn.wire is None:
        changes["chunks"] = turn.sse.apply(list(plan.chunks))
    if turn.content_type is not None:
        changes["content_type"] = turn.content_type
    if turn.write_size is not None:
        changes["write_size"] = turn.write_size
    return dataclasses.replace(plan, **changes) if changes else plan


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain_error(status: int, message: str) -> ResponsePlan:
    body = {"error": {"message": message, "type": "scripted_server_error", "code": status}}
    return ResponsePlan(status=status, body=json.dumps(body).encode())


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw


def _no_op(_signum: int, _frame: object) -> None:
    """SIGINT/SIGTERM handler of :func:`serve_forever`: its wakeup socket does the work."""


def serve_forever(script_path: str, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve a script file until Ctrl-C (the ``loopact scripted-server`` command, SPEC X2).

    Args:
        script_path: Path of a JSON script file.
        host: Interface to listen on.
        port: TCP port (0 picks a free one).

    Raises:
        ScriptError: The script file is missing or malformed.
        OSError: The port cannot be bound.
    """
    # Ctrl-C and SIGTERM both stop it, even when started from a shell that ignores SIGINT
    # for background jobs. The C-level handler writes to a wakeup socket that this thread
    # reads, whichever thread the kernel gave the signal to (asyncio's mechanism). Python
    # handlers that set an Event hung instead: when a native thread took the signal while
    # this thread slept, and when a second signal came inside the first handler's Event.set
    # (a newcomer's audit).
    server = ScriptedModelServer(script_path, host=host, port=port)
    wake_r, wake_w = socket.socketpair()
    wake_w.setblocking(False)
    old_fd = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
    previous = {sig: signal.signal(sig, _no_op) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.start()
        print(
            f"scripted model server: {len(server.script.turns)} turns from {script_path} "
            f"at {server.base_url} (Ctrl-C stops)",
            flush=True,
        )
        wake_r.recv(1)
        # stopped by a signal: the process is ending. A burst's later signals are ignored from
        # here on: restored handlers (and the defaults Python sets at exit for Python-level
        # ones) let a late SIGINT kill the process mid-exit (exit -2, seen in a fresh clone)
        previous = dict.fromkeys(previous, signal.SIG_IGN)
    finally:
        server.stop()  # a burst's later signals still reach the no-op handler
        signal.set_wakeup_fd(old_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        wake_r.close()
        wake_w.close()
    try:
        server.assert_consumed()
    except ScriptError as exc:
        print(str(exc), flush=True)
