"""The image gate (SPEC G1, G2): every image goes through it before it reaches a model.

It decodes the input (bytes, an ``HxWx3`` RGB numpy array or a PIL image), drops alpha, scales
the long side down to ``max_side_px``, encodes JPEG, and measures sharpness as the variance of
the Laplacian on a grey copy downscaled to at most 640 px on its long side (so the threshold does
not depend on the input resolution). Bad input never raises: the result carries ``error``.

Default blur threshold (measured 2026-11-30, grey copy <= 640 px): simulator frames with objects
in view measure 37-300 and a bare wall filling the view at 0.5 m measures 5-12; two real camera
photos (720x477) measure 241 and 980. Gaussian blur with sigma 3 brings simulator frames to
<= 1.3, and sigma 6 brings the real photos to 1.9-2.4. The default 4.0 passes every sharp frame
(even the bare wall) and flags those strongly blurred ones. Because featureless sharp scenes score
as low as blurred textured ones, the threshold cannot sit higher without false alarms.

Memory is bounded before anything is decoded (issue 21): encoded input above
``max_input_bytes`` is refused; the header gives the size, and an image whose decoded working
copy (4 bytes per pixel: Pillow keeps RGB in 32-bit pixels) would exceed ``max_decoded_bytes``
is refused before its pixels are read — a 10 KB 1-bit PNG of 9000x9000 pixels would need
324 MB. JPEGs are first asked to decode at a reduced scale (Pillow's ``draft``, DCT scaling)
when the output is smaller anyway, so large photos pass at a fraction of the memory. At most
``max_concurrent`` images are decoded at once per gate; a caller that waits longer than
``busy_timeout_s`` for a slot gets an error result.

PNG chunk checksums are judged as libpng judges them (:func:`png_chunks_as_libpng`): an
ancillary chunk with a wrong CRC is left out, a critical one refuses the image.
"""

from __future__ import annotations

import io
import logging
import threading
import warnings
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from loopact.errors import LoopactError
from loopact.llm.messages import Image

logger = logging.getLogger(__name__)

DEFAULT_BLUR_THRESHOLD = 4.0
"""Laplacian variance below which an image counts as blurry (measured, see module docstring)."""

_BLUR_SIDE_PX = 640
_MAX_PIXELS = 100_000_000
_WORKING_BYTES_PER_PIXEL = 4  # Pillow's RGB / RGBA pixel

DEFAULT_MAX_DECODED_BYTES = 100_000_000
"""Largest decoded working copy in bytes (25 megapixels at 4 bytes per pixel)."""


@dataclass(frozen=True)
class GateResult:
    """What the gate made of one image.

    Attributes:
        image: The gated image (RGB JPEG, long side <= ``max_side_px``), None if rejected.
        blurry: True when ``laplacian_var`` is below the gate's threshold.
        laplacian_var: Variance of the Laplacian (sharpness), 0.0 when rejected.
        error: Why the image was rejected, None when it was accepted.
    """

    image: Image | None
    blurry: bool = False
    laplacian_var: float = 0.0
    error: str | None = None

    @property
    def usable(self) -> bool:
        """True when there is an image and it is not blurry."""
        return self.image is not None and not self.blurry


class ImageGate:
    """Normalise, shrink, encode and blur-check images (SPEC G1).

    Args:
        max_side_px: Longest side of the output image in pixels.
        jpeg_quality: JPEG quality 1-95.
        max_input_bytes: Encoded inputs larger than this are refused.
        blur_threshold: Laplacian variance below which an image is flagged ``blurry``.
        max_decoded_bytes: Encoded images whose decoded working copy (width x height x 4
            bytes) would be larger are refused before decoding.
        max_concurrent: Images decoded and processed at the same time by this gate.
        busy_timeout_s: Longest wait for a free slot, seconds; then an error result.

    Attributes:
        active: Images being processed right now.
        peak_active: The most processed at the same time so far.

    Raises:
        ValueError: A parameter out of range.
    """

    def __init__(
        self,
        max_side_px: int = 1024,
        jpeg_quality: int = 85,
        max_input_bytes: int = 20_000_000,
        blur_threshold: float = DEFAULT_BLUR_THRESHOLD,
        max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES,
        max_concurrent: int = 2,
        busy_timeout_s: float = 30.0,
    ) -> None:
        if max_side_px < 16:
            raise ValueError(f"max_side_px must be >= 16, got {max_side_px}")
        if not 1 <= jpeg_quality <= 95:
            raise ValueError(f"jpeg_quality must be 1..95, got {jpeg_quality}")
        if max_input_bytes <= 0:
            raise ValueError(f"max_input_bytes must be > 0, got {max_input_bytes}")
        if max_decoded_bytes <= 0:
            raise ValueError(f"max_decoded_bytes must be > 0, got {max_decoded_bytes}")
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self.max_side_px = max_side_px
        self.jpeg_quality = jpeg_quality
        self.max_input_bytes = max_input_bytes
        self.blur_threshold = blur_threshold
        self.max_decoded_bytes = max_decoded_bytes
        self.max_concurrent = max_concurrent
        self.busy_timeout_s = busy_timeout_s
        self.active = 0
        self.peak_active = 0
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._count_lock = threading.Lock()

    def process(self, source: bytes | npt.NDArray[Any] | PILImage.Image) -> GateResult:
        """Gate one image; never raises (SPEC G1, G2).

        Args:
            source: Encoded image bytes, an ``HxWx3`` (or ``HxWx4``/``HxW``) uint8 array in RGB
                order, or a PIL image.

        Returns:
            A :class:`GateResult`; ``image`` is None and ``error`` says why when rejected
            (also when no decode slot freed up within ``busy_timeout_s``).
        """
        if not self._slots.acquire(timeout=self.busy_timeout_s):
            return GateResult(
                image=None,
                error=f"image gate busy: {self.max_concurrent} images are being processed; "
                "try again",
            )
        with self._count_lock:
            self.active += 1
            self.peak_active = max(self.peak_active, self.active)
        try:
            return self._process(source)
        finally:
            with self._count_lock:
                self.active -= 1
            self._slots.release()

    def _process(self, source: bytes | npt.NDArray[Any] | PILImage.Image) -> GateResult:
        try:
            pil = self._to_pil(source)
        except _Rejected as exc:
            return GateResult(image=None, error=str(exc))
        except Exception as exc:
            logger.debug("image gate: unreadable input", exc_info=True)
            return GateResult(image=None, error=f"unreadable image: {exc}")
        try:
            return self._finish(pil)
        except Exception as exc:
            logger.debug("image gate: processing failed", exc_info=True)
            return GateResult(image=None, error=f"image could not be processed: {exc}")

    def _to_pil(self, source: bytes | npt.NDArray[Any] | PILImage.Image) -> PILImage.Image:
        if isinstance(source, (bytes, bytearray, memoryview)):
            raw = bytes(source)
            if not raw:
                raise _Rejected("empty image data")
            if len(raw) > self.max_input_bytes:
                raise _Rejected(
                    f"image too large: {len(raw)} bytes, the limit is {self.max_input_bytes}"
                )
            raw = png_chunks_as_libpng(raw)
            with warnings.catch_warnings():
                warnings.simplefilter("error", PILImage.DecompressionBombWarning)
                try:
                    pil = PILImage.open(io.BytesIO(raw))
                    if pil.width * pil.height > _MAX_PIXELS:
                        raise _Rejected(f"image too large: {pil.width}x{pil.height} pixels")
                    if pil.format == "JPEG":  # decode at 1/2, 1/4 or 1/8 when that suffices
                        pil.draft("RGB", (self.max_side_px, self.max_side_px))
                    self._check_decoded_size(pil.width, pil.height)
                    pil.load()
                except (PILImage.DecompressionBombWarning, PILImage.DecompressionBombError):
                    raise _Rejected("image too large (decompression bomb)") from None
                except _Rejected:
                    raise
                except UnidentifiedImageError:
                    raise _Rejected(
                        "not an image file that can be read (PNG, JPEG, WebP, BMP, GIF, TIFF)"
                    ) from None
                except Exception as exc:
                    raise _Rejected(f"corrupt or unsupported image data: {exc}") from None
            return pil
        if isinstance(source, np.ndarray):
            arr = source
            if arr.dtype != np.uint8:
                raise _Rejected(f"image array must be uint8, got {arr.dtype}")
            if arr.ndim == 2:
                return PILImage.fromarray(arr, mode="L")
            if arr.ndim != 3 or arr.shape[2] not in (3, 4):
                raise _Rejected(f"image array must be HxWx3 or HxWx4, got shape {arr.shape}")
            if arr.shape[0] == 0 or arr.shape[1] == 0:
                raise _Rejected(f"empty image array, shape {arr.shape}")
            return PILImage.fromarray(np.ascontiguousarray(arr[:, :, :3]), mode="RGB")
        if isinstance(source, PILImage.Image):
            source.load()
            return source
        raise _Rejected(f"unsupported image source type {type(source).__name__}")

    def _check_decoded_size(self, width: int, height: int) -> None:
        need = width * height * _WORKING_BYTES_PER_PIXEL
        if need > self.max_decoded_bytes:
            raise _Rejected(
                f"image too large to decode: {width}x{height} pixels need "
                f"{need / 1e6:.0f} MB of memory, the limit is {self.max_decoded_bytes / 1e6:.0f} "
                "MB; send a smaller image"
            )

    def _finish(self, pil: PILImage.Image) -> GateResult:
        if pil.mode != "RGB":
            if pil.mode in ("RGBA", "LA", "PA") or (pil.mode == "P" and "transparency" in pil.info):
                pil = pil.convert("RGBA")
                background = PILImage.new("RGB", pil.size, (255, 255, 255))
                background.paste(pil, mask=pil.getchannel("A"))
                pil = background
            else:
                pil = pil.convert("RGB")
        w, h = pil.size
        if w == 0 or h == 0:
            return GateResult(image=None, error="image has no pixels")
        scale = min(1.0, self.max_side_px / max(w, h))
        if scale < 1.0:
            pil = pil.resize(
                (max(1, round(w * scale)), max(1, round(h * scale))), PILImage.Resampling.LANCZOS
            )
        var = laplacian_variance(np.asarray(pil))
        buf = io.BytesIO()
        pil.save(buf, format="JPEG", quality=self.jpeg_quality, optimize=True)
        image = Image(
            data=buf.getvalue(), media_type="image/jpeg", width_px=pil.width, height_px=pil.height
        )
        return GateResult(image=image, blurry=var < self.blur_threshold, laplacian_var=var)


class _Rejected(LoopactError):
    """Internal: input refused with a readable reason."""


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunks_as_libpng(raw: bytes) -> bytes:
    """A PNG's chunk checksums judged as libpng judges them (issue 39 item 5).

    libpng's default CRC handling (``png_set_crc_action``, ``PNG_CRC_DEFAULT``; libpng
    manual, "Setting up the ancillary chunk CRC error handling") warns about an ancillary
    chunk (lowercase first letter: ``tEXt``, ``gAMA``, ...) whose CRC is wrong and discards
    it, and stops with an error at a critical one (``IHDR``, ``PLTE``, ``IDAT``, ``IEND``).
    Pillow refuses the first (so a PNG that OpenCV shows was "not an image") and does not
    check ``IDAT`` at all. Here the first are left out and the second refused, so the gate
    accepts exactly what libpng decodes; everything else (sizes, bombs) is checked after.

    Args:
        raw: Encoded image bytes; anything that is not a PNG is returned as it is, and so is
            a PNG whose chunk structure is broken (the decoder then says what is wrong).

    Returns:
        ``raw``, without its ancillary chunks whose CRC is wrong.

    Raises:
        _Rejected: A critical chunk's CRC is wrong (the image is corrupt).
    """
    if not raw.startswith(_PNG_SIGNATURE):
        return raw
    view = memoryview(raw)  # no copies of large IDAT chunks
    kept = [_PNG_SIGNATURE]
    dropped: list[str] = []
    pos = len(_PNG_SIGNATURE)
    while pos + 12 <= len(raw):
        length = int.from_bytes(raw[pos : pos + 4], "big")
        end = pos + 12 + length
        if end > len(raw):
            return raw
        kind = raw[pos + 4 : pos + 8]
        if zlib.crc32(view[pos + 4 : end - 4]) != int.from_bytes(raw[end - 4 : end], "big"):
            name = kind.decode("latin-1")
            if not kind[0] & 0x20:  # bit 5 of the first byte clear: a critical chunk
                raise _Rejected(f"corrupt PNG: the checksum of its {name!r} chunk is wrong")
            dropped.append(name)
        else:
            kept.append(raw[pos:end])
        pos = end
        if kind == b"IEND":
            break
    if not dropped:
        return raw
    logger.debug("image gate: PNG chunks with a wrong checksum left out: %s", dropped)
    return b"".join(kept) + raw[pos:]


def laplacian_variance(rgb: npt.NDArray[np.uint8]) -> float:
    """Sharpness: variance of the Laplacian of a grey copy with long side <= 640 px.

    Args:
        rgb: ``HxWx3`` uint8 RGB array.

    Returns:
        The variance (higher is sharper).
    """
    import cv2

    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    h, w = grey.shape[:2]
    scale = _BLUR_SIDE_PX / max(h, w)
    if scale < 1.0:
        grey = cv2.resize(
            grey, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())
