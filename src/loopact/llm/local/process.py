"""The local brain's server as a supervised child process (issue 6, issue 13; SPEC B1, B6, H2).

:class:`LocalBrain` starts ``python -m loopact.llm.local.server`` (llama-cpp-python's
OpenAI-compatible server plus a prompt-prefix cache, :mod:`loopact.llm.local.server`) on a free
port of 127.0.0.1, waits until ``/v1/models`` answers, watches the process, and restarts it
after a crash within a bound. Its state (``starting``, ``ready``, ``crashed``, ``restarting``,
``failed``, ``stopped``) is reported through ``on_status`` for ``/status``, the web console
and the trace (``local_brain`` events).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loopact._compat import wait_within
from loopact.config import LocalConfig
from loopact.errors import ConfigError, ModelFatalError
from loopact.llm.local.brain import (
    cache_dir,
    check_installed_build,
    pick_chat_format,
    resolve_model_path,
    server_installed,
)
from loopact.llm.local.launch import (
    HEALTH_PATH,
    SERVER_ENV,
    SERVER_MODULE,
    default_log_path,
    describe_exit,
    die_with_parent,
    free_port,
    http_status,
    log_tail,
    port_free,
    server_command,
)

log = logging.getLogger(__name__)

_POLL_S = 0.25
_STOP_TIMEOUT_S = 10.0


BrainState = Literal["stopped", "starting", "ready", "crashed", "restarting", "failed"]
"""Where the local server is in its life (shown by ``/status`` and the web console)."""


@dataclass(frozen=True)
class BrainStatus:
    """A snapshot of the local server for ``/status``, the web console and the trace.

    Attributes:
        state: ``starting``, ``ready``, ``crashed``, ``restarting``, ``failed`` or ``stopped``.
        model_file: The GGUF file's name.
        port: The loopback TCP port it listens on (0 before the first start).
        restarts: Restarts after crashes so far.
        log_path: The server's log file.
        detail: The last notable line (the crash line, the final error).
    """

    state: BrainState
    model_file: str
    port: int
    restarts: int
    log_path: str
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return dataclasses.asdict(self)


@dataclass
class LocalBrain:
    """A supervised llama.cpp server child process (issue 6, issue 13; SPEC B1, B6, H2).

    Use :meth:`start` (or ``async with``); :attr:`base_url` is then the endpoint root to give
    :class:`~loopact.llm.openai_chat.OpenAIChatModel`. While it runs, loopact watches the
    child: when it exits on its own (a crash, a kill) the status becomes ``crashed`` with one
    line saying how it ended and where its log is, and the server is started again on the
    same port when free (``restarting``, then ``ready``), at most ``max_restarts`` times in
    ``restart_window_s``; past that the status is ``failed`` and :meth:`wait_ready` raises
    the final error. :meth:`stop` terminates the child (SIGTERM, then SIGKILL after 10 s) and
    is safe to call twice.

    Attributes:
        model_path: The GGUF file served.
        context_tokens: Context size in tokens.
        threads: CPU threads (0: all cores).
        chat_format: llama-cpp-python chat format, None for the model's template.
        clip_model_path: The multimodal projector of a vision model (``vision.model``), or
            None for a text-only brain.
        start_timeout_s: How long to wait for ``/v1/models`` to answer, in seconds.
        python: Interpreter with ``llama_cpp`` installed.
        log_path: Where the server's output goes (``<cache>/logs/<log_name>-<pid>.log`` by
            default; restarts append to it).
        log_name: The default log's name: ``local-brain``, or ``local-vision`` for the
            vision model's server, so that two servers of one process log apart.
        extra_env: Environment variables added for the child process.
        server_module: The module run with ``python -m``: loopact's server with the prompt
            prefix cache (:mod:`loopact.llm.local.server`) or plain ``llama_cpp.server``.
        state_dir: Where saved prompt-prefix states live (``<cache>/prompt-states``).
        max_restarts: Restarts allowed within ``restart_window_s`` (issue 13: 3 in 5 min).
        restart_window_s: The window for ``max_restarts``, in seconds.
        on_status: Called with a :class:`BrainStatus` on every change of state.
        health_path: A path the server answers without waiting for the model
            (``/loopact/health`` of :mod:`loopact.llm.local.server`); when set, a server that
            leaves ``health_failures`` checks ``health_interval_s`` apart unanswered is
            killed and restarted like a crashed one (a hung server). None: no check.
        health_interval_s: Seconds between health checks.
        health_failures: Unanswered checks in a row that count as hung.
    """

    model_path: Path
    context_tokens: int = 8192
    threads: int = 0
    chat_format: str | None = None
    clip_model_path: Path | None = None
    start_timeout_s: float = 180.0
    python: str = sys.executable
    log_path: Path | None = None
    log_name: str = "local-brain"
    extra_env: dict[str, str] | None = None
    port: int = 0
    server_module: str = SERVER_MODULE
    state_dir: Path | None = None
    max_restarts: int = 3
    restart_window_s: float = 300.0
    on_status: Callable[[BrainStatus], None] | None = None
    health_path: str | None = None
    health_interval_s: float = 5.0
    health_failures: int = 3
    started_s: float = 0.0
    generation: int = 0
    final_error: str | None = None
    last_crash: str = ""
    _proc: asyncio.subprocess.Process | None = None
    _state: BrainState = "stopped"
    _detail: str = ""
    _restarts: deque[float] = field(default_factory=deque)
    _n_restarts: int = 0
    _supervisor: asyncio.Task[None] | None = None
    _stopping: bool = False
    _pulse: asyncio.Event | None = None

    @classmethod
    def from_config(cls, cfg: LocalConfig) -> LocalBrain:
        """A brain as the ``local`` config section describes.

        Raises:
            ConfigError: The model file is missing, damaged or not GGUF, or llama-cpp-python's
                server is not installed (the message says to run ``make local-brain``).
        """
        model_path = resolve_model_path(cfg)
        if not server_installed():
            raise ConfigError(
                "the local brain needs llama-cpp-python with its server extra in this Python "
                f"({sys.executable}); run `make local-brain`, or configure a model endpoint "
                "(LOOPACT_BASE_URL / LOOPACT_API_KEY)",
                key="local",
            )
        check_installed_build()
        return cls(
            model_path=model_path,
            context_tokens=cfg.context_tokens,
            threads=cfg.threads or 0,
            chat_format=pick_chat_format(model_path, cfg.chat_format),
            start_timeout_s=cfg.start_timeout_s,
            max_restarts=cfg.max_restarts,
            restart_window_s=cfg.restart_window_s,
            health_path=HEALTH_PATH if cfg.prompt_cache else None,
            server_module=SERVER_MODULE if cfg.prompt_cache else "llama_cpp.server",
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint root, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.returncode is None

    @property
    def pid(self) -> int | None:
        """The current child's process id (None before the first start)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def state(self) -> BrainState:
        """The supervisor's state (see :data:`BrainState`)."""
        return self._state

    def status(self) -> BrainStatus:
        """A snapshot for ``/status``, the web console and the trace."""
        return BrainStatus(
            self._state,
            self.model_path.name,
            self.port,
            self._n_restarts,
            str(self.log_path or ""),
            self._detail,
        )

    def _set(self, state: BrainState, detail: str = "") -> None:
        self._state, self._detail = state, detail
        pulse, self._pulse = self._pulse, asyncio.Event()
        if pulse is not None:
            pulse.set()
        if self.on_status is not None:
            try:
                self.on_status(self.status())
            except Exception:
                log.exception("local brain status callback failed")

    async def start(self) -> str:
        """Start the server, wait until ``GET /v1/models`` answers 200, then supervise it.

        Returns:
            :attr:`base_url`.

        Raises:
            ModelFatalError: The server exited or did not answer within ``start_timeout_s``;
                the message says how it ended and ends with the tail of its output.
        """
        if self.running:
            return self.base_url
        self._stopping = False
        self._set("starting")
        try:
            await self._spawn()
        except BaseException as exc:
            self._set("failed", str(exc).splitlines()[0] if str(exc) else "")
            raise
        self._set("ready")
        self._supervisor = asyncio.ensure_future(self._supervise())
        return self.base_url

    async def _spawn(self) -> None:
        """Start one server process and wait until it answers (stopping it on failure)."""
        threads = self.threads or os.cpu_count() or 1
        if not self.port or not port_free(self.port):
            self.port = free_port()
        if self.log_path is None:
            self.log_path = default_log_path(name=self.log_name)
        cmd = server_command(
            self.model_path,
            self.port,
            self.context_tokens,
            threads,
            self.chat_format,
            self.python,
            module=self.server_module,
            state_dir=self.state_dir or cache_dir() / "prompt-states",
            clip_model_path=self.clip_model_path,
        )
        log.info("starting the local brain: %s", " ".join(cmd))
        t0 = time.monotonic()
        self.generation += 1
        with self.log_path.open("ab" if self.generation > 1 else "wb") as out:
            if self.generation > 1:
                out.write(f"\n--- loopact: restart {self._n_restarts} ---\n".encode())
                out.flush()
            self._proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env={**SERVER_ENV, **os.environ, **(self.extra_env or {})},
                preexec_fn=die_with_parent,
            )
        try:
            await self._wait_ready(t0)
        except BaseException:
            await self._terminate()
            raise
        self.started_s = time.monotonic() - t0
        log.info("local brain ready on port %d after %.1f s", self.port, self.started_s)

    async def _wait_ready(self, t0: float) -> None:
        assert self._proc is not None and self.log_path is not None
        deadline = t0 + self.start_timeout_s
        while True:
            if self._proc.returncode is not None:
                raise ModelFatalError(
                    "the local brain (llama.cpp server) exited while starting ("
                    f"{describe_exit(self._proc.returncode)}; exited with code "
                    f"{self._proc.returncode}). Its output ({self.log_path}) ends with:\n"
                    + log_tail(self.log_path)
                )
            status = await http_status(self.port, "/v1/models")
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise ModelFatalError(
                    f"the local brain (llama.cpp server) did not answer on port {self.port} "
                    f"within {self.start_timeout_s:.0f} s. Its output ({self.log_path}) ends "
                    "with:\n" + log_tail(self.log_path)
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(self._proc.wait(), _POLL_S)

    async def _supervise(self) -> None:
        """Watch the child; restart it after a crash, within the restart bound (issue 13)."""
        while not self._stopping:
            proc = self._proc
            assert proc is not None
            hung = await self._watch(proc)
            if self._stopping:
                return
            how = describe_exit(proc.returncode)
            if hung:
                how = (
                    f"it stopped answering: no reply to {self.health_path} for "
                    f"{self.health_interval_s * self.health_failures:g} s, so it was killed"
                )
            while True:
                now = time.monotonic()
                while self._restarts and self._restarts[0] < now - self.restart_window_s:
                    self._restarts.popleft()
                if len(self._restarts) >= self.max_restarts:
                    self.final_error = (
                        f"the local model server crashed again ({how}) after "
                        f"{len(self._restarts)} restarts within "
                        f"{self.restart_window_s / 60:g} min; not restarting it. Its log: "
                        f"{self.log_path}. Run `make local-brain` (it rebuilds and self-tests "
                        "the server on this CPU) or configure a hosted model endpoint "
                        "(LOOPACT_BASE_URL / LOOPACT_API_KEY)."
                    )
                    self._set("failed", self.final_error)
                    return
                self.last_crash = (
                    f"the local model server crashed ({how}); log: {self.log_path}; restarting it"
                )
                self._set("crashed", self.last_crash)
                self._restarts.append(now)
                self._n_restarts += 1
                self._set("restarting")
                try:
                    await self._spawn()
                except ModelFatalError as exc:
                    how = f"{describe_exit(self._proc.returncode if self._proc else None)}, "
                    how += "while restarting: " + str(exc).splitlines()[0]
                    continue
                self._set("ready", f"restarted after a crash in {self.started_s:.1f} s")
                break

    async def _watch(self, proc: asyncio.subprocess.Process) -> bool:
        """Wait until ``proc`` exits; kill it when it stops answering its health check.

        Returns:
            True when it was killed for not answering ``health_path`` ``health_failures``
            times in a row (a hung server), False when it exited by itself.
        """
        if not self.health_path:
            await proc.wait()
            return False
        misses = 0
        while True:
            try:
                await wait_within(asyncio.shield(proc.wait()), self.health_interval_s)
                return False
            except asyncio.TimeoutError:
                pass
            ok = await http_status(self.port, self.health_path) == 200
            misses = 0 if ok else misses + 1
            if misses >= self.health_failures and proc.returncode is None:
                log.warning("local brain does not answer its health check; killing it")
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
                return True

    async def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait until the server is ready (e.g. while it restarts after a crash).

        Args:
            timeout_s: Longest wait in seconds (``start_timeout_s`` + 5 when None).

        Raises:
            ModelFatalError: It failed for good (the final error), is stopped, or did not
                become ready in time.
        """
        limit = (self.start_timeout_s + 5.0) if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        while self._state != "ready" or not self.running:
            if self._state == "failed":
                raise ModelFatalError(self.final_error or self._detail or "local brain failed")
            if self._state == "stopped":
                raise ModelFatalError("the local model server is not running")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ModelFatalError(
                    f"the local model server did not become ready within {limit:.0f} s "
                    f"(state: {self._state}); log: {self.log_path}"
                )
            pulse = self._pulse or asyncio.Event()
            self._pulse = pulse
            with contextlib.suppress(asyncio.TimeoutError):
                await wait_within(pulse.wait(), min(remaining, _POLL_S * 4))

    async def exited(self, generation: int, grace_s: float = 3.0) -> bool:
        """True when the server process of ``generation`` has exited (waiting up to grace_s).

        A model request that failed with a connection error asks this to tell a crash of
        the server from an ordinary network or protocol failure.
        """
        if generation != self.generation:
            return True
        proc = self._proc
        if proc is None:
            return True
        try:
            await wait_within(asyncio.shield(proc.wait()), grace_s)
        except asyncio.TimeoutError:
            return False
        return True

    async def _terminate(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await wait_within(proc.wait(), _STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("local brain did not stop after SIGTERM; killing it")
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await wait_within(proc.wait(), _STOP_TIMEOUT_S)

    async def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        self._stopping = True
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None and not supervisor.done():
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await supervisor
        was_running = self.running
        await self._terminate()
        if self._state not in ("stopped", "failed"):  # a failed brain stays failed
            self._set("stopped")
        if was_running:
            log.info("local brain stopped")

    async def __aenter__(self) -> LocalBrain:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
