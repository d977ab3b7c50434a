"""Tool calls in open models' own markup, through the real OpenAI provider code against the
scripted model server streaming the model's text (SPEC B5, B7; issue 39 item 2).

Qwen3-Coder, GLM and Kimi K2 write calls in their chat template's markup when the server has
no tool parser. Before: the first two ran a tool named ``''`` ("unknown tool ''") and the
third was printed as the final answer with exit code 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent
from tests.test_cli import once_args, run_cli

from loopact.tools.base import Tool, tool
from loopact.trace import read_trace

QWEN = (
    "I will turn and take a note.\n<tool_call>\n<function=turn>\n<parameter=angle_deg>\n90\n"
    "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=note>\n<parameter=text>\n"
    "line one\nline two\n</parameter>\n<parameter=urgent>\ntrue\n</parameter>\n<parameter=tags>"
    '\n["door", "3"]\n</parameter>\n</function>\n</tool_call>'
)
GLM = (
    "<tool_call>turn\n<arg_key>angle_deg</arg_key>\n<arg_value>90</arg_value>\n</tool_call>"
    "<tool_call>note\n<arg_key>text</arg_key>\n<arg_value>line one\nline two</arg_value>\n"
    "<arg_key>urgent</arg_key>\n<arg_value>true</arg_value>\n<arg_key>tags</arg_key>\n"
    '<arg_value>["door", "3"]</arg_value>\n</tool_call>'
)
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.turn:0<|tool_call_argument_begin|>"
    '{"angle_deg": 90}<|tool_call_end|><|tool_call_begin|>functions.note:1'
    '<|tool_call_argument_begin|>{"text": "line one\\nline two", "urgent": true, '
    '"tags": ["door", "3"]}<|tool_call_end|><|tool_calls_section_end|>'
)
EXPECTED = [
    ("turn", {"angle_deg": 90.0}),
    ("note", {"text": "line one\nline two", "urgent": True, "tags": ["door", "3"]}),
]


def _tools(log: list[tuple[str, dict[str, Any]]]) -> list[Tool]:
    @tool(safety="motion")
    async def turn(angle_deg: float) -> str:
        """Turn on the spot.

        Args:
            angle_deg: Angle in degrees, left positive.
        """
        log.append(("turn", {"angle_deg": angle_deg}))
        return f"turned {angle_deg:g} degrees"

    @tool(safety="idempotent")
    async def note(text: str, urgent: bool = False, tags: list[str] | None = None) -> str:
        """Take a note.

        Args:
            text: The note.
            urgent: Whether it is urgent.
            tags: Labels.
        """
        log.append(("note", {"text": text, "urgent": urgent, "tags": tags}))
        return "noted"

    return [turn, note]


@pytest.mark.parametrize("text", [QWEN, GLM, KIMI], ids=["qwen3-coder", "glm", "kimi-k2"])
async def test_calls_in_a_models_own_markup_run_with_typed_arguments(
    scripted_server: Any, tmp_path: Path, text: str
) -> None:
    log: list[tuple[str, dict[str, Any]]] = []
    server = scripted_server(
        [
            {"text": text, "chunk_size": 5},  # tags split across deltas
            {"text": "Turned and noted.", "expect": {"contains": "noted"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=_tools(log))
    outcome = await agent.run_task("turn left and note the door")
    await agent.close()
    assert log == EXPECTED
    assert outcome.status == "completed" and outcome.reply == "Turned and noted."
    assert all(e.data["ok"] for e in rec.of("tool_result"))


UNREADABLE = {
    "qwen-unclosed-parameter": (
        "<tool_call><function=note><parameter=text>hi</function></tool_call>"
    ),
    "qwen-text-between": (
        "<tool_call><function=note>so <parameter=text>hi</parameter></function></tool_call>"
    ),
    "glm-key-without-value": "<tool_call>note\n<arg_key>text</arg_key>\n</tool_call>",
    "glm-without-wrapper": "Noting.\nnote<arg_key>text</arg_key><arg_value>hi</arg_value>",
    "kimi-no-argument-tag": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.note:0 "
        '{"text": "hi"}<|tool_call_end|><|tool_calls_section_end|>'
    ),
    "kimi-unclosed-section": "<|tool_calls_section_begin|><|tool_call_begin|>functions.note:0",
}


@pytest.mark.parametrize("text", list(UNREADABLE.values()), ids=list(UNREADABLE))
async def test_a_block_that_cannot_be_read_is_said_so_and_runs_nothing(
    scripted_server: Any, tmp_path: Path, text: str
) -> None:
    """The model is told its block could not be read (never "unknown tool ''"), no tool runs,
    and the markup is not the answer."""
    log: list[tuple[str, dict[str, Any]]] = []
    server = scripted_server(
        [
            {"text": text, "chunk_size": 7},
            {"text": "I could not take the note.", "expect": {"contains": "could not be read"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=_tools(log))
    outcome = await agent.run_task("note hi")
    await agent.close()
    assert log == []
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False
    assert "your tool call could not be read" in result.data["error"]
    assert "unknown tool" not in result.data["error"]
    assert "note" in result.data["error"]  # the available tools are named
    assert outcome.reply == "I could not take the note."


async def test_kimi_markup_runs_and_is_never_printed_as_the_answer(
    scripted_server: Any, tmp_path: Path
) -> None:
    """The issue's run: Kimi K2 markup was printed as the final answer, exit code 0. Now the
    call runs and the reply on stdout is the model's answer."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "plan.txt").write_text("x", encoding="utf-8")
    markup = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.file_list:0"
        '<|tool_call_argument_begin|>{"path": "."}<|tool_call_end|><|tool_calls_section_end|>'
    )
    server = scripted_server(
        [
            {"text": markup, "chunk_size": 6},
            {"text": "The workspace holds plan.txt.", "expect": {"contains": "plan.txt"}},
        ]
    )
    proc = run_cli(once_args(server, tmp_path, "what is in the workspace?"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "The workspace holds plan.txt."
    events = list(read_trace(tmp_path / "t.jsonl"))
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["name"], r["ok"]) for r in results] == [("file_list", True)]
    assert "plan.txt" in json.dumps(results[0]["data"])


async def test_markup_that_never_becomes_a_call_is_not_a_successful_answer(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A model that only writes unreadable markup ends on a bound (exit code 3), and the
    markup is not printed as its reply."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("agent:\n  bounds:\n    max_rounds: 2\n", encoding="utf-8")
    broken = "<|tool_call_begin|>functions.file_list:0 {}<|tool_call_end|>"
    server = scripted_server([{"text": broken}, {"text": broken}, {"text": broken}])
    proc = run_cli(once_args(server, tmp_path, "list", "--config", str(cfg)), tmp_path)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "<|" not in proc.stdout and "tool_call" not in proc.stdout
