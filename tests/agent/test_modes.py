"""Plan-and-execute (SPEC A4), action text (A5), provider switch (B4) through the agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agent.helpers import Recorder, call, make_agent

from loopact.agent import Agent, AgentOptions
from loopact.agent.tools import AgentCallTool
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.dify import DifyModel
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.tools.base import SafetyClass, ToolResult, tool
from loopact.tools.registry import ToolRegistry

seen: list[Any] = []


@tool
async def measure(name: str) -> ToolResult:
    """Measure something; data is a number, metadata has its unit."""
    return ToolResult.success(1.25, unit="m")


@tool
async def double(value: float) -> float:
    """Double a number."""
    return value * 2


@tool
async def report(text: str, value: float) -> str:
    """Report a value."""
    seen.append((text, value))
    return f"reported {text}"


def plan_text(steps: list[dict[str, Any]]) -> str:
    return "Here is the plan:\n```json\n" + json.dumps({"steps": steps}) + "\n```"


async def test_three_step_plan_passes_data_between_steps(
    scripted_server: Any, tmp_path: Path
) -> None:
    seen.clear()
    steps = [
        {"id": 1, "description": "measure", "tool": "measure", "parameters": {"name": "gap"}},
        {
            "id": 2,
            "description": "double it",
            "tool": "double",
            "parameters": {"value": "{{steps.1.outputs.data}}"},
        },
        {
            "id": 3,
            "description": "report",
            "tool": "report",
            "parameters": {
                "value": "{{steps.2.outputs.data}}",
                "text": "gap is {{steps.2.outputs.data}} {{steps.1.outputs.metadata.unit}}",
            },
        },
    ]
    server = scripted_server([{"text": plan_text(steps), "expect": {"no_tools": True}}])
    agent, rec = make_agent(server, tmp_path, tools=[measure, double, report], mode="plan")
    outcome = await agent.run_task("measure the gap, double it and report")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert seen == [("gap is 2.5 m", 2.5)]
    assert [e.data["n"] for e in rec.of("step_start")] == [1, 2, 3]
    assert all(e.data["ok"] for e in rec.of("step_end"))
    assert rec.of("plan")[0].data["steps"][2]["tool"] == "report"
    assert "report" in outcome.reply


async def test_plan_with_reference_to_missing_step_is_rejected_before_running(
    scripted_server: Any, tmp_path: Path
) -> None:
    seen.clear()
    steps = [
        {"id": 1, "description": "measure", "tool": "measure", "parameters": {"name": "gap"}},
        {
            "id": 2,
            "description": "report",
            "tool": "report",
            "parameters": {"value": "{{steps.9.outputs.data}}", "text": "x"},
        },
    ]
    # the model is told why and asked once more (PLAN_RETRIES); the same bad plan again fails
    server = scripted_server(
        [
            {"text": plan_text(steps)},
            {"text": plan_text(steps), "expect": {"contains": "rejected, nothing has run"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure, double, report], mode="plan")
    outcome = await agent.run_task("do it")
    await agent.close()
    assert outcome.status == "failed"
    assert "step 9" in (outcome.error or "") and "1" in (outcome.error or "")
    assert not rec.of("tool_call") and not rec.of("step_start")
    assert len(rec.of("model_request")) == 2
    assert seen == []


async def test_a_rejected_plan_is_corrected_once_and_runs(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A plan naming a tool that does not exist is sent back with the reason; the corrected
    plan runs (before, the task failed on the first bad plan with nothing tried)."""
    seen.clear()
    bad = [{"id": 1, "description": "x", "tool": "measure_gap", "parameters": {"name": "gap"}}]
    good = [
        {"id": 1, "description": "measure", "tool": "measure", "parameters": {"name": "gap"}},
        {
            "id": 2,
            "description": "report",
            "tool": "report",
            "parameters": {"value": "{{steps.1.outputs.data}}", "text": "gap"},
        },
    ]
    server = scripted_server(
        [
            {"text": plan_text(bad), "expect": {"no_tools": True}},
            {"text": plan_text(good), "expect": {"contains": "measure_gap"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure, double, report], mode="plan")
    outcome = await agent.run_task("measure the gap and report it")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert seen == [("gap", 1.25)]
    assert len(rec.of("plan")) == 1 and len(rec.of("model_request")) == 2
    assert [e.data["n"] for e in rec.of("step_start")] == [1, 2]


async def test_a_plan_that_calls_no_tool_is_rejected_not_reported_as_done(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A newcomer's audit: the local brain's plan was one step with ``"tool": null``; it
    "completed" with 0 of 1 steps and exit code 0, the robot never moved. A plan without
    any tool is sent back once, and again it fails the task before anything runs."""
    seen.clear()
    idle = [{"id": 1, "description": "move forward half a meter", "tool": None}]
    server = scripted_server(
        [
            {"text": plan_text(idle)},
            {"text": plan_text(idle), "expect": {"contains": "no step has a tool"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure, double, report], mode="plan")
    outcome = await agent.run_task("move forward half a meter")
    await agent.close()
    assert outcome.status == "failed", outcome
    assert "no step has a tool" in (outcome.error or "")
    assert "available tools: " in (outcome.error or "") and "measure" in (outcome.error or "")
    assert not rec.of("step_start") and seen == []


async def test_agent_call_tool_runs_a_plan_inside_a_task(
    scripted_server: Any, tmp_path: Path
) -> None:
    seen.clear()
    steps = [
        {"id": 1, "description": "measure", "tool": "measure", "parameters": {"name": "gap"}},
        {
            "id": 2,
            "description": "report",
            "tool": "report",
            "parameters": {"value": "{{steps.1.outputs.data}}", "text": "t"},
        },
    ]
    server = scripted_server(
        [
            # streamed slowly, so the nested planning request runs while this response is
            # still streaming (stream-early dispatch, X1)
            {
                "tool_calls": [call("agent_call", {"task": "measure and report"}, "ac")],
                "text": "",
                "usage_chunk": True,
                "chunk_delay_s": 0.1,
            },
            {"text": plan_text(steps), "expect": {"no_tools": True}},
            {"text": "Done: reported 1.25.", "expect": {"contains": "reported t"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure, report])
    agent.registry.add(AgentCallTool(agent))
    outcome = await agent.run_task("measure and report")
    await agent.close()
    assert outcome.status == "completed"
    assert seen == [("t", 1.25)]
    result = [e for e in rec.of("tool_result") if e.data["id"] == "ac"][0].data
    assert result["ok"] is True


async def test_action_text_runs_one_action_per_round_until_finishtask(
    scripted_server: Any, tmp_path: Path
) -> None:
    seen.clear()
    server = scripted_server(
        [
            {"text": "Measuring.\nmeasure('gap')\ndouble(3)", "expect": {"contains": "measure("}},
            {"text": 'report("gap", 1.25)', "expect": {"contains": "ignored"}},
            {"text": "All done.\nfinishtask()"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure, double, report], tool_calling="text")
    outcome = await agent.run_task("measure and report")
    await agent.close()
    assert outcome.status == "completed"
    assert outcome.reply == "All done."
    assert [e.data["name"] for e in rec.of("tool_call")] == ["measure", "report"]
    assert seen == [("gap", 1.25)]
    # the catalogue went into the system prompt, no native tools were offered
    first = server.requests[0].body
    assert "tools" not in first
    assert "measure(name: string)" in first["messages"][0]["content"]


async def test_an_action_written_with_its_unit_runs(scripted_server: Any, tmp_path: Path) -> None:
    """``turn_left(90 degrees)``, as the local brain wrote it in action-text mode, runs with
    ``angle_deg`` 90 (it was refused as unparsable, and the task ended on a bound)."""
    turned: list[float] = []

    @tool(safety=SafetyClass.MOTION)
    def turn_left(angle_deg: float, speed_dps: float = 45) -> str:
        """Turn left in place."""
        turned.append(angle_deg)
        return f"turned left {angle_deg} degrees"

    server = scripted_server(
        [
            {"text": "turn_left(90 degrees)"},
            {"text": "Turned.\nfinishtask()", "expect": {"contains": "angle_deg=90): ok"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[turn_left], tool_calling="text")
    outcome = await agent.run_task("turn left 90 degrees")
    await agent.close()
    assert (outcome.status, outcome.reply) == ("completed", "Turned.")
    assert turned == [90]
    [result] = rec.of("tool_result")
    assert result.data["ok"] is True


async def test_unknown_action_is_reported_not_run(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {"text": "fly_away(3)"},
            {"text": "finishtask()", "expect": {"contains": "fly_away"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure], tool_calling="text")
    outcome = await agent.run_task("fly")
    await agent.close()
    assert outcome.status == "completed"
    assert not rec.of("tool_call")


async def test_dify_action_text_and_conversation_lifecycle(
    scripted_server: Any, tmp_path: Path
) -> None:
    seen.clear()
    server = scripted_server(
        [
            {"tool_calls": [{"name": "report", "arguments": {"text": "a", "value": 1}}]},
            {"text": "finishtask()"},
            {"text": "hello again"},
        ]
    )
    model = DifyModel(base_url=server.base_url, api_key="app-key")
    agent = Agent(model, ToolRegistry([report]), AgentOptions(workspace=tmp_path))
    rec = Recorder()
    agent.bus.subscribe(rec)
    assert agent.action_text  # auto: Dify has no native tool calls
    first = await agent.run_task("report a")
    agent.reset()
    second = await agent.run_task("hi")
    await agent.close()
    assert first.status == "completed" and second.status == "completed"
    assert seen == [("a", 1.0)]
    ids = [r.body["conversation_id"] for r in server.requests if r.path.endswith("chat-messages")]
    assert ids[0] == "" and ids[1] != "" and ids[2] == ""


async def test_dify_error_event_is_a_clear_failure(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(
        [
            {
                "extras": {
                    "dify": {
                        "error": {
                            "code": "provider_quota_exceeded",
                            "message": "quota used up",
                            "status": 400,
                        }
                    }
                }
            }
        ]
    )
    model = DifyModel(base_url=server.base_url, api_key="app-key")
    agent = Agent(model, ToolRegistry(), AgentOptions(workspace=tmp_path))
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.status == "failed"
    assert "provider_quota_exceeded" in (outcome.error or "")
    assert "quota used up" in (outcome.error or "")


async def test_provider_switch_carries_history_openai_to_anthropic(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("measure", {"name": "gap"}, "m1")]},
            {"text": "It is 1.25 m."},
            {"text": "Still 1.25 m.", "expect": {"contains": "It is 1.25 m."}},
            {"text": "fresh"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure])
    await agent.run_task("measure the gap")
    carried = agent.set_model(AnthropicModel("claude", base_url=server.root_url, api_key="ak"))
    assert carried
    out = await agent.run_task("and now?")
    assert out.reply == "Still 1.25 m."
    anth = server.requests[2].body
    kinds = [
        b["type"]
        for m in anth["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
    ]
    assert "tool_use" in kinds and "tool_result" in kinds
    fresh = agent.set_model(DifyModel(base_url=server.base_url, api_key="d"))
    assert fresh is False
    assert [m.role for m in agent.history] == ["system"]
    await agent.run_task("hi")
    await agent.close()
    assert rec.of("provider_switch")[1].data["carried_over"] is False


def test_openai_model_type_used_by_helpers() -> None:
    assert OpenAIChatModel("m", "http://127.0.0.1:1/v1", "k").provider == "openai"


async def test_an_empty_action_text_answer_is_asked_again_once(
    scripted_server: Any, tmp_path: Path
) -> None:
    """An empty answer is no answer (A5): before, the task ended "completed" with "I could
    not produce a final answer." and nothing measured."""
    server = scripted_server(
        [
            {"text": ""},
            {"text": "measure('gap')", "expect": {"last_user_contains": "was empty"}},
            {"text": "The gap is 1.25 m.\nfinishtask()"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=[measure], tool_calling="text")
    outcome = await agent.run_task("measure the gap")
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "The gap is 1.25 m.", outcome
    assert [e.data["ok"] for e in rec.of("tool_result")] == [True]
