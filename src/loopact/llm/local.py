"""The offline brain: a llama.cpp server started as a child process (issue 6; SPEC B1, B4).

When no model endpoint is configured, ``loopact run`` starts ``python -m llama_cpp.server`` on
a free loopback port with a GGUF model, waits until ``/v1/models`` answers, and talks to it
through the ordinary OpenAI-compatible provider (:class:`~loopact.llm.openai_chat.OpenAIChatModel`,
one code path). The server is stopped with the agent.

The model and the built ``llama-cpp-python`` come from ``make local-brain``
(:mod:`loopact.llm.local_install`): the pinned GGUF lives in the user cache folder
(``platformdirs.user_cache_dir("loopact")``); any other GGUF can be chosen with
``local.model_path`` in the config.

Capabilities of the local brain (SPEC B4): text only (no vision), tool calls written as text
(``<tool_call>`` blocks), constrained decoding available (a GBNF grammar built from the tools
offered, see :mod:`loopact.llm.toolgrammar`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from loopact.config import LocalConfig
from loopact.errors import ConfigError, ModelFatalError
from loopact.llm.base import Capabilities

log = logging.getLogger(__name__)

MODEL_NAME = "local"
_STDERR_TAIL_LINES = 25
_POLL_S = 0.25
_HTTP_TIMEOUT_S = 2.0
_STOP_TIMEOUT_S = 10.0


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
        ConfigError: The file does not exist or is not a GGUF file; the message says how to
            get it (``make local-brain``) or which key to fix (``local.model_path``).
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


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(
    model_path: Path,
    port: int,
    context_tokens: int,
    threads: int,
    chat_format: str | None,
    python: str = sys.executable,
) -> list[str]:
    """The command line that starts the llama-cpp-python OpenAI-compatible server.

    Args:
        model_path: The GGUF file.
        port: Loopback TCP port.
        context_tokens: Context size (``--n_ctx``).
        threads: CPU threads for generation and prompt processing.
        chat_format: ``--chat_format`` or None for the model's embedded template.
        python: The interpreter that has ``llama_cpp`` installed.
    """
    cmd = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(context_tokens),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--n_gpu_layers",
        "0",
    ]
    if chat_format:
        cmd += ["--chat_format", chat_format]
    return cmd


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, get SIGTERM when loopact dies, even by SIGKILL."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _tail(path: Path, lines: int = _STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no server output)"
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept) if kept else "(no server output)"


async def _get_status(port: int, path: str) -> int | None:
    """HTTP status of ``GET path`` on 127.0.0.1:port, or None when nothing answers."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), _HTTP_TIMEOUT_S
        )
    except (OSError, asyncio.TimeoutError):
        return None
    try:
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        writer.write(request.encode("ascii"))
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), _HTTP_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError):
        return None
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), _HTTP_TIMEOUT_S)
    parts = line.decode("latin-1").split()
    if len(parts) >= 2 and parts[1].isdigit():
        return int(parts[1])
    return None


@dataclass
class LocalBrain:
    """A running llama.cpp server child process (issue 6).

    Use :meth:`start` (or ``async with``); :attr:`base_url` is then the endpoint root to give
    :class:`~loopact.llm.openai_chat.OpenAIChatModel`. :meth:`stop` terminates the child
    (SIGTERM, then SIGKILL after 10 s) and is safe to call twice.

    Attributes:
        model_path: The GGUF file served.
        context_tokens: Context size in tokens.
        threads: CPU threads.
        chat_format: llama-cpp-python chat format, None for the model's template.
        start_timeout_s: How long to wait for ``/v1/models`` to answer, in seconds.
        python: Interpreter with ``llama_cpp`` installed.
        log_path: Where the server's stdout/stderr go (a file in the cache folder by default).
        extra_env: Environment variables added for the child process.
    """

    model_path: Path
    context_tokens: int = 8192
    threads: int = 0
    chat_format: str | None = None
    start_timeout_s: float = 180.0
    python: str = sys.executable
    log_path: Path | None = None
    extra_env: dict[str, str] | None = None
    port: int = 0
    _proc: asyncio.subprocess.Process | None = None
    started_s: float = 0.0

    @classmethod
    def from_config(cls, cfg: LocalConfig) -> LocalBrain:
        """A brain as the ``local`` config section describes.

        Raises:
            ConfigError: The model file is missing or not GGUF, or llama-cpp-python's server
                is not installed (the message says to run ``make local-brain``).
        """
        model_path = resolve_model_path(cfg)
        if not server_installed():
            raise ConfigError(
                "the local brain needs llama-cpp-python with its server extra in this Python "
                f"({sys.executable}); run `make local-brain`, or configure a model endpoint "
                "(LOOPACT_BASE_URL / LOOPACT_API_KEY)",
                key="local",
            )
        return cls(
            model_path=model_path,
            context_tokens=cfg.context_tokens,
            threads=cfg.threads or 0,
            chat_format=pick_chat_format(model_path, cfg.chat_format),
            start_timeout_s=cfg.start_timeout_s,
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint root, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> str:
        """Start the server and wait until ``GET /v1/models`` answers 200.

        Returns:
            :attr:`base_url`.

        Raises:
            ModelFatalError: The server exited or did not answer within ``start_timeout_s``;
                the message ends with the tail of its output.
        """
        if self.running:
            return self.base_url
        threads = self.threads or os.cpu_count() or 1
        self.port = free_port()
        if self.log_path is None:
            logs = cache_dir() / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            self.log_path = logs / "local-brain.log"
        cmd = server_command(
            self.model_path,
            self.port,
            self.context_tokens,
            threads,
            self.chat_format,
            self.python,
        )
        log.info("starting the local brain: %s", " ".join(cmd))
        t0 = time.monotonic()
        with self.log_path.open("wb") as out:
            self._proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(self.extra_env or {})},
                preexec_fn=_die_with_parent,
            )
        try:
            await self._wait_ready(t0)
        except BaseException:
            await self.stop()
            raise
        self.started_s = time.monotonic() - t0
        log.info("local brain ready on port %d after %.1f s", self.port, self.started_s)
        return self.base_url

    async def _wait_ready(self, t0: float) -> None:
        assert self._proc is not None and self.log_path is not None
        deadline = t0 + self.start_timeout_s
        while True:
            if self._proc.returncode is not None:
                raise ModelFatalError(
                    f"the local brain (llama.cpp server) exited with code {self._proc.returncode}"
                    f" while starting. Its output ({self.log_path}) ends with:\n"
                    + _tail(self.log_path)
                )
            status = await _get_status(self.port, "/v1/models")
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise ModelFatalError(
                    f"the local brain (llama.cpp server) did not answer on port {self.port} "
                    f"within {self.start_timeout_s:.0f} s. Its output ({self.log_path}) ends "
                    "with:\n" + _tail(self.log_path)
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._proc.wait(), _POLL_S)

    async def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), _STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("local brain did not stop after SIGTERM; killing it")
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.wait_for(proc.wait(), _STOP_TIMEOUT_S)
        log.info("local brain stopped")

    async def __aenter__(self) -> LocalBrain:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


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
