"""Anthropic extended thinking from the command line and the config (issue 46 item 5, SPEC B2):
``--thinking-budget N`` / ``model.thinking_budget_tokens``; the thinking blocks and their
signatures go back to the API (the scripted server refuses a history without them, as the
API does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call
from tests.test_cli import run_cli


def _args(server: Any, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--robot",
        "none",
        "--no-memory",
        "--provider",
        "anthropic",
        "--base-url",
        server.root_url,
        "--model",
        "claude-test",
        "--api-key",
        "sk-ant-cli-secret",
        "--workspace",
        str(tmp_path / "ws"),
        "--once",
        "wait a moment, then say done",
        *extra,
    ]


def test_thinking_budget_flag_enables_thinking_and_passes_signed_blocks_back(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {
                "reasoning": "A short wait first.",
                "tool_calls": [call("wait", {"seconds": 0.1}, "toolu_w")],
                "extras": {"anthropic": {"thinking_signature": "EqQBsig/with+chars=="}},
            },
            {"text": "Done."},
        ]
    )
    proc = run_cli(_args(server, tmp_path, "--thinking-budget", "2000"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Done."
    first, second = (r.json() for r in server.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert first["max_tokens"] > 2000 and "temperature" not in first
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "A short wait first.",
        "signature": "EqQBsig/with+chars==",
    }


def test_thinking_budget_from_the_config_file(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"reasoning": "Easy.", "text": "Done."}])
    config = tmp_path / "c.yaml"
    config.write_text("model:\n  thinking_budget_tokens: 1500\n")
    proc = run_cli(_args(server, tmp_path, "--config", str(config)), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0].json()["thinking"] == {"type": "enabled", "budget_tokens": 1500}


def test_thinking_budget_is_refused_where_it_cannot_apply(tmp_path: Path) -> None:
    low = run_cli(
        ["run", "--provider", "anthropic", "--thinking-budget", "100", "--once", "hi"], tmp_path
    )
    assert low.returncode == 2
    assert "--thinking-budget" in low.stderr and "1024" in low.stderr
    other = run_cli(
        [
            "run",
            "--robot",
            "none",
            "--no-memory",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--thinking-budget",
            "2000",
            "--once",
            "hi",
        ],
        tmp_path,
    )
    assert other.returncode == 2
    assert "model.thinking_budget_tokens" in other.stderr and "openai" in other.stderr
