"""OpenTelemetry spans over OTLP/HTTP to a receiver in another process (issue 44, acceptance 2;
SPEC A8, H3).

``tests/observe/otlp_receiver.py`` runs as its own process on loopback and writes down every
request it got. A ``loopact run --once`` pointed at it through the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` sends one trace: the task span, a ``chat`` span per model
request with the GenAI semantic-convention attributes, an ``execute_tool`` span per tool call;
the model's API key, set for the run and put by the model into its reply and a tool argument,
appears nowhere in what the receiver got. Off, nothing is imported or subscribed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call

RECEIVER = Path(__file__).with_name("otlp_receiver.py")
SECRET = "sk-otel-secret-4242-abcdef"


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The receiver process; yields its base URL and the folder it writes to."""
    out = tmp_path / "otlp"
    proc = subprocess.Popen(
        [sys.executable, str(RECEIVER), str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "listening PORT", printed once bound
        assert line.startswith("listening "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}", out
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPACT_", "OTEL_"))}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    env.update(extra)
    return env


def _run(tmp_path: Path, base_url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = ["run", "--robot", "none", "--once", f"note my key {SECRET}", "--yes"]
    args += ["--base-url", base_url, "--model", "m", "--api-key", SECRET]
    args += ["--workspace", str(tmp_path / "ws"), "--no-memory"]
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_task_model_and_tool_spans_reach_an_otlp_receiver_without_secrets(
    scripted_server: Any, receiver: tuple[str, Path], tmp_path: Path
) -> None:
    endpoint, out = receiver
    server = scripted_server(
        [
            {"tool_calls": [call("file_write", {"path": "k.txt", "content": SECRET}, id="c1")]},
            {"tool_calls": [call("file_read", {"path": "nope.txt"}, id="c2")]},
            {"text": f"Saved {SECRET}."},
        ]
    )
    proc = _run(tmp_path, server.base_url, _env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert proc.returncode == 0, proc.stderr
    assert f"telemetry: spans to {endpoint}/v1/traces" in proc.stderr
    spans = [json.loads(line) for line in (out / "spans.jsonl").read_text().splitlines()]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert set(by_name) == {"invoke_agent loopact", "chat m", "execute_tool file_write",
                            "execute_tool file_read"}, sorted(by_name)  # fmt: skip

    (task,) = by_name["invoke_agent loopact"]
    assert task["parent_span_id"] == ""
    assert task["resource"]["service.name"] == "loopact"
    attrs = task["attributes"]
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.request.model"] == "m"
    assert attrs["loopact.task.status"] == "completed"
    assert attrs["loopact.task.rounds"] == 3 and attrs["loopact.task.source"] == "cli"

    models = sorted(by_name["chat m"], key=lambda s: s["start_ns"])
    assert [m["attributes"]["loopact.round"] for m in models] == [1, 2, 3]
    for model in models:
        a = model["attributes"]
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "m"
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert a["server.address"] == "127.0.0.1" and a["server.port"] == server.port
        assert model["kind"] == 3  # SPAN_KIND_CLIENT
        assert model["start_ns"] < model["end_ns"]
    assert models[0]["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert models[-1]["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]

    (write,) = by_name["execute_tool file_write"]
    (read,) = by_name["execute_tool file_read"]
    assert write["attributes"] == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "file_write",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
    }
    assert write["status"]["code"] == 0  # unset: it worked
    assert read["status"]["code"] == 2 and read["attributes"]["error.type"] == "tool_error"
    # one trace per task: every span in it, under the task span
    assert {s["trace_id"] for s in spans} == {task["trace_id"]}
    assert {s["parent_span_id"] for s in spans if s is not task} == {task["span_id"]}
    assert task["start_ns"] <= models[0]["start_ns"] and models[-1]["end_ns"] <= task["end_ns"]

    # the key reached the model server (it is the run's key) but not the receiver
    raw = (out / "raw.bin").read_bytes()
    assert SECRET.encode() not in raw and b"otel-secret" not in raw
    assert "Saved" in proc.stdout and SECRET not in proc.stdout  # masked in the reply too


def test_telemetry_is_off_and_free_without_an_endpoint(tmp_path: Path) -> None:
    """Nothing is imported (OpenTelemetry, foxglove-sdk) and nothing subscribes to the bus."""
    code = (
        "import asyncio, sys, contextlib\n"
        "from rich.console import Console\n"
        "from loopact.app.observe import open_observe\n"
        "from loopact.config import Config\n"
        "from loopact.events import EventBus\n"
        "async def main():\n"
        "    bus = EventBus()\n"
        "    async with contextlib.AsyncExitStack() as stack:\n"
        "        seen = open_observe(Config(), bus, stack, Console())\n"
        "        print(seen.recorder, seen.telemetry_endpoint, len(bus._subscribers))\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'foxglove'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["None None 0", "[]"]


def test_a_grpc_protocol_is_refused_with_the_fix(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    env = _env(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4317",
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
    )
    proc = _run(tmp_path, server.base_url, env)
    assert proc.returncode == 2
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in proc.stderr
    assert "http/protobuf" in proc.stderr and "Traceback" not in proc.stderr
