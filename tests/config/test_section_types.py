"""A section of the config file that must be a mapping and is not is refused, whatever flags
or environment variables set keys in it (SPEC H1, docs/config.md): the file is checked on its
own before the overrides are merged into it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopact.config import load_config
from loopact.errors import ConfigError

URL = "{url}"
"""Stands for the scripted server's base URL in the parameters below."""


def _run(
    tmp_path: Path, config: str, args: list[str], env: dict[str, str], url: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``loopact run --once hi`` with ``config`` as its file, as a new user runs it."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config, encoding="utf-8")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPACT_")}
    full_env.pop("OPENAI_API_KEY", None)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        full_env[name] = str(tmp_path / name.lower())
    full_env.update({k: v.replace(URL, url) for k, v in env.items()})
    args = [a.replace(URL, url) for a in args]
    common = ["--once", "hi", "--config", str(cfg), "--no-web", "--no-memory"]
    common += ["--workspace", str(tmp_path / "ws")]
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", "run", *common, *args],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, cfg


@pytest.mark.parametrize(
    ("config", "args", "env", "key", "expected"),
    [
        ("robot: 5\n", ["--robot", "none", "--base-url", URL], {}, "robot", "RobotConfig"),
        ("model: hello\n", ["--robot", "none", "--base-url", URL], {}, "model", "ModelConfig"),
        ("model: hello\n", ["--robot", "none"], {"LOOPACT_BASE_URL": URL}, "model", "ModelConfig"),
        (
            "agent: [1, 2]\n",
            ["--robot", "none", "--base-url", URL, "--lang", "en"],
            {},
            "agent",
            "AgentConfig",
        ),
        (
            "robot:\n  kind: none\n  estop: 5\n",
            ["--base-url", URL],
            {"LOOPACT_ESTOP_TOKEN": "a-reset-token"},
            "robot.estop",
            "EstopConfig",
        ),
    ],
    ids=[
        "robot-5-with-robot-flag",
        "model-text-with-base-url-flag",
        "model-text-with-base-url-env",
        "agent-list-with-lang-flag",
        "estop-5-with-token-env",
    ],
)
def test_a_section_that_is_not_a_mapping_is_refused_whatever_overrides_it(
    scripted_server: Any,
    tmp_path: Path,
    config: str,
    args: list[str],
    env: dict[str, str],
    key: str,
    expected: str,
) -> None:
    server = scripted_server([])  # a run that starts would ask it and exhaust the script
    proc, cfg = _run(tmp_path, config, args, env, server.base_url)
    assert proc.returncode == 2, proc.stderr
    assert (
        f"loopact: {cfg}: '{key}': Input should be a valid dictionary or instance of {expected}"
        in proc.stderr
    ), proc.stderr
    assert server.requests == []


def test_a_valid_file_with_the_same_overrides_still_runs(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "Hello from the script."}])
    config = "robot:\n  kind: sim\n  estop:\n    reset_topic: /reset\nmodel:\n  model: m\n"
    env = {"LOOPACT_ESTOP_TOKEN": "a-reset-token"}
    proc, _cfg = _run(
        tmp_path, config, ["--robot", "none", "--base-url", URL], env, server.base_url
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello from the script."


def test_a_file_section_replaced_by_mcp_config_must_still_be_a_mapping(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("mcp: 5\n", encoding="utf-8")
    servers = tmp_path / "servers.json"
    servers.write_text('{"servers": {"files": {"command": "true"}}}', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(cfg, env={}, mcp_config=servers)
    assert str(caught.value).startswith(f"{cfg}: 'mcp': Input should be a valid dictionary")


def test_a_null_the_section_allows_is_filled_by_an_override(tmp_path: Path) -> None:
    """Only a value the file may not hold is refused: ``vision.model: null`` is the default."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("vision:\n  model: null\n", encoding="utf-8")
    over = {"vision": {"model": {"base_url": "http://127.0.0.1:9/v1"}}}
    loaded, _source = load_config(cfg, env={}, overrides=over)
    assert loaded.vision.model is not None
    assert loaded.vision.model.base_url == "http://127.0.0.1:9/v1"
