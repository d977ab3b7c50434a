"""A KCF tracker whose box is checked against the target's colours (SPEC D5, issue 15).

OpenCV contrib's KCF follows the box from frame to frame on downscaled frames (at most
:data:`TRACK_WIDTH_PX` wide). On a flat-coloured target KCF can report success while its box
stops moving (platform notes), so every update is checked: the hue-saturation histogram of the
first box is back-projected in a window around the new box, and the box is re-centred on the
target's colour mass when KCF's box has drifted off it (the tracker is restarted there). When
too little of the target's colour is left in the window the target is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

TRACK_WIDTH_PX = 320
MIN_MASS = 0.15
"""Lost below this fraction of the first box's area of target-coloured pixels in the window."""
REACQUIRE = 0.35
"""A lost target is searched for this far (fraction of the frame width) from its last box."""
DRIFT = 0.25
"""Re-centre when the colour centroid is this far (fraction of the box size) from the box."""

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class TrackState:
    """One update.

    Attributes:
        ok: The target is still followed.
        box: ``(x1, y1, x2, y2)`` in pixels of the full frame (the last good box when lost).
        score: Target-coloured pixels near the box over the first box's area.
        recentred: The box was moved onto the target's colour (KCF had drifted or stuck).
    """

    ok: bool
    box: Box
    score: float
    recentred: bool = False


def check_box(box: Box, width: int | None, height: int | None) -> str | None:
    """Why ``box`` is not a box inside a ``width x height`` frame, or None when it is.

    With ``width`` or ``height`` None (the frame is not known) only the box itself is checked:
    finite values, ``x2 > x1``, ``y2 > y1``, no negative coordinates, at least 4x4 pixels.
    """
    x1, y1, x2, y2 = box
    if not all(np.isfinite(v) for v in box):
        return f"bbox {list(box)} has a non-finite value"
    if x2 <= x1 or y2 <= y1:
        return f"bbox {list(box)} has no area (needs x2 > x1 and y2 > y1)"
    if width is None or height is None:
        if x1 < 0 or y1 < 0:
            return f"bbox {list(box)} has negative pixel coordinates"
    elif x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        return f"bbox {list(box)} is outside the {width}x{height} frame"
    if (x2 - x1) < 4 or (y2 - y1) < 4:
        return f"bbox {list(box)} is too small to track (at least 4x4 pixels)"
    return None


class ColorCheckedTracker:
    """KCF plus a colour check (see the module docstring).

    Args:
        rgb: The frame the box refers to (``HxWx3`` uint8 RGB).
        box: ``(x1, y1, x2, y2)`` in that frame's pixels.

    Raises:
        ValueError: A box outside the frame or with no area (:func:`check_box`).
    """

    def __init__(self, rgb: npt.NDArray[np.uint8], box: Box) -> None:
        import cv2

        h, w = rgb.shape[:2]
        problem = check_box(box, w, h)
        if problem:
            raise ValueError(problem)
        self.scale = min(1.0, TRACK_WIDTH_PX / w)
        small, hsv = self._prepare(rgb)
        x1, y1, x2, y2 = (v * self.scale for v in box)
        roi = (int(x1), int(y1), max(2, int(x2 - x1)), max(2, int(y2 - y1)))
        patch = hsv[roi[1] : roi[1] + roi[3], roi[0] : roi[0] + roi[2]]
        sat = cv2.inRange(
            patch, np.array((0, 60, 30), np.uint8), np.array((180, 255, 255), np.uint8)
        )
        self.hist: Any = cv2.calcHist([patch], [0, 1], sat, [30, 16], [0, 180, 0, 256])
        cv2.normalize(self.hist, self.hist, 0, 255, cv2.NORM_MINMAX)
        self.area = float(roi[2] * roi[3])
        self.size = (roi[2], roi[3])
        self._start(small, roi)
        self.box: Box = box

    def _prepare(self, rgb: npt.NDArray[np.uint8]) -> tuple[Any, Any]:
        import cv2

        small: Any = rgb
        if self.scale < 1.0:
            h, w = rgb.shape[:2]
            small = cv2.resize(
                rgb, (round(w * self.scale), round(h * self.scale)), interpolation=cv2.INTER_AREA
            )
        bgr = cv2.cvtColor(small, cv2.COLOR_RGB2BGR)
        return bgr, cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)

    def _start(self, small: Any, roi: tuple[int, int, int, int]) -> None:
        import cv2

        self.kcf: Any = cv2.TrackerKCF_create()  # type: ignore[attr-defined]
        self.kcf.init(small, roi)

    def _reacquire(self, hsv: Any, last: tuple[float, float]) -> Any:
        """The target's colour blob nearest to ``last`` within :data:`REACQUIRE` of the width.

        The target may have moved far between the frame its box came from and the first
        tracked frame (a model's reply takes seconds), or during a short loss.
        """
        import cv2

        hs, ws = hsv.shape[:2]
        back = cv2.calcBackProject([hsv], [0, 1], self.hist, [0, 180, 0, 256], 1)
        hit = (back > 40).astype(np.uint8)
        n, labels, stats, cents = cv2.connectedComponentsWithStats(hit, connectivity=8)
        best = None
        for i in range(1, n):
            if stats[i, cv2.CC_STAT_AREA] < MIN_MASS * self.area:
                continue
            d = float(np.hypot(cents[i][0] - last[0], cents[i][1] - last[1]))
            if d <= REACQUIRE * ws and (best is None or d < best[0]):
                best = (d, i)
        if best is None:
            return None
        cx, cy = (float(v) for v in cents[best[1]])
        sw, sh = self.size
        wx1, wy1 = int(max(0, cx - 1.5 * sw)), int(max(0, cy - 1.5 * sh))
        wx2, wy2 = int(min(ws, cx + 1.5 * sw)), int(min(hs, cy + 1.5 * sh))
        return cx, cy, wx1, wy1, hit[wy1:wy2, wx1:wx2] > 0

    def update(self, rgb: npt.NDArray[np.uint8]) -> TrackState:
        """Follow the target into ``rgb`` (same size as the first frame)."""
        import cv2

        small, hsv = self._prepare(rgb)
        hs, ws = hsv.shape[:2]
        ok, r = self.kcf.update(small)
        lx1, ly1, lx2, ly2 = (v * self.scale for v in self.box)
        last = ((lx1 + lx2) / 2, (ly1 + ly2) / 2)
        centres = [last]
        if ok:
            x, y, bw, bh = (float(v) for v in r)
            centres.insert(0, (x + bw / 2, y + bh / 2))
        sw, sh = self.size
        found = None
        score = 0.0
        for cx, cy in centres:  # KCF's box first, then around the last good box
            wx1, wy1 = int(max(0, cx - 1.5 * sw)), int(max(0, cy - 1.5 * sh))
            wx2, wy2 = int(min(ws, cx + 1.5 * sw)), int(min(hs, cy + 1.5 * sh))
            if wx2 - wx1 < 2 or wy2 - wy1 < 2:
                continue
            window = hsv[wy1:wy2, wx1:wx2]
            back = cv2.calcBackProject([window], [0, 1], self.hist, [0, 180, 0, 256], 1)
            hit = back > 40
            score = max(score, float(np.count_nonzero(hit)) / self.area)
            if float(np.count_nonzero(hit)) / self.area >= MIN_MASS:
                found = (cx, cy, wx1, wy1, hit)
                break
        if found is None:
            found = self._reacquire(hsv, last)
        if found is None:
            return TrackState(False, self.box, round(score, 3))
        cx, cy, wx1, wy1, hit = found
        score = float(np.count_nonzero(hit)) / self.area
        ys, xs = np.nonzero(hit)
        mx, my = wx1 + float(xs.mean()), wy1 + float(ys.mean())
        recentred = abs(mx - cx) > DRIFT * sw or abs(my - cy) > DRIFT * sh or cx == last[0]
        if recentred:
            cx, cy = mx, my
            roi = (
                int(max(0, min(ws - sw, cx - sw / 2))),
                int(max(0, min(hs - sh, cy - sh / 2))),
                sw,
                sh,
            )
            self._start(small, roi)
        s = 1.0 / self.scale
        self.box = (
            max(0.0, (cx - sw / 2) * s),
            max(0.0, (cy - sh / 2) * s),
            min(ws * s, (cx + sw / 2) * s),
            min(hs * s, (cy + sh / 2) * s),
        )
        return TrackState(True, self.box, round(score, 3), recentred)
