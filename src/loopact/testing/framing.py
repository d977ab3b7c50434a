"""HTTP framing of the scripted model server (SPEC X2): request bodies in, plans out.

A request body comes with ``Content-Length`` or chunked encoding (at most 64 MiB). A
:class:`~loopact.testing.protocol.ResponsePlan` goes out as one body or as a chunked stream,
one HTTP chunk per stream event; a deliberate cut closes the connection without the
terminating chunk, so the client sees a transport error, never a normal end.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler as _Handler

from loopact.testing.protocol import ResponsePlan

logger = logging.getLogger(__name__)

_MAX_BODY_BYTES = 64 * 1024 * 1024


def read_body(handler: _Handler) -> bytes:
    """Read a request body sent with Content-Length or chunked encoding.

    Raises:
        ValueError: The framing is malformed or the body is too large.
    """
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        parts: list[bytes] = []
        total = 0
        while True:
            line = handler.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise ValueError(f"bad chunk size line {line[:40]!r}") from exc
            if size == 0:
                while handler.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            total += size
            if total > _MAX_BODY_BYTES:
                raise ValueError("request body too large")
            parts.append(handler.rfile.read(size))
            handler.rfile.readline(1024)
    length_text = handler.headers.get("Content-Length", "0") or "0"
    try:
        length = int(length_text)
    except ValueError as exc:
        raise ValueError(f"bad Content-Length {length_text!r}") from exc
    if length < 0 or length > _MAX_BODY_BYTES:
        raise ValueError(f"bad Content-Length {length}")
    return handler.rfile.read(length) if length else b""


def write_plan(handler: _Handler, plan: ResponsePlan, stopping: threading.Event) -> None:
    """Send ``plan``; a client that went away is not an error of the server."""
    try:
        if plan.delay_s and stopping.wait(plan.delay_s):
            handler.close_connection = True
            return
        handler.send_response(plan.status)
        handler.send_header("Content-Type", plan.content_type)
        for name, value in plan.headers.items():
            handler.send_header(name, value)
        if plan.chunks is None:
            _write_body(handler, plan)
        else:
            _write_chunks(handler, plan, stopping)
    except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as exc:
        logger.debug("scripted server: client went away: %s", exc)
        handler.close_connection = True


def _write_body(handler: _Handler, plan: ResponsePlan) -> None:
    handler.send_header("Content-Length", str(len(plan.body)))
    if plan.cut_after_chunks is not None:
        handler.send_header("Connection", "close")
    handler.end_headers()
    if plan.cut_after_chunks is not None:
        handler.wfile.flush()
        _cut(handler)
        return
    for piece in _split(plan.body, plan.write_size):
        handler.wfile.write(piece)
        handler.wfile.flush()


def _write_chunks(handler: _Handler, plan: ResponsePlan, stopping: threading.Event) -> None:
    assert plan.chunks is not None
    handler.send_header("Transfer-Encoding", "chunked")
    handler.send_header("Cache-Control", "no-cache")
    if plan.cut_after_chunks is not None:
        handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.flush()
    for sent, chunk in enumerate(plan.chunks):
        if plan.cut_after_chunks is not None and sent >= plan.cut_after_chunks:
            break
        if sent and plan.chunk_delay_s and stopping.wait(plan.chunk_delay_s):
            _cut(handler)
            return
        for piece in _split(chunk, plan.write_size):
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            handler.wfile.flush()
    if plan.cut_after_chunks is not None:
        _cut(handler)
        return
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _split(data: bytes, size: int | None) -> list[bytes]:
    """``data`` in pieces of at most ``size`` bytes (one piece when ``size`` is None)."""
    if not data:
        return []
    if size is None:
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


def _cut(handler: _Handler) -> None:
    """Close the connection abruptly: no terminating chunk, no complete body."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.wfile.flush()
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
