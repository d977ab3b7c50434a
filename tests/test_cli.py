"""The ``loopact`` command as a user runs it, in a separate process (SPEC F1, H1, H3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agent.helpers import call

from loopact.trace import read_trace

CLEAN_ENV_KEYS = ("LOOPACT_API_KEY", "OPENAI_API_KEY", "LOOPACT_BASE_URL", "LOOPACT_MODEL")


def cli_env(cwd: Path) -> dict[str, str]:
    """The environment of a new user: no keys, config/data/cache folders of their own."""
    full_env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV_KEYS}
    full_env["XDG_CONFIG_HOME"] = str(cwd / "xdg")
    full_env["XDG_DATA_HOME"] = str(cwd / "xdg-data")
    full_env["XDG_CACHE_HOME"] = str(cwd / "xdg-cache")
    return full_env


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = cli_env(cwd)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def once_args(server: Any, tmp_path: Path, text: str, *extra: str) -> list[str]:
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
        "--api-key",
        "sk-cli-secret",
        "--trace",
        str(tmp_path / "t.jsonl"),
        "--workspace",
        str(tmp_path / "ws"),
        *extra,
    ]


def test_once_writes_file_prints_reply_and_traces(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "notes/hello.txt", "content": "hi"})]},
            {"text": "I wrote notes/hello.txt."},
        ]
    )
    proc = run_cli(once_args(server, tmp_path, "write hi", "--yes"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "I wrote notes/hello.txt."
    assert (tmp_path / "ws" / "notes" / "hello.txt").read_text() == "hi"
    events = list(read_trace(tmp_path / "t.jsonl"))
    assert events[0]["type"] == "trace_start"
    assert [e["type"] for e in events][-2:] == ["reply", "task_end"]
    assert events[-1]["status"] == "completed"
    assert "sk-cli-secret" not in (tmp_path / "t.jsonl").read_text()
    assert "sk-cli-secret" not in proc.stderr + proc.stdout
    # progress goes to stderr, never mixed into the reply on stdout
    assert "file_write" in proc.stderr


def test_once_write_without_yes_is_refused_not_hung(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "x.txt", "content": "x"})]},
            {"text": "I was not allowed to write.", "expect": {"contains": "--yes"}},
        ]
    )
    proc = run_cli(once_args(server, tmp_path, "write x"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "ws" / "x.txt").exists()


def test_once_bounded_exits_3_with_fallback(scripted_server: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("agent:\n  bounds:\n    max_rounds: 1\n")
    server = scripted_server(
        [
            {"tool_calls": [call("wait", {"seconds": 0.01})]},
            {"text": "Summary: waited."},
        ]
    )
    proc = run_cli(once_args(server, tmp_path, "wait", "--config", str(cfg)), tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "1 tool rounds" in proc.stdout and "Summary: waited." in proc.stdout


def test_once_model_error_exits_1(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"error": {"status": 401, "message": "invalid key"}}])
    proc = run_cli(once_args(server, tmp_path, "hi"), tmp_path)
    assert proc.returncode == 1
    assert "invalid key" in proc.stderr
    assert proc.stdout == ""


def test_no_endpoint_explains_how_to_configure(tmp_path: Path) -> None:
    proc = run_cli(["run", "--robot", "none", "--once", "hi"], tmp_path)
    assert proc.returncode == 2
    assert "LOOPACT_BASE_URL" in proc.stderr and "loopact init" in proc.stderr


def test_config_error_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "loopact.yaml").write_text("model:\n  base_ulr: http://x\n")
    proc = run_cli(["run", "--once", "hi"], tmp_path)
    assert proc.returncode == 2
    assert "model.base_ulr" in proc.stderr


def test_a_folder_given_as_config_is_said_to_be_a_folder(tmp_path: Path) -> None:
    """Audit B finding 11: it was "config file ... does not exist"."""
    (tmp_path / "ws").mkdir()
    proc = run_cli(["run", "--robot", "none", "--once", "hi", "--config", "ws"], tmp_path)
    assert proc.returncode == 2
    assert "config file ws is a folder, not a file (from --config)" in proc.stderr
    assert "does not exist" not in proc.stderr
    proc = run_cli(["run", "--robot", "none", "--once", "hi", "--config", "no.yaml"], tmp_path)
    assert proc.returncode == 2 and "config file no.yaml does not exist" in proc.stderr


def test_bad_flag_is_usage_error(tmp_path: Path) -> None:
    proc = run_cli(["run", "--no-such-flag"], tmp_path)
    assert proc.returncode == 2


def test_init_writes_a_config_that_loads(tmp_path: Path) -> None:
    proc = run_cli(["init", "--defaults"], tmp_path)  # scripts: the starter, no questions
    assert proc.returncode == 0, proc.stderr
    from loopact.config import load_config

    cfg, source = load_config(None, env={}, cwd=tmp_path)
    assert source == tmp_path / "loopact.yaml"
    assert cfg.agent.bounds.max_rounds == 6 and cfg.robot.kind == "sim"
    assert run_cli(["init", "--defaults"], tmp_path).returncode == 2  # refuses to overwrite


def test_env_overrides_and_chinese_messages(tmp_path: Path) -> None:
    proc = run_cli(["run", "--robot", "none", "--once", "hi", "--lang", "zh"], tmp_path)
    assert proc.returncode == 2 and "尚未配置模型服务" in proc.stderr


def test_progress_lines_follow_lang_zh(scripted_server: Any, tmp_path: Path) -> None:
    """A newcomer's audit: with ``--lang zh`` the retry and bound lines were English beside
    the Chinese reply. A 503 is retried, then one tool round reaches ``max_rounds``."""
    turns = [
        {"error": {"status": 503, "message": "overloaded"}},
        {"tool_calls": [call("file_list", {"path": "."}, "c1")]},
        {"text": "文件夹是空的。"},
    ]
    server = scripted_server(turns)
    (tmp_path / "cfg.yaml").write_text("agent:\n  bounds:\n    max_rounds: 1\n")
    args = once_args(server, tmp_path, "列出文件", "--lang", "zh", "--config", "cfg.yaml")
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 3, proc.stderr  # a bound ended the task
    out = proc.stdout + proc.stderr
    assert "模型请求失败（" in out and "秒后第 1 次重试" in out, out
    assert "达到上限：max_rounds（上限 1）" in out, out
    assert "model request failed" not in out and "bound reached" not in out, out


def test_a_confirm_allow_name_of_no_tool_is_named_at_start(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A newcomer's audit: ``confirm.allow: [fiel_write]`` was accepted without a word and the
    write then asked (or was refused unattended). Now one warning names it and the closest
    tool; a right name gets none."""
    for allowed, warned in (("fiel_write", True), ("file_write", False)):
        (tmp_path / "cfg.yaml").write_text(f"confirm:\n  allow: [{allowed}]\n")
        server = scripted_server([{"text": "hello"}])
        proc = run_cli(once_args(server, tmp_path, "hi", "--config", "cfg.yaml"), tmp_path)
        assert proc.returncode == 0, proc.stderr
        err = " ".join(proc.stderr.split())  # rich wraps long lines
        said = "confirm.allow: no tool is named 'fiel_write' yet; did you mean 'file_write'?"
        assert (said in err) is warned, err
        assert ("confirm.allow" in err) is warned, err


def test_trace_timeline_and_replay_script(scripted_server: Any, tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [call("file_list", {"path": "."}, "c1")]},
        {"text": "Nothing here."},
    ]
    server = scripted_server(turns)
    proc = run_cli(once_args(server, tmp_path, "list", "--trace-full"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    timeline = run_cli(["trace", str(tmp_path / "t.jsonl")], tmp_path)
    assert timeline.returncode == 0
    assert "file_list" in timeline.stdout and "completed after 2 rounds" in timeline.stdout
    first_req = [e for e in read_trace(tmp_path / "t.jsonl") if e["type"] == "model_request"][0]
    assert first_req["messages"][1] == {
        "role": "user",
        "content": [{"type": "text", "text": "list"}],
    }

    script_path = tmp_path / "replay.json"
    conv = run_cli(["trace", str(tmp_path / "t.jsonl"), "--to-script", str(script_path)], tmp_path)
    assert conv.returncode == 0, conv.stderr
    script = json.loads(script_path.read_text())
    assert script["turns"][0]["tool_calls"][0]["name"] == "file_list"
    # Replaying the script gives the same tool calls and the same reply.
    replay = scripted_server(script)
    (tmp_path / "t.jsonl").unlink()
    again = run_cli(once_args(replay, tmp_path, "list"), tmp_path)
    assert again.returncode == 0 and again.stdout.strip() == "Nothing here."
    calls = [e for e in read_trace(tmp_path / "t.jsonl") if e["type"] == "tool_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("file_list", {"path": "."})]


def _chat(server: Any, tmp_path: Path, typed: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "loopact",
            "run",
            "--robot",
            "none",
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--workspace",
            str(tmp_path / "ws"),
            *(extra or ("--no-web",)),
        ],
        input=typed,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(tmp_path),
    )


def test_interactive_chat_answers_then_ends_at_end_of_input(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "Hello there."}])
    proc = _chat(server, tmp_path, "hello\n", "--web-port", "0")
    assert proc.returncode == 0, proc.stderr
    assert "Hello there." in proc.stdout
    assert "Web console: http://localhost:" in proc.stdout
    assert proc.stdout.rstrip().endswith("Bye.")


def test_a_line_that_is_not_utf8_is_answered_not_a_poisoned_history(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A non-UTF-8 byte typed on stdin reached the model request as a lone surrogate, and
    that task and every later one failed with UnicodeEncodeError (a newcomer audit)."""
    server = scripted_server([{"text": "Got it."}])
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", "run", "--robot", "none", "--base-url",
         server.base_url, "--model", "m", "--workspace", str(tmp_path / "ws"), "--no-web",
         "--trace", str(tmp_path / "t.jsonl")],
        input=b"hel\xfflo\n", cwd=tmp_path, capture_output=True, timeout=60,
        env=cli_env(tmp_path),
    )  # fmt: skip
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Got it." in out and "Traceback" not in out + err, out + err
    sent = json.dumps(server.requests[0].body["messages"], ensure_ascii=False)
    assert "hel\ufffdlo" in sent
    starts = [e for e in read_trace(tmp_path / "t.jsonl") if e["type"] == "task_start"]
    assert starts[0]["text"] == "hel\ufffdlo"


def test_continuous_mode_prints_the_agents_message_once(
    scripted_server: Any, tmp_path: Path
) -> None:
    """The message was streamed and then printed again as a ``message`` (a newcomer audit)."""
    server = scripted_server([{"text": "Alerted the team."}])
    proc = _chat(server, tmp_path, "the kitchen is too hot\n", "--no-web", "--mode", "continuous")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Alerted the team.") == 1, proc.stdout


def test_interactive_local_commands(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    proc = _chat(server, tmp_path, "/status\n/bogus\n/reset\n/quit\nnever sent\n")
    assert proc.returncode == 0, proc.stderr
    assert '"busy": false' in proc.stdout
    assert "Unknown command /bogus" in proc.stdout
    assert "Conversation reset." in proc.stdout
    assert not server.requests  # /quit ended the chat before "never sent"


def test_piped_lines_run_in_order_and_a_piped_y_answers_the_confirmation(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Instructions piped from a file: before, each line replaced the task before it, so
    only the last one ran and the others ended "(Stopped.)". Now a piped line waits for the
    task before it, and a ``y`` line answers that task's confirmation."""
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "a.txt", "content": "hi"}, "w1")]},
            {"text": "Wrote a.txt."},
            {"text": "Second answered."},
        ]
    )
    trace = tmp_path / "t.jsonl"
    typed = "write hi to a.txt\ny\nand now?\n/quit\n"
    proc = _chat(server, tmp_path, typed, "--no-web", "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ws" / "a.txt").read_text() == "hi"
    assert proc.stdout.index("Wrote a.txt.") < proc.stdout.index("Second answered.")
    assert "Stopped" not in proc.stdout
    ends = [e["status"] for e in read_trace(trace) if e["type"] == "task_end"]
    assert ends == ["completed", "completed"]


def test_a_piped_line_that_is_no_answer_denies_and_still_runs_as_the_next_instruction(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A newcomer's audit: the piped line after a confirmation request was taken as the
    answer whatever it said, so "move forward one meter" denied the write and never ran.
    Now a line that is not y/n denies, says so, and runs after that task ends."""
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "a.txt", "content": "hi"}, "w1")]},
            {"text": "I did not write it.", "expect": {"contains": "denied"}},
            {"text": "Moving on.", "expect": {"last_user_contains": "move forward one meter"}},
        ]
    )
    trace = tmp_path / "t.jsonl"
    typed = "write hi to a.txt\nmove forward one meter\n/quit\n"
    proc = _chat(server, tmp_path, typed, "--no-web", "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert "not a y/n answer: denied" in proc.stdout
    assert proc.stdout.index("I did not write it.") < proc.stdout.index("Moving on.")
    events = list(read_trace(trace))
    assert [e["allowed"] for e in events if e["type"] == "confirm_response"] == [False]
    # the answer belongs to the asking task in the trace, as the request does
    [asked] = [e for e in events if e["type"] == "confirm_request"]
    [answered] = [e for e in events if e["type"] == "confirm_response"]
    assert answered["task_id"] == asked["task_id"] is not None
    starts = [e["text"] for e in events if e["type"] == "task_start"]
    assert starts == ["write hi to a.txt", "move forward one meter"]
    assert [e["status"] for e in events if e["type"] == "task_end"] == ["completed"] * 2


def test_console_beyond_loopback_needs_a_token(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    proc = _chat(server, tmp_path, "/quit\n", "--web-host", "0.0.0.0", "--web-port", "0")
    assert proc.returncode == 2
    # a sentence with its full stop, as every other configuration error is (a newcomer audit)
    assert proc.stderr.endswith(
        "loopact: web.token is required to bind the console to 0.0.0.0; "
        "set --web-token or web.token.\n"
    ), proc.stderr


def test_bad_input_gives_clear_errors_not_tracebacks(tmp_path: Path) -> None:
    """QA findings: every one of these is a usage error (exit 2) with a message, no traceback."""
    (tmp_path / "bad.yaml").write_text("model: 5\n")
    (tmp_path / "broken.yaml").write_text("model:\n  base_url: [unclosed\n")
    cases = [
        (["run", "--once", "hi", "--config", str(tmp_path / "bad.yaml")], "'model'"),
        (["run", "--once", "hi", "--config", str(tmp_path / "broken.yaml")], "broken.yaml"),
        (["run", "--once", "hi", "--robot", "marsrover"], "--robot: 'robot.kind'"),
        (["run", "--once", "hi", "--web-token", "short"], "--web-token: 'web.token'"),
        (["run", "--once", "hi", "--base-url", "not a url"], "http:// or https:// URL"),
        (["run", "--once", "   "], "needs an instruction"),
        (
            ["run", "--once", "hi", "--agent-name", "bad/name", "--api-key", "k"],
            "^[a-zA-Z][a-zA-Z0-9_]{0,63}$",
        ),
        (
            [
                "run",
                "--once",
                "hi",
                "--api-key",
                "k",
                "--robot",
                "none",
                "--no-memory",
                "--workspace",
                "/dev/null",
            ],
            "agent.workspace",
        ),
        (
            ["run", "--once", "hi", "--api-key", "k", "--robot", "none", "--no-memory"]
            + ["--no-web", "--trace", str(tmp_path / "bad.yaml" / "t.jsonl")],
            f"loopact: trace.path {tmp_path / 'bad.yaml' / 't.jsonl'} cannot be written: ",
        ),
        (["eval", "--base-url", "ftp://x"], "loopact: --base-url: 'model.base_url'"),
        (["mcp", "--sim-speed", "-3"], "loopact: --sim-speed: 'robot.sim_speed'"),
        (["trace", str(tmp_path / "bad.yaml")], "cannot read trace"),
        (["init", "--path", str(tmp_path), "--force"], f"--path {tmp_path} is a folder"),
        (["scripted-server", str(tmp_path)], f"loopact: script {tmp_path} is not a file\n"),
    ]
    (tmp_path / "twice.yaml").write_text("agent:\n  lang: zh\nmodel: {}\nagent:\n  mode: plan\n")
    cases.append(
        (
            ["run", "--once", "hi", "--config", str(tmp_path / "twice.yaml")],
            "found key 'agent' twice (first at line 1)",
        )
    )
    (tmp_path / "mcp.yaml").write_text("servers:\n  x:\n    command: 5\n")
    cases.append(
        (
            ["run", "--once", "hi", "--api-key", "k", "--mcp-config", str(tmp_path / "mcp.yaml")],
            f"loopact: --mcp-config {tmp_path / 'mcp.yaml'}: 'mcp.servers.x.command'",
        )
    )
    for args, expected in cases:
        proc = run_cli(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert expected in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
    # a value from the environment names its variable
    proc = run_cli(["run", "--once", "hi"], tmp_path, env={"LOOPACT_ROBOT": "mars"})
    assert proc.returncode == 2
    assert "loopact: LOOPACT_ROBOT: 'robot.kind' must be one of" in proc.stderr, proc.stderr


def test_ros_commands_without_ros2_say_how_to_install_it(tmp_path: Path) -> None:
    """A newcomer's audit: ``loopact base``, ``sim --ros2`` and ``run --robot ros2`` on a machine
    without ROS 2 ended in a ``ModuleNotFoundError: geometry_msgs`` traceback. ROS 2 is hidden
    here by packages on PYTHONPATH whose import fails as a missing one does."""
    hide = tmp_path / "no-ros"
    for pkg in ("rclpy", "geometry_msgs", "loopact_interfaces", "sensor_msgs", "std_msgs"):
        (hide / pkg).mkdir(parents=True)
        (hide / pkg / "__init__.py").write_text(
            f'raise ModuleNotFoundError("No module named {pkg}", name={pkg!r})\n'
        )
    path = os.pathsep.join(p for p in (str(hide), os.environ.get("PYTHONPATH")) if p)
    for args in (
        ["base"],
        ["sim", "--ros2"],
        ["run", "--robot", "ros2", "--no-web", "--no-memory", "--api-key", "k", "--once", "hi"],
    ):
        proc = run_cli(args, tmp_path, env={"PYTHONPATH": path})
        assert proc.returncode == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert "loopact: ROS 2 (rclpy) is not available" in proc.stderr, (args, proc.stderr)
        assert "make ros2" in proc.stderr, (args, proc.stderr)


def test_messages_are_not_wrapped_when_stderr_is_not_a_terminal(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 22: stderr to a pipe was hard-wrapped at 80 columns, so whether a message could
    be found depended on the length of the temp path. A folder name of 120 characters makes
    every message below longer than any terminal default, whatever the temp path."""
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    proc = run_cli(["scripted-server", str(deep)], tmp_path)
    assert proc.returncode == 2
    assert f"loopact: script {deep} is not a file\n" in proc.stderr
    proc = run_cli(["trace", str(deep / "missing.jsonl")], tmp_path)
    assert proc.returncode == 2
    (line,) = [x for x in proc.stderr.splitlines() if "cannot read trace" in x]
    assert str(deep / "missing.jsonl") in line
    # Log records too: with -v every debug line is one line, however long.
    server = scripted_server([{"text": "hello"}])
    model = "m" * 120
    proc = run_cli(
        once_args(server, tmp_path, "hi", "--no-memory", "--no-web", "-v", "--model", model),
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    (request_line,) = [x for x in proc.stderr.splitlines() if "chat completion request" in x]
    assert f"model={model} " in request_line and "tools=" in request_line


def test_unwritable_outputs_are_usage_errors(scripted_server: Any, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"ts": 1.0, "type": "model_response", "task_id": "t", "text": "hi"}\n')
    for args in (
        ["trace", str(trace), "--to-script", "/proc/nope/out.json"],
        ["sim", "--snapshot", "/proc/nope"],
    ):
        proc = run_cli(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "cannot write" in proc.stderr and "Traceback" not in proc.stderr
    busy = scripted_server([])
    port = busy.base_url.rsplit(":", 1)[1].split("/")[0]
    script = tmp_path / "s.json"
    script.write_text('{"turns": [{"text": "x"}]}')
    proc = run_cli(["scripted-server", str(script), "--port", port], tmp_path)
    assert proc.returncode == 2 and "cannot listen" in proc.stderr


def test_output_files_that_would_clash_or_overwrite_are_usage_errors(
    scripted_server: Any, tmp_path: Path
) -> None:
    """--trace and --sim-log on one file spliced their lines into each other; --trace on a
    user's file replaced it; --trace on a folder blamed the workspace (newcomer try-out,
    2026-12-05). Each is refused before anything is written (SPEC H3)."""
    server = scripted_server([])  # no request may reach it
    notes = tmp_path / "ws" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("my notes\n", encoding="utf-8")
    same = tmp_path / "same.jsonl"
    cases = [
        (["--sim-log", str(same), "--trace", str(tmp_path / "." / "same.jsonl")],
         f"trace.path and robot.sim_log name the same file {same}"),
        (["--trace", str(notes)], f"trace.path {notes} holds something else"),
        (["--trace", str(tmp_path)], f"trace.path {tmp_path} is a folder"),
        (["--sim-log", str(notes)], f"robot.sim_log {notes} holds something else"),
    ]  # fmt: skip
    for extra, said in cases:
        args = once_args(server, tmp_path, "stop")
        args[args.index("--trace") : args.index("--trace") + 2] = []
        args[args.index("none")] = "sim"
        proc = run_cli([*args, *extra, "--yes", "--no-web"], tmp_path)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    assert not same.exists()
    assert server.requests == []
    # a trace of an earlier run is loopact's own: written over, as before
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"ts": 1.0, "type": "trace_start", "task_id": null}\n', encoding="utf-8")
    ok = scripted_server([{"text": "Stopped."}])
    proc = run_cli(once_args(ok, tmp_path, "stop"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"type": "task_end"' in trace.read_text(encoding="utf-8")


def test_escape_sequences_from_outside_are_not_sent_to_the_terminal(
    scripted_server: Any, tmp_path: Path
) -> None:
    """An instruction, a model's reply and a tool result can hold terminal control sequences
    (an OSC title change, a screen clear, BEL, CR): printed in caret notation, never raw, by
    ``run --once`` and ``loopact trace`` (issue 21; newcomer try-out 2026-12-05)."""
    osc = "\x1b]0;pwned\x07"
    server = scripted_server(
        [
            {"tool_calls": [call("file_read", {"path": f"nope{osc}.txt"})]},
            {"text": f"Done.\x1b[2J\rhidden{osc}"},
        ]
    )
    proc = run_cli(once_args(server, tmp_path, f"read a file {osc}"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    for out in (proc.stdout, proc.stderr):
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out, repr(out)
    assert proc.stdout.strip() == "Done.^[[2J^Mhidden^[]0;pwned^G"
    assert "nope^[]0;pwned^G.txt" in proc.stderr  # the tool's error names the path as it is
    shown = run_cli(["trace", str(tmp_path / "t.jsonl")], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "^[]0;pwned^G" in shown.stdout


def test_a_bad_agent_name_is_a_usage_error(tmp_path: Path) -> None:
    """Exit 2 naming the flag, as for every other bad flag (it was 1; a newcomer audit)."""
    tool_file = tmp_path / "t.py"
    tool_file.write_text("")
    for args in (
        ["node", str(tool_file), "--agent-name", "bad name"],
        ["base", "--agent-name", "9x"],
    ):
        proc = run_cli(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "--agent-name" in proc.stderr and "must start with a letter" in proc.stderr


def test_the_banner_masks_the_base_urls_credentials(tmp_path: Path) -> None:
    """A newcomer's audit: ``--base-url http://alice:pw@host/v1`` was printed as it is in the
    start-up banner; now its user info and query are masked (SPEC B6)."""
    url = "http://alice:PlainPw99@127.0.0.1:9/v1?key=QueryTok123"
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", "run", "--robot", "none", "--base-url", url,
         "--model", "m", "--workspace", str(tmp_path / "ws"), "--no-web"],
        input="/quit\n", cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env=cli_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "model m via openai at http://***@127.0.0.1:9/v1?***" in proc.stdout, proc.stdout
    assert "PlainPw99" not in proc.stdout + proc.stderr
    assert "QueryTok123" not in proc.stdout + proc.stderr


def test_a_node_file_that_exits_while_loading_is_named(tmp_path: Path) -> None:
    """A newcomer's audit: ``loopact node`` on a file that runs ``raise SystemExit(7)``
    exited 7 without a word. It is a file that failed to import (exit 2, named)."""
    tool_file = tmp_path / "quits.py"
    tool_file.write_text("raise SystemExit(7)\n")
    proc = run_cli(["node", str(tool_file)], tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert f"node file {tool_file} failed to import: SystemExit: 7" in proc.stderr, proc.stderr


def test_a_bad_provider_command_is_blamed_on_the_command(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A newcomer's audit: ``/provider bogus`` was refused as ``command line: 'model.provider'
    ...``; the error names the command the value came from."""
    server = scripted_server([])
    proc = _chat(server, tmp_path, "/provider bogus\n/quit\n")
    assert proc.returncode == 0, proc.stderr
    assert "/provider: 'model.provider'" in proc.stdout, proc.stdout
    assert "command line" not in proc.stdout
