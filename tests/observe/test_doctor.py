"""``loopact doctor``: each feature's check with the fix for what is missing; exit code 0 when
the main job can run (issue 44, acceptance 3; SPEC H1, H2).

A fresh machine is a new user's folders (HOME, XDG, an empty ``LOOPACT_CACHE_DIR``): without an
endpoint the main job needs the local brain's model, which is not there, so the doctor names it
with its fix and exits 1. With an endpoint it checks the endpoint with its key against the
scripted model server (which refuses other keys); a busy port is a warning, never a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopact.testing import ScriptedModelServer

KEY = "sk-doctor-right-key-1234"


def _doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``loopact doctor`` as a new user on this machine runs it."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPACT_", "OTEL_"))}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DIFY_API_KEY"):
        full.pop(name, None)
    full["HOME"] = str(tmp_path / "home")
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        full[name] = str(tmp_path / name.lower())
    full["LOOPACT_CACHE_DIR"] = str(tmp_path / "cache")
    full["COLUMNS"] = "250"
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "loopact", "doctor", *args],
        cwd=tmp_path,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _row(out: str, feature: str, check: str) -> str:
    """The table line of one check (its cells joined by │)."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 3 and cells[1].rstrip(" *") == feature and cells[2] == check:
            return line
    raise AssertionError(f"no row {feature} / {check} in:\n{out}")


def test_a_fresh_machine_without_an_endpoint_lacks_the_local_brains_model(tmp_path: Path) -> None:
    proc = _doctor(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    model = _row(proc.stdout, "local brain", "model")
    assert "✗" in model and "make local-brain" in model and "not installed" in model
    assert "local brain *" in model  # needed: no endpoint is configured
    assert "The main job cannot run: missing local brain: model" in proc.stdout.replace("\n", " ")
    config = _row(proc.stdout, "the agent", "config file")
    assert "✓" in config and "loopact init writes one" in config
    every = [
        ("simulator", "MuJoCo"),
        ("model endpoint", "reachable with its key"),
        ("local brain", "CPU"),
        ("ROS 2", "rclpy"),
        ("MQTT", "mosquitto"),
        ("voice", "espeak-ng"),
        ("voice", "audio device"),
        ("recording", "foxglove-sdk"),
        ("telemetry", "OpenTelemetry SDK"),
        ("browser tests", "Chromium"),
        ("web console", "port 8080"),
    ]
    for feature, check in every:
        _row(proc.stdout, feature, check)
    assert "Traceback" not in proc.stderr


def test_a_broken_config_file_is_named_with_its_fix(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("robot: {kind: sim, speed_typo: 2}\n", encoding="utf-8")
    proc = _doctor(tmp_path, "--config", str(config))
    assert proc.returncode == 1
    row = _row(proc.stdout, "the agent", "config file")
    assert "✗" in row and "speed_typo" in row and "loopact init --force" in row


def test_with_an_endpoint_the_key_is_checked_and_the_main_job_can_run(tmp_path: Path) -> None:
    with ScriptedModelServer({"turns": []}, api_key=KEY) as server:
        proc = _doctor(tmp_path, LOOPACT_BASE_URL=server.base_url, LOOPACT_API_KEY=KEY)
        wrong = _doctor(tmp_path, LOOPACT_BASE_URL=server.base_url, LOOPACT_API_KEY="sk-wrong-1")
        paths = [(r.method, r.path) for r in server.requests]
    assert proc.returncode == 0, proc.stdout
    assert "✓" in _row(proc.stdout, "model endpoint", "reachable with its key")
    assert "HTTP 200" in proc.stdout and "The main job can run." in proc.stdout
    assert "local brain *" not in proc.stdout  # not needed with an endpoint
    assert wrong.returncode == 1
    row = _row(wrong.stdout, "model endpoint", "reachable with its key")
    assert "✗" in row and "the key was refused (HTTP 401)" in row and "LOOPACT_API_KEY" in row
    assert paths == [("GET", "/v1/models")] * 2
    assert KEY not in proc.stdout + proc.stderr and "sk-wrong-1" not in wrong.stdout


def test_an_unreachable_endpoint_and_a_busy_port(tmp_path: Path, unused_port: Any) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "c.yaml"
        config.write_text(f"web: {{port: {port}}}\n", encoding="utf-8")
        proc = _doctor(
            tmp_path,
            "--config",
            str(config),
            LOOPACT_BASE_URL=f"http://127.0.0.1:{unused_port}/v1",
            LOOPACT_API_KEY=KEY,
        )
    assert proc.returncode == 1
    row = _row(proc.stdout, "model endpoint", "reachable with its key")
    assert "✗" in row and "ConnectError" in row and "--base-url" in row
    busy_row = _row(proc.stdout, "web console", f"port {port}")
    assert "!" in busy_row and "in use" in busy_row and "--web-port" in busy_row


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
