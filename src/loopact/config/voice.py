"""Speech in and out (SPEC F4): ``voice``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic

from loopact.config.base import STRICT as _STRICT


class SttConfig(pydantic.BaseModel):
    """``voice.stt``: speech to text (issue 16): offline ``whisper`` or an OpenAI-compatible
    ``openai`` endpoint (``base_url`` + ``model``; key from ``api_key`` or ``api_key_env``)."""

    model_config = _STRICT
    engine: Literal["whisper", "openai"] = "whisper"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "whisper-1"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    model_path: Path | None = None
    threads: int | None = pydantic.Field(None, ge=1)
    timeout_s: float = pydantic.Field(20.0, gt=0)
    window_s: float = pydantic.Field(10.0, ge=1, le=30)  # whisper: shortest encoder window


class TtsConfig(pydantic.BaseModel):
    """``voice.tts``: text to speech (issue 16): offline ``espeak`` or an OpenAI-compatible
    ``openai`` endpoint."""

    model_config = _STRICT
    engine: Literal["espeak", "openai", "none"] = "espeak"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "tts-1"
    voice: str = "alloy"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    espeak_voices: dict[str, str] = pydantic.Field(
        default_factory=lambda: {"en": "en-us", "zh": "cmn"}
    )
    rate_wpm: int = pydantic.Field(165, ge=80, le=450)
    timeout_s: float = pydantic.Field(20.0, gt=0)


class VoiceConfig(pydantic.BaseModel):
    """``voice``: spoken commands and spoken replies (SPEC F4, issue 16); docs/voice.md."""

    model_config = _STRICT
    enabled: bool = False
    input_device: str | None = None
    output_device: str | None = None
    stt: SttConfig = SttConfig()
    tts: TtsConfig = TtsConfig()
    barge_in: bool = True
    vad_aggressiveness: int = pydantic.Field(2, ge=0, le=3)
    onset_ms: int = pydantic.Field(60, ge=20, le=1000)
    end_silence_ms: int = pydantic.Field(600, ge=100, le=5000)
    max_utterance_s: float = pydantic.Field(30.0, ge=1, le=600)
    audio_in: str | None = None
    audio_out: str | None = None
    ros2_topics: bool = False
    to_model: Literal["transcript", "audio", "both"] = "transcript"
