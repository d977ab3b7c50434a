"""``shell_exec(command)``: run one allowed program, never a shell (issue 19, SPEC C5, C6).

Off by default (``tools.shell.enabled``). The command is split like a POSIX shell would split
words (:func:`shlex.split`) but no shell runs it: text that only a shell would interpret
(``;``, ``|``, ``&``, ``$``, backticks, ``>``, ``<``, parentheses, braces, newlines) is refused
outright, so ``ls; rm x`` and ``$(id)`` never run anything. The program must be on the
allow-list (``tools.shell.allow``: executable -> allowed first arguments, ``[]`` = any); it is
started with :func:`asyncio.create_subprocess_exec` in its own session (so its whole process
group can be killed), with no standard input, a minimal environment (no API keys or
passwords of this process), and a working folder inside the workspace. At ``timeout_s`` the
process group gets SIGTERM, then SIGKILL; the same happens when the call is cancelled
(preemption) or the output passes :data:`HARD_OUTPUT_BYTES`. Output beyond
``max_output_chars`` is cut and says so. The result's metadata records what ran (``argv``,
``cwd``, ``exit_code``, ``duration_s``, ``timed_out``, ``truncated``), so the trace holds
everything the tool ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopact._compat import wait_within
from loopact.errors import ToolError
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.tools.builtin.files import Workspace

log = logging.getLogger(__name__)

SHELL_SYNTAX = (";", "|", "&", "$", "`", ">", "<", "(", ")", "{", "}", "\n", "\r", "\0")
"""Characters only a shell would interpret; a command holding any of them is refused."""

HARD_OUTPUT_BYTES = 4 * 1024 * 1024
"""A command that prints more than this (stdout + stderr) is stopped (its group killed)."""

KILL_GRACE_S = 0.5
"""Seconds between SIGTERM and SIGKILL of a command's process group."""

_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME")


@dataclass(frozen=True)
class ShellSettings:
    """``tools.shell`` (see the module docstring).

    Attributes:
        allow: Executable name (or absolute path) -> allowed first arguments; empty = any.
        timeout_s: The command's time limit, in seconds.
        max_output_chars: Characters of stdout + stderr kept for the model.
    """

    allow: Mapping[str, Sequence[str]] = field(default_factory=dict)
    timeout_s: float = 10.0
    max_output_chars: int = 8000


def parse_command(command: str, allow: Mapping[str, Sequence[str]]) -> list[str]:
    """The argv of ``command`` after the no-shell and allow-list checks.

    Args:
        command: The command line the model wrote.
        allow: The allow-list (see :class:`ShellSettings`).

    Returns:
        ``[program, arg, ...]``; ``program`` as written (resolved on ``PATH`` later).

    Raises:
        ToolError: Empty, shell syntax, unbalanced quotes, a program not on the allow-list,
            or a first argument the rule does not allow (the message names what is allowed).
    """
    if not command.strip():
        raise ToolError("shell_exec needs a command, e.g. 'uptime'")
    found = sorted({c for c in SHELL_SYNTAX if c in command})
    if found:
        shown = " ".join(repr(c) for c in found)
        raise ToolError(
            f"refused: {shown} is shell syntax; shell_exec runs one program without a shell "
            "(no pipes, redirections, command lists or substitutions). Run one command per call."
        )
    try:
        argv = shlex.split(command, posix=True)
    except ValueError as exc:
        raise ToolError(f"cannot split the command into words: {exc}") from None
    if not argv:
        raise ToolError("shell_exec needs a command, e.g. 'uptime'")
    program = argv[0]
    allowed = ", ".join(sorted(allow)) or "(none)"
    if program not in allow:
        raise ToolError(
            f"refused: {program!r} is not on the allow-list (tools.shell.allow); "
            f"allowed programs: {allowed}"
        )
    rule = list(allow[program])
    if rule and (len(argv) < 2 or argv[1] not in rule):
        first = repr(argv[1]) if len(argv) > 1 else "no argument"
        raise ToolError(
            f"refused: {program} with {first}; its first argument must be one of: "
            + ", ".join(rule)
        )
    return argv


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
    env.setdefault("PATH", os.defpath)
    env["TERM"] = "dumb"
    return env


def _kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, then SIGKILL after :data:`KILL_GRACE_S`; reap the child."""
    _kill_group(proc, signal.SIGTERM)
    try:
        await wait_within(proc.wait(), KILL_GRACE_S)
    except asyncio.TimeoutError:
        pass
    _kill_group(proc, signal.SIGKILL)  # children that ignored SIGTERM, even if the leader died
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


class _Output:
    """Collects both streams up to a byte budget; flags when the hard limit is passed."""

    def __init__(self, keep_bytes: int) -> None:
        self.keep_bytes = keep_bytes
        self.parts: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.total = 0
        self.overflow = asyncio.Event()

    async def read(self, name: str, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        buf = self.parts[name]
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            room = self.keep_bytes - len(buf)
            if room > 0:
                buf += chunk[:room]
            if self.total > HARD_OUTPUT_BYTES:
                self.overflow.set()
                return


async def run_command(
    argv: list[str], cwd: str, settings: ShellSettings, workspace: Workspace
) -> ToolResult:
    """Run ``argv`` (already checked by :func:`parse_command`) in ``cwd`` of ``workspace``.

    Returns:
        ``data = {exit_code, stdout, stderr}`` (ok when the exit code is 0); metadata
        ``argv, cwd, exit_code, duration_s, timed_out, truncated, output_bytes``.

    Raises:
        ToolError: The folder is outside the workspace or missing, or the program cannot be
            started.
        asyncio.CancelledError: The call was cancelled; the process group was killed first.
    """
    folder = workspace.resolve(cwd)
    if not folder.is_dir():
        raise ToolError(f"working folder '{cwd}' does not exist in the workspace")
    exe = shutil.which(argv[0]) if "/" not in argv[0] else argv[0]
    if exe is None:
        raise ToolError(f"{argv[0]!r} is allowed but not installed (not found on PATH)")
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            exe,
            *argv[1:],
            cwd=folder,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_child_env(),
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    out = _Output(keep_bytes=settings.max_output_chars * 4)
    readers = asyncio.gather(out.read("stdout", proc.stdout), out.read("stderr", proc.stderr))
    waiter = asyncio.ensure_future(proc.wait())
    overflow = asyncio.ensure_future(out.overflow.wait())
    timed_out = stopped_for_output = False
    try:
        done, _ = await asyncio.wait(
            {waiter, overflow}, timeout=settings.timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            timed_out = overflow not in done
            stopped_for_output = not timed_out
            await _stop(proc)
        with contextlib.suppress(asyncio.TimeoutError):
            await wait_within(readers, KILL_GRACE_S * 4)
    finally:
        overflow.cancel()
        if proc.returncode is None:  # cancelled (preemption): never leave it running
            await asyncio.shield(_stop(proc))
        readers.cancel()
    return _result(argv, workspace.relative(folder), proc.returncode, out, settings, started,
                   timed_out, stopped_for_output)  # fmt: skip


def _result(
    argv: list[str],
    cwd: str,
    code: int | None,
    out: _Output,
    settings: ShellSettings,
    started: float,
    timed_out: bool,
    stopped_for_output: bool,
) -> ToolResult:
    texts = {k: bytes(v).decode("utf-8", errors="replace") for k, v in out.parts.items()}
    budget = settings.max_output_chars
    truncated = out.total > sum(len(v) for v in out.parts.values())
    for name in ("stdout", "stderr"):
        text = texts[name]
        if len(text) > budget:
            text, truncated = text[:budget], True
        budget -= len(text)
        texts[name] = text
    if truncated:
        texts["stdout"] += (
            f"\n[output cut: {out.total} bytes printed, "
            f"{settings.max_output_chars} characters kept]"
        )
    metadata: dict[str, Any] = {
        "argv": argv,
        "cwd": cwd,
        "exit_code": code,
        "duration_s": round(time.monotonic() - started, 3),
        "timed_out": timed_out,
        "truncated": truncated,
        "output_bytes": out.total,
    }
    data = {"exit_code": code, **texts}
    if timed_out:
        return ToolResult.failure(
            f"{argv[0]} did not finish within {settings.timeout_s:g} s; its process group "
            "was killed",
            data=data,
            **metadata,
        )
    if stopped_for_output:
        return ToolResult.failure(
            f"{argv[0]} printed more than {HARD_OUTPUT_BYTES // (1024 * 1024)} MB, the most "
            f"shell_exec reads, and was stopped; its output is cut to the first "
            f"{settings.max_output_chars} characters (data.stdout, data.stderr)",
            data=data,
            **metadata,
        )
    if code != 0:
        tail = (texts["stderr"] or texts["stdout"]).strip()[-300:]
        return ToolResult.failure(
            f"{argv[0]} exited with code {code}: {tail}", data=data, **metadata
        )
    return ToolResult(ok=True, data=data, metadata=metadata)


def make_shell_tool(workspace: Workspace, settings: ShellSettings) -> Tool:
    """``shell_exec`` over ``settings.allow``, confined to ``workspace`` (write class).

    Args:
        workspace: The folder commands run in (``cwd`` is relative to it).
        settings: Allow-list, timeout and output cap.
    """
    allowed = ", ".join(sorted(settings.allow)) or "(none)"

    @tool(
        safety=SafetyClass.WRITE,
        timeout_s=settings.timeout_s + 5.0,
        description=(
            "Run one allowed program (no shell: no pipes, redirections or substitutions) in "
            f"the workspace and return its exit code and output. Allowed programs: {allowed}."
        ),
    )
    async def shell_exec(command: str, ctx: ToolContext, cwd: str = ".") -> ToolResult:
        """Run a command.

        Args:
            command: One program and its arguments, e.g. 'uptime' or 'ls -l logs'.
            cwd: Working folder relative to the workspace.
        """
        try:
            argv = parse_command(command, settings.allow)
        except ToolError as exc:
            log.info("shell_exec refused %r: %s", command, exc)
            return ToolResult.failure(str(exc), command=command, refused=True)
        ctx.progress(f"running {shlex.join(argv)}")
        try:
            return await run_command(argv, cwd, settings, workspace)
        except ToolError as exc:
            return ToolResult.failure(str(exc), argv=argv, cwd=cwd)

    return shell_exec
