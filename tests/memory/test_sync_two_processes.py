"""Issue 46 acceptance (item 2, SPEC E2): two ``loopact run`` processes share one memory remote
(a local bare repository). Each writes a fact while the remote is out of reach (so their
histories diverge: a simultaneous write), ``/status`` says what waits; once the remote is back,
within the sync interval each sees the other's fact (in its memory folder, and through
``recall``, in what the model is sent), both facts survive on the remote, ``/status`` says
nothing waits. Real processes; every wait is for something observable (a file's content, the
trace, the output), with a timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo
from tests.agent.helpers import call
from tests.memory.test_sync import remote_file
from tests.test_cli import cli_env

from loopact.testing import ScriptedModelServer

FACTS = {"a": "the charger is in room 2", "b": "the spare battery is on shelf 3"}
INTERVAL_S = 1.0


def until(check: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    """Wait until ``check()`` is truthy (polling an observable state), else fail."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@dataclass
class Robot:
    """One ``loopact run`` process, its stdout collected line by line."""

    name: str
    folder: Path
    server: ScriptedModelServer
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def trace(self) -> list[dict[str, Any]]:
        path = self.folder / "t.jsonl"
        if not path.exists():
            return []
        events = []
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:  # a line being written
                break
        return events

    def statuses(self) -> list[dict[str, Any]]:
        """Every ``/status`` JSON printed so far (the terminal prints it indented)."""
        text, out, decoder = "".join(self.lines), [], json.JSONDecoder()
        start = text.find('{\n  "memory"')
        while start != -1:
            value, end = decoder.raw_decode(text, start)
            out.append(value)
            start = text.find('{\n  "memory"', end)
        return out

    def facts(self) -> str:
        path = self.folder / "mem" / "facts.md"
        return path.read_text() if path.exists() else ""


def start(name: str, tmp_path: Path, bare: Path) -> Robot:
    folder = tmp_path / name
    folder.mkdir()
    mine, other = FACTS[name], FACTS["b" if name == "a" else "a"]
    server = ScriptedModelServer(
        [
            {"tool_calls": [call("remember", {"fact": mine}, f"r_{name}")]},
            {"text": "Noted."},
            {"tool_calls": [call("recall", {"query": ""}, f"q_{name}")]},
            {"text": "I remember both.", "expect": {"contains": other}},
        ]
    ).start()
    (folder / "c.yaml").write_text(
        f"memory:\n  path: {folder / 'mem'}\n  remote: {bare}\n  machine_id: robot-{name}\n"
        f"  sync_interval_s: {INTERVAL_S}\n  snapshots: false\n"
    )
    args = ["run", "--config", "c.yaml", "--robot", "none", "--no-web", "--board", "none"]
    args += ["--base-url", server.base_url, "--model", "m", "--trace", "t.jsonl"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopact", *args],
        cwd=folder,
        env=cli_env(folder),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    robot = Robot(name, folder, server, proc)
    threading.Thread(target=robot.read, daemon=True).start()
    return robot


@pytest.fixture
def robots(tmp_path: Path) -> Iterator[tuple[Path, Robot, Robot]]:
    bare = tmp_path / "remote.git"
    Repo.init_bare(str(bare), mkdir=True).close()
    a = start("a", tmp_path, bare)
    b = start("b", tmp_path, bare)
    try:
        yield bare, a, b
    finally:
        for r in (a, b):
            if r.proc.poll() is None:
                r.proc.kill()
            r.proc.wait(timeout=30)
            r.server.stop()


def test_two_processes_share_facts_while_running_and_keep_both_after_a_simultaneous_write(
    robots: tuple[Path, Robot, Robot],
) -> None:
    bare, a, b = robots
    for r in (a, b):  # both ready (the welcome is printed once everything is open, the
        until(lambda r=r: r.lines, f"{r.name}: the welcome")  # memory pulled at open)
    away = bare.with_name("remote.away")
    bare.rename(away)  # the remote is out of reach: the writes below diverge
    for r in (a, b):
        r.say(f"remember that {FACTS[r.name]}")
    for r in (a, b):
        until(
            lambda r=r: any(
                e["type"] == "memory_sync" and not e["ok"] and e["unsynced_commits"] >= 1
                for e in r.trace()
            ),
            f"{r.name}: a failed sync with its fact waiting",
        )
        r.say("/status")
    for r in (a, b):
        waiting = until(
            lambda r=r: [s for s in r.statuses() if s["memory"]["failures"] >= 1],
            f"{r.name}: /status reporting the unreachable remote",
        )[-1]["memory"]
        assert waiting["unsynced_commits"] >= 1 and waiting["last_error"]
        assert FACTS[r.name] in r.facts()  # kept locally
    away.rename(bare)  # back: within the interval (retries are no slower) both merge
    back = time.monotonic()
    for r in (a, b):
        until(lambda r=r: all(f in r.facts() for f in FACTS.values()), f"{r.name}: both facts")
    assert time.monotonic() - back < 20 * INTERVAL_S
    for r in (a, b):
        r.say("what do you remember?")
        until(lambda r=r: len(r.server.requests) == 4, f"{r.name}: the recall answered")
        recalled = json.dumps(r.server.requests[3].json()["messages"])
        assert FACTS["a"] in recalled and FACTS["b"] in recalled  # the model was told both
    for r in (a, b):
        until(
            lambda r=r: any(e["type"] == "memory_sync" and e["ok"] for e in r.trace()),
            f"{r.name}: a good sync",
        )
        r.say("/status")
        until(
            lambda r=r: any(
                s["memory"]["failures"] == 0 and s["memory"]["unsynced_commits"] == 0
                for s in r.statuses()
            ),
            f"{r.name}: /status with nothing waiting",
        )
        r.say("/quit")
    for r in (a, b):
        assert r.proc.wait(timeout=60) == 0, r.proc.stderr.read() if r.proc.stderr else ""
        r.server.assert_consumed()
    facts = remote_file(bare, "facts.md") or ""
    assert FACTS["a"] in facts and FACTS["b"] in facts
    merges = [e for r in (a, b) for e in r.trace() if e["type"] == "memory_sync"]
    assert "merged" in {e["integration"] for e in merges}  # the histories had diverged
