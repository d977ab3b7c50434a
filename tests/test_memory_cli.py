"""Memory and skills through the real command (SPEC E2, E3, E4)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo
from tests.agent.helpers import call
from tests.test_cli import cli_env, run_cli


def args(server: Any, tmp_path: Path, text: str) -> list[str]:
    return [
        "run",
        "--robot",
        "none",
        "--once",
        text,
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--workspace",
        str(tmp_path / "ws"),
        "--memory",
        str(tmp_path / "mem"),
    ]


def test_remembered_preference_is_used_in_a_later_session(
    scripted_server: Any, tmp_path: Path
) -> None:
    first = scripted_server(
        [
            {
                "tool_calls": [
                    call(
                        "remember",
                        {"fact": "The user likes slow turns.", "kind": "preference"},
                        "r1",
                    )
                ]
            },
            {"text": "I will remember that."},
        ]
    )
    proc = run_cli(
        args(first, tmp_path, "remember: I like slow turns"), tmp_path, env={"LOOPACT_API_KEY": "k"}
    )
    assert proc.returncode == 0, proc.stderr
    mem = tmp_path / "mem"
    diaries = list((mem / "diaries").glob("*.md"))
    assert len(diaries) == 1
    entry = diaries[0].read_text()
    assert "remember: I like slow turns" in entry and "completed" in entry
    repo = Repo(str(mem))
    log = [c.commit.message.decode() for c in repo.get_walker()]
    assert len(log) >= 2  # created, then the diary and preference writes
    # each entry is prefixed with the machine id: "- [<machine> HH:MM:SS] ..."
    from loopact.app.memory import machine_id

    assert f"\n- [{machine_id()} " in entry

    second = scripted_server(
        [{"text": "Turning slowly.", "expect": {"contains": "The user likes slow turns."}}]
    )
    proc = run_cli(args(second, tmp_path, "turn around"), tmp_path, env={"LOOPACT_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr
    system = second.requests[0].body["messages"][0]["content"]
    assert "The user likes slow turns." in system


def test_skill_catalogue_in_prompt_body_on_demand(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("skill", {}, "s0"), call("skill", {"name": "patrol"}, "s1")]},
            {"text": "ok", "expect": {"contains": "navigation"}},
        ]
    )
    proc = run_cli(
        args(server, tmp_path, "how do you patrol?"), tmp_path, env={"LOOPACT_API_KEY": "k"}
    )
    assert proc.returncode == 0, proc.stderr
    first = server.requests[0].body
    system = first["messages"][0]["content"]
    assert "- patrol:" in system and "find_and_approach" in system
    tool_names = [t["function"]["name"] for t in first["tools"]]
    assert {"skill", "remember", "recall"} <= set(tool_names)
    results = {
        m["tool_call_id"]: m["content"]
        for m in server.requests[1].body["messages"]
        if m["role"] == "tool"
    }
    assert "- patrol:" in results["s0"]
    # the body (only in the tool result) is longer than its catalogue line and not in the prompt
    body_line = next(line for line in results["s1"].split("\\n") if "navigation" in line)
    assert body_line not in system


SECRET = "sk-live-0123456789abcdef"


def all_memory_text(mem: Path) -> str:
    """Every file of the working tree, every commit message and every blob ever committed."""
    parts = [p.read_text(errors="replace") for p in mem.rglob("*") if p.is_file()]
    repo = Repo(str(mem))
    try:
        for sha in repo.object_store:
            obj = repo.object_store[sha]
            raw = obj.as_raw_string()
            parts.append(raw.decode("utf-8", "replace"))
    finally:
        repo.close()
    return "\n".join(parts)


def test_a_secret_in_a_fact_or_a_tool_result_is_masked_before_it_is_committed(
    scripted_server: Any, tmp_path: Path
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text(f"api key: {SECRET}\n")
    server = scripted_server(
        [
            {"tool_calls": [call("file_read", {"path": "notes.txt"}, "r1")]},
            {"tool_calls": [call("remember", {"fact": f"The API key is {SECRET}"}, "r2")]},
            {"text": "Remembered."},
        ]
    )
    proc = run_cli(
        args(server, tmp_path, "read notes.txt and remember the key"),
        tmp_path,
        env={"LOOPACT_API_KEY": SECRET},
    )
    assert proc.returncode == 0, proc.stderr
    mem = tmp_path / "mem"
    assert "The API key is ***" in (mem / "facts.md").read_text()
    assert SECRET not in all_memory_text(mem)
    result = next(
        m["content"] for m in server.requests[2].body["messages"] if m.get("tool_call_id") == "r2"
    )
    assert "masked" in result  # the model is told the secret was not stored


def test_a_read_only_memory_folder_is_named_and_the_agent_goes_on(
    scripted_server: Any, tmp_path: Path
) -> None:
    first = scripted_server([{"text": "hello"}])
    proc = run_cli(args(first, tmp_path, "hi"), tmp_path, env={"LOOPACT_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr
    mem = tmp_path / "mem"
    server = scripted_server(
        [
            {"tool_calls": [call("remember", {"fact": "The door code is 1234"}, "r1")]},
            {"text": "I could not store it."},
        ]
    )
    cmd = [sys.executable, "-m", "loopact", *args(server, tmp_path, "the door code is 1234")]
    env = {**cli_env(tmp_path), "LOOPACT_API_KEY": "k"}
    if os.geteuid() == 0:  # root writes through file modes: mount the folder read-only
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare: cannot make a read-only folder")
        script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
        cmd = ["unshare", "-m", "sh", "-c", script, str(mem), *cmd]
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
    else:
        for p in [mem, *mem.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            proc = subprocess.run(
                cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
            )
        finally:
            for p in [mem, *mem.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
    if "mount:" in proc.stderr and proc.returncode != 0:
        pytest.skip(f"cannot mount read-only here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert "I could not store it." in proc.stdout
    assert "Traceback" not in proc.stderr
    assert f"memory folder {mem} is read-only" in proc.stderr
    assert proc.stderr.count("read-only") <= 3, proc.stderr  # said, not repeated per write
    result = next(
        m["content"] for m in server.requests[1].body["messages"] if m.get("tool_call_id") == "r1"
    )
    assert "read-only" in result and ".tmp-" not in result


def test_a_memory_folder_that_is_not_a_repository_is_a_clear_error(
    scripted_server: Any, tmp_path: Path
) -> None:
    (tmp_path / "mem" / ".git").mkdir(parents=True)
    server = scripted_server([])
    proc = run_cli(args(server, tmp_path, "hi"), tmp_path, env={"LOOPACT_API_KEY": "k"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "memory.path" in proc.stderr and "not a Git repository" in proc.stderr
