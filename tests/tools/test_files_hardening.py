"""File tools against hostile workspace content (issue 21 item 11, SPEC C6).

A scripted model makes the calls an injected prompt would make; the workspace holds a FIFO,
symlinks that leave it, and names at and beyond the file system's limit, on the real file
system.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.agent import Bounds
from loopact.channels.voice_tools import VoiceControls, make_voice_tools
from loopact.events import EventBus
from loopact.voice.audio import ClockedSink
from loopact.voice.playback import Player


def _results(rec: Any) -> dict[str, Any]:
    return {e.data["id"]: e.data for e in rec.of("tool_result")}


async def test_fifo_is_refused_before_it_is_opened(scripted_server: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    os.mkfifo(ws / "pipe2")  # written to: the old code replaced it with a file
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("file_read", {"path": "pipe"}, "r1"),
                    call("file_list", {"path": "."}, "l1"),
                ]
            },
            {"tool_calls": [call("file_write", {"path": "pipe2", "content": "x"}, "w1")]},
            {"text": "That is a pipe."},
        ]
    )
    # A short tool timeout: a blocked open() would show as a timeout, not as the refusal.
    bounds = Bounds(tool_timeout_s=5.0, backoff_base_s=0.01)
    agent, rec = make_agent(server, ws, bounds=bounds, auto_approve=True)
    try:
        outcome = await agent.run_task("read the pipe")
    finally:
        await agent.close()
        # Unblock a reader stuck in open() (only the old code gets there).
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert outcome.status == "completed"
    results = _results(rec)
    assert results["r1"]["ok"] is False
    assert results["r1"]["error"] == (
        "'pipe' is a FIFO (named pipe), not a regular file; file_read reads regular files only"
    )
    assert results["l1"]["data"]["entries"] == [
        {"name": "pipe", "type": "fifo", "size_bytes": None},
        {"name": "pipe2", "type": "fifo", "size_bytes": None},
    ]
    assert results["w1"]["error"] == (
        "'pipe2' is a FIFO (named pipe), not a regular file; file_write writes regular files only"
    )
    assert not (ws / "pipe2").is_file()


async def test_play_audio_refuses_a_fifo_and_names_no_absolute_path(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Item 11 for the other tool that reads workspace files: play_audio opened a FIFO (and
    blocked the event loop until someone wrote to it); a missing file's error held the
    absolute path."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fifo = ws / "song.wav"
    os.mkfifo(fifo)

    # Who writes to the FIFO once a reader opens it: the old code then read these bytes.
    def write() -> None:
        with contextlib.suppress(BrokenPipeError):  # the test's own reader closes at once
            fifo.write_bytes(b"not a wav")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    server = scripted_server(
        [
            {"tool_calls": [call("play_audio", {"filename": "song.wav"}, "p1")]},
            {"tool_calls": [call("play_audio", {"filename": "gone.wav"}, "p2")]},
            {"text": "Nothing to play."},
        ]
    )
    bus = EventBus()
    sink = ClockedSink("test")
    player = Player(sink, None, bus)
    tools = make_voice_tools(VoiceControls(player, None, ws))
    agent, rec = make_agent(server, ws, tools=tools)
    try:
        outcome = await agent.run_task("play the song")
    finally:
        await agent.close()
        await player.close()
        await sink.close()
        with contextlib.suppress(OSError):  # let the writer's open() return
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=10)
    assert outcome.status == "completed"
    results = _results(rec)
    assert results["p1"]["error"] == (
        "'song.wav' is a FIFO (named pipe), not a regular file; play_audio reads regular files only"
    )
    assert results["p2"]["error"].startswith("no file 'gone.wav' in the workspace")
    assert str(tmp_path) not in json.dumps(results)


async def test_symlinks_leaving_the_workspace_are_listed_only_as_links(
    scripted_server: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "salary.xlsx").write_bytes(b"x" * 12345)
    os.symlink(outside, ws / "to_dir")
    os.symlink(outside / "salary.xlsx", ws / "to_file")
    os.symlink(tmp_path / "gone", ws / "dangling")
    (ws / "real.txt").write_text("abc", encoding="utf-8")
    os.symlink(ws / "real.txt", ws / "alias.txt")
    server = scripted_server(
        [{"tool_calls": [call("file_list", {"path": "."}, "l1")]}, {"text": "Listed."}]
    )
    agent, rec = make_agent(server, ws)
    try:
        await agent.run_task("what is here?")
    finally:
        await agent.close()
    entries = _results(rec)["l1"]["data"]["entries"]
    assert entries == [
        {"name": "alias.txt", "type": "file", "size_bytes": 3},  # inside: shown as its target
        {"name": "dangling", "type": "link", "size_bytes": None, "target": "outside the workspace"},
        {"name": "real.txt", "type": "file", "size_bytes": 3},
        {"name": "to_dir", "type": "link", "size_bytes": None, "target": "outside the workspace"},
        {"name": "to_file", "type": "link", "size_bytes": None, "target": "outside the workspace"},
    ]


async def test_long_names_work_up_to_the_limit_and_fail_clearly_beyond(
    scripted_server: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    limit = os.pathconf(ws, "PC_NAME_MAX")
    at_limit = "a" * (limit - 4) + ".txt"  # exactly the limit: its temp file must fit too
    near = "b" * 243
    too_long = "c" * (limit + 45)
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("file_write", {"path": at_limit, "content": "1"}, "w1"),
                    call("file_write", {"path": near, "content": "2"}, "w2"),
                    call("file_write", {"path": f"sub/{too_long}", "content": "3"}, "w3"),
                ]
            },
            {"tool_calls": [call("file_read", {"path": too_long}, "r1")]},
            {"text": "Done."},
        ]
    )
    agent, rec = make_agent(server, ws, auto_approve=True)
    try:
        await agent.run_task("write the files")
    finally:
        await agent.close()
    results = _results(rec)
    assert results["w1"]["ok"] and (ws / at_limit).read_text() == "1"
    assert results["w2"]["ok"] and (ws / near).read_text() == "2"
    expected = (
        f"the name '{'c' * 40}...' is {limit + 45} bytes long; file names on this file "
        f"system are limited to {limit} bytes"
    )
    for call_id in ("w3", "r1"):
        assert results[call_id]["ok"] is False
        assert results[call_id]["error"] == expected
        assert str(tmp_path) not in results[call_id]["error"]
    assert sorted(p.name for p in ws.iterdir()) == sorted([at_limit, near])  # no temp left


async def test_protected_paths_are_out_of_reach_also_through_symlinks(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 21 items 1-2 at the tool level: loopact's own state, reached by name or link."""
    from loopact.tools.builtin import ProtectedPath, make_builtin_tools

    ws = tmp_path / "ws"
    mem = ws / "mem"
    (mem / ".git").mkdir(parents=True)
    (mem / "RULE.md").write_text("# Rules\n", encoding="utf-8")
    cfg = ws / "robot.yaml"
    cfg.write_text("model:\n  api_key: sk-x\n", encoding="utf-8")
    os.symlink(cfg, ws / "cfg_link")
    os.symlink(mem, ws / "mem_link")
    protected = [
        ProtectedPath(mem, "the memory folder"),
        ProtectedPath(cfg, "the config file in use"),
    ]
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call("file_read", {"path": "cfg_link"}, "r1"),
                    call("file_list", {"path": "mem_link/.git"}, "l1"),
                    call("file_list", {"path": "."}, "l2"),
                    call("file_write", {"path": "mem_link/RULE.md", "content": "x"}, "w1"),
                ]
            },
            {"text": "Done."},
        ]
    )
    agent, rec = make_agent(server, ws, auto_approve=True)
    # The same agent, its file tools given the protected paths as the app gives them.
    tools = {t.name: t for t in make_builtin_tools(ws, protected=protected)}
    for name in ("file_read", "file_write", "file_list"):
        agent.registry.remove(name)
        agent.registry.add(tools[name])
    try:
        await agent.run_task("look around")
    finally:
        await agent.close()
    results = _results(rec)
    assert results["r1"]["error"] == (
        "path 'cfg_link' is the config file in use; the file tools never read or change "
        "loopact's own state (docs/security.md)"
    )
    assert "is inside the memory folder" in results["l1"]["error"]
    assert "is inside the memory folder" in results["w1"]["error"]
    assert (mem / "RULE.md").read_text(encoding="utf-8") == "# Rules\n"
    assert results["l2"]["data"]["entries"] == [
        {"name": "cfg_link", "type": "protected", "size_bytes": None},
        {"name": "mem", "type": "protected", "size_bytes": None},
        {"name": "mem_link", "type": "protected", "size_bytes": None},
        {"name": "robot.yaml", "type": "protected", "size_bytes": None},
    ]
