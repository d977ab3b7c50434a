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
        _text(img, caption[:90], (8, 20))
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
        _text(img, caption[:90], (8, 20))
    return img
