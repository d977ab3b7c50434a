"""GitMemory: diaries, commits, remember/recall, snapshots, atomic writes (E2, E4)."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from dulwich.repo import Repo

from loopact.llm.messages import Image, Message, ToolCall
from loopact.memory import GitMemory
from loopact.memory._fs import TEMP_MARKER, atomic_write


def commit_log(path: Path) -> list[tuple[bytes, set[str]]]:
    """(message, changed paths) for every commit on main, newest first, read with dulwich."""
    repo = Repo(str(path))
    try:
        out = []
        for entry in repo.get_walker():
            paths = set()
            for change in entry.changes():
                if isinstance(change, list):
                    continue
                for side in (change.old, change.new):
                    if side is not None and side.path is not None:
                        paths.add(side.path.decode())
            out.append((entry.commit.message, paths))
        return out
    finally:
        repo.close()


def head_file(path: Path, relpath: str) -> str | None:
    """The content of ``relpath`` in the committed tree of main (None if absent)."""
    repo = Repo(str(path))
    try:
        tree = repo[repo.refs[b"refs/heads/main"]].tree
        for e in repo.object_store.iter_tree_contents(tree):
            if e.path.decode() == relpath:
                return repo[e.sha].as_raw_string().decode()
        return None
    finally:
        repo.close()


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if TEMP_MARKER in p.name and ".git" not in p.parts]


async def test_open_creates_rule_templates_and_rules_text_skips_them(tmp_path: Path) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="robot-1") as mem:
        for name in ("RULE.md", "MASTER.md", "METHOD.md", "WORLD.md"):
            assert (tmp_path / "mem" / name).is_file()
        assert mem.rules_text() == ""
        await mem.flush()
    assert head_file(tmp_path / "mem", "RULE.md") is not None

    (tmp_path / "mem" / "WORLD.md").write_text(
        "# World\n<!-- template comment -->\nThe charger is in room 2.\n"
    )
    async with GitMemory(tmp_path / "mem", machine_id="robot-1") as mem:
        text = mem.rules_text()
    assert text == "## WORLD.md\nThe charger is in room 2."


async def test_diary_entry_has_machine_id_and_is_committed(tmp_path: Path) -> None:
    when = datetime(2026, 11, 30, 14, 3, 22, tzinfo=timezone.utc)
    async with GitMemory(tmp_path / "mem", machine_id="robot-7") as mem:
        rel = await mem.append_diary("Patrolled the lab.\nThe door was open.", when=when)
        await mem.flush()
    assert rel == "diaries/20261130.md"
    text = (tmp_path / "mem" / rel).read_text()
    assert "- [robot-7 14:03:22] Patrolled the lab.\n  The door was open.\n" in text
    assert head_file(tmp_path / "mem", rel) == text
    log = commit_log(tmp_path / "mem")
    assert any(rel in paths and b"robot-7" in msg for msg, paths in log)
    assert len(log) >= 2  # templates commit + diary commit


async def test_writes_return_before_commit_and_flush_waits(tmp_path: Path) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        await mem.flush()
        n_before = len(commit_log(tmp_path / "mem"))
        for i in range(20):
            await mem.append_diary(f"entry {i}", when=datetime(2026, 1, 1, 10, 0, i))
        await mem.flush()
        diary = head_file(tmp_path / "mem", "diaries/20260101.md")
    assert diary is not None
    assert all(f"] entry {i}\n" in diary for i in range(20))
    n_after = len(commit_log(tmp_path / "mem"))
    # Commits are batched by the background worker: at least one, at most one per write.
    assert n_before < n_after <= n_before + 20


async def test_remembered_preference_is_recalled_by_a_later_session(tmp_path: Path) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        assert await mem.remember("Alice takes her tea without sugar", kind="preference")
        assert not await mem.remember("alice takes her tea  without sugar", kind="preference")
        assert await mem.remember("The charger is in room 2")
    assert head_file(tmp_path / "mem", "preferences.md") is not None

    async with GitMemory(tmp_path / "mem", machine_id="r2") as later:
        assert later.preferences_text() == "- Alice takes her tea without sugar"
        found = await later.recall("How does Alice like tea?")
        assert found and found[0].text == "Alice takes her tea without sugar"
        assert found[0].kind == "preference" and found[0].machine_id == "r1"
        chargers = await later.recall("chargers")
        assert [i.text for i in chargers] == ["The charger is in room 2"]
        assert await later.recall("zebra") == []
        assert len(await later.recall("")) == 2


async def test_snapshot_replaces_images_caps_size_and_prunes(tmp_path: Path) -> None:
    img = Image(b"\xff\xd8" + b"x" * 5000, width_px=64, height_px=48)
    history = [
        Message.system("You are a robot."),
        Message.user("Look around", images=[img]),
        Message.assistant("", tool_calls=[ToolCall("c1", "look", {"deg": 90})]),
        Message.tool("c1", "look", "y" * 50_000),
    ]
    async with GitMemory(
        tmp_path / "mem", machine_id="r1", snapshot_retention=3, snapshot_max_bytes=8_000
    ) as mem:
        paths = []
        for rnd in range(5):
            when = datetime(2026, 11, 30, 10, 0, rnd, tzinfo=timezone.utc)
            paths.append(await mem.snapshot(rnd, history, when=when))
        await mem.flush()
    folder = tmp_path / "mem" / "snapshots" / "r1"
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(Path(p).name for p in paths[2:])
    for p in paths[:2]:
        assert head_file(tmp_path / "mem", p) is None
    raw = (tmp_path / "mem" / paths[-1]).read_bytes()
    assert len(raw) <= 8_000
    doc = json.loads(raw)
    assert doc["round"] == 4 and doc["truncated"] is True and doc["n_messages"] == 4
    image_part = doc["messages"][1]["content"][1]
    assert image_part["sha256"] == img.sha256 and "data" not in image_part
    assert b"xxxx" not in raw
    assert "chars truncated]" in doc["messages"][3]["content"][0]["text"]
    assert head_file(tmp_path / "mem", paths[-1]) == raw.decode()


async def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        await asyncio.gather(
            *(mem.append_diary(f"e{i}") for i in range(10)),
            *(mem.remember(f"fact number {i}") for i in range(10)),
        )
        await mem.flush()
        assert temp_files(tmp_path / "mem") == []
        assert len(await mem.items()) == 10
    # A failing replace (destination is a folder) removes its temp file and raises.
    target = tmp_path / "dir"
    (target / "sub").mkdir(parents=True)
    with pytest.raises(OSError):
        atomic_write(target, b"data")
    assert temp_files(tmp_path) == []
    atomic_write(tmp_path / "f.txt", b"one")
    atomic_write(tmp_path / "f.txt", b"two")
    assert (tmp_path / "f.txt").read_bytes() == b"two"
    assert os.listdir(tmp_path).count("f.txt") == 1 and temp_files(tmp_path) == []


async def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="machine_id"):
        GitMemory(tmp_path, machine_id="robot one/../x")
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        with pytest.raises(ValueError, match="empty"):
            await mem.append_diary("   ")
        with pytest.raises(ValueError, match="kind"):
            await mem.remember("x", kind="secret")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="open"):
        await GitMemory(tmp_path / "m2", machine_id="r1").append_diary("x")


async def test_chinese_text_is_committed_as_utf8(tmp_path: Path) -> None:
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        assert await mem.remember("充电器在二号房间。The charger is in room 2.")
        await mem.append_diary("巡逻了实验室，门是开着的。")
        await mem.flush()
        found = await mem.recall("充电器在哪里")
    assert [i.text for i in found] == ["充电器在二号房间。The charger is in room 2."]
    messages = [msg.decode("utf-8") for msg, _paths in commit_log(tmp_path / "mem")]
    assert any("remember fact: 充电器在二号房间。" in m for m in messages)
    assert any("diary: 巡逻了实验室，门是开着的。" in m for m in messages)
    committed = head_file(tmp_path / "mem", "facts.md") or ""
    assert "] 充电器在二号房间。The charger is in room 2.\n" in committed
