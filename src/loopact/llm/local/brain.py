"""The offline brain: where its model is, what it can do (issue 6, issue 13; SPEC B1, B4).

When no model endpoint is configured, ``loopact run`` starts a llama.cpp server as a
supervised child process (:class:`loopact.llm.local.process.LocalBrain`) on a free loopback
port with a GGUF model, and talks to it through the ordinary OpenAI-compatible provider
(:class:`~loopact.llm.openai_chat.OpenAIChatModel`, one code path) wrapped by
:class:`loopact.llm.local.model.LocalBrainModel`, which retries a request once on the
restarted server after a crash. The server is stopped with the agent.

The model and the built ``llama-cpp-python`` come from ``make local-brain``
(:mod:`loopact.llm.local.install`): the pinned GGUF lives in the user cache folder
(``platformdirs.user_cache_dir("loopact")``); any other GGUF can be chosen with
``local.model_path`` in the config.

Capabilities of the local brain (SPEC B4): text only (no vision), tool calls written as text
(``<tool_call>`` blocks), constrained decoding available (a GBNF grammar built from the tools
offered, see :mod:`loopact.llm.toolgrammar`).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import platformdirs

from loopact.config import LocalConfig
from loopact.errors import ConfigError
from loopact.llm.base import Capabilities

log = logging.getLogger(__name__)

MODEL_NAME = "local"


def cache_dir() -> Path:
    """The user cache folder for the built wheel and the model (``~/.cache/loopact`` on Linux)."""
    override = os.environ.get("LOOPACT_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("loopact"))


def default_model_path(sha256: str) -> Path:
    """Where the pinned default GGUF is kept: ``<cache>/models/<first 16 hex of sha256>.gguf``."""
    return cache_dir() / "models" / f"local-brain-{sha256[:16]}.gguf"


def local_capabilities(context_tokens: int) -> Capabilities:
    """The capability descriptor of the local brain (SPEC B4).

    Args:
        context_tokens: The server's context size in tokens.

    Returns:
        Text only, tool calls as text, one call per response, constrained decoding available,
        no ``stream_options`` (llama-cpp-python ignores it; sending nothing is safer).
    """
    return Capabilities(
        vision=False,
        native_tool_calls=False,
        parallel_tool_calls=False,
        constrained_decoding=True,
        context_tokens=context_tokens,
        stream_usage=False,
    )


def server_installed() -> bool:
    """True when ``llama_cpp.server`` and its web stack can be imported in this interpreter."""
    try:
        return all(
            importlib.util.find_spec(m) is not None
            for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")
        )
    except (ImportError, ValueError):
        return False


def resolve_model_path(cfg: LocalConfig) -> Path:
    """The GGUF the local brain will load.

    Args:
        cfg: The ``local`` config section.

    Returns:
        ``cfg.model_path`` (user-chosen) or the pinned default in the cache folder.

    Raises:
        ConfigError: The file does not exist, is not a GGUF file, or (the pinned default)
            no longer matches its ``.verified`` note; the message says how to get it
            (``make local-brain``) or which key to fix (``local.model_path``).
    """
    if cfg.model_path is not None:
        path = cfg.model_path.expanduser()
        if not path.is_file():
            raise ConfigError(
                f"local.model_path {path} does not exist; give the path of a .gguf file",
                key="local.model_path",
            )
    else:
        path = default_model_path(cfg.source_sha256)
        if not path.is_file():
            raise ConfigError(
                "the local brain's model is not installed "
                f"(expected {path}); run `make local-brain` or configure a model endpoint "
                "(LOOPACT_BASE_URL / LOOPACT_API_KEY)",
                key="local.model_path",
            )
        if not is_verified(path, cfg.source_sha256):
            raise ConfigError(
                f"the local brain's model file {path} changed since it was verified (it is "
                "truncated, damaged or being written); run `make local-brain` to fetch and "
                "verify it again",
                key="local.model_path",
            )
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ConfigError(
            f"{path} is not a GGUF model file (it does not start with 'GGUF')",
            key="local.model_path",
        )
    return path


def pick_chat_format(model_path: Path, configured: str | None) -> str | None:
    """The llama-cpp-python ``chat_format`` to use.

    ``configured`` wins. Otherwise ChatML models (their embedded template uses
    ``<|im_start|>``) get the plain ``chatml`` format, because embedded templates that handle
    tools themselves are not used here (tools travel as text, SPEC B4) and some are broken;
    any other model keeps its own embedded template (None).
    """
    if configured:
        return configured
    try:
        with model_path.open("rb") as f:
            head = f.read(8 * 1024 * 1024)
    except OSError:
        return None
    return "chatml" if b"<|im_start|>" in head else None


def verified_note(path: Path) -> Path:
    """The ``.verified`` note next to an assembled model file."""
    return path.with_name(path.name + ".verified")


def is_verified(path: Path, sha256: str) -> bool:
    """True when ``path`` was verified against ``sha256`` and has not changed since.

    The note (written by ``make local-brain`` after the sha256 matched) records the size and
    modification time; a truncated or rewritten file no longer matches it.
    """
    try:
        data = json.loads(verified_note(path).read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(
        data.get("sha256") == sha256
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def installed_build() -> tuple[str, dict[str, Any] | None]:
    """The llama-cpp-python build in this Python: ``(build id, its build.json or None)``.

    The id is the cached build folder's name (``x86-64-v3-<key>``, see
    :mod:`loopact.llm.local.build`) when ``make local-brain`` installed it, else
    ``llama_cpp_python-<version>`` (a build loopact did not make, or none: ``""``).
    """
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    from loopact.llm.local.build import read_build_info

    try:
        dist = metadata.distribution("llama_cpp_python")
    except metadata.PackageNotFoundError:
        return "", None
    try:
        url = (json.loads(dist.read_text("direct_url.json") or "null") or {}).get("url", "")
    except ValueError:
        url = ""
    if isinstance(url, str) and url.startswith("file:"):
        folder = Path(unquote(urlparse(url).path)).parent
        info = read_build_info(folder)
        if info is not None and folder.parent == cache_dir() / "wheels":
            return folder.name, info
    return f"llama_cpp_python-{dist.version}", None


def check_installed_build() -> None:
    """Refuse a loopact-made llama.cpp build that needs instructions this CPU lacks (issue 13).

    A cache copied from another machine, or a VM that migrated to an older CPU, would
    otherwise die with SIGILL on the first request.

    Raises:
        ConfigError: The installed build's profile needs CPU flags this CPU does not have;
            the message names them and says to run ``make local-brain``.
    """
    from loopact.llm.local.build import PROFILES, cpu_flags

    build_id, info = installed_build()
    profile = PROFILES.get(str((info or {}).get("profile", "")))
    if profile is None:
        return
    flags = cpu_flags()
    missing = sorted(profile.needs - flags) if flags else []
    if missing:
        raise ConfigError(
            f"the installed llama.cpp build {build_id} uses {', '.join(missing)}, which this "
            "CPU does not have (was the cache copied from another machine, or did the VM "
            "move?); run `make local-brain` to build one for this CPU",
            key="local.build",
        )


def local_brain_banner(cfg: LocalConfig, lang: str = "en") -> str:
    """The one line ``loopact run`` prints when it uses the local brain (issue 6).

    Args:
        cfg: The ``local`` config section.
        lang: ``en`` or ``zh``.

    Raises:
        ConfigError: The local brain is not installed or the model file is wrong (the
            message says to run ``make local-brain``).
    """
    path = resolve_model_path(cfg)
    if not server_installed():
        raise ConfigError(
            "the local brain needs llama-cpp-python with its server extra in this Python "
            f"({sys.executable}); run `make local-brain`",
            key="local",
        )
    if lang == "zh":
        return (
            f"loopact：未配置模型服务，使用本地 llama.cpp 大脑（{path.name}，仅 CPU）。"
            "使用托管模型请设置 LOOPACT_BASE_URL 和 LOOPACT_API_KEY（或运行 loopact init）。"
        )
    return (
        f"loopact: no model endpoint configured; using the local llama.cpp brain ({path.name}, "
        "CPU). For a hosted model set LOOPACT_BASE_URL and LOOPACT_API_KEY (or `loopact init`)."
    )


def missing_parts(cfg: LocalConfig) -> Sequence[str]:
    """What ``make local-brain`` still has to provide (empty when the brain can start)."""
    missing: list[str] = []
    if not server_installed():
        missing.append("llama-cpp-python[server]")
    try:
        resolve_model_path(cfg)
    except (ConfigError, OSError):
        missing.append("model")
    return missing
