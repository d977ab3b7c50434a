"""Nav2 map_server files: read, write, and every bad input named (issue 40)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from loopact.errors import ConfigError
from loopact.maps import FREE, OCCUPIED, UNKNOWN, empty_grid, read_map, write_map
from loopact.maps.raster import fill_box

YAML = """image: {image}
mode: {mode}
resolution: 0.1
origin: [-1.0, -2.0, 0.0]
negate: {negate}
occupied_thresh: 0.65
free_thresh: 0.196
"""


def _write(tmp: Path, pixels: np.ndarray, mode: str = "trinary", negate: int = 0) -> Path:
    Image.fromarray(pixels).save(tmp / "m.pgm")
    y = tmp / "m.yaml"
    y.write_text(YAML.format(image="m.pgm", mode=mode, negate=negate), encoding="utf-8")
    return y


def test_trinary_image_reads_as_map_server_does_with_the_first_row_at_the_top(
    tmp_path: Path,
) -> None:
    # map_saver's values: 254 free, 0 occupied, 205 unknown; the image's first row is the top
    px = np.array([[0, 254, 205], [254, 254, 254]], dtype=np.uint8)
    grid = read_map(_write(tmp_path, px))
    assert grid.resolution_m == 0.1 and (grid.origin_x_m, grid.origin_y_m) == (-1.0, -2.0)
    # row 0 of the grid is the image's last row (lowest y)
    assert grid.data.tolist() == [[FREE, FREE, FREE], [OCCUPIED, FREE, UNKNOWN]]
    assert grid.value_at(-0.95, -1.85) == OCCUPIED  # the top-left pixel
    assert grid.value_at(-0.95, -1.95) == FREE


def test_negate_and_scale_modes(tmp_path: Path) -> None:
    px = np.array([[0, 255, 128]], dtype=np.uint8)
    assert read_map(_write(tmp_path, px, negate=1)).data.tolist() == [[FREE, OCCUPIED, UNKNOWN]]
    scaled = read_map(_write(tmp_path, px, mode="scale")).data.tolist()[0]
    assert scaled[0] == OCCUPIED and scaled[1] == FREE and 1 <= scaled[2] <= 99


def test_written_map_reads_back_the_same(tmp_path: Path) -> None:
    grid = fill_box(empty_grid(3.0, 2.0, 0.05, (-1.0, -0.5)), (0.5, 0.5), (0.3, 0.2))
    data = grid.data.copy()
    data[0, :5] = UNKNOWN
    grid = grid.with_data(data)
    yaml_path, image_path = write_map(grid, tmp_path / "out", "flat")
    assert image_path.name == "flat.pgm" and "image: flat.pgm" in yaml_path.read_text()
    back = read_map(yaml_path)
    assert np.array_equal(back.data, grid.data)
    assert (back.origin_x_m, back.origin_y_m, back.resolution_m) == (-1.0, -0.5, 0.05)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("image: m.pgm\nresolution: [1\n", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        ("resolution: 0.1\norigin: [0, 0, 0]\n", "'image'"),
        (
            "image: m.pgm\norigin: [0, 0, 0]\nnegate: 0\noccupied_thresh: 0.6\nfree_thresh: 0.2\n",
            "'resolution'",
        ),
        (
            "image: m.pgm\nresolution: -1\norigin: [0,0,0]\nnegate: 0\noccupied_thresh: 0.6\n"
            "free_thresh: 0.2\n",
            "'resolution' must be > 0",
        ),
        (
            "image: m.pgm\nresolution: 0.1\norigin: [0, 0]\nnegate: 0\noccupied_thresh: 0.6\n"
            "free_thresh: 0.2\n",
            "'origin'",
        ),
        (
            "image: m.pgm\nresolution: 0.1\norigin: [0,0,0]\nnegate: 0\noccupied_thresh: x\n"
            "free_thresh: 0.2\n",
            "'occupied_thresh' must be a number",
        ),
        (
            "image: m.pgm\nresolution: 0.1\norigin: [0,0,0]\nnegate: 0\noccupied_thresh: 0.2\n"
            "free_thresh: 0.6\n",
            "free_thresh <= occupied_thresh",
        ),
        (
            "image: m.pgm\nresolution: 0.1\norigin: [0,0,0]\noccupied_thresh: 0.6\n"
            "free_thresh: 0.2\n",
            "'negate'",
        ),
        (
            "image: m.pgm\nmode: fancy\nresolution: 0.1\norigin: [0,0,0]\nnegate: 0\n"
            "occupied_thresh: 0.6\nfree_thresh: 0.2\n",
            "'mode'",
        ),
    ],
)
def test_malformed_yaml_names_the_key(tmp_path: Path, text: str, named: str) -> None:
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(tmp_path / "m.pgm")
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_map(tmp_path / "bad.yaml")
    assert named in str(info.value) and "bad.yaml" in str(info.value)
    assert info.value.key == "robot.map"


def test_missing_file_and_missing_image_and_not_an_image(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        read_map(tmp_path / "nope.yaml")
    y = _write(tmp_path, np.zeros((2, 2), np.uint8))
    (tmp_path / "m.pgm").unlink()
    with pytest.raises(ConfigError, match=r"its image .*m\.pgm does not exist"):
        read_map(y)
    (tmp_path / "m.pgm").write_text("P5 this is not an image", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not an image"):
        read_map(y)


def test_a_map_too_large_for_memory_is_refused_with_its_size_before_decoding(
    tmp_path: Path,
) -> None:
    # a 6000 x 6000 PGM header with no pixel data: the size is read from the header and
    # refused before anything is decoded
    (tmp_path / "m.pgm").write_bytes(b"P5\n6000 6000\n255\n")
    (tmp_path / "m.yaml").write_text(
        YAML.format(image="m.pgm", mode="trinary", negate=0), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"6000 x 6000 cells \(36\.0 million"):
        read_map(tmp_path / "m.yaml")
