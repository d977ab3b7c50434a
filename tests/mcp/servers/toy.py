"""A small MCP server written with the official SDK, run as a process by the tests (issue 18).

Usage: ``python toy.py [--marker-dir DIR] [--http PORT] [--signals WHICH] [--legacy]
[--require-header "Name: value"]``.

- ``--signals``: how a tool-list change is announced (hot-plug, issue 18): ``list_changed``
  (``notifications/tools/list_changed``, what 2025-era servers send), ``listen`` (an event on
  the 2026-era ``subscriptions/listen`` stream only; the server has no other way to say it),
  or ``both`` (the default).
- ``--legacy`` (stdio): serve the ``initialize`` handshake era only, as servers written before
  the 2026 protocol do: ``server/discover`` is refused, a client in ``auto`` mode falls back
  to the handshake (protocol 2025-11-25), and there is no ``subscriptions/listen``.
- ``--listen-ack-delay SECONDS``: acknowledge a ``subscriptions/listen`` only after that long.
- ``--require-header``: over HTTP, answer 401 to every request without that exact header.

Tools:

- ``echo(text)``: returns ``text``; announced read-only. Its first call adds ``shout`` and
  announces the change (``--signals``) before answering (hot-plug).
- ``shout(text)``: added at run time; returns ``text`` in capitals.
- ``picture()``: a PNG image, an embedded text resource, a binary resource, audio and a
  resource link (to ``note://hello``, readable).
- ``wait_here(seconds)``: writes ``waiting`` into the marker dir, sleeps; writes ``cancelled``
  there when cancelled.
- ``huge()``: a 20 MB text result.
- ``delete_all()``: destructive; ``bad_schema``: a tool whose inputSchema is not JSON Schema;
  ``bad_ref``: one whose ``$ref`` points to another document; ``bloated``: one whose schema
  is 32,024 characters of JSON.
- ``crash()``: the process exits at once (os._exit(3)) mid-call.
- ``hang()``: the process stops answering anything (blocks its event loop).
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--marker-dir", type=Path, default=None)
ARGS.add_argument("--http", type=int, default=None)
ARGS.add_argument("--signals", choices=["both", "list_changed", "listen"], default="both")
ARGS.add_argument("--legacy", action="store_true")
ARGS.add_argument("--listen-ack-delay", type=float, default=0.0)
ARGS.add_argument("--require-header", default=None)
OPTS = ARGS.parse_args()

BUS = InMemorySubscriptionBus()
STATE: dict[str, Any] = {"grown": False}

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
SPAN = range(300)


def _tools() -> list[mt.Tool]:
    ro = mt.ToolAnnotations(read_only_hint=True)
    tools = [
        mt.Tool(name="echo", description="Echo the text back.", input_schema=TEXT, annotations=ro),
        mt.Tool(name="picture", description="A picture and resources.", input_schema=EMPTY),
        mt.Tool(
            name="wait_here",
            description="Wait a number of seconds.",
            input_schema={
                "type": "object",
                "properties": {"seconds": {"type": "number"}},
                "required": ["seconds"],
            },
            annotations=ro,
        ),
        mt.Tool(name="huge", description="A 20 MB result.", input_schema=EMPTY, annotations=ro),
        mt.Tool(
            name="delete_all",
            description="Delete everything.",
            input_schema=EMPTY,
            annotations=mt.ToolAnnotations(destructive_hint=True),
        ),
        mt.Tool(
            name="bad_schema",
            description="Its schema is not JSON Schema.",
            input_schema={"type": "object", "properties": {"x": {"type": 12}}},
        ),
        mt.Tool(
            name="bad_ref",
            description="Its schema refers to a schema elsewhere.",
            input_schema={
                "type": "object",
                "properties": {"p": {"$ref": "https://example.com/point.json"}},
            },
        ),
        mt.Tool(
            name="bloated",
            description="A schema larger than any model request should carry.",
            input_schema={
                "type": "object",
                "properties": {f"p{i}": {"type": "string", "description": "x" * 60} for i in SPAN},
            },
        ),
        mt.Tool(name="crash", description="Exit at once.", input_schema=EMPTY),
        mt.Tool(name="hang", description="Stop answering.", input_schema=EMPTY),
    ]
    if STATE["grown"]:
        tools.append(mt.Tool(name="shout", description="Shout the text.", input_schema=TEXT))
    return tools


def _text(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])


def _png() -> str:
    from PIL import Image

    buf = io.BytesIO()
    img = Image.new("RGB", (64, 48), (200, 30, 30))
    for x in range(0, 64, 8):
        for y in range(48):
            img.putpixel((x, y), (255, 255, 255))
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=_tools())


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        if not STATE["grown"]:
            STATE["grown"] = True
            if OPTS.signals in ("both", "list_changed"):
                try:
                    await ctx.session.send_tool_list_changed()
                except Exception:  # no channel for it on this protocol: only listen tells
                    pass
            if OPTS.signals in ("both", "listen"):
                await BUS.publish(ToolsListChanged())
        return _text(str(args.get("text", "")))
    if name == "shout":
        return _text(str(args.get("text", "")).upper())
    if name == "picture":
        return mt.CallToolResult(
            content=[
                mt.TextContent(type="text", text="a red square with white stripes"),
                mt.ImageContent(type="image", data=_png(), mime_type="image/png"),
                mt.EmbeddedResource(
                    type="resource",
                    resource=mt.TextResourceContents(
                        uri="note://inline", mime_type="text/plain", text="inline note text"
                    ),
                ),
                mt.EmbeddedResource(
                    type="resource",
                    resource=mt.BlobResourceContents(
                        uri="file://blob.bin",
                        mime_type="application/octet-stream",
                        blob=base64.b64encode(b"\x00" * 300).decode(),
                    ),
                ),
                mt.AudioContent(
                    type="audio",
                    data=base64.b64encode(b"RIFF" * 10).decode(),
                    mime_type="audio/wav",
                ),
                mt.ResourceLink(type="resource_link", uri="note://hello", name="hello note"),
            ]
        )
    if name == "wait_here":
        if OPTS.marker_dir is not None:
            (OPTS.marker_dir / "waiting").write_text("waiting")
        try:
            await anyio.sleep(float(args.get("seconds", 1)))
        except anyio.get_cancelled_exc_class():
            if OPTS.marker_dir is not None:
                (OPTS.marker_dir / "cancelled").write_text("cancelled")
            raise
        return _text("waited")
    if name == "huge":
        return _text("x" * 20_000_000)
    if name == "delete_all":
        return _text("deleted (not really)")
    if name == "crash":
        sys.stderr.write("toy: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "hang":
        sys.stderr.write("toy: hanging on purpose\n")
        sys.stderr.flush()
        time.sleep(3600)  # blocks the event loop: nothing is answered any more
    return mt.CallToolResult(content=[mt.TextContent(type="text", text="unknown")], is_error=True)


async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
    return mt.ListResourcesResult(resources=[mt.Resource(uri="note://hello", name="hello note")])


async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
    return mt.ReadResourceResult(
        contents=[mt.TextResourceContents(uri=str(params.uri), text="hello from the linked note")]
    )


LISTEN = ListenHandler(BUS)


async def _listen(ctx: Any, params: Any) -> Any:
    await anyio.sleep(OPTS.listen_ack_delay)  # a slow server: its ack comes late
    return await LISTEN(ctx, params)


SERVER = Server(
    "toy",
    version="1.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_subscriptions_listen=_listen,
)


def _guarded(app: Any, header: str) -> Any:
    """``app`` behind a check: a request without the exact ``Name: value`` header gets 401."""
    name, _, value = header.partition(":")
    want = (name.strip().lower().encode(), value.strip().encode())

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and want not in list(scope.get("headers") or []):
            sys.stderr.write(f"toy: refused a request without {name.strip()}\n")
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong header"})
            return
        await app(scope, receive, send)

    return guarded


async def main() -> None:
    if OPTS.marker_dir is not None:
        (OPTS.marker_dir / "pid").write_text(str(os.getpid()))
    options = SERVER.create_initialization_options(NotificationOptions(tools_changed=True))
    if OPTS.http is not None:
        import uvicorn

        app = SERVER.streamable_http_app()
        if OPTS.require_header is not None:
            app = _guarded(app, OPTS.require_header)
        config = uvicorn.Config(app, host="127.0.0.1", port=OPTS.http, log_level="warning")
        await uvicorn.Server(config).serve()
        return
    async with stdio_server() as (read, write):
        if not OPTS.legacy:
            await SERVER.run(read, write, options)
            return
        async with SERVER.lifespan(SERVER) as state:  # the handshake era only
            await serve_loop(SERVER, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    anyio.run(main)
