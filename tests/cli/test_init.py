"""``loopact init`` asks (issue 46 item 3, SPEC H1): the provider, base URL, key or its variable,
model, robot, language and web console address; it checks each answer, reaches the endpoint
and reads its model list (here loopact's scripted model server), and writes a commented config
that loads. ``--defaults`` (and an input with no answers) writes the starter config as before.
The real command in a separate process, the answers on its standard input."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import cli_env

from loopact.config import STARTER_CONFIG, load_config
from loopact.errors import ConfigError


def init(
    tmp_path: Path, answers: str | None, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = cli_env(tmp_path)
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "loopact", "init", *args],
        cwd=tmp_path,
        env=full_env,
        input=answers,
        stdin=subprocess.DEVNULL if answers is None else None,
        capture_output=True,
        text=True,
        timeout=60,
    )


def lines(*answers: str) -> str:
    return "".join(f"{a}\n" for a in answers)


def test_the_answers_and_the_endpoints_model_list_make_the_config(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([])
    answers = lines("openai", server.base_url, "MY_LAB_KEY", "", "none", "zh", "127.0.0.1:8091")
    proc = init(tmp_path, answers, MY_LAB_KEY="sk-lab-key-123456")
    assert proc.returncode == 0, proc.stderr
    assert "1 model(s): scripted" in proc.stdout
    probe = server.requests[0]
    assert (probe.method, probe.path) == ("GET", "/v1/models")
    assert probe.headers["authorization"] == "Bearer sk-lab-key-123456"  # from the variable
    path = tmp_path / "loopact.yaml"
    text = path.read_text()
    assert "# openai: OpenAI-compatible chat/completions" in text  # the comments are kept
    assert "sk-lab-key" not in text
    cfg, _ = load_config(path, env={"MY_LAB_KEY": "sk-lab-key-123456"})
    assert (cfg.model.provider, cfg.model.base_url) == ("openai", server.base_url)
    assert cfg.model.model == "scripted"  # the listed model, the default not being listed
    assert cfg.model.api_key is not None
    assert cfg.model.api_key.get_secret_value() == "sk-lab-key-123456"
    assert (cfg.robot.kind, cfg.agent.lang, cfg.web.host, cfg.web.port) == (
        "none",
        "zh",
        "127.0.0.1",
        8091,
    )
    assert cfg.web.token is None
    with pytest.raises(ConfigError, match="model.api_key_env names MY_LAB_KEY, which is not set"):
        load_config(path, env={})


def test_wrong_answers_are_asked_again_with_the_reason(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([])
    answers = lines(
        "gemini",
        "anthropic",
        "api.example.com",
        server.root_url,
        "sk-ant-typed-key-0000",
        "claude-test",
        "robo",
        "ros2",
        "spot",
        "turtlebot4",
        "fr",
        "en",
        "0.0.0.0:99999",
        "0.0.0.0:8092",
    )
    proc = init(tmp_path, answers)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for reason in (
        "'gemini' is not one of openai, anthropic, dify, local",
        "'api.example.com' is not an http:// or https:// URL",
        "'robo' is not one of sim, ros2, none",
        "spot",
        "'fr' is not one of en, zh",
        "the port must be 0-65535",
        "note: claude-test is not among the models the endpoint lists",
    ):
        assert reason in out, out
    probe = server.requests[0]
    assert probe.path == "/v1/models" and probe.headers["x-api-key"] == "sk-ant-typed-key-0000"
    path = tmp_path / "loopact.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a key and a token are in it
    cfg, _ = load_config(path, env={})
    assert (cfg.model.provider, cfg.model.model, cfg.robot.kind, cfg.robot.profile) == (
        "anthropic",
        "claude-test",
        "ros2",
        "turtlebot4",
    )
    assert cfg.api_key == "sk-ant-typed-key-0000"
    assert cfg.web.host == "0.0.0.0" and cfg.web.token is not None  # beyond loopback
    assert cfg.web.token.get_secret_value() in out  # the person is told the token


def test_an_endpoint_out_of_reach_is_said_and_the_config_written(tmp_path: Path) -> None:
    answers = lines("openai", "http://127.0.0.1:9/v1", "none", "", "", "", "")
    proc = init(tmp_path, answers)
    assert proc.returncode == 0, proc.stderr
    assert "cannot reach http://127.0.0.1:9/v1/models" in proc.stdout
    cfg, _ = load_config(tmp_path / "loopact.yaml", env={})
    assert cfg.model.base_url == "http://127.0.0.1:9/v1" and cfg.model.model == "gpt-4o-mini"
    assert cfg.robot.kind == "sim" and cfg.model.api_key is None


def test_local_asks_no_endpoint(tmp_path: Path) -> None:
    proc = init(tmp_path, lines("local", "sim", "en", ""))
    assert proc.returncode == 0, proc.stderr
    cfg, _ = load_config(tmp_path / "loopact.yaml", env={})
    assert not cfg.endpoint_configured  # the offline brain


@pytest.mark.parametrize("how", ["--defaults", "no input"])
def test_scripts_get_the_starter_config(tmp_path: Path, how: str) -> None:
    proc = init(tmp_path, None, *([how] if how == "--defaults" else []))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "loopact.yaml").read_text() == STARTER_CONFIG
    if how == "no input":
        assert "no answers on standard input" in proc.stderr


def test_the_input_ending_where_an_answer_is_needed_is_a_usage_error(tmp_path: Path) -> None:
    proc = init(tmp_path, lines("dify"))  # Dify has no default base URL
    assert proc.returncode == 2
    assert "has no default" in proc.stderr and not (tmp_path / "loopact.yaml").exists()


def test_at_a_terminal_the_typed_key_is_not_shown(tmp_path: Path) -> None:
    """At a terminal (a pseudo-terminal here, as a person's) every answer is echoed but the key."""
    import os
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: loopact init on the terminal
        os.chdir(tmp_path)
        env = cli_env(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "loopact", "init"], env)
    seen = b""
    start = 0  # where the next prompt is looked for (after the answers sent so far)

    def read_until(marker: bytes, timeout_s: float = 30.0) -> None:
        nonlocal seen, start
        while marker not in seen[start:]:
            ready, _, _ = select.select([fd], [], [], timeout_s)
            assert ready, f"no {marker!r} on the terminal; saw {seen[-400:]!r}"
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child ended
                break
        start = seen.index(marker, start) + len(marker) if marker in seen[start:] else start

    answers = [
        (b"Model provider", b"openai"),
        (b"Base URL", b"http://127.0.0.1:9/v1"),
        (b"API key", b"sk-secret-typed-0123"),
        (b"Model", b""),
        (b"Robot:", b"none"),
        (b"Language", b""),
        (b"Web console", b""),
    ]
    for prompt, answer in answers:
        read_until(prompt)
        os.write(fd, answer + b"\n")
    read_until(b"wrote loopact.yaml")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    assert b"http://127.0.0.1:9/v1" in seen  # echoed
    assert b"sk-secret-typed-0123" not in seen  # not echoed
    assert "sk-secret-typed-0123" in (tmp_path / "loopact.yaml").read_text()
