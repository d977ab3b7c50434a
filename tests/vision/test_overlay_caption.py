"""The caption on a perception image is readable on a phone (issue 42: the 0.5-scale line was
about 10 px tall on a 640 px image, shown at phone width ~5 px): large type on a dark band,
wrapped to two lines, never beyond the image."""

from __future__ import annotations

import numpy as np

from loopact.vision.overlay import draw_boxes


def _text_rows(img: np.ndarray) -> np.ndarray:
    return np.flatnonzero((img.min(axis=2) > 230).any(axis=1))


def test_the_caption_is_large_on_a_dark_band_and_wraps() -> None:
    frame = np.full((480, 640, 3), 200, dtype=np.uint8)
    short = draw_boxes(frame, [], caption="I see a red box 1.2 m away")
    rows = _text_rows(short)
    assert rows.size and rows.max() - rows.min() >= 14  # letters about twice the old height
    assert short[2 : rows.min()].mean() < 100  # on a dark band, readable on any scene
    assert (short[60:] == 200).all()  # the rest of the image untouched

    long = "I see " + "; ".join(f"a red box {i}.0 m away" for i in range(12))
    wrapped = _text_rows(draw_boxes(frame, [], caption=long))
    assert wrapped.max() > rows.max() + 20  # a second line
    assert wrapped.max() < 100  # two lines at most
