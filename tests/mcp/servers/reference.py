"""An MCP server written with the official SDK that behaves like the reference servers
(issue 39): run as a process by the tests.

Usage: ``python reference.py [--marker-dir DIR] [--http PORT] [--ts-sessions]``.

It speaks the 2025-era ``initialize`` handshake only, as the reference servers (TypeScript
SDK) do. Tools, each shaped like what a reference server sends:

- ``read_media_file()``: the filesystem server's: one image block and a ``structuredContent``
  that echoes it, base64 and all (``{"content": [{"type": "image", "data": ...}]}``).
- ``get_tiny_image()``: the "everything" server's: text, a tiny PNG whose only fault is a bad
  CRC in an ancillary chunk (libpng and OpenCV decode it), text.
- ``lookup(id)``: fails with ``isError`` and no content at all: the reason is only in
  ``structuredContent``.
- ``fetch_doc``, ``search``, ``move_file``: input schemas with a top-level ``oneOf``,
  ``anyOf`` and ``allOf`` (valid JSON Schema, common in servers); ``odd_shape``: a top-level
  ``oneOf`` whose branches are not objects.
- ``long_job()``: ``execution.taskSupport: "required"``; a call without a task is refused
  with -32601, as task-only servers answer.
- ``now()``: the server's start time and a call counter (to tell a restarted server apart).

``--ts-sessions`` (with ``--http``): session handling as servers built on the TypeScript SDK
do it: a request with an unknown (stale) ``Mcp-Session-Id``, or a non-initialize request
without one, is answered HTTP 400 ``{"jsonrpc": "2.0", "error": {"code": -32000, "message":
"Bad Request: No valid session ID provided"}, "id": null}`` (the MCP spec says 404). SIGHUP
then forgets every session, as a restart does, without the port being closed in between.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import signal
import struct
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--marker-dir", type=Path, default=None)
ARGS.add_argument("--http", type=int, default=None)
ARGS.add_argument("--ts-sessions", action="store_true")
OPTS = ARGS.parse_args()

STARTED = time.time()
CALLS = {"n": 0}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
TS_STALE = {
    "jsonrpc": "2.0",
    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
    "id": None,
}


def media_png() -> bytes:
    """A 64x64 PNG of noise: about 12 KB, 16 k characters of base64 (as a photo would be)."""
    from PIL import Image

    img = Image.frombytes("RGB", (64, 64), os.urandom(64 * 64 * 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def tiny_png_with_bad_ancillary_crc() -> bytes:
    """A 16x16 PNG with a ``tEXt`` chunk whose CRC is wrong: only an ancillary chunk is bad."""
    from PIL import Image

    img = Image.new("RGB", (16, 16), (30, 120, 220))
    for i in range(16):
        img.putpixel((i, i), (255, 255, 255))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    png = buf.getvalue()
    ihdr_end = 8 + 4 + 4 + 13 + 4
    text = b"tEXt" + b"Comment\x00MCP tiny image"
    bad_crc = struct.pack(">I", (zlib.crc32(text) ^ 0xFFFF) & 0xFFFFFFFF)
    chunk = struct.pack(">I", len(text) - 4) + text + bad_crc
    return png[:ihdr_end] + chunk + png[ihdr_end:]


TINY = tiny_png_with_bad_ancillary_crc()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _tools() -> list[mt.Tool]:
    path_or_url = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A file path"},
            "url": {"type": "string", "description": "A web address"},
        },
        "oneOf": [{"required": ["path"]}, {"required": ["url"]}],
    }
    by_name_or_tag = {
        "type": "object",
        "anyOf": [
            {"properties": {"name": {"type": "string"}}, "required": ["name"]},
            {"properties": {"tag": {"type": "string"}}, "required": ["tag"]},
        ],
    }
    src_and_dst = {
        "type": "object",
        "properties": {"overwrite": {"type": "boolean"}},
        "allOf": [
            {"properties": {"src": {"type": "string"}}, "required": ["src"]},
            {"properties": {"dst": {"type": "string"}}, "required": ["dst"]},
        ],
    }
    odd = {"type": "object", "oneOf": [{"type": "array"}, {"type": "string"}]}
    return [
        mt.Tool(name="read_media_file", description="Read an image file.", input_schema=EMPTY),
        mt.Tool(name="get_tiny_image", description="The MCP tiny image.", input_schema=EMPTY),
        mt.Tool(
            name="lookup",
            description="Look a record up.",
            input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        ),
        mt.Tool(name="fetch_doc", description="Fetch a document.", input_schema=path_or_url),
        mt.Tool(name="search", description="Search records.", input_schema=by_name_or_tag),
        mt.Tool(name="move_file", description="Move a file.", input_schema=src_and_dst),
        mt.Tool(name="odd_shape", description="An odd schema.", input_schema=odd),
        mt.Tool(
            name="long_job",
            description="A job that runs as an MCP task.",
            input_schema=EMPTY,
            execution=mt.ToolExecution(task_support="required"),
        ),
        mt.Tool(name="now", description="The server's start time.", input_schema=EMPTY),
    ]


def _text(text: str) -> mt.TextContent:
    return mt.TextContent(type="text", text=text)


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=_tools())


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    name, args = params.name, params.arguments or {}
    CALLS["n"] += 1
    if name == "read_media_file":
        data = _b64(media_png())
        block = {"type": "image", "data": data, "mimeType": "image/png"}
        return mt.CallToolResult(
            content=[mt.ImageContent(type="image", data=data, mime_type="image/png")],
            structured_content={"content": [block]},
        )
    if name == "get_tiny_image":
        return mt.CallToolResult(
            content=[
                _text("This is a tiny image:"),
                mt.ImageContent(type="image", data=_b64(TINY), mime_type="image/png"),
                _text("The image above is the MCP tiny image."),
            ]
        )
    if name == "lookup":
        detail = {
            "error": {"code": "NOT_FOUND", "message": f"no record with id {args.get('id')}"},
            "known_ids": [1, 2, 3],
        }
        return mt.CallToolResult(content=[], structured_content=detail, is_error=True)
    if name in ("fetch_doc", "search", "move_file"):
        return mt.CallToolResult(content=[_text(f"{name} {json.dumps(args, sort_keys=True)}")])
    if name == "long_job":
        raise MCPError(-32601, "Tool long_job requires task augmentation (taskSupport: required)")
    if name == "now":
        return mt.CallToolResult(content=[_text(f"started {STARTED:.6f}, call {CALLS['n']}")])
    return mt.CallToolResult(content=[_text(f"unknown tool {name}")], is_error=True)


SERVER = Server("reference", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def _ts_sessions(app: Any) -> Any:
    """``app`` with the TypeScript SDK's session handling (see the module docstring)."""
    known: set[bytes] = set()
    signal.signal(signal.SIGHUP, lambda *_: known.clear())  # a restart in place

    async def answer(send: Any, status: int, body: bytes, kind: bytes) -> None:
        headers = [(b"content-type", kind)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        session = dict(scope.get("headers") or []).get(b"mcp-session-id")
        chunks = []
        more = True
        while more:  # read the body to see whether it is an initialize request
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        opening = False
        if scope["method"] == "POST" and session is None:
            try:
                opening = json.loads(raw).get("method") == "initialize"
            except (ValueError, AttributeError):
                opening = False
        if (session is None and not opening) or (session is not None and session not in known):
            sys.stderr.write(f"reference: no valid session ID ({session!r})\n")
            if scope["method"] == "POST":
                await answer(send, 400, json.dumps(TS_STALE).encode(), b"application/json")
            else:
                await answer(send, 400, b"Invalid or missing session ID", b"text/plain")
            return

        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:  # after the body: the client's disconnect, when it comes
                return dict(await receive())
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def noting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                issued = dict(message.get("headers") or []).get(b"mcp-session-id")
                if issued:
                    known.add(issued)
            await send(message)

        await app(scope, replay, noting)

    return guarded


async def main() -> None:
    if OPTS.marker_dir is not None:
        (OPTS.marker_dir / "pid").write_text(str(os.getpid()))
    options = SERVER.create_initialization_options(NotificationOptions())
    if OPTS.http is not None:
        import uvicorn

        app = SERVER.streamable_http_app()
        if OPTS.ts_sessions:
            app = _ts_sessions(app)
        config = uvicorn.Config(app, host="127.0.0.1", port=OPTS.http, log_level="warning")
        await uvicorn.Server(config).serve()
        return
    async with stdio_server() as (read, write), SERVER.lifespan(SERVER) as state:
        # the handshake era only
        await serve_loop(SERVER, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    anyio.run(main)
