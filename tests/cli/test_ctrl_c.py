"""Ctrl-C at any moment of ``loopact``'s start-up exits 130 without a traceback (the CLI).

The installed ``loopact`` script is started as a user starts it, and SIGINT is sent when its
stderr shows (with ``PYTHONVERBOSE``) that a given module is being imported: the first
import of the ``loopact`` package, deep inside it, the CLI's own imports, the command's
lazy imports, and, once everything is imported, while the task waits for the model. Every
wait is for an event, with a timeout; the model never answers in time, so the process is
always still starting or waiting when the signal arrives.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import IO

import pytest

from loopact.testing import ScriptedModelServer

LOOPACT = Path(sys.executable).with_name("loopact")
WAIT_S = 60.0

pytestmark = pytest.mark.skipif(
    not LOOPACT.exists(), reason=f"no loopact script beside {sys.executable}: pip install -e ."
)

_VERBOSE_PREFIXES = ("#", "import ", "Processing ", "Adding directory", "Python 3", 'Type "help"')
"""How the lines ``PYTHONVERBOSE`` adds to stderr start."""


@pytest.fixture
def slow_server() -> Iterator[ScriptedModelServer]:
    """A model server that takes a minute to answer (stopping it wakes the delay)."""
    server = ScriptedModelServer({"turns": [{"text": "too late", "delay_s": WAIT_S}]}).start()
    yield server
    server.stop()


def _sigint_as_at_a_terminal() -> None:
    """Run in the child before exec: SIGINT default and unblocked, as a shell's foreground job
    has it. A test run started as a background job of a script (``make test &``) has SIGINT
    ignored, which every child would inherit, and an ignored Ctrl-C rightly stops nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start(tmp_path: Path, server: ScriptedModelServer, verbose: bool) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPACT_")}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    env.pop("PYTHONVERBOSE", None)
    if verbose:
        env["PYTHONVERBOSE"] = "1"
    args = ["run", "--robot", "none", "--no-web", "--no-memory", "--once", "hi"]
    args += ["--base-url", server.base_url, "--model", "m", "--workspace", str(tmp_path / "ws")]
    return subprocess.Popen(
        [str(LOOPACT), *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # the reply; the task never gets one
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_at_a_terminal,
    )


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _wait_for_line(lines: queue.Queue[str | None], marker: str, seen: list[str]) -> None:
    """Read stderr lines into ``seen`` until one contains ``marker``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"loopact did not import {marker!r} in {WAIT_S} s")
        if line is None:
            pytest.fail(f"loopact ended before importing {marker!r}:\n{''.join(seen)[-3000:]}")
        seen.append(line)
        if marker in line:
            return


def _wait_for_request(server: ScriptedModelServer) -> None:
    deadline = time.monotonic() + WAIT_S
    while not server.requests:
        assert time.monotonic() < deadline, "loopact never asked the model"
        time.sleep(0.02)


def _finish(
    proc: subprocess.Popen[str],
    reader: threading.Thread,
    seen: list[str],
    lines: queue.Queue[str | None],
) -> list[str]:
    proc.wait(timeout=WAIT_S)
    reader.join(timeout=WAIT_S)
    while not lines.empty():
        line = lines.get()
        if line is not None:
            seen.append(line)
    return [line for line in seen if not line.startswith(_VERBOSE_PREFIXES)]


@pytest.mark.parametrize(
    "marker",
    [
        "/loopact/__init__.py",  # the package's first import
        "/loopact/agent/",  # deep inside `import loopact`
        "/typer/",  # the CLI's own imports
        "/yaml/",  # the reported traceback was inside yaml / re
        "/loopact/app/",  # the command's lazy imports, inside typer
        "",  # everything imported: the task waits for the model
    ],
    ids=["package", "agent", "typer", "yaml", "app", "running"],
)
def test_ctrl_c_during_start_up_exits_130_without_a_traceback(
    tmp_path: Path, slow_server: ScriptedModelServer, marker: str
) -> None:
    proc = _start(tmp_path, slow_server, verbose=bool(marker))
    assert proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        if marker:
            _wait_for_line(lines, marker, seen)
        else:
            _wait_for_request(slow_server)
        proc.send_signal(signal.SIGINT)
        said = _finish(proc, reader, seen, lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
    assert proc.returncode == 130, "".join(said)[-3000:]
    assert not any("Traceback" in line for line in said), "".join(said)[-3000:]
    if marker:  # a running task's Ctrl-C says what it stopped, on lines of its own
        assert len(said) <= 1 and all(len(line) <= 80 for line in said), said


def test_ctrl_c_right_after_the_start_exits_130_or_dies_of_the_signal(
    tmp_path: Path, slow_server: ScriptedModelServer
) -> None:
    """Sent at once, SIGINT may reach the interpreter before it installs its handler: then
    the signal ends it (``-SIGINT``, which a shell reports as 130, silently)."""
    proc = _start(tmp_path, slow_server, verbose=False)
    proc.send_signal(signal.SIGINT)
    try:
        _none, stderr = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
    if "Fatal Python error: init_import_site" in stderr:
        pytest.skip("SIGINT reached the interpreter while it imported site, before loopact")
    assert proc.returncode in (130, -signal.SIGINT), stderr
    assert "Traceback" not in stderr, stderr
    assert len(stderr.splitlines()) <= 1, stderr


def test_the_script_enters_through_the_module_that_imports_nothing_of_loopact() -> None:
    import _loopact_entry
    from loopact.cli import EXIT_INTERRUPTED

    assert _loopact_entry.EXIT_INTERRUPTED == EXIT_INTERRUPTED
    (script,) = entry_points(group="console_scripts", name="loopact")
    assert script.value == "_loopact_entry:main", "an old install: pip install -e ."
