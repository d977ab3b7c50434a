"""Sharing the memory while running (issue 46 item 2, SPEC E2): periodic and on-demand syncs,
a remote out of reach (writes wait, are counted and retried), the ``memory_sync`` tool. Waits
are for the syncer's results (its callback), never for time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo
from tests.memory.test_sync import remote_file

from loopact.memory import GitMemory, MemorySyncer, SyncResult, make_sync_tool


class Results:
    """The syncer's results as they come; ``wait(pred)`` for the next one that matches."""

    def __init__(self) -> None:
        self.seen: list[tuple[SyncResult, str]] = []
        self._changed = asyncio.Event()

    def __call__(self, result: SyncResult, why: str) -> None:
        self.seen.append((result, why))
        self._changed.set()

    async def wait(self, pred: Callable[[SyncResult, str], bool], timeout: float = 20) -> None:
        start = len(self.seen)

        async def until() -> None:
            while not any(pred(r, w) for r, w in self.seen[start:]):
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(until(), timeout)


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Path, GitMemory, GitMemory]]:
    bare = tmp_path / "remote.git"
    Repo.init_bare(str(bare), mkdir=True).close()
    a = GitMemory(tmp_path / "a", machine_id="robot-a", remote=str(bare))
    b = GitMemory(tmp_path / "b", machine_id="robot-b", remote=str(bare))
    await a.open()
    await b.open()
    try:
        yield bare, a, b
    finally:
        await a.close()
        await b.close()


async def test_a_fact_reaches_the_other_robot_within_the_interval(
    pair: tuple[Path, GitMemory, GitMemory],
) -> None:
    _, a, b = pair
    got_a, got_b = Results(), Results()
    sa = MemorySyncer(a, interval_s=0.2, on_result=got_a)
    sb = MemorySyncer(b, interval_s=0.2, on_result=got_b)
    await sa.start()
    await sb.start()
    try:
        await a.remember("the charger is in room 2")
        await got_a.wait(lambda r, w: r.ok and r.pushed and w == "interval")
        await got_b.wait(lambda r, w: r.ok and r.integration != "none")
        assert [i.text for i in await b.recall("charger")] == ["the charger is in room 2"]
        status = sb.status()
        assert status["failures"] == 0 and status["unsynced_commits"] == 0
        assert status["last_ok"] is not None and status["interval_s"] == 0.2
    finally:
        await sa.stop()
        await sb.stop()


async def test_an_unreachable_remote_keeps_the_writes_counts_them_and_retries(
    pair: tuple[Path, GitMemory, GitMemory],
) -> None:
    bare, a, b = pair
    away = bare.with_name("remote.away")
    bare.rename(away)  # the network is down
    got = Results()
    sa = MemorySyncer(a, interval_s=60, on_result=got, retry_first_s=0.05)
    await sa.start()
    try:
        await a.remember("fact one from a")
        first = await sa.sync_now("tool")
        assert not first.ok and first.error
        await a.remember("fact two from a")
        await got.wait(lambda r, w: w == "retry" and not r.ok)  # retried soon, not in 60 s
        status = sa.status()
        assert status["failures"] >= 2 and status["last_error"]
        assert status["unsynced_commits"] >= 2  # both facts wait, committed locally
        assert sa.delay_s() < 60
        away.rename(bare)  # back
        await got.wait(lambda r, w: r.ok and r.pushed)
        assert sa.status()["unsynced_commits"] == 0 and sa.failures == 0
        assert sa.delay_s() == 60
        facts = remote_file(bare, "facts.md") or ""
        assert "fact one from a" in facts and "fact two from a" in facts
        await b.sync()
        assert len(await b.recall("from a")) == 2
    finally:
        await sa.stop()


async def test_two_robots_writing_while_apart_both_keep_every_fact(
    pair: tuple[Path, GitMemory, GitMemory],
) -> None:
    bare, a, b = pair
    away = bare.with_name("remote.away")
    bare.rename(away)
    sa, sb = MemorySyncer(a, 0), MemorySyncer(b, 0)
    await asyncio.gather(a.remember("a saw a cat"), b.remember("b saw a dog"))
    assert not (await sa.sync_now()).ok and not (await sb.sync_now()).ok
    away.rename(bare)
    results = list(await asyncio.gather(sa.sync_now(), sb.sync_now()))
    results += [await sa.sync_now(), await sb.sync_now()]
    assert all(r.ok for r in results)
    assert "merged" in {r.integration for r in results}  # histories diverged: one merged
    for mem in (a, b):
        assert sorted(i.text for i in await mem.recall("saw")) == ["a saw a cat", "b saw a dog"]


async def test_the_memory_sync_tool_says_what_arrived(
    pair: tuple[Path, GitMemory, GitMemory],
) -> None:
    bare, a, b = pair
    await a.remember("the door code is on the whiteboard")
    await a.sync()
    tool = make_sync_tool(MemorySyncer(b, 0))
    assert tool.name == "memory_sync" and tool.safety.value == "idempotent"
    result: Any = await tool()  # type: ignore[operator]
    assert result.ok, result
    assert result.data["arrived"] == [
        {"kind": "fact", "text": "the door code is on the whiteboard", "by": "robot-a"}
    ]
    bare.rename(bare.with_name("gone"))
    await b.remember("b wrote this offline")
    failed: Any = await tool()  # type: ignore[operator]
    assert not failed.ok and "kept and waits" in failed.error
    assert failed.metadata["unsynced_commits"] >= 1


async def test_stop_lets_a_sync_under_way_finish(
    pair: tuple[Path, GitMemory, GitMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync cut at stop left its fetch, merge or push running on a worker thread beside
    the exit sync and the last commits (a close that timed out under load)."""
    _, a, _ = pair
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[bool] = []

    async def slow_sync() -> SyncResult:
        started.set()
        await release.wait()
        finished.append(True)
        return SyncResult(True)

    monkeypatch.setattr(a, "sync", slow_sync)
    syncer = MemorySyncer(a, interval_s=0.01)
    await syncer.start()
    await asyncio.wait_for(started.wait(), 10)
    stopping = asyncio.ensure_future(syncer.stop())
    for _ in range(20):  # let the stop run as far as it can
        await asyncio.sleep(0)
    assert not stopping.done()  # it waits for the sync
    release.set()
    await asyncio.wait_for(stopping, 10)
    assert finished == [True] and syncer.syncs == 1  # finished, and no sync after the stop
