"""Nav2 map_server map files: an image plus a YAML file (SPEC D3, issue 40).

The format is the one ``nav2_map_server`` (and ROS 1 ``map_server``) reads and ``map_saver``
writes::

    image: flat.pgm            # relative to the YAML file, or absolute
    mode: trinary              # trinary (default), scale or raw
    resolution: 0.05           # metres per pixel
    origin: [-1.0, -1.0, 0.0]  # the lower-left pixel's pose in the map: x, y (m), yaw (rad)
    negate: 0                  # 1: white is occupied
    occupied_thresh: 0.65      # occupancy above this is occupied (100)
    free_thresh: 0.25          # below this is free (0)

A pixel's occupancy is ``(255 - value) / 255`` (``value / 255`` when ``negate``), the mean of
the colour channels for a colour image. ``trinary``: above ``occupied_thresh`` is 100, below
``free_thresh`` 0, else unknown (-1). ``scale``: between the thresholds the occupancy is scaled
to 1..99; a transparent pixel is unknown. ``raw``: the pixel value is the cell value (values
above 100 are unknown). :func:`write_map` writes what ``map_saver`` writes in trinary mode:
free 254, occupied 0, unknown 205, with ROS 1 map_saver's thresholds 0.65 / 0.196 (205 is an
occupancy of 0.196078, so it reads back as unknown; with Nav2 map_saver's default free_thresh
of 0.25 it would read as free).

Every mistake is a :class:`~loopact.errors.ConfigError` naming the file and the key: a missing
file, a YAML that does not parse, a key missing or of the wrong type, an image that is not an
image, a map too large for memory (refused with its size, before it is decoded).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from loopact.config.yaml_strict import safe_load_unique
from loopact.errors import ConfigError
from loopact.maps.grid import FREE, OCCUPIED, UNKNOWN, OccupancyGrid, check_size

KEY = "robot.map"
"""The configuration key a map file comes from (named in every error)."""

MODES = ("trinary", "scale", "raw")
SAVER_FREE, SAVER_OCCUPIED, SAVER_UNKNOWN = 254, 0, 205
"""The pixel values ``map_saver`` writes in trinary mode."""


def _err(path: Path, what: str) -> ConfigError:
    return ConfigError(f"map {path}: {what}", key=KEY)


def _number(doc: dict[str, Any], key: str, path: Path) -> float:
    if key not in doc:
        raise _err(path, f"the key {key!r} is missing (a map_server YAML needs it)")
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _err(path, f"{key!r} must be a number, got {value!r}")
    return float(value)


def read_map_yaml(path: str | Path) -> dict[str, Any]:
    """The checked metadata of a map_server YAML file (nothing is decoded yet).

    Returns:
        ``{image: Path, mode, resolution, origin: (x, y, yaw), negate: bool,
        occupied_thresh, free_thresh}``, the image path resolved against the YAML's folder.

    Raises:
        ConfigError: Missing or unreadable file, malformed YAML, a missing or wrong key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _err(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(path, f"cannot read it: {exc}") from None
    try:
        doc = safe_load_unique(text)
    except yaml.YAMLError as exc:
        raise _err(path, f"not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise _err(path, "expected a mapping with image, resolution, origin, ... at the top")
    image = doc.get("image")
    if not isinstance(image, str) or not image.strip():
        raise _err(path, "the key 'image' is missing or not a file name")
    mode = doc.get("mode", "trinary")
    if mode not in MODES:
        raise _err(path, f"'mode' must be one of {', '.join(MODES)}, got {mode!r}")
    resolution = _number(doc, "resolution", path)
    if resolution <= 0:
        raise _err(path, f"'resolution' must be > 0 metres per pixel, got {resolution}")
    origin = doc.get("origin")
    if (
        not isinstance(origin, list)
        or len(origin) != 3
        or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in origin
        )
    ):
        raise _err(path, f"'origin' must be [x, y, yaw] (three numbers), got {origin!r}")
    occupied = _number(doc, "occupied_thresh", path)
    free = _number(doc, "free_thresh", path)
    if not 0.0 <= free <= occupied <= 1.0:
        raise _err(
            path,
            f"thresholds must satisfy 0 <= free_thresh <= occupied_thresh <= 1, got "
            f"free_thresh {free}, occupied_thresh {occupied}",
        )
    negate = doc.get("negate")
    if negate not in (0, 1, True, False):
        raise _err(path, f"'negate' must be 0 or 1, got {negate!r}")
    image_path = Path(image)
    if not image_path.is_absolute():
        image_path = path.parent / image_path
    return {
        "image": image_path,
        "mode": mode,
        "resolution": resolution,
        "origin": (float(origin[0]), float(origin[1]), float(origin[2])),
        "negate": bool(negate),
        "occupied_thresh": occupied,
        "free_thresh": free,
    }


def read_map(path: str | Path) -> OccupancyGrid:
    """Load a map_server map (YAML + image) into an :class:`OccupancyGrid` (SPEC D3).

    Raises:
        ConfigError: See the module docstring: every case names the file and what is wrong.
    """
    path = Path(path)
    meta = read_map_yaml(path)
    pixels, alpha = _read_image(meta["image"], path)
    data = _to_cells(pixels, alpha, meta)
    x, y, yaw = meta["origin"]
    return OccupancyGrid(np.flipud(data).copy(), meta["resolution"], x, y, yaw)


def _read_image(image: Path, yaml_path: Path) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None]:
    """The image's pixels (``HxW`` or ``HxWxC``) and its alpha channel, size checked first."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(image) as img:
            check_size(img.width, img.height, f"the map image {image}")
            img.load()
            if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
                rgba = np.asarray(img.convert("RGBA"))
                return rgba[..., :3], rgba[..., 3]
            if img.mode in ("L", "I", "I;16", "F"):
                arr = np.asarray(img)
                if arr.dtype != np.uint8:  # 16-bit PGM: scale to 0..255 as map_server does
                    arr = (arr.astype(np.float64) * 255.0 / max(1.0, float(arr.max()))).round()
                return arr.astype(np.uint8), None
            return np.asarray(img.convert("RGB")), None
    except FileNotFoundError:
        raise _err(yaml_path, f"its image {image} does not exist") from None
    except (UnidentifiedImageError, ValueError, SyntaxError):
        raise _err(yaml_path, f"its image {image} is not an image (PGM, PNG, ...)") from None
    except Image.DecompressionBombError as exc:
        raise _err(yaml_path, f"its image {image} is too large: {exc}") from None
    except OSError as exc:
        raise _err(yaml_path, f"cannot read its image {image}: {exc}") from None


def _to_cells(
    pixels: npt.NDArray[Any], alpha: npt.NDArray[Any] | None, meta: dict[str, Any]
) -> npt.NDArray[np.int8]:
    value = pixels.astype(np.float64)
    if value.ndim == 3:
        value = value.mean(axis=2)
    if meta["mode"] == "raw":
        cells = np.where(value > 100, UNKNOWN, value)
        return cells.astype(np.int8)
    occ = value / 255.0 if meta["negate"] else (255.0 - value) / 255.0
    occ_t, free_t = meta["occupied_thresh"], meta["free_thresh"]
    cells = np.full(value.shape, UNKNOWN, dtype=np.int16)
    cells[occ > occ_t] = OCCUPIED
    cells[occ < free_t] = FREE
    if meta["mode"] == "scale":
        between = (occ >= free_t) & (occ <= occ_t)
        span = max(occ_t - free_t, 1e-9)
        cells[between] = np.clip(np.rint(1 + 98 * (occ[between] - free_t) / span), 1, 99)
        if alpha is not None:
            cells[alpha < 255] = UNKNOWN
    return cells.astype(np.int8)


def write_map(grid: OccupancyGrid, directory: str | Path, name: str = "map") -> tuple[Path, Path]:
    """Write ``grid`` as ``map_saver`` does: ``<name>.pgm`` and ``<name>.yaml`` in ``directory``.

    Free cells are 254, occupied (and probability >= 65) 0, unknown and the rest 205; the YAML
    names the image relative to itself, so the folder can be moved.

    Returns:
        ``(yaml path, image path)``.

    Raises:
        OSError: The directory or a file cannot be written.
    """
    from PIL import Image

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    d = grid.data
    img = np.full(d.shape, SAVER_UNKNOWN, dtype=np.uint8)
    img[d == FREE] = SAVER_FREE
    img[(d >= 65) & (d <= OCCUPIED)] = SAVER_OCCUPIED
    image_path = directory / f"{name}.pgm"
    yaml_path = directory / f"{name}.yaml"
    Image.fromarray(np.flipud(img)).save(image_path)
    meta = {
        "image": image_path.name,
        "mode": "trinary",
        "resolution": float(grid.resolution_m),
        "origin": [float(grid.origin_x_m), float(grid.origin_y_m), float(grid.origin_yaw_rad)],
        "negate": 0,
        "occupied_thresh": 0.65,
        "free_thresh": 0.196,
    }
    yaml_path.write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    return yaml_path, image_path
