"""Uploads that would exhaust memory or disk (issue 21 item 10, SPEC F2, G1).

The real console on a free port, real clients (a raw socket where the HTTP framing itself is
the point), and the real image gate.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import httpx2
from PIL import Image as PILImage
from tests.channels.test_web_api import StandInAgent

from loopact.channels.web import WebSettings, serve_console
from loopact.vision.gate import ImageGate

WAIT_S = 20.0
LIMIT = 1_000_000


def _bomb_png(side: int = 9000) -> bytes:
    """A 1-bit PNG of ``side`` x ``side`` pixels: about 10 KB encoded, 324 MB as RGB."""
    buf = io.BytesIO()
    PILImage.new("1", (side, side), 0).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


async def _raw_request(port: int, head: bytes) -> bytes:
    """Send ``head`` (request line and headers, no body) and read the response until close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), WAIT_S)
    finally:
        writer.close()


async def test_oversized_upload_is_refused_from_its_content_length() -> None:
    web = await serve_console(
        StandInAgent(), None, port=0, settings=WebSettings(max_upload_bytes=LIMIT)
    )
    try:
        head = (
            b"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=x\r\n"
            b"Content-Length: 200000000\r\n\r\n"
        )
        # Not one byte of the 200 MB body is sent: the answer must come without it.
        response = await _raw_request(web.port, head)
        assert response.startswith(b"HTTP/1.1 413 "), response[:200]
        assert b"byte limit" in response
        assert b"x-frame-options: deny" in response.lower()
    finally:
        await web.stop()


async def test_chunked_upload_stops_being_read_at_the_limit() -> None:
    web = await serve_console(
        StandInAgent(), None, port=0, settings=WebSettings(max_upload_bytes=LIMIT)
    )
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b"--x\r\nContent-Disposition: form-data; name=file; filename=a.png\r\n\r\n"
        chunk = b"\0" * 65536
        while sent < 200_000_000:
            sent += len(chunk)
            yield chunk

    try:
        async with httpx2.AsyncClient(timeout=WAIT_S) as c:
            try:
                r = await c.post(
                    f"http://127.0.0.1:{web.port}/api/upload",
                    content=body(),
                    headers={"Content-Type": "multipart/form-data; boundary=x"},
                )
                status: int | None = r.status_code
            except httpx2.TransportError:  # the server closed while we were still sending
                status = None
        assert status in (413, None)
        # The server stopped reading at the limit: far less than the 200 MB went out (the
        # rest of what was sent sat in socket buffers).
        assert sent < 40_000_000, sent
    finally:
        await web.stop()


async def test_decompression_bombs_are_refused_before_decoding() -> None:
    gate = ImageGate()
    web = await serve_console(StandInAgent(), None, port=0, settings=WebSettings(gate=gate))
    bomb = _bomb_png()
    assert len(bomb) < 100_000
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=60) as c:

            async def upload(i: int) -> httpx2.Response:
                files = {"file": (f"bomb{i}.png", bomb, "image/png")}
                return await c.post("/api/upload", files=files)

            responses = await asyncio.gather(*(upload(i) for i in range(6)))
        for r in responses:
            assert r.status_code == 422
            detail = r.json()["detail"]
            assert "9000x9000 pixels need 324 MB" in detail and "limit is 100 MB" in detail
        assert gate.peak_active <= gate.max_concurrent == 2
    finally:
        await web.stop()


def test_gate_bounds_concurrent_decodes() -> None:
    """A gate decodes at most ``max_concurrent`` images; a caller that cannot get a slot in
    ``busy_timeout_s`` gets an error result instead of another decode."""
    gate = ImageGate(max_concurrent=1, busy_timeout_s=0.05)
    small = io.BytesIO()
    PILImage.new("RGB", (64, 48), (10, 200, 30)).save(small, format="PNG")
    assert gate._slots.acquire(timeout=1)  # another decode holds the only slot
    try:
        busy = gate.process(small.getvalue())
    finally:
        gate._slots.release()
    assert busy.image is None and busy.error is not None and "image gate busy" in busy.error
    ok = gate.process(small.getvalue())
    assert ok.image is not None and gate.active == 0 and gate.peak_active == 1


def test_large_jpeg_photo_decodes_at_reduced_scale() -> None:
    """A 7000x5000 JPEG (140 MB as RGB) passes: it is decoded at 1/4 scale (DCT scaling)."""
    import numpy as np

    rng = np.random.default_rng(3)
    small = rng.integers(0, 255, size=(50, 70, 3), dtype=np.uint8)
    big = PILImage.fromarray(small).resize((7000, 5000), PILImage.Resampling.NEAREST)
    buf = io.BytesIO()
    big.save(buf, format="JPEG", quality=80)
    res = ImageGate().process(buf.getvalue())
    assert res.error is None and res.image is not None
    assert (res.image.width_px, res.image.height_px) == (1024, 731)
