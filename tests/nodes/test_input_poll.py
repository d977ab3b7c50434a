"""A polled input function that never returns (SPEC A2, C3; issue 22 item 8's family).

A plain ``@input_source`` function (a serial read, a sensor on a hung bus) is polled on a
thread. On asyncio's default executor a poll that never returns held a pool worker for good,
and interpreter shutdown waited for it: ``loopact node`` did not exit on Ctrl-C. Now each poll
has a timeout and runs on an abandonable daemon thread.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading

import pytest

from loopact.nodes.input import input_source


async def test_a_stuck_poll_is_abandoned_and_the_next_one_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    calls: list[int] = []

    @input_source(name="serial", timeout_s=0.2)
    def serial() -> str:
        calls.append(len(calls))
        if len(calls) == 1:
            release.wait()  # the first read hangs until the test ends
        return f"reading {len(calls)}"

    try:
        with caplog.at_level(logging.WARNING, logger="loopact.nodes.input"):
            assert await serial.poll() is None  # abandoned at its timeout
            assert await serial.poll() == "reading 2"  # the next poll is not blocked by it
        assert "did not return within 0.2 s" in caplog.text
        stuck = [t for t in threading.enumerate() if t.name.startswith("loopact-input")]
        assert stuck and all(t.daemon for t in stuck)  # never a worker of the default pool
    finally:
        release.set()


def test_a_process_with_a_stuck_poll_exits() -> None:
    """The hang that was reported: the process ends although the poll's thread never does."""
    script = textwrap.dedent(
        """
        import asyncio, threading
        from loopact.nodes.input import input_source

        forever = threading.Event()

        @input_source(name="stuck", timeout_s=0.2)
        def stuck() -> str:
            forever.wait()
            return "never"

        print(asyncio.run(stuck.poll()), flush=True)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"
