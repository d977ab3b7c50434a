"""A memory repository in trouble (SPEC E2, E4): locked, damaged, shared by two processes.

Each case is what a user meets on a robot: a second agent on the same memory folder, a
``.git/index.lock`` left by a crashed ``git``, a repository whose branch points nowhere, a
folder whose ``.git`` was deleted. The rule is the same in every case: a clear message naming
what is wrong, nothing written is lost, and the agent goes on.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from dulwich.repo import Repo
from tests.memory.test_store import head_file

from loopact.errors import MemoryRepoError
from loopact.memory import GitMemory
from loopact.memory.recorder import MemoryRecorder

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from loopact.memory import GitMemory

    async def main(path: str, mid: str, n: int) -> None:
        mem = GitMemory(Path(path), mid)
        await mem.open()
        print("ready", flush=True)
        sys.stdin.readline()  # "go": both writers start together
        for i in range(n):
            await mem.append_diary(f"{mid} entry {i}")
            await mem.remember(f"{mid} fact {i}")
        await mem.close()
        print("error:", mem.last_error, flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


def test_two_processes_writing_one_memory_lose_nothing(tmp_path: Path) -> None:
    mem, n = tmp_path / "mem", 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(mem), f"robot-{k}", str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(2)
    ]
    try:
        for p in procs:  # each opens the memory (the second finds the first's repository)
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert "error: None" in out, out + err
        assert "Traceback" not in err, err
    diary = "".join(f.read_text() for f in (mem / "diaries").glob("*.md"))
    facts = (mem / "facts.md").read_text()
    committed = head_file(mem, "facts.md") or ""
    for k in range(2):
        for i in range(n):
            assert f"] robot-{k} entry {i}\n" in diary
            assert f"] robot-{k} fact {i}\n" in facts
            assert f"] robot-{k} fact {i}\n" in committed


async def test_a_stale_index_lock_is_named_and_nothing_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.flush()
        lock = path / ".git" / "index.lock"
        lock.write_text("")  # a git that crashed, or one running right now
        with caplog.at_level(logging.WARNING, logger="loopact.memory"):
            assert await mem.remember("The charger is in room 2")
            await mem.flush()
            assert await mem.remember("The lift is out of order")
            await mem.flush()
        assert mem.last_error is not None and "index.lock" in mem.last_error
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]  # said once, not per write
        assert "index.lock" in warnings[0].getMessage() and warnings[0].exc_info is None
        assert "room 2" in (path / "facts.md").read_text()
        lock.unlink()
        assert await mem.remember("The door code is written on the board")
        await mem.flush()
        assert mem.last_error is None
    committed = head_file(path, "facts.md") or ""
    for fact in ("room 2", "out of order", "the board"):
        assert fact in committed  # the writes made while it was locked were committed too


async def test_writes_left_uncommitted_by_an_earlier_run_are_committed_at_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.flush()
        (path / ".git" / "index.lock").write_text("")
        await mem.remember("The charger is in room 2")
    assert "room 2" not in (head_file(path, "facts.md") or "")
    (path / ".git" / "index.lock").unlink()
    (path / "WORLD.md").write_text("# World\n\nThe lab has two doors.\n")  # edited by hand
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.flush()
    assert "room 2" in (head_file(path, "facts.md") or "")
    assert "two doors" in (head_file(path, "WORLD.md") or "")


async def test_a_folder_whose_git_was_deleted_keeps_its_files_in_a_new_history(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.remember("Dana likes the window open", kind="preference")
        await mem.append_diary("Patrolled the lab.")
    subprocess.run(["rm", "-rf", str(path / ".git")], check=True)
    with caplog.at_level(logging.WARNING, logger="loopact.memory"):
        async with GitMemory(path, machine_id="r1") as mem:
            await mem.flush()
            assert mem.preferences_text() == "- Dana likes the window open"
    assert any("no Git repository" in r.getMessage() for r in caplog.records)
    assert "window open" in (head_file(path, "preferences.md") or "")
    diaries = list((path / "diaries").glob("*.md"))
    assert diaries and head_file(path, f"diaries/{diaries[0].name}") is not None


async def test_a_damaged_repository_is_refused_at_open_with_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.remember("The charger is in room 2")
    (path / ".git" / "refs" / "heads" / "main").write_text("deadbeef" * 5 + "\n")
    before = (path / "facts.md").read_bytes()
    mem = GitMemory(path, machine_id="r1")
    with pytest.raises(MemoryRepoError, match=r"damaged.*deadbee.*missing") as info:
        await mem.open()
    assert str(path) in str(info.value) and "git fsck" in str(info.value)
    assert (path / "facts.md").read_bytes() == before  # nothing touched

    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    with pytest.raises(MemoryRepoError, match="not a Git repository") as info:
        await GitMemory(empty, machine_id="r1").open()
    assert str(empty) in str(info.value)


async def test_a_repository_damaged_while_running_gives_one_clear_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        await mem.flush()
        repo = Repo(str(path))
        head = repo.refs[b"refs/heads/main"]
        repo.close()
        obj = path / ".git" / "objects" / head[:2].decode() / head[2:].decode()
        obj.unlink()  # the commit main points to is gone (a disk fault, a bad copy)
        with caplog.at_level(logging.WARNING, logger="loopact.memory"):
            for i in range(3):
                assert await mem.remember(f"fact {i}")
                await mem.flush()
        assert mem.last_error is not None and "damaged" in mem.last_error
        assert "git fsck" in mem.last_error
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and warnings[0].exc_info is None
    assert all(f"fact {i}" in (path / "facts.md").read_text() for i in range(3))


async def test_text_that_is_not_valid_unicode_is_stored_with_a_replacement(
    tmp_path: Path,
) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        assert await mem.remember("bad \ud800 byte in a fact")
        rel = await mem.append_diary("bad \udcff byte in a diary")
        await mem.flush()
        items = await mem.items()
    assert [i.text for i in items] == ["bad \ufffd byte in a fact"]
    assert "bad \ufffd byte in a diary" in (tmp_path / "mem" / rel).read_text()


async def test_a_checkpoint_that_cannot_be_written_does_not_end_the_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mem"
    async with GitMemory(path, machine_id="r1") as mem:
        (path / "diaries").write_text("a file where the diaries folder should be\n")
        recorder = MemoryRecorder(mem, list)
        with caplog.at_level(logging.WARNING, logger="loopact.memory"):
            await recorder.checkpoint("checkpoint of task t1: goal: patrol")  # does not raise
        assert mem.last_error is not None and "diaries" in mem.last_error
        assert any("diaries" in r.getMessage() for r in caplog.records)
