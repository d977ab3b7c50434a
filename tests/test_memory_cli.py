"""Memory and skills through the real command (SPEC E2, E3, E4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dulwich.repo import Repo
from tests.agent.helpers import call
from tests.test_cli import run_cli


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
