"""Vision helpers: the image gate (SPEC G1, G2) and colour segmentation (SPEC D5)."""

from loopact.vision.detect import DEFAULT_HSV, ColorRanges, Detection, detect_colors
from loopact.vision.gate import DEFAULT_BLUR_THRESHOLD, GateResult, ImageGate, laplacian_variance

__all__ = [
    "DEFAULT_BLUR_THRESHOLD",
    "DEFAULT_HSV",
    "ColorRanges",
    "Detection",
    "GateResult",
    "ImageGate",
    "detect_colors",
    "laplacian_variance",
]
