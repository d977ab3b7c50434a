"""Recorded simulator frames (tests/vision/frames/*.npz, made by record_frames.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

FRAMES = Path(__file__).parent / "frames"


def load_frame(name: str) -> dict[str, Any]:
    """``{rgb, depth, gt: {object: box or None}, pose: [x, y, yaw, pan, tilt]}``."""
    with np.load(FRAMES / f"{name}.npz") as z:
        return {
            "rgb": z["rgb"],
            "depth": z["depth"].astype(np.float32),
            "gt": json.loads(str(z["gt"])),
            "pose": z["pose"].tolist(),
        }
