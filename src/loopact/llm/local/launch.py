"""How the local brain's server process is launched and probed (issue 6, issue 13; SPEC B1).

Its command line and environment, a free loopback port, dying with loopact, the health probe,
the tail of its log, and how it ended in words. :class:`~loopact.llm.local.process.LocalBrain`
uses these to supervise it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

from loopact._compat import wait_within
from loopact.llm.local.brain import MODEL_NAME, cache_dir

#: The module the child process runs: llama-cpp-python's server plus loopact's prefix cache.
SERVER_MODULE = "loopact.llm.local.server"
#: Environment defaults of the server process (the user's environment wins). OpenMP's
#: default spin-waiting makes llama.cpp's threads fight any other busy process for the cores:
#: on 2 cores beside other work, generation fell to 0.5-0.6 tokens/s with it and ran at
#: 13-25 tokens/s with passive waiting (docs/local-brain.md, issue 13).
SERVER_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
#: llama-cpp-python server options loopact always sets. ``--logits_all false``: the server's
#: own default (true, so that completions can return logprobs, which loopact never asks
#: for) computes the output layer for every token it evaluates and copies each one's logits
#: (151,936 floats) into an n_ctx-row array (5 GB of address space at 8,192 tokens). On the
#: 2-core Intel Xeon with AMX (2026-12-05, a 5,200-token prefix): a 9-token batch took
#: 1,088 ms with it and 178 ms without, a decode step 187 ms and 78 ms, reading the prefix
#: 155 s and 55 s. Sampling reads the logits from the context, and the batches of guessed
#: tokens that need logits at each position ask for them themselves
#: (:func:`loopact.llm.local.draft.eval_all_logits`). Part of the prompt-state key.
SERVER_OPTIONS = ("--logits_all", "false")
#: Its health route, answered without waiting for the model.
HEALTH_PATH = "/loopact/health"
_STDERR_TAIL_LINES = 25
_HTTP_TIMEOUT_S = 2.0


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
    module: str = SERVER_MODULE,
    state_dir: Path | None = None,
    clip_model_path: Path | None = None,
) -> list[str]:
    """The command line that starts the llama-cpp-python OpenAI-compatible server.

    Args:
        model_path: The GGUF file.
        port: Loopback TCP port.
        context_tokens: Context size (``--n_ctx``).
        threads: CPU threads for generation and prompt processing.
        chat_format: ``--chat_format`` or None for the model's embedded template.
        python: The interpreter that has ``llama_cpp`` installed.
        module: ``loopact.llm.local.server`` (with the prompt-prefix cache) or
            ``llama_cpp.server``.
        state_dir: Where :mod:`loopact.llm.local.server` keeps prompt-prefix states.
        clip_model_path: A vision model's multimodal projector GGUF (``--clip_model_path``,
            with a multimodal ``chat_format``), or None for a text model.
    """
    cmd = [
        python,
        "-m",
        module,
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
        *SERVER_OPTIONS,
    ]
    if chat_format:
        cmd += ["--chat_format", chat_format]
    if clip_model_path is not None:
        cmd += ["--clip_model_path", str(clip_model_path)]
    if module == SERVER_MODULE:
        cmd += ["--loopact-state-dir", str(state_dir or cache_dir() / "prompt-states")]
    return cmd


def die_with_parent() -> None:
    """In the child, before exec: on Linux, be killed when loopact dies, even by SIGKILL.

    SIGKILL, not SIGTERM: uvicorn answers SIGTERM by finishing the request in progress, and a
    prompt being evaluated on a busy CPU kept orphaned servers alive for minutes.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def log_tail(path: Path, lines: int = _STDERR_TAIL_LINES) -> str:
    """The last ``lines`` non-blank lines of the server's log, for an error message."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no server output)"
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept) if kept else "(no server output)"


async def http_status(port: int, path: str) -> int | None:
    """HTTP status of ``GET path`` on 127.0.0.1:port, or None when nothing answers."""
    try:
        reader, writer = await wait_within(
            asyncio.open_connection("127.0.0.1", port), _HTTP_TIMEOUT_S
        )
    except (OSError, asyncio.TimeoutError):
        return None
    try:
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        writer.write(request.encode("ascii"))
        await writer.drain()
        line = await wait_within(reader.readline(), _HTTP_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError):
        return None
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await wait_within(writer.wait_closed(), _HTTP_TIMEOUT_S)
    parts = line.decode("latin-1").split()
    if len(parts) >= 2 and parts[1].isdigit():
        return int(parts[1])
    return None


_SIGNALS: dict[int, str] = {
    int(signal.SIGSEGV): "SIGSEGV: a segmentation or general protection fault",
    int(signal.SIGILL): "SIGILL: an instruction this CPU does not have",
    int(signal.SIGBUS): "SIGBUS: a bus error",
    int(signal.SIGFPE): "SIGFPE: an arithmetic fault",
    int(signal.SIGABRT): "SIGABRT: it aborted",
    int(signal.SIGKILL): "SIGKILL: it was killed (by a person or the out-of-memory killer)",
    int(signal.SIGTERM): "SIGTERM: it was asked to stop by someone else",
}


def describe_exit(returncode: int | None) -> str:
    """How a child process ended, in words: ``signal 11 / SIGSEGV: ...`` or ``exit code 1``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        sig = -returncode
        what = _SIGNALS.get(sig)
        if what is None:
            with contextlib.suppress(ValueError):
                what = signal.Signals(sig).name
        return f"signal {sig} / {what or 'unknown signal'}"
    return f"exit code {returncode}"


def port_free(port: int) -> bool:
    """True when ``port`` can be bound on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def default_log_path(keep: int = 10, name: str = "local-brain") -> Path:
    """``<cache>/logs/<name>-<pid>.log``; older logs of that name beyond the newest ``keep`` go.

    Per process (``<pid>``: loopact's own), so two ``loopact run`` at once log apart, and per
    server kind (``name``: ``local-brain``, ``local-vision``), so the two servers of one run
    log apart too (issue 13, SPEC B1).

    Args:
        keep: How many logs of ``name`` to keep, this one included.
        name: The log's name before ``-<pid>.log``.
    """
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    old = sorted(logs.glob(f"{name}-*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in old[keep - 1 :]:
        with contextlib.suppress(OSError):
            path.unlink()
    return logs / f"{name}-{os.getpid()}.log"
