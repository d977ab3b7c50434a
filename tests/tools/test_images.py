"""generate_image through the scripted server's OpenAI images protocol: saved into the
workspace, shown in the web console, absent when not configured, every failure a clear
result (issue 19, SPEC C6, X2)."""

from __future__ import annotations

import asyncio
import base64
import io
import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest
from PIL import Image as PILImage
from tests.agent.helpers import call, make_agent
from tests.image_bombs import png_bomb

from loopact.app.general import general_tools
from loopact.channels.web import serve_console
from loopact.config import load_config
from loopact.errors import ToolError
from loopact.tools.base import ToolContext
from loopact.tools.builtin.images import ImageEndpoint, make_image_tool


def _cfg(tmp_path: Path, base_url: str | None) -> Any:
    path = tmp_path / "loopact.yaml"
    images = f"images:\n  base_url: {base_url}\n  model: scripted-image\n" if base_url else ""
    path.write_text(images + "agent:\n  workspace: ws\n", encoding="utf-8")
    cfg, _ = load_config(path, env={"LOOPACT_IMAGES_API_KEY": "sk-img"})
    return cfg


async def test_model_generates_an_image_that_is_saved_and_shown_in_the_console(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("generate_image", {"prompt": "a red robot", "size": "320x240"}, "g1")
                ]
            },
            {"extras": {"images": {"color": [200, 30, 30]}}},  # answers the images request
            {"text": "Here is your robot.", "expect": {"contains": "saved as images/"}},
        ]
    )
    cfg = _cfg(tmp_path, server.base_url)
    (image_tool,) = [t for t in general_tools(cfg, tmp_path / "ws") if t.name == "generate_image"]
    agent, rec = make_agent(server, tmp_path / "ws", tools=[image_tool])
    outcome = await agent.run_task("draw me a red robot")
    assert outcome.status == "completed"
    request = server.requests[1]
    assert request.path == "/v1/images/generations"
    assert request.json()["prompt"] == "a red robot" and request.json()["size"] == "320x240"
    assert request.json()["model"] == "scripted-image"
    assert request.headers["authorization"] == "Bearer sk-img"
    result = next(e for e in rec.of("tool_result") if e.data["id"] == "g1").data
    assert result["ok"] and result["n_images"] == 1
    path = tmp_path / "ws" / result["metadata"]["path"]
    assert result["metadata"]["image"] == result["metadata"]["path"]
    with PILImage.open(path) as img:
        assert img.format == "PNG" and img.size == (320, 240)
        assert img.convert("RGB").getpixel((300, 20)) == (200, 30, 30)
    web = await serve_console(agent, None, port=0)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as client:
            shown = await client.get("/images/g1/0.jpg")
    finally:
        await web.stop()
        await agent.close()
    assert shown.status_code == 200 and shown.headers["content-type"] == "image/jpeg"
    with PILImage.open(io.BytesIO(shown.content)) as jpeg:
        r, g, b = jpeg.convert("RGB").getpixel((300, 20))
        assert r > 150 and g < 80 and b < 80  # the gated copy of the generated picture


def test_absent_when_not_configured(tmp_path: Path) -> None:
    names = [t.name for t in general_tools(_cfg(tmp_path, None), tmp_path / "ws")]
    assert "generate_image" not in names
    half = tmp_path / "half.yaml"
    half.write_text(
        textwrap.dedent("images:\n  base_url: http://127.0.0.1:9/v1\n"), encoding="utf-8"
    )
    cfg, _ = load_config(half, env={})
    assert "generate_image" not in [t.name for t in general_tools(cfg, tmp_path / "ws")]


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ({"error": {"status": 500, "message": "model overloaded"}}, "HTTP 500: model overloaded"),
        (  # a proxy's page: its title, never its HTML (issue 22)
            {"error": {"status": 502, "body": "<html><head><title>502 Bad Gateway</title>"}},
            r"HTTP 502: 502 Bad Gateway \(an HTML page\)$",
        ),
        (
            {"extras": {"images": {"b64": base64.b64encode(b"not an image at all").decode()}}},
            "bytes that are not an image",
        ),
        (  # audit B finding 8: the message ended with "<_io.BytesIO object at 0x7ff...>"
            {"extras": {"images": {"b64": base64.b64encode(b"not an image at all").decode()}}},
            r"\(19 bytes, starting b'not an i'\): no image format that can be read "
            r"\(PNG, JPEG, WebP, \.\.\.\)$",
        ),
        ({"extras": {"images": {"b64": "%%% not base64"}}}, "not base64"),
        (  # audit B finding 8: it was "cannot reach the image endpoint ...: Request URL is
            # missing an 'http://' or 'https://' protocol"; the file is never read
            {"extras": {"images": {"url": "file:///etc/passwd"}}},
            r"answered with an image URL that is not http\(s\): 'file:///etc/passwd'; "
            "refused, nothing was fetched$",
        ),
        (
            {"extras": {"images": {"url": "data:image/png;base64,iVBORw0KGgo="}}},
            "an image URL that is not http\\(s\\): 'data:image/png",
        ),
        (  # a decompression bomb: refused from its header (issue 21 item 10)
            {"extras": {"images": {"b64": base64.b64encode(png_bomb()).decode()}}},
            "a 9000x9000 image that would need 324 MB to decode; at most 100 MB",
        ),
    ],
)
async def test_endpoint_failures_are_clear_and_nothing_is_saved(
    scripted_server: Any, tmp_path: Path, turn: dict[str, Any], message: str
) -> None:
    server = scripted_server([turn])
    tool = make_image_tool(tmp_path, ImageEndpoint(server.base_url, "m", "k", timeout_s=10))
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    with pytest.raises(ToolError, match=message):
        await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)
    assert not (tmp_path / "images").exists()


async def test_an_image_url_that_answers_an_error_names_the_url_not_the_endpoint(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"extras": {"images": {"url": "http://127.0.0.1:9/cat.png"}}}])
    tool = make_image_tool(tmp_path, ImageEndpoint(server.base_url, "m", "k", timeout_s=10))
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    with pytest.raises(ToolError) as info:
        await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)
    assert f"the image endpoint {server.base_url} answered with the image URL " in str(info.value)
    assert "'http://127.0.0.1:9/cat.png', which cannot be fetched" in str(info.value)
    assert not str(info.value).startswith("cannot reach")


async def test_bad_size_and_empty_prompt_are_refused_before_any_request(tmp_path: Path) -> None:
    tool = make_image_tool(tmp_path, ImageEndpoint("http://127.0.0.1:9/v1", "m"))
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    with pytest.raises(ToolError, match="must be WIDTHxHEIGHT"):
        await tool.invoke({"prompt": "a cat", "size": "huge"}, ctx)
    # audit B finding 8: a size that is WIDTHxHEIGHT but too large said "must be WIDTHxHEIGHT"
    for size in ("100000x100000", "4097x64", "64x" + "9" * 5000):
        with pytest.raises(ToolError) as info:
            await tool.invoke({"prompt": "a cat", "size": size}, ctx)
        assert "is too large: each side at most 4096 pixels" in str(info.value), size
    with pytest.raises(ToolError, match=r"size '8x64' is too small: each side at least 16 pixels"):
        await tool.invoke({"prompt": "a cat", "size": "8x64"}, ctx)
    with pytest.raises(ToolError, match="needs a prompt"):
        await tool.invoke({"prompt": "  "}, ctx)


async def test_unreachable_endpoint_is_a_clear_result(tmp_path: Path) -> None:
    tool = make_image_tool(tmp_path, ImageEndpoint("http://127.0.0.1:9/v1", "m", timeout_s=5))
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    with pytest.raises(ToolError, match="cannot reach the image endpoint"):
        await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)


async def test_credentials_in_the_endpoint_and_image_urls_are_never_shown(
    scripted_server: Any, tmp_path: Path
) -> None:
    """SPEC B6 (never log keys): an endpoint configured as ``http://bob:pw@host/v1`` and a
    signed image URL (``?sig=...``) are named without their user info and query."""
    dead = ImageEndpoint("http://bob:pw-secret@127.0.0.1:9/v1?key=k-secret", "m", timeout_s=5)
    tool = make_image_tool(tmp_path, dead)
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    with pytest.raises(ToolError) as info:
        await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)
    assert "cannot reach the image endpoint http://127.0.0.1:9/v1" in str(info.value)
    assert "secret" not in str(info.value)

    signed = "http://127.0.0.1:9/cat.png?sig=sig-secret"
    server = scripted_server([{"extras": {"images": {"url": signed}}}])
    tool = make_image_tool(tmp_path, ImageEndpoint(server.base_url, "m", "k", timeout_s=10))
    with pytest.raises(ToolError) as info:
        await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)
    assert "'http://127.0.0.1:9/cat.png', which cannot be fetched" in str(info.value)
    assert "secret" not in str(info.value)


class BigImageServer:
    """An HTTP server on loopback whose image is ``size`` bytes, sent in 64 KB pieces with or
    without a Content-Length; it counts the bytes that left it before the client hung up."""

    def __init__(self, size: int, declare: bool) -> None:
        self.size, self.declare = size, declare
        self.sent = 0
        self.done = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/huge.png"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n"
        head += f"Content-Length: {self.size}\r\n" if self.declare else ""
        writer.write((head + "\r\n").encode())
        piece = b"\x89PNG" + b"\0" * (65536 - 4)
        try:
            while self.sent < self.size:
                writer.write(piece)
                await writer.drain()  # waits while the client does not read
                self.sent += len(piece)
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            self.done.set()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.mark.parametrize("declare", [False, True], ids=["chunked", "content-length"])
async def test_an_image_url_is_read_no_further_than_32_mb(
    scripted_server: Any, tmp_path: Path, declare: bool
) -> None:
    """Issue 39 item 16: a 200 MB body was read whole before the 32 MB check. Now a declared
    length over 32 MB is refused before the body is read, and a body without one is read to
    32 MB and the connection closed (the server sends little more than the TCP buffers)."""
    big = BigImageServer(200 * 1024 * 1024, declare)
    url = await big.start()
    server = scripted_server([{"extras": {"images": {"url": url}}}])
    tool = make_image_tool(tmp_path, ImageEndpoint(server.base_url, "m", "k", timeout_s=20))
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    try:
        with pytest.raises(ToolError) as info:
            await tool.invoke({"prompt": "a cat", "size": "64x64"}, ctx)
        await asyncio.wait_for(big.done.wait(), 20)
    finally:
        await big.close()
    if declare:
        assert "is 210 MB long (Content-Length); images are at most 32 MB" in str(info.value)
        assert big.sent < 16 * 1024 * 1024, big.sent
    else:
        assert "sent more than 32 MB; images are at most 32 MB" in str(info.value)
        assert big.sent < 48 * 1024 * 1024, big.sent
    assert "/huge.png', which" in str(info.value)
    assert not (tmp_path / "images").exists()
