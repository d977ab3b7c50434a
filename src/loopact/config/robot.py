"""The robot, its perception and its board (SPEC D1-D6, G1, C9).

Sections ``robot``, ``vision`` and ``board``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic

from loopact.config.base import STRICT as _STRICT


class EstopConfig(pydantic.BaseModel):
    """``robot.estop``: who may release a latched emergency stop of the base-side governor
    (``loopact base``, ``loopact sim --ros2``; SPEC X3, issue 21, docs/security.md). Anyone
    may stop. A reset must carry ``reset_token`` (``reset <token>``; better: the
    ``LOOPACT_ESTOP_TOKEN`` variable) or come on the operator's ``reset_topic``."""

    model_config = _STRICT
    reset_token: pydantic.SecretStr | None = None
    reset_topic: str | None = pydantic.Field(None, pattern=r"^/[A-Za-z0-9_/]+$")


class RobotConfig(pydantic.BaseModel):
    """``robot``: which body the agent drives. ``map``: a Nav2 map_server YAML file the
    navigation plans on (issue 40; docs/navigation.md)."""

    model_config = _STRICT
    kind: Literal["sim", "ros2", "none"] = "sim"
    profile: str = "sim"
    site: str = "sim_room"
    sim_speed: float = pydantic.Field(1.0, gt=0)
    scenario: Literal["default", "moving-target", "flat", "flat-blocked", "arm"] = "default"
    sim_log: Path | None = None
    recentre_on_stop: bool = False
    map: Path | None = None
    estop: EstopConfig = EstopConfig()


HsvTriple = tuple[int, int, int]


VisionChatFormat = Literal[
    "mtmd",
    "qwen2.5-vl",
    "gemma4",
    "llava-1-5",
    "llava-1-6",
    "obsidian",
    "moondream",
    "nanollava",
    "llama-3-vision-alpha",
    "minicpm-v-2.6",
]
"""llama-cpp-python's multimodal chat formats (``--chat_format`` with ``--clip_model_path``)."""


class VisionModelConfig(pydantic.BaseModel):
    """``vision.model``: a separate vision model for descriptions and box selection (issue 15).

    Either an OpenAI-compatible endpoint that accepts images (``base_url`` + ``model``; the key
    comes from ``api_key`` or the environment variable named by ``api_key_env``), or a local
    llama.cpp vision model: ``model_path`` (the language model, a GGUF file) with
    ``mmproj_path`` (its multimodal projector, a GGUF file), served by llama-cpp-python on
    loopback with ``chat_format`` (``mtmd``: llama.cpp's generic multimodal support, or the
    handler of a model family), ``context_tokens`` and ``threads``.
    """

    model_config = _STRICT
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "gpt-4o-mini"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    timeout_s: float = pydantic.Field(30.0, gt=0)
    model_path: Path | None = None
    mmproj_path: Path | None = None
    chat_format: VisionChatFormat = "mtmd"
    context_tokens: int = pydantic.Field(4096, ge=1024)
    threads: int | None = pydantic.Field(None, ge=1)
    start_timeout_s: float = pydantic.Field(300.0, gt=0)

    @pydantic.model_validator(mode="after")
    def _one_source(self) -> VisionModelConfig:
        if (self.base_url is None) == (self.model_path is None):
            raise ValueError(
                "vision.model needs either base_url (an OpenAI-compatible vision endpoint) or "
                "model_path with mmproj_path (a local llama.cpp GGUF model), not both"
            )
        if self.model_path is not None and self.mmproj_path is None:
            raise ValueError(
                "vision.model.model_path needs mmproj_path: the model's multimodal projector "
                "GGUF (often named mmproj-*.gguf)"
            )
        if self.model_path is None and self.mmproj_path is not None:
            raise ValueError("vision.model.mmproj_path needs model_path")
        return self


class VisionConfig(pydantic.BaseModel):
    """``vision``: perception tools (SPEC D5, G2; issue 15) and the image gate every image
    passes before it reaches a model (SPEC G1, issue 46): ``max_side_px`` is the longest side
    of a gated image in pixels, ``blur_threshold`` the variance of the Laplacian below which an
    image counts as blurry (measured default 4.0, :mod:`loopact.vision.gate`)."""

    model_config = _STRICT
    max_side_px: int = pydantic.Field(1024, ge=16, le=8192)
    blur_threshold: float = pydantic.Field(4.0, ge=0, le=100_000)
    colors: dict[str, list[tuple[HsvTriple, HsvTriple]]] = pydantic.Field(default_factory=dict)
    model: VisionModelConfig | None = None
    use_main_model: bool = True
    min_confidence: float = pydantic.Field(0.5, ge=0, le=1)
    line_lost_grace_s: float = pydantic.Field(1.5, gt=0)
    line_speed_mps: float = pydantic.Field(0.25, gt=0)
    track_distance_m: float = pydantic.Field(1.2, gt=0)

    @pydantic.field_validator("colors")
    @classmethod
    def _hsv_in_range(
        cls, value: dict[str, list[tuple[HsvTriple, HsvTriple]]]
    ) -> dict[str, list[tuple[HsvTriple, HsvTriple]]]:
        for name, ranges in value.items():
            if not ranges:
                raise ValueError(f"colour {name!r} needs at least one [[h, s, v], [h, s, v]] range")
            for lo, hi in ranges:
                for a, b, top in zip(lo, hi, (179, 255, 255), strict=True):
                    if not (0 <= a <= b <= top):
                        raise ValueError(
                            f"colour {name!r}: range {list(lo)}..{list(hi)} must be low <= high "
                            "within H 0..179, S 0..255, V 0..255 (OpenCV scale)"
                        )
        return value


class BoardConfig(pydantic.BaseModel):
    """``board``: the device layer (issue 19, SPEC C9); ``--board sim|linux``."""

    model_config = _STRICT
    kind: Literal["sim", "linux", "none"] = "sim"
    file: Path | None = None
    poll_s: float = pydantic.Field(1.0, gt=0)
