"""Tests of the built-in general tools (SPEC C6), run through the registry as the loop does."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopact.llm.messages import ToolCall
from loopact.tools.base import SafetyClass, ToolContext, ToolResult
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.builtin.system import _parse_nvidia_smi
from loopact.tools.registry import ToolRegistry

WAIT_S = 5.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "ws" / "nested"


@pytest.fixture
def registry(workspace: Path) -> ToolRegistry:
    return ToolRegistry(make_builtin_tools(workspace))


async def run(reg: ToolRegistry, name: str, **arguments: Any) -> ToolResult:
    ctx = ToolContext(task_id="t1", call_id="c1", workspace=Path("/nonexistent"))
    call = ToolCall(id="c1", name=name, arguments=arguments)
    return await asyncio.wait_for(reg.execute(call, ctx, 10), WAIT_S + 10)


def outside_msg(path: str, workspace: Path) -> str:
    return f"path '{path}' is outside the workspace {workspace.resolve()}"


# ------------------------------------------------------------------------ catalogue
def test_catalogue_names_safety_and_workspace(workspace: Path, registry: ToolRegistry) -> None:
    assert workspace.is_dir()  # created with its parents
    assert [s.name for s in registry.specs()] == [
        "system_status",
        "file_read",
        "file_write",
        "file_list",
        "wait",
    ]
    safety = {t.name: t.safety for t in registry}
    assert safety == {
        "system_status": SafetyClass.READ_ONLY,
        "file_read": SafetyClass.READ_ONLY,
        "file_write": SafetyClass.WRITE,
        "file_list": SafetyClass.READ_ONLY,
        "wait": SafetyClass.READ_ONLY,
    }
    wait_tool = registry.get("wait")
    assert wait_tool is not None and wait_tool.reentrant
    params = {s.name: s.parameters for s in registry.specs()}
    assert params["file_write"]["required"] == ["path", "content"]
    assert params["file_list"]["properties"]["path"]["default"] == "."
    assert params["wait"]["properties"]["seconds"]["type"] == "number"
    for spec in registry.specs():
        # One sentence each, for small models.
        assert spec.description.endswith(".")
        assert spec.description.count(". ") == 0, spec.description


# ------------------------------------------------------------------------ file tools
async def test_write_then_read_back_and_list(workspace: Path, registry: ToolRegistry) -> None:
    written = await run(registry, "file_write", path="notes/day1/log.txt", content="héllo\n")
    assert written.ok, written.error
    assert written.metadata == {"path": "notes/day1/log.txt", "bytes": 7}
    assert (workspace / "notes/day1/log.txt").read_text(encoding="utf-8") == "héllo\n"

    read = await run(registry, "file_read", path="notes/day1/log.txt")
    assert read.ok
    assert read.data == "héllo\n"
    assert read.metadata == {"path": "notes/day1/log.txt", "bytes": 7}

    await run(registry, "file_write", path="notes/b.txt", content="12345")
    listed = await run(registry, "file_list", path="notes")
    assert listed.ok
    assert listed.data == {
        "path": "notes",
        "entries": [
            {"name": "b.txt", "type": "file", "size_bytes": 5},
            {"name": "day1", "type": "dir", "size_bytes": None},
        ],
        "total": 2,
        "truncated": False,
    }
    root = await run(registry, "file_list")
    assert root.data["path"] == "."
    assert [e["name"] for e in root.data["entries"]] == ["notes"]


async def test_a_file_that_is_not_utf8_text_is_a_clear_failure(
    workspace: Path, registry: ToolRegistry
) -> None:
    """Audit B finding 12: a PNG or invalid UTF-8 came back as text full of U+FFFD, ok."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    (workspace / "pic.png").write_bytes(png)
    (workspace / "latin1.txt").write_bytes("caf\xe9 ok".encode("latin-1"))
    pic = await run(registry, "file_read", path="pic.png")
    assert not pic.ok and pic.data is None
    assert pic.error == (
        f"not UTF-8 text: pic.png; {len(png)} bytes, the first byte that is not UTF-8 is at "
        "offset 0 (file_read reads text files only)"
    )
    latin = await run(registry, "file_read", path="latin1.txt")
    assert not latin.ok and "latin1.txt; 7 bytes" in (latin.error or "")
    assert "offset 3" in (latin.error or "")
    (workspace / "zh.txt").write_text("你好\n", encoding="utf-8")
    assert (await run(registry, "file_read", path="zh.txt")).data == "你好\n"


async def test_write_is_atomic_replace(workspace: Path, registry: ToolRegistry) -> None:
    target = workspace / "state.json"
    target.write_text("old", encoding="utf-8")
    inode_before = target.stat().st_ino
    result = await run(registry, "file_write", path="state.json", content="new")
    assert result.ok
    assert target.read_text(encoding="utf-8") == "new"
    assert target.stat().st_ino != inode_before  # a new file renamed over the old one
    assert sorted(p.name for p in workspace.iterdir()) == ["state.json"]  # no temp left


async def test_failed_write_leaves_old_content(
    workspace: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = workspace / "state.json"
    target.write_text("old", encoding="utf-8")

    def broken_replace(src: str, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)  # the module files.py writes through
    result = await run(registry, "file_write", path="state.json", content="new")
    assert not result.ok
    assert result.error == "cannot write 'state.json': No space left on device"
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in workspace.iterdir()) == ["state.json"]


async def test_traversal_is_refused(workspace: Path, registry: ToolRegistry) -> None:
    secret = workspace.parent / "secret.txt"
    secret.write_text("s3cret", encoding="utf-8")
    for name, args in [
        ("file_read", {"path": "../secret.txt"}),
        ("file_read", {"path": "a/../../secret.txt"}),
        ("file_write", {"path": "../evil.txt", "content": "x"}),
        ("file_list", {"path": ".."}),
    ]:
        result = await run(registry, name, **args)
        assert not result.ok
        assert result.error == outside_msg(args["path"], workspace)
    assert not (workspace.parent / "evil.txt").exists()


async def test_absolute_paths(workspace: Path, registry: ToolRegistry, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x", encoding="utf-8")
    result = await run(registry, "file_read", path=str(outside))
    assert result.error == outside_msg(str(outside), workspace)
    result = await run(registry, "file_write", path="/etc/loopact-test", content="x")
    assert result.error == outside_msg("/etc/loopact-test", workspace)
    result = await run(registry, "file_read", path="~/.bashrc")
    assert result.error == outside_msg("~/.bashrc", workspace)
    # An absolute path inside the workspace is fine.
    inside = workspace.resolve() / "in.txt"
    assert (await run(registry, "file_write", path=str(inside), content="ok")).ok
    read = await run(registry, "file_read", path=str(inside))
    assert read.data == "ok"
    assert read.metadata["path"] == "in.txt"


async def test_symlink_escape_is_refused(
    workspace: Path, registry: ToolRegistry, tmp_path: Path
) -> None:
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "data.txt").write_text("private", encoding="utf-8")
    os.symlink(outside_dir, workspace / "link_dir")
    os.symlink(outside_dir / "data.txt", workspace / "link_file")
    for name, args in [
        ("file_read", {"path": "link_file"}),
        ("file_read", {"path": "link_dir/data.txt"}),
        ("file_write", {"path": "link_file", "content": "pwned"}),
        ("file_write", {"path": "link_dir/new.txt", "content": "pwned"}),
        ("file_list", {"path": "link_dir"}),
    ]:
        result = await run(registry, name, **args)
        assert not result.ok, (name, args)
        assert result.error == outside_msg(args["path"], workspace)
    assert (outside_dir / "data.txt").read_text(encoding="utf-8") == "private"
    assert not (outside_dir / "new.txt").exists()


async def test_symlink_inside_workspace_is_allowed(workspace: Path, registry: ToolRegistry) -> None:
    (workspace / "real.txt").write_text("real", encoding="utf-8")
    os.symlink(workspace / "real.txt", workspace / "alias.txt")
    result = await run(registry, "file_read", path="alias.txt")
    assert result.data == "real"
    assert result.metadata["path"] == "real.txt"  # the resolved path


async def test_read_limits_and_errors(workspace: Path, registry: ToolRegistry) -> None:
    (workspace / "big.bin").write_bytes(b"a" * (1024 * 1024 + 1))
    big = await run(registry, "file_read", path="big.bin")
    assert not big.ok
    assert big.error == "file 'big.bin' is 1.0 MB; file_read reads files up to 1.0 MB"
    (workspace / "exact.txt").write_bytes(b"b" * (1024 * 1024))
    exact = await run(registry, "file_read", path="exact.txt")
    assert exact.ok and exact.metadata["bytes"] == 1024 * 1024

    (workspace / "latin1.txt").write_bytes(b"caf\xe9")
    mixed = await run(registry, "file_read", path="latin1.txt")
    # was ok with "caf\ufffd"; tools.md says file_read reads UTF-8 text (audit B finding 12)
    assert not mixed.ok and (mixed.error or "").startswith("not UTF-8 text: latin1.txt; 4 bytes")

    missing = await run(registry, "file_read", path="nope.txt")
    assert missing.error == "no file 'nope.txt' in the workspace; use file_list to see what exists"
    folder = await run(registry, "file_read", path=".")
    assert folder.error is not None and "is a folder" in folder.error
    to_dir = await run(registry, "file_write", path=".", content="x")
    assert to_dir.error is not None and "is a folder" in to_dir.error
    empty = await run(registry, "file_read", path=" ")
    assert empty.error is not None and empty.error.startswith("path is empty")
    not_dir = await run(registry, "file_list", path="exact.txt")
    assert not_dir.error == "'exact.txt' is a file, not a folder; use file_read to read it"


async def test_list_is_capped(workspace: Path, registry: ToolRegistry) -> None:
    for i in range(205):
        (workspace / f"f{i:03d}.txt").write_bytes(b"x" * (i % 3))
    result = await run(registry, "file_list", path=".")
    assert result.ok
    data = result.data
    assert len(data["entries"]) == 200
    assert data["entries"][0] == {"name": "f000.txt", "type": "file", "size_bytes": 0}
    assert data["entries"][-1]["name"] == "f199.txt"
    assert data["total"] == 205
    assert data["truncated"] is True
    assert data["note"] == "showing the first 200 of 205 entries"
    assert result.metadata["truncated"] is True


# ------------------------------------------------------------------------ system_status
async def test_system_status_keys(workspace: Path, registry: ToolRegistry) -> None:
    result = await run(registry, "system_status")
    assert result.ok, result.error
    data = result.data
    required = {
        "machine_id": str,
        "hostname": str,
        "cpu_percent": float,
        "cpu_count": int,
        "memory_used_mb": float,
        "memory_total_mb": float,
        "memory_percent": float,
        "disk_path": str,
        "disk_used_gb": float,
        "disk_free_gb": float,
        "disk_total_gb": float,
    }
    for key, typ in required.items():
        assert isinstance(data[key], typ), (key, data[key])
    assert data["machine_id"]
    assert 0 <= data["cpu_percent"] <= 100
    assert 0 < data["memory_used_mb"] <= data["memory_total_mb"]
    assert 0 <= data["disk_free_gb"] <= data["disk_total_gb"]
    assert data["disk_path"] == str(workspace.resolve())
    for key in ("load_avg_1m", "load_avg_5m", "load_avg_15m"):
        assert data[key] is None or data[key] >= 0
    if "temperature_c" in data:
        assert data["temperature_c"] == max(data["temperatures_c"].values())
    if shutil.which("nvidia-smi") is None:
        assert "gpus" not in data
    assert set(data) <= set(required) | {
        "load_avg_1m",
        "load_avg_5m",
        "load_avg_15m",
        "temperature_c",
        "temperatures_c",
        "gpus",
    }


def test_nvidia_smi_parsing() -> None:
    text = "NVIDIA Jetson Orin, 37, 1024, 7620, 48\nTesla T4, [N/A], 0, 15360, 35\nbad line\n"
    assert _parse_nvidia_smi(text) == [
        {
            "name": "NVIDIA Jetson Orin",
            "utilization_percent": 37.0,
            "memory_used_mb": 1024.0,
            "memory_total_mb": 7620.0,
            "temperature_c": 48.0,
        },
        {
            "name": "Tesla T4",
            "utilization_percent": None,
            "memory_used_mb": 0.0,
            "memory_total_mb": 15360.0,
            "temperature_c": 35.0,
        },
    ]


# ------------------------------------------------------------------------ wait
async def test_wait_returns_and_validates(registry: ToolRegistry) -> None:
    result = await run(registry, "wait", seconds="0.01")
    assert result.ok and result.data == "waited 0.01 s"
    for bad in (0, -1, 601):
        result = await run(registry, "wait", seconds=bad)
        assert result.error == f"seconds must be > 0 and <= 600, got {bad}"


async def test_wait_is_cancellable(registry: ToolRegistry) -> None:
    ctx = ToolContext(task_id="t1", call_id="c1", workspace=Path("."))
    task = asyncio.ensure_future(
        registry.execute(ToolCall(id="c1", name="wait", arguments={"seconds": 600}), ctx, 10)
    )
    for _ in range(5):  # let the call reach its asyncio.sleep
        await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT_S)
    assert task.cancelled()


async def test_wait_uses_its_own_timeout(registry: ToolRegistry) -> None:
    tool = registry.get("wait")
    assert tool is not None and tool.timeout_s is not None and tool.timeout_s > 600
