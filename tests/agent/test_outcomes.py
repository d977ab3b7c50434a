"""A robot tool's typed outcome through the loop (issue 38, SPEC F5, H3): the model reads it in
English, the ``tool_result`` event keeps its id and parameters and renders it in the agent's
language for the terminal and the web console."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.i18n import Name, Phrase
from loopact.tools.base import ToolResult, tool
from loopact.trace import TraceWriter, read_trace


@tool
def go_home() -> ToolResult:
    """Go home."""
    return ToolResult.success(
        {"result": Phrase("nav.reached", goal=Name("the kitchen", "厨房"), distance_m=4.92)}
    )


async def test_the_event_keeps_the_phrase_and_people_read_their_language(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("go_home", {}), call("file_list", {"path": "."})]},
            {"text": "Done.", "expect": {"contains": "reached the kitchen after 4.92 m"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path / "ws", tools=[go_home], lang="zh")
    trace = tmp_path / "t.jsonl"
    writer = TraceWriter(trace, header={}).attach(agent.bus)
    outcome = await agent.run_task("go home")
    writer.close()
    await agent.close()
    assert outcome.status == "completed", outcome
    results = {e["name"]: e for e in read_trace(trace) if e["type"] == "tool_result"}
    event = results["go_home"]
    assert event["outcome"] == {
        "id": "nav.reached",
        "params": {"goal": {"en": "the kitchen", "zh": "厨房"}, "distance_m": 4.92},
    }
    assert event["outcome_text"] == "走了 4.92 米，到达厨房"
    assert event["data"]["result"] == "reached the kitchen after 4.92 m"  # the model's text
    assert Phrase.from_json(event["outcome"]).text("zh") == event["outcome_text"]
    # a tool that says nothing typed: the fields are there, empty
    assert results["file_list"]["ok"] is True
    assert results["file_list"]["outcome"] is None and results["file_list"]["outcome_text"] is None
    assert len(rec.of("tool_result")) == 2
