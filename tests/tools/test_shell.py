"""shell_exec: allow-list, never a shell, process-group kill at the timeout, output cap
(issue 19 acceptance 2, SPEC C5, C6)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.app.general import general_tools
from loopact.config import load_config
from loopact.errors import ConfigError
from loopact.tools.base import SafetyClass, Tool, ToolContext
from loopact.tools.builtin.files import Workspace
from loopact.tools.builtin.shell import ShellSettings, make_shell_tool

PY = sys.executable


def _shell(tmp_path: Path, **over: Any) -> Tool:
    settings = ShellSettings(
        allow=over.pop(
            "allow", {"uptime": [], "ls": [], "sleep": [], PY: [], "git": ["status", "log"]}
        ),
        timeout_s=over.pop("timeout_s", 10.0),
        max_output_chars=over.pop("max_output_chars", 8000),
    )
    return make_shell_tool(Workspace(tmp_path), settings)


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="t", call_id="c", workspace=tmp_path)


async def _gone(pid: int, within_s: float) -> bool:
    """Whether ``pid`` ends within ``within_s`` seconds (its pidfd becomes readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()
    loop.add_reader(fd, ended.set)
    try:
        await asyncio.wait_for(ended.wait(), within_s)
        return True
    except asyncio.TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has stopped running
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


async def test_model_runs_an_allowed_command_and_is_refused_the_rest(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 2 through the loop: uptime runs (after confirmation: write class);
    ``rm -rf /``, ``ls; rm x`` and ``$(id)`` are refused and nothing is removed."""
    (tmp_path / "x").write_text("keep me", encoding="utf-8")
    calls = [
        call("shell_exec", {"command": "uptime"}, "s1"),
        call("shell_exec", {"command": "rm -rf /"}, "s2"),
        call("shell_exec", {"command": "ls; rm x"}, "s3"),
        call("shell_exec", {"command": "$(id)"}, "s4"),
    ]
    server = scripted_server(
        [{"tool_calls": calls}, {"text": "done", "expect": {"contains": "load average"}}]
    )
    agent, rec = make_agent(server, tmp_path, tools=[_shell(tmp_path)], auto_approve=True)
    outcome = await agent.run_task("how long has this machine been up? then clean up")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    assert results["s1"]["ok"] is True
    assert "load average" in results["s1"]["data"]["stdout"]
    assert results["s1"]["metadata"]["argv"] == ["uptime"]
    assert results["s1"]["metadata"]["exit_code"] == 0
    assert "'rm' is not on the allow-list" in results["s2"]["error"]
    assert "';' is shell syntax" in results["s3"]["error"]
    assert "'$'" in results["s4"]["error"] and "'('" in results["s4"]["error"]
    assert all(results[i]["metadata"]["refused"] for i in ("s2", "s3", "s4"))
    assert (tmp_path / "x").read_text(encoding="utf-8") == "keep me"
    # everything it ran, or was asked to run, is in the trace's events
    assert [e.data["arguments"]["command"] for e in rec.of("tool_call")] == [
        "uptime",
        "rm -rf /",
        "ls; rm x",
        "$(id)",
    ]


async def test_command_that_sleeps_forever_is_killed_at_its_timeout_with_its_children(
    tmp_path: Path,
) -> None:
    (tmp_path / "spawn.py").write_text(
        textwrap.dedent(
            """\
            import subprocess, sys, time
            child = subprocess.Popen(["sleep", "1000"])
            print(child.pid, flush=True)
            time.sleep(1000)
            """
        ),
        encoding="utf-8",
    )
    shell = _shell(tmp_path, timeout_s=1.0)
    result = await shell.invoke({"command": f"{PY} spawn.py"}, _ctx(tmp_path))
    assert not result.ok
    assert "did not finish within 1 s" in (result.error or "")
    assert result.metadata["timed_out"] is True
    child_pid = int(result.data["stdout"].split()[0])
    # SIGKILL is delivered at once but a loaded kernel takes a moment to end the process:
    # wait (bounded) for it to be gone rather than reading its state the same instant
    assert await _gone(child_pid, within_s=10), "the grandchild survived the process-group kill"
    plain = await shell.invoke({"command": "sleep 1000"}, _ctx(tmp_path))
    assert plain.metadata["timed_out"] is True and plain.metadata["duration_s"] < 5


async def test_output_is_capped_and_a_flood_is_stopped(tmp_path: Path) -> None:
    (tmp_path / "flood.py").write_text(
        "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n", encoding="utf-8"
    )
    shell = _shell(tmp_path, max_output_chars=1000, timeout_s=30.0)
    result = await shell.invoke({"command": f"{PY} flood.py"}, _ctx(tmp_path))
    assert not result.ok and "printed more than 4 MB" in (result.error or "")
    assert result.metadata["truncated"] is True
    assert result.data["stdout"].startswith("y" * 1000)
    assert len(result.data["stdout"]) < 1200
    assert result.metadata["duration_s"] < 20


async def test_a_finite_output_past_4_mb_keeps_its_start_and_says_it_was_cut(
    tmp_path: Path,
) -> None:
    """Audit B finding 12: the call failed and seemed to return none of the output; the
    kept start is in data.stdout and the error says so."""
    lines = "".join(f"line {i:07d}\n" for i in range(400_000))  # 5.2 MB
    (tmp_path / "big.txt").write_text(lines, encoding="utf-8")
    shell = _shell(tmp_path, allow={"cat": []}, max_output_chars=200, timeout_s=30.0)
    result = await shell.invoke({"command": "cat big.txt"}, _ctx(tmp_path))
    assert not result.ok
    assert result.error == (
        "cat printed more than 4 MB, the most shell_exec reads, and was stopped; its output "
        "is cut to the first 200 characters (data.stdout, data.stderr)"
    )
    assert result.data["stdout"].startswith(lines[:200])
    assert "[output cut: " in result.data["stdout"] and result.metadata["truncated"] is True


async def test_first_argument_rules_cwd_and_environment(tmp_path: Path) -> None:
    shell = _shell(tmp_path)
    ctx = _ctx(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("x", encoding="utf-8")
    listed = await shell.invoke({"command": "ls", "cwd": "logs"}, ctx)
    assert listed.ok and listed.data["stdout"].split() == ["a.log"]
    assert listed.metadata["cwd"] == "logs"
    refused = await shell.invoke({"command": "git push --force"}, ctx)
    assert not refused.ok and "first argument must be one of: status, log" in (refused.error or "")
    outside = await shell.invoke({"command": "ls", "cwd": "../.."}, ctx)
    assert not outside.ok and "outside the workspace" in (outside.error or "")
    quoted = await shell.invoke({"command": "ls 'unterminated"}, ctx)
    assert not quoted.ok and "cannot split" in (quoted.error or "")
    os.environ["LOOPACT_SMTP_PASSWORD"] = "hunter2"
    try:
        env = await shell.invoke({"command": f"{PY} -c 'import os;print(sorted(os.environ))'"}, ctx)
    finally:
        del os.environ["LOOPACT_SMTP_PASSWORD"]
    assert not env.ok  # ';' and '(' are shell syntax even inside quotes
    (tmp_path / "env.py").write_text("import os\nprint(sorted(os.environ))\n", encoding="utf-8")
    os.environ["LOOPACT_SMTP_PASSWORD"] = "hunter2"
    try:
        env = await shell.invoke({"command": f"{PY} env.py"}, ctx)
    finally:
        del os.environ["LOOPACT_SMTP_PASSWORD"]
    assert env.ok and "LOOPACT_SMTP_PASSWORD" not in env.data["stdout"]
    failing = await shell.invoke({"command": "ls no-such-file"}, ctx)
    assert not failing.ok and failing.metadata["exit_code"] != 0
    assert "exited with code" in (failing.error or "")


async def test_absent_unless_enabled_and_write_class(tmp_path: Path) -> None:
    cfg, _ = load_config(None, env={}, cwd=tmp_path)
    assert [t.name for t in general_tools(cfg, tmp_path)] == ["write_document"]
    path = tmp_path / "loopact.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            tools:
              shell:
                enabled: true
                allow:
                  uptime: []
                  ls: []
                timeout_s: 10
                max_output_chars: 8000
            """
        ),
        encoding="utf-8",
    )
    cfg, _ = load_config(path, env={})
    (_, shell) = general_tools(cfg, tmp_path)
    assert shell.name == "shell_exec" and shell.safety is SafetyClass.WRITE
    assert "Allowed programs: ls, uptime." in shell.description


@pytest.mark.parametrize("command", ["", "   ", "ls && id", "ls | wc", "cat < /etc/passwd", "`id`"])
async def test_more_shell_syntax_is_refused(tmp_path: Path, command: str) -> None:
    result = await _shell(tmp_path).invoke({"command": command}, _ctx(tmp_path))
    assert not result.ok and result.metadata.get("refused") is True


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("true", 'a key written true, yes or on was read by YAML as true, not a name; '
         'quote it ("true": ..., "yes": ..., "on": ...)'),
        ("yes", 'a key written true, yes or on was read by YAML as true'),
        ("off", 'a key written false, no or off was read by YAML as false'),
        ("~", 'a key written null or ~ was read by YAML as null'),
        ("7", 'the key 7 was read by YAML as a number, not a name; quote it ("7": ...)'),
    ],
)  # fmt: skip
def test_an_allow_key_yaml_reads_as_a_bool_or_number_says_to_quote_it(
    tmp_path: Path, written: str, expected: str
) -> None:
    """Audit B finding 7: it was "'tools.shell.allow.1.[key]': Input should be a valid
    string (got True)", naming nothing the user wrote; true, false, yes are real programs."""
    path = tmp_path / "loopact.yaml"
    path.write_text(
        f"tools:\n  shell:\n    enabled: true\n    allow:\n      ls: []\n      {written}: []\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value).startswith(f"{path}: 'tools.shell.allow': {expected}")
    assert "[key]" not in str(info.value) and info.value.key == "tools.shell.allow"
    if not written.isalnum():
        return  # "~" is no program name (refused below)
    path.write_text(
        f'tools:\n  shell:\n    enabled: true\n    allow:\n      "{written}": []\n',
        encoding="utf-8",
    )
    cfg, _ = load_config(path, env={})
    assert list(cfg.tools.shell.allow) == [written]  # quoted, it is the program's name


def test_a_mapping_key_read_as_a_number_elsewhere_is_named_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "loopact.yaml"
    path.write_text("mcp:\n  servers:\n    1: {command: x}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert "'mcp.servers': the key 1 was read by YAML as a number" in str(info.value)


def test_program_names_that_cannot_be_a_program_are_refused_at_start(tmp_path: Path) -> None:
    """Audit B finding 12: {"ls;rm": [], "": []} was accepted silently."""
    path = tmp_path / "loopact.yaml"
    bad = ["ls;rm", "", "a b", "bin/ls", "/usr/../bin/sh", "..", "$(id)"]
    path.write_text(
        "tools:\n  shell:\n    allow:\n"
        + "".join(f"      {json.dumps(name)}: []\n" for name in bad)
        + '      ls: []\n      /usr/bin/env: []\n      "python3.12": []\n      "g++": []\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    names = ", ".join(map(repr, bad))
    assert str(info.value) == (
        f"{path}: 'tools.shell.allow': program names {names} cannot be run: give a plain "
        "name (ls) or an absolute path (/usr/bin/ls), without spaces or shell characters "
        "(; | & $ < > * ...)."
    )
    path.write_text(
        'tools:\n  shell:\n    allow: {ls: [], /usr/bin/env: [], "python3.12": [], "g++": []}\n',
        encoding="utf-8",
    )
    cfg, _ = load_config(path, env={})
    assert sorted(cfg.tools.shell.allow) == ["/usr/bin/env", "g++", "ls", "python3.12"]
