"""The image gate's settings from the config (issue 46 item 4, SPEC G1): ``vision.max_side_px``
and ``vision.blur_threshold``, validated, and used by the images a run hands to the model."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from loopact.app.robot import image_gate, open_body
from loopact.config import load_config
from loopact.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("vision: {max_side_px: 8}\n", "vision.max_side_px"),
        ("vision: {max_side_px: 100000}\n", "vision.max_side_px"),
        ("vision: {blur_threshold: -1}\n", "vision.blur_threshold"),
        ("vision: {blur_threshold: sharp}\n", "vision.blur_threshold"),
    ],
)
def test_bad_gate_settings_are_refused_naming_the_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "loopact.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert err.value.key == key and key in str(err.value)


def test_the_gate_has_the_configured_limits(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text("vision: {max_side_px: 320, blur_threshold: 12.5}\n")
    cfg, _ = load_config(path, env={})
    gate = image_gate(cfg)
    assert (gate.max_side_px, gate.blur_threshold) == (320, 12.5)
    default, _ = load_config(None, env={}, cwd=tmp_path)
    assert (image_gate(default).max_side_px, image_gate(default).blur_threshold) == (1024, 4.0)


@pytest.mark.sim
async def test_the_robot_camera_images_pass_the_configured_gate(tmp_path: Path) -> None:
    """The sim camera's 640x480 frame reaches the model at most 320 px wide with
    ``max_side_px: 320``, and is held back as blurry with a threshold no frame reaches."""

    async def seewhat(vision: dict[str, Any]) -> Any:
        cfg, _ = load_config(None, overrides={"vision": vision}, env={}, cwd=tmp_path)
        async with AsyncExitStack() as stack:
            body = await open_body(cfg, stack)
            assert body.session is not None
            tool = next(t for t in body.session.tools if t.name == "seewhat")
            return await tool()  # type: ignore[operator]

    small = await seewhat({"max_side_px": 320})
    assert small.ok and len(small.images) == 1
    assert max(small.images[0].width_px, small.images[0].height_px) == 320
    strict = await seewhat({"blur_threshold": 99_999})
    assert strict.ok and not strict.images
    assert "too blurry" in strict.data["image"]
