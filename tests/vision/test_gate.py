"""Image gate (SPEC G1, G2): normalisation, size, JPEG, blur flag, bad input never raises."""

from __future__ import annotations

import io
import struct
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image as PILImage
from tests.image_bombs import png_bomb

from loopact.vision.gate import DEFAULT_BLUR_THRESHOLD, ImageGate, laplacian_variance


def _scene(h: int = 480, w: int = 640, seed: int = 0) -> np.ndarray:
    """A photo-like test image: smooth shading, sensor noise, shapes with sharp edges."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), np.float64)
    img[..., 0] = 120 + 60 * np.sin(xx / 40.0)
    img[..., 1] = 100 + 50 * np.cos(yy / 55.0)
    img[..., 2] = 140
    img += rng.normal(0, 6, img.shape)
    out = np.clip(img, 0, 255).astype(np.uint8)
    for _ in range(12):
        x, y = int(rng.integers(0, w - 60)), int(rng.integers(0, h - 60))
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        cv2.rectangle(out, (x, y), (x + 50, y + 40), colour, -1)
    return out


def test_array_becomes_rgb_jpeg_within_max_side() -> None:
    gate = ImageGate(max_side_px=1024)
    res = gate.process(_scene(1500, 2000))
    assert res.error is None and res.image is not None
    assert res.image.media_type == "image/jpeg"
    assert res.image.data[:2] == b"\xff\xd8"
    assert max(res.image.width_px, res.image.height_px) == 1024
    assert (res.image.width_px, res.image.height_px) == (1024, 768)
    decoded = PILImage.open(io.BytesIO(res.image.data))
    assert decoded.mode == "RGB" and decoded.size == (1024, 768)


def test_small_image_is_not_enlarged_and_sharp_passes() -> None:
    res = ImageGate().process(_scene())
    assert res.image is not None
    assert (res.image.width_px, res.image.height_px) == (640, 480)
    assert not res.blurry
    assert res.laplacian_var > 10 * DEFAULT_BLUR_THRESHOLD


def test_strong_blur_is_flagged_but_image_kept() -> None:
    sharp = _scene()
    blurred = cv2.GaussianBlur(sharp, (0, 0), 6)
    res = ImageGate().process(blurred)
    assert res.image is not None
    assert res.blurry
    assert res.laplacian_var < DEFAULT_BLUR_THRESHOLD < laplacian_variance(sharp)
    assert not res.usable


def test_rgba_png_bytes_drop_alpha() -> None:
    rgba = np.zeros((100, 200, 4), np.uint8)
    rgba[..., 0] = 255
    rgba[..., 3] = 128
    buf = io.BytesIO()
    PILImage.fromarray(rgba, mode="RGBA").save(buf, format="PNG")
    res = ImageGate().process(buf.getvalue())
    assert res.error is None and res.image is not None
    decoded = PILImage.open(io.BytesIO(res.image.data))
    assert decoded.mode == "RGB" and decoded.size == (200, 100)


def test_pil_image_input() -> None:
    pil = PILImage.fromarray(_scene(300, 400)).convert("L")
    res = ImageGate().process(pil)
    assert res.image is not None
    assert PILImage.open(io.BytesIO(res.image.data)).mode == "RGB"


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (b"", "empty"),
        (b"\x89PNG\r\n\x1a\n" + b"garbage" * 50, "corrupt"),
        (b"not an image at all", "not an image file"),
        (np.zeros((10, 10, 3), np.float32), "uint8"),
        (np.zeros((10, 10, 5), np.uint8), "HxWx3"),
        ("a string", "unsupported"),
    ],
)
def test_bad_input_gives_error_not_exception(source: object, needle: str) -> None:
    res = ImageGate().process(source)  # type: ignore[arg-type]
    assert res.image is None
    assert res.error is not None and needle in res.error


def test_oversized_input_refused() -> None:
    buf = io.BytesIO()
    PILImage.fromarray(_scene()).save(buf, format="PNG")
    data = buf.getvalue()
    res = ImageGate(max_input_bytes=len(data) - 1).process(data)
    assert res.image is None
    assert res.error is not None and "too large" in res.error


def test_truncated_jpeg_refused() -> None:
    buf = io.BytesIO()
    PILImage.fromarray(_scene()).save(buf, format="JPEG")
    res = ImageGate().process(buf.getvalue()[: len(buf.getvalue()) // 3])
    assert res.image is None and res.error


def test_bad_parameters_rejected() -> None:
    with pytest.raises(ValueError, match="jpeg_quality"):
        ImageGate(jpeg_quality=0)
    with pytest.raises(ValueError, match="max_side_px"):
        ImageGate(max_side_px=0)


# ---------------------------------------------------------------------- PNG chunk CRCs
def _chunk(kind: bytes, data: bytes, *, bad_crc: bool = False) -> bytes:
    body = kind + data
    crc = zlib.crc32(body) ^ (0xFFFF if bad_crc else 0)
    return struct.pack(">I", len(data)) + body + struct.pack(">I", crc & 0xFFFFFFFF)


def _with_chunk_after_ihdr(png: bytes, chunk: bytes) -> bytes:
    ihdr_end = 8 + 4 + 4 + 13 + 4
    return png[:ihdr_end] + chunk + png[ihdr_end:]


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_a_png_whose_only_fault_is_an_ancillary_chunks_crc_is_accepted() -> None:
    """A bad CRC in an ancillary chunk (the reference "everything" MCP server's tiny image):
    libpng warns and discards the chunk, so OpenCV decodes it; the gate does the same
    (issue 39 item 5). Pillow alone refuses it."""
    scene = _scene(120, 160)
    data = _with_chunk_after_ihdr(_png(scene), _chunk(b"tEXt", b"Comment\0tiny", bad_crc=True))
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert decoded is not None and decoded.shape == (120, 160, 3)  # libpng's verdict
    with pytest.raises(Exception, match="cannot identify image file"):
        PILImage.open(io.BytesIO(data))
    res = ImageGate().process(data)
    assert res.error is None and res.image is not None
    assert (res.image.width_px, res.image.height_px) == (160, 120)


def test_a_bad_crc_in_a_critical_chunk_is_still_refused() -> None:
    """A bad CRC in IDAT is real corruption: libpng (OpenCV) refuses it, so does the gate."""
    png = _png(_scene(120, 160))
    start = png.index(b"IDAT") - 4
    length = struct.unpack(">I", png[start : start + 4])[0]
    end = start + 12 + length
    broken = png[: end - 4] + bytes(b ^ 0xFF for b in png[end - 4 : end]) + png[end:]
    assert cv2.imdecode(np.frombuffer(broken, np.uint8), cv2.IMREAD_COLOR) is None
    res = ImageGate().process(broken)
    assert res.image is None and res.error


def test_a_bomb_with_a_broken_ancillary_chunk_is_still_refused_before_decoding() -> None:
    """Leaving out a broken ancillary chunk does not get past the size checks (issue 21)."""
    bomb = _with_chunk_after_ihdr(png_bomb(), _chunk(b"tEXt", b"Comment\0x", bad_crc=True))
    res = ImageGate().process(bomb)
    assert res.image is None and res.error is not None and "too large" in res.error
