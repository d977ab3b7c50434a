"""Overlays on camera frames: what a perception step saw and decided (SPEC F6).

Pure drawing functions (RGB ``HxWx3`` uint8 in, a new array out) for the image each perception
tool shows people in the trace and the web console: detection boxes, the chosen box, the floor
line's band and centroid, the tracked box.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from loopact.vision.detect import Detection

RGB = tuple[int, int, int]
_WHITE: RGB = (255, 255, 255)
_BLACK: RGB = (0, 0, 0)
_CHOSEN: RGB = (0, 255, 0)
_OTHER: RGB = (255, 255, 0)


def _text(img: npt.NDArray[np.uint8], text: str, org: tuple[int, int], scale: float = 0.5) -> None:
    import cv2

    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, _BLACK, 3, cv2.LINE_AA)
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, _WHITE, 1, cv2.LINE_AA)


CAPTION_CHARS = 56
"""Characters of a caption line on the image (two lines at most; the console shows it whole)."""


def _caption(img: npt.NDArray[np.uint8], caption: str) -> None:
    """The caption in large type on a dark band across the top, readable on a phone (issue
    42: the 0.5-scale line was too small): scaled with the image width, at most two lines."""
    import cv2

    w = img.shape[1]
    scale = max(0.5, w / 900.0)
    thick = max(1, round(scale * 2))
    words, lines = caption.split(), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > CAPTION_CHARS:
            if len(lines) == 2:
                lines[-1] = lines[-1][: CAPTION_CHARS - 1] + "~"
                break
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    step = int(32 * scale)
    band = img[: step * len(lines) + int(10 * scale)]
    band[:] = (band * 0.35).astype(np.uint8)
    for i, text in enumerate(lines):
        org = (int(10 * scale), step * (i + 1))
        cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, _WHITE, thick, cv2.LINE_AA)


def draw_boxes(
    rgb: npt.NDArray[np.uint8],
    detections: Sequence[Detection],
    chosen: Sequence[int] | None = None,
    caption: str = "",
) -> npt.NDArray[np.uint8]:
    """Detections as thin yellow boxes, ``chosen`` (a box ``[x1, y1, x2, y2]``) thick green.

    Args:
        rgb: The frame.
        detections: Colour blobs to outline, labelled with colour and distance.
        chosen: The selected box, or None.
        caption: A line of text at the top.
    """
    import cv2

    img = np.ascontiguousarray(rgb.copy())
    for d in detections:
        x1, y1, x2, y2 = d.bbox
        cv2.rectangle(img, (x1, y1), (x2 - 1, y2 - 1), _OTHER, 1)
        label = d.color if d.distance_m is None else f"{d.color} {d.distance_m:.1f}m"
        _text(img, label, (x1, max(12, y1 - 4)), 0.4)
    if chosen is not None:
        x1, y1, x2, y2 = (int(v) for v in chosen)
        cv2.rectangle(img, (x1, y1), (x2 - 1, y2 - 1), _CHOSEN, 3)
    if caption:
        _caption(img, caption)
    return img


def draw_line(
    rgb: npt.NDArray[np.uint8],
    band: tuple[int, int],
    centroid_x: float | None,
    caption: str = "",
    mask: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.uint8]:
    """The line-following view: the band (rows ``band[0]..band[1]``), the line pixels tinted,
    the centroid as a green mark, the image centre as a white tick."""
    import cv2

    img = np.ascontiguousarray(rgb.copy())
    h, w = img.shape[:2]
    y0, y1 = band
    if mask is not None:
        tint = img[y0:y1][mask]
        img[y0:y1][mask] = (0.4 * tint + 0.6 * np.array(_CHOSEN)).astype(np.uint8)
    cv2.rectangle(img, (0, y0), (w - 1, y1 - 1), _OTHER, 1)
    cv2.line(img, (w // 2, y0), (w // 2, y1), _WHITE, 1)
    if centroid_x is not None:
        cx = int(round(centroid_x))
        cv2.line(img, (cx, y0 - 10), (cx, y1 + 10), _CHOSEN, 3)
    if caption:
        _caption(img, caption)
    return img
