"""A tool that never returns blocks neither other tools nor exit (issue 22 item 8, SPEC A2).

The stuck tool opens a FIFO that nobody writes: ``open()`` blocks in the kernel, like
``open()`` on a hung network file system, and no Python code can interrupt it. Opening the
FIFO for writing at the end releases every such reader, so the tests also see the stuck
threads come back.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import cli_env

from loopact._compat import timeout_after
from loopact.errors import ToolError
from loopact.llm.messages import ToolCall
from loopact.testing import ScriptedModelServer
from loopact.tools.base import ToolContext, tool
from loopact.tools.blocking import BlockingExecutor
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO whose readers block in open(); released (EOF) at teardown."""
    path = tmp_path / "gauge.fifo"
    os.mkfifo(path)
    yield path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # fails when no reader is waiting
    except OSError:
        return
    os.close(fd)


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 20.0) -> None:
    """Poll an observable condition (never a fixed sleep), failing after ``timeout_s``."""
    async with timeout_after(timeout_s):
        while not predicate():
            await asyncio.sleep(0.01)


def gauge_tools(fifo: Path) -> list[Any]:
    @tool(timeout_s=0.2, reentrant=True)
    def read_gauge() -> str:
        """Read the pressure gauge (a file on a network mount)."""
        with open(fifo) as f:  # blocks forever: nobody writes to the FIFO
            return f.read()

    @tool(timeout_s=5.0)
    def read_clock() -> str:
        """Read the clock (a quick synchronous tool)."""
        return "12:00"

    return [read_gauge, read_clock]


async def test_stuck_calls_do_not_stall_other_threaded_tools(fifo: Path) -> None:
    """More stuck calls than the default thread pool has workers (min(32, cpus + 4)); a
    quick synchronous tool still runs, and the stuck threads return once released."""
    registry = ToolRegistry(gauge_tools(fifo))

    async def call(name: str, n: int) -> Any:
        ctx = ToolContext(
            task_id="t", call_id=f"{name}{n}", workspace=fifo.parent, executor=registry.blocking
        )
        return await registry.execute(ToolCall(f"{name}{n}", name), ctx, 30.0)

    stuck = await asyncio.gather(*(call("read_gauge", n) for n in range(40)))
    assert all(r.metadata.get("error_kind") == "timeout" for r in stuck)
    # Those that got a thread before their timeout are stuck in open(); the rest never
    # started. None of them holds a slot now.
    assert 1 <= registry.blocking.stuck <= 40
    quick = await call("read_clock", 0)
    assert quick.ok and quick.data == "12:00"
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # release the 40 readers (EOF)
    os.close(fd)
    await wait_until(lambda: registry.blocking.stuck == 0)
    assert not [t for t in threading.enumerate() if t.name.startswith("loopact-blocking")]


async def test_too_many_stuck_calls_are_refused_clearly(fifo: Path) -> None:
    executor = BlockingExecutor(max_workers=2, max_stuck=3)

    def stuck() -> str:
        with open(fifo) as f:
            return f.read()

    for _ in range(3):
        with pytest.raises(TimeoutError):
            async with timeout_after(0.1):
                await executor.run(stuck)
    assert executor.stuck == 3
    with pytest.raises(ToolError, match="3 earlier blocking tool calls never returned"):
        await executor.run(lambda: "never started")
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)
    await wait_until(lambda: executor.stuck == 0)
    assert await executor.run(lambda: "runs again") == "runs again"


async def _saturated(fifo: Path) -> BlockingExecutor:
    """An executor whose one allowed stuck call is stuck: it refuses every new call."""
    executor = BlockingExecutor(max_workers=1, max_stuck=1)

    def stuck() -> str:
        with open(fifo) as f:
            return f.read()

    with pytest.raises(TimeoutError):
        async with timeout_after(0.1):
            await executor.run(stuck)
    return executor


async def test_async_tools_do_their_file_system_work_on_the_calls_executor(
    scripted_server: Factory, fifo: Path
) -> None:
    """system_status (the disk space of the workspace), generate_image (its PNG written
    into the workspace) and the frames kept for plans (camera tools) read and write the file
    system on ToolContext.executor, as sync tools do: on the default thread pool a hung
    mount held a pool thread for good and blocked exit. A refusing executor shows it."""
    from loopact.llm.messages import Image
    from loopact.tools.builtin.frames import keep_for_plan
    from loopact.tools.builtin.images import ImageEndpoint, make_image_tool
    from loopact.tools.builtin.system import make_system_tools

    executor = await _saturated(fifo)
    workspace = fifo.parent / "ws"
    workspace.mkdir()
    ctx = ToolContext(task_id="t", call_id="c1", workspace=workspace, executor=executor)
    refused = "earlier blocking tool calls never returned"
    registry = ToolRegistry(make_system_tools(workspace))
    status = await registry.execute(ToolCall("c1", "system_status"), ctx, 10.0)
    assert not status.ok and refused in (status.error or "")
    server = scripted_server([{"extras": {"images": {"color": [200, 30, 30]}}}])
    image_tool = make_image_tool(workspace, ImageEndpoint(server.base_url, "m", "k", 10.0))
    with pytest.raises(ToolError, match=refused):
        await image_tool.invoke({"prompt": "a red robot", "size": "64x64"}, ctx)
    frame = Image(b"\xff\xd8\xff\xd9", "image/jpeg", 1, 1)
    assert refused in (await keep_for_plan(ctx, [frame], "seewhat"))["image_error"]
    assert not any(workspace.rglob("*.*"))  # nothing was written past the refusal
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)
    await wait_until(lambda: executor.stuck == 0)
    status = await registry.execute(ToolCall("c2", "system_status"), ctx, 10.0)
    assert status.ok and status.data["disk_total_gb"] > 0


async def test_results_exceptions_and_context_come_back() -> None:
    import contextvars

    who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")
    who.set("the caller")
    executor = BlockingExecutor(max_workers=1)
    assert await executor.run(lambda: who.get()) == "the caller"
    with pytest.raises(ZeroDivisionError):
        await executor.run(lambda: 1 / 0)
    results = await asyncio.gather(*(executor.run(lambda i=i: i * i) for i in range(5)))
    assert results == [0, 1, 4, 9, 16]  # max_workers=1: one at a time, all of them
    assert executor.stuck == 0


LAUNCHER = textwrap.dedent(
    '''
    """``loopact`` with one extra built-in tool whose open() never returns."""
    import os
    import sys

    import loopact.tools.builtin as builtin
    from loopact.tools.base import tool

    _builtins = builtin.make_builtin_tools


    def make_builtin_tools(workspace, **kwargs):
        @tool(timeout_s=0.5)
        def read_gauge() -> str:
            """Read the pressure gauge (a file on a network mount)."""
            with open(os.environ["GAUGE_FIFO"]) as f:  # blocks forever: nobody writes
                return f.read()

        return [*_builtins(workspace, **kwargs), read_gauge]


    builtin.make_builtin_tools = make_builtin_tools
    from loopact.cli import main

    sys.argv = ["loopact", *sys.argv[1:]]
    main()
    '''
)


REPLY_WITHIN_S = 60.0
"""Bound on the process's start-up and its task (the tool's 0.5 s timeout, two scripted model
rounds), seconds: only so that a broken start fails instead of hanging."""
EXIT_AFTER_REPLY_S = 5.0
"""How long the process may take from printing its reply to exiting, seconds. Issue 22 item 8
asks for less than a second. In between, the agent, the model's HTTP client and the trace are
closed and the interpreter shuts down; it joins no daemon thread, so the stuck worker costs
nothing: about 0.1-0.2 s here. Five times the one-second budget covers a shared, loaded 2-core
machine. A process that waits on the stuck worker never exits within any bound: its FIFO is
released only after the test."""


def test_once_exits_after_its_reply_while_a_tool_is_stuck(
    scripted_server: Factory, tmp_path: Path, fifo: Path
) -> None:
    """The real CLI in its own process: the stuck tool times out, the model answers, the reply
    is printed, and the process exits with code 0 (a reply, README) within
    :data:`EXIT_AFTER_REPLY_S` of it while the tool's thread is still blocked in ``open()``
    (before: interpreter shutdown waited on the stuck thread for good)."""
    server = scripted_server(
        [
            {"tool_calls": [{"id": "g1", "name": "read_gauge", "arguments": {}}]},
            {"text": "The gauge did not answer in time.", "expect": {"contains": "timed out"}},
        ]
    )
    launcher = tmp_path / "loopact_with_gauge.py"
    launcher.write_text(LAUNCHER)
    env = cli_env(tmp_path)
    env["GAUGE_FIFO"] = str(fifo)
    env.pop("PYTHONUNBUFFERED", None)  # --once flushes its reply itself when it prints it
    args = [
        "run",
        "--once",
        "read the gauge",
        "--base-url",
        server.base_url,
        "--api-key",
        "sk-test",
        "--model",
        "m",
        "--robot",
        "none",
        "--no-memory",
        "--no-web",
        "--workspace",
        str(tmp_path / "ws"),
        "--trace",
        str(tmp_path / "trace.jsonl"),
    ]
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(launcher), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    pump = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    pump.start()
    try:
        reply = lines.get(timeout=REPLY_WITHIN_S)  # the observable event: the reply printed
        assert reply.strip() == "The gauge did not answer in time.", stderr.read_text()
        replied = time.monotonic()
        try:
            code = proc.wait(timeout=EXIT_AFTER_REPLY_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit {EXIT_AFTER_REPLY_S} s after the reply: {stderr.read_text()}")
        exit_s = time.monotonic() - replied
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert code == 0, stderr.read_text()
    assert "Traceback" not in stderr.read_text()
    results = [
        json.loads(line)
        for line in (tmp_path / "trace.jsonl").read_text().splitlines()
        if '"tool_result"' in line
    ]
    assert [r["name"] for r in results] == ["read_gauge"]
    assert "timed out" in results[0]["error"]
    # Nothing opened the FIFO for writing before this point: the worker was still blocked in
    # open() when the process exited.
    print(f"exited {exit_s:.2f} s after its reply")  # shown with -s
