"""``/status`` and the web console show the local brain's state and model file (issue 13, SPEC B1).

A real :class:`~loopact.llm.local.process.LocalBrain` supervises a stand-in server process
(tests/llm/local/fakes.py: a ``llama_cpp.server`` package serving scripted turns over HTTP)
that the test kills with SIGKILL; the real agent talks to it through the real local-brain
model (:func:`loopact.app.model.make_model`), and its state changes become ``local_brain``
events as ``loopact run`` makes them (:func:`loopact.app.local.start_local_brain`).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from rich.console import Console
from tests.llm.local.fakes import fake_server_files, gguf, write
from websockets.asyncio.client import connect as ws_connect

from loopact.agent import Agent, AgentOptions
from loopact.app.model import make_model
from loopact.channels.terminal import TerminalChannel
from loopact.channels.web import serve_console
from loopact.config import Config, LocalConfig
from loopact.llm.local.process import BrainStatus, LocalBrain
from loopact.tools.registry import ToolRegistry

WAIT_S = 30.0


class Brain:
    """The brain, its agent, and every state change as it happened."""

    def __init__(self, tmp_path: Path, max_restarts: int) -> None:
        scripts, env = fake_server_files(tmp_path)
        write(scripts, "default.json", [])
        self.changes: list[BrainStatus] = []
        self.changed = asyncio.Event()
        self.brain = LocalBrain(
            model_path=gguf(tmp_path / "qwen-0.5b.gguf"),
            start_timeout_s=60,
            log_path=tmp_path / "server.log",
            extra_env=env,
            server_module="llama_cpp.server",
            max_restarts=max_restarts,
            on_status=self._on_status,
        )
        cfg = Config(local=LocalConfig(model_path=self.brain.model_path, prompt_cache=False))
        self.agent = Agent(
            make_model(cfg, local_brain=self.brain),
            ToolRegistry(),
            AgentOptions(system_prompt="s", interactive=False, workspace=tmp_path / "ws"),
        )
        self.watchers: list[Any] = []

    def _on_status(self, status: BrainStatus) -> None:
        self.agent.bus.emit("local_brain", None, **status.as_dict())  # as loopact run does
        self.changes.append(status)
        for watch in self.watchers:
            watch(status)
        self.changed.set()

    async def wait_for(self, state: str, restarts: int) -> None:
        """Until the brain reaches ``state`` after ``restarts`` restarts (WAIT_S at most)."""

        async def loop() -> None:
            while not any(s.state == state and s.restarts == restarts for s in self.changes):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), WAIT_S)

    def kill(self) -> None:
        assert self.brain.pid is not None
        os.kill(self.brain.pid, signal.SIGKILL)


@pytest.fixture
async def brain(tmp_path: Path) -> AsyncIterator[Brain]:
    b = Brain(tmp_path, max_restarts=1)
    try:
        yield b
    finally:
        await b.agent.close()
        await b.brain.stop()


async def test_status_command_shows_each_state_and_the_model_file(brain: Brain) -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, soft_wrap=True)
    channel = TerminalChannel(brain.agent, console, stdin=io.StringIO(""))
    shown: list[dict[str, Any]] = []

    def type_status(_: BrainStatus) -> None:
        """Type /status at the moment of each state change."""
        out.seek(0)
        out.truncate()
        assert channel._handle("/status")
        shown.append(json.loads(out.getvalue())["backend"])

    brain.watchers.append(type_status)
    await brain.brain.start()
    brain.kill()
    await brain.wait_for("ready", restarts=1)
    brain.kill()  # past the bound of 1 restart
    await brain.wait_for("failed", restarts=1)
    states = [s["state"] for s in shown]
    assert states == ["starting", "ready", "crashed", "restarting", "ready", "failed"], shown
    assert all(s["kind"] == "local" and s["model_file"] == "qwen-0.5b.gguf" for s in shown)
    crashed = shown[2]
    assert crashed["detail"].startswith("the local model server crashed (signal 9 / SIGKILL")
    assert shown[4]["restarts"] == 1 and shown[4]["port"] > 0
    assert "not restarting it" in shown[5]["detail"]


async def test_web_console_status_and_events_carry_the_state_and_model_file(
    brain: Brain,
) -> None:
    await brain.brain.start()
    web = await serve_console(brain.agent, None, port=0)
    base = f"http://127.0.0.1:{web.port}"
    try:
        async with (
            httpx2.AsyncClient(base_url=base, timeout=WAIT_S) as client,
            ws_connect(f"ws://127.0.0.1:{web.port}/ws") as ws,
        ):
            status = (await client.get("/api/status")).json()["backend"]
            assert status["kind"] == "local"  # the page shows its badge only for "local"
            assert status["state"] == "ready" and status["model_file"] == "qwen-0.5b.gguf"

            async def events() -> list[dict[str, Any]]:
                got: list[dict[str, Any]] = []
                while not got or got[-1]["state"] != "ready":
                    ev = json.loads(await ws.recv())
                    if ev["type"] == "local_brain":
                        got.append(ev)
                return got

            await asyncio.wait_for(_connected(web), WAIT_S)
            brain.kill()
            got = await asyncio.wait_for(events(), WAIT_S)
            assert [e["state"] for e in got] == ["crashed", "restarting", "ready"], got
            assert all(e["model_file"] == "qwen-0.5b.gguf" for e in got)
            assert "crashed (signal 9 / SIGKILL" in got[0]["detail"]
            status = (await client.get("/api/status")).json()["backend"]
            assert status["state"] == "ready" and status["restarts"] == 1
    finally:
        await web.stop()


async def _connected(web: Any) -> None:
    while web.state.hub.n_clients < 1:
        await asyncio.sleep(0.01)
