"""The supervised local brain (issue 13): crash line, restart, retry, restart bound.

The child process is a stand-in ``llama_cpp.server`` (on ``PYTHONPATH``, tests/llm/local/fakes.py)
that serves loopact's scripted model server on the port it is given, so the real provider code
talks real HTTP to a real process that really dies (SIGKILL from the test, or SIGSEGV by itself
on its first chat request). Each start of the child reads its own script (``gen<N>.json``,
else ``default.json``), so a restarted server answers from its own turns.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.llm.local.fakes import fake_server_files, gguf, write

from loopact.agent import Agent, AgentOptions
from loopact.channels.terminal import ProgressPrinter
from loopact.config import Config, LocalConfig
from loopact.errors import ModelFatalError
from loopact.events import EventBus
from loopact.llm.local.launch import describe_exit
from loopact.llm.local.process import BrainStatus, LocalBrain
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry


@pytest.fixture
def fake_server(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(scripts folder, env): a stand-in ``llama_cpp.server`` serving scripted turns."""
    return fake_server_files(tmp_path)


def test_exit_descriptions_name_the_signal() -> None:
    assert describe_exit(-11).startswith("signal 11 / SIGSEGV")
    assert "general protection fault" in describe_exit(-11)
    assert describe_exit(-4).startswith("signal 4 / SIGILL")
    assert describe_exit(-9).startswith("signal 9 / SIGKILL")
    assert describe_exit(1) == "exit code 1"


async def test_killed_server_mid_task_is_restarted_and_the_task_retried(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    scripts, env = fake_server
    # the first server never answers in time; it is killed while the request waits
    write(scripts, "gen1.json", [{"delay_s": 60, "text": "too late"}])
    write(
        scripts,
        "gen2.json",
        [
            {"text": "Hello after the restart."},
            {"tool_calls": [{"name": "file_list", "arguments": {}}]},
            {"text": "The workspace is empty."},
        ],
    )
    bus = EventBus()
    statuses: list[dict[str, Any]] = []

    def on_status(st: BrainStatus) -> None:
        statuses.append(st.as_dict())
        bus.emit("local_brain", None, **st.as_dict())

    brain = LocalBrain(
        model_path=gguf(tmp_path / "m.gguf"),
        start_timeout_s=60,
        log_path=tmp_path / "server.log",
        extra_env=env,
        server_module="llama_cpp.server",
        on_status=on_status,
    )
    from loopact.app.model import make_model

    cfg = Config(local=LocalConfig(model_path=brain.model_path, prompt_cache=False))
    await brain.start()
    out = io.StringIO()
    bus.subscribe(ProgressPrinter(Console(file=out, width=300), stream_text=False))
    requested = asyncio.Event()
    bus.subscribe(lambda ev: requested.set() if ev.type == "model_request" else None)
    registry = ToolRegistry(make_builtin_tools(tmp_path / "ws"))
    agent = Agent(
        make_model(cfg, local_brain=brain),
        registry,
        AgentOptions(
            system_prompt="You are a robot.", interactive=False, workspace=tmp_path / "ws"
        ),
        bus=bus,
    )
    try:
        first_pid = brain.pid
        task = asyncio.ensure_future(agent.run_task("hello"))
        await asyncio.wait_for(requested.wait(), 30)
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(task, 60)
        assert outcome.status == "completed", outcome
        assert outcome.reply == "Hello after the restart."
        assert brain.pid != first_pid and brain.state == "ready"
        # the next task runs on the new server as usual
        outcome = await asyncio.wait_for(agent.run_task("what is in the workspace?"), 60)
        assert outcome.status == "completed" and outcome.reply == "The workspace is empty."
    finally:
        await agent.close()
        await brain.stop()
    printed = out.getvalue()
    crash_lines = [ln for ln in printed.splitlines() if "crashed" in ln]
    assert len(crash_lines) == 1, printed
    assert "the local model server crashed (signal 9 / SIGKILL" in crash_lines[0]
    assert f"log: {tmp_path / 'server.log'}; restarting it" in crash_lines[0]
    assert "model request failed" not in printed  # one clear line, no retry noise
    states = [s["state"] for s in statuses]
    assert states[:2] == ["starting", "ready"]
    assert states[2:5] == ["crashed", "restarting", "ready"], states
    assert statuses[4]["restarts"] == 1 and statuses[4]["model_file"] == "m.gguf"
    assert (scripts / "started-2").exists() and not (scripts / "started-3").exists()
    # llama.cpp's OpenMP threads wait passively, so they do not fight other work for the cores
    assert "OMP_WAIT_POLICY=PASSIVE" in (tmp_path / "server.log").read_text()
    assert agent.status()["backend"]["state"] == "stopped"


async def test_a_crash_in_the_middle_of_an_answer_is_told_by_its_crash_line(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    """Killed after part of the answer streamed: the retry says why (the crash line)."""
    scripts, env = fake_server
    slow = {"text": "The first words arrive, then nothing more. " * 40, "chunk_size": 8}
    write(scripts, "gen1.json", [{**slow, "chunk_delay_s": 0.5}])
    write(scripts, "gen2.json", [{"text": "Answered by the restarted server."}])
    brain = LocalBrain(
        model_path=gguf(tmp_path / "m.gguf"),
        start_timeout_s=60,
        log_path=tmp_path / "server.log",
        extra_env=env,
        server_module="llama_cpp.server",
    )
    from loopact.app.model import make_model

    cfg = Config(local=LocalConfig(model_path=brain.model_path, prompt_cache=False))
    await brain.start()
    bus = EventBus()
    out = io.StringIO()
    bus.subscribe(ProgressPrinter(Console(file=out, width=400), stream_text=False))
    streaming = asyncio.Event()
    bus.subscribe(lambda ev: streaming.set() if ev.type == "text_delta" else None)
    agent = Agent(
        make_model(cfg, local_brain=brain),
        ToolRegistry(),
        AgentOptions(system_prompt="s", interactive=False, workspace=tmp_path / "ws"),
        bus=bus,
    )
    try:
        first_pid = brain.pid
        task = asyncio.ensure_future(agent.run_task("hello"))
        await asyncio.wait_for(streaming.wait(), 30)  # part of the answer has arrived
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(task, 60)
    finally:
        await agent.close()
        await brain.stop()
    assert outcome.status == "completed", outcome
    assert outcome.reply == "Answered by the restarted server."
    assert brain.last_crash.startswith("the local model server crashed (signal 9 / SIGKILL")
    retries = [ln for ln in out.getvalue().splitlines() if "model request failed" in ln]
    assert retries and all(brain.last_crash in ln for ln in retries), out.getvalue()


async def test_restart_bound_ends_with_the_final_error(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    scripts, env = fake_server
    write(scripts, "default.json", [{"delay_s": 30, "text": "never"}], crash_on_request="SIGSEGV")
    statuses: list[str] = []
    brain = LocalBrain(
        model_path=gguf(tmp_path / "m.gguf"),
        start_timeout_s=60,
        log_path=tmp_path / "server.log",
        extra_env=env,
        server_module="llama_cpp.server",
        max_restarts=2,
        on_status=lambda st: statuses.append(st.state),
    )
    from loopact.app.model import make_model

    cfg = Config(local=LocalConfig(model_path=brain.model_path, prompt_cache=False))
    await brain.start()
    agent = Agent(
        make_model(cfg, local_brain=brain),
        ToolRegistry(),
        AgentOptions(system_prompt="s", interactive=False, workspace=tmp_path / "ws"),
    )
    try:
        outcome = await asyncio.wait_for(agent.run_task("hello"), 120)
    finally:
        await agent.close()
        await brain.stop()
    assert outcome.status == "failed"
    assert "after 2 restarts" in (outcome.error or ""), outcome.error
    assert "make local-brain" in (outcome.error or "")
    assert statuses.count("crashed") == 2 and "failed" in statuses
    assert len(list(scripts.glob("started-*"))) == 3  # the first start and two restarts
    with pytest.raises(ModelFatalError, match="not restarting it"):
        await brain.wait_ready(1)


def _cli_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a ``loopact run`` with no endpoint and its own cache folder."""
    full_env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LOOPACT_API_KEY", "OPENAI_API_KEY", "LOOPACT_BASE_URL", "LOOPACT_MODEL")
    }
    full_env.update(env)
    full_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    full_env["XDG_DATA_HOME"] = str(tmp_path / "data")
    full_env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return full_env


def test_cli_with_a_server_that_always_crashes_exits_1_with_the_final_error(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    scripts, env = fake_server
    write(scripts, "default.json", [{"delay_s": 30, "text": "never"}], crash_on_request="SIGSEGV")
    model = gguf(tmp_path / "m.gguf")
    cfg = tmp_path / "loopact.yaml"
    cfg.write_text(f"local:\n  model_path: {model}\n  prompt_cache: false\n")
    full_env = _cli_env(tmp_path, env)
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", "run", "--once", "hello", "--robot", "none"]
        + ["--config", str(cfg), "--no-web", "--workspace", str(tmp_path / "ws")],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    err = proc.stderr
    # one crash line per crash; the loop's retry lines name the crash too (SPEC X1)
    crash = "the local model server crashed (signal 11 / SIGSEGV"
    assert [ln.strip().startswith(crash) for ln in err.splitlines()].count(True) == 3, err
    retries = [ln for ln in err.splitlines() if "model request failed (" in ln]
    assert retries and all(crash in ln for ln in retries), err
    assert "after 3 restarts within 5 min; not restarting it" in err, err
    assert "make local-brain" in err
    assert "Traceback" not in err
    assert len(list(scripts.glob("started-*"))) == 4  # first start + 3 restarts, no more


async def test_a_server_that_stops_answering_is_killed_and_restarted(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    scripts, env = fake_server
    write(scripts, "gen1.json", [])
    write(scripts, "gen2.json", [{"text": "Back again."}])
    lines: list[str] = []
    brain = LocalBrain(
        model_path=gguf(tmp_path / "m.gguf"),
        start_timeout_s=60,
        log_path=tmp_path / "server.log",
        extra_env=env,
        server_module="llama_cpp.server",
        health_path="/v1/models",  # the stand-in answers it without a turn
        health_interval_s=0.2,
        health_failures=3,
        on_status=lambda st: lines.append(st.detail) if st.state == "crashed" else None,
    )
    from loopact.app.model import make_model

    cfg = Config(local=LocalConfig(model_path=brain.model_path, prompt_cache=False))
    await brain.start()
    agent = Agent(
        make_model(cfg, local_brain=brain),
        ToolRegistry(),
        AgentOptions(system_prompt="s", interactive=False, workspace=tmp_path),
    )
    try:
        hung = brain.pid
        assert hung is not None
        os.kill(hung, signal.SIGSTOP)  # alive, but answers nothing any more
        outcome = await asyncio.wait_for(agent.run_task("hello"), 60)
        assert outcome.status == "completed" and outcome.reply == "Back again.", outcome
        assert brain.pid != hung
    finally:
        await agent.close()
        await brain.stop()
    assert len(lines) == 1 and "it stopped answering: no reply to /v1/models" in lines[0], lines
    assert "so it was killed" in lines[0] and "restarting it" in lines[0]


async def _read_until(stream: asyncio.StreamReader, done: Any, seen: list[str]) -> None:
    """Read lines into ``seen`` until ``done(line)`` is true (60 s at most, then fail)."""

    async def read() -> None:
        while True:
            raw = await stream.readline()
            assert raw, "the process ended its output early:\n" + "".join(seen)
            seen.append(raw.decode())
            if done(seen[-1]):
                return

    await asyncio.wait_for(read(), 60)


async def test_a_second_loopact_run_gets_its_own_server_port_and_log(
    tmp_path: Path, fake_server: tuple[Path, dict[str, str]]
) -> None:
    """Issue 13 "Bad input": a second ``loopact run`` while the first holds its local server.

    Two real CLI processes with no endpoint: the first (a terminal chat) answers, the second
    (``--once``) starts its own server on another port with its own log and answers, and
    the first still answers from its own server afterwards.
    """
    scripts, env = fake_server
    write(scripts, "gen1.json", [{"text": "A answers first."}, {"text": "A answers again."}])
    write(scripts, "gen2.json", [{"text": "B answers."}])
    cfg = tmp_path / "loopact.yaml"
    cfg.write_text(f"local:\n  model_path: {gguf(tmp_path / 'm.gguf')}\n  prompt_cache: false\n")
    full_env = _cli_env(tmp_path, env)
    run = [sys.executable, "-m", "loopact", "run", "--robot", "none", "--config", str(cfg)]
    first = await asyncio.create_subprocess_exec(
        *run,
        "--no-web",
        "--workspace",
        str(tmp_path / "ws-a"),
        cwd=tmp_path,
        env=full_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert first.stdin is not None and first.stdout is not None
    seen: list[str] = []
    try:
        first.stdin.write(b"hello\n")
        await _read_until(first.stdout, lambda ln: "A answers first." in ln, seen)
        second = await asyncio.create_subprocess_exec(
            *run,
            "--once",
            "hello",
            "--no-web",
            "--workspace",
            str(tmp_path / "ws-b"),
            cwd=tmp_path,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out_b, err_b = await asyncio.wait_for(second.communicate(), 120)
        assert second.returncode == 0, err_b.decode()[-3000:]
        assert "B answers." in out_b.decode()
        # the first run's server was neither disturbed nor replaced by the second run
        first.stdin.write(b"again\n")
        await _read_until(first.stdout, lambda ln: "A answers again." in ln, seen)
        first.stdin.write(b"/status\n")
        await _read_until(first.stdout, lambda ln: ln.rstrip() == "}", seen)
        first.stdin.write(b"/quit\n")
        assert await asyncio.wait_for(first.wait(), 60) == 0
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    status = json.loads("".join(seen)[("".join(seen)).index("{\n") :])
    logs = tmp_path / "cache" / "loopact" / "logs"
    log_a, log_b = logs / f"local-brain-{first.pid}.log", logs / f"local-brain-{second.pid}.log"
    port_a = int(log_a.read_text().split("fake local server 1: pid ")[1].split()[2])
    port_b = int(log_b.read_text().split("fake local server 2: pid ")[1].split()[2])
    assert port_a != port_b
    assert "fake local server 2" not in log_a.read_text()
    assert status["backend"]["port"] == port_a and status["backend"]["log_path"] == str(log_a)
    assert status["backend"]["state"] == "ready" and status["backend"]["model_file"] == "m.gguf"
    assert not (scripts / "started-3").exists()  # no restart in either run
