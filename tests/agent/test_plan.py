"""Plan parsing, validation, reference resolution and execution (SPEC A4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopact.agent.plan import (
    Plan,
    PlanError,
    PlanStep,
    parse_plan,
    plan_request_messages,
    resolve_parameters,
    run_plan,
    validate_plan,
)
from loopact.llm.base import ToolSpec
from loopact.tools.base import ToolResult

SPECS = [
    ToolSpec(
        "measure",
        "Measure the distance to an object, in metres.",
        {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
    ),
    ToolSpec(
        "double",
        "Double a number.",
        {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
    ),
    ToolSpec(
        "write_note",
        "Write a note file.",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "body": {}},
            "required": ["name", "body"],
        },
    ),
]

THREE_STEPS = {
    "steps": [
        {"id": 1, "description": "measure", "tool": "measure", "parameters": {"target": "box"}},
        {
            "id": 2,
            "description": "double",
            "tool": "double",
            "parameters": {"x": "{{steps.1.outputs.data}}"},
        },
        {
            "id": 3,
            "description": "note",
            "tool": "write_note",
            "parameters": {
                "name": "{{steps.1.outputs.metadata.unit}}.md",
                "body": "{{steps.2.outputs.data}}",
            },
        },
    ]
}


class Recorder:
    """A tiny tool runner: real functions, calls recorded, events recorded."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail or set()

    async def run_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append((name, args))
        if name in self.fail:
            return ToolResult.failure(f"{name} broke")
        if name == "measure":
            return ToolResult.success(1.25, unit="m", target=args["target"])
        if name == "double":
            return ToolResult.success(args["x"] * 2)
        if name == "write_note":
            return ToolResult.success("written", path=f"notes/{args['name']}")
        raise AssertionError(f"unexpected tool {name}")

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))


# ---------------------------------------------------------------- parse


def test_parse_bare_fenced_and_prose() -> None:
    bare = json.dumps(THREE_STEPS)
    fenced = f"Here is the plan:\n```json\n{bare}\n```\nGood luck."
    prose = f"Sure! {bare} That should do it."
    for text in (bare, fenced, prose):
        plan = parse_plan(text)
        assert [s.id for s in plan.steps] == ["1", "2", "3"]
        assert [s.tool for s in plan.steps] == ["measure", "double", "write_note"]
        assert plan.steps[1].parameters == {"x": "{{steps.1.outputs.data}}"}


def test_parse_repairs_and_defaults() -> None:
    text = (
        "{'steps': [{'description': 'think', 'tool': null}, "
        "{'tool': 'measure', 'parameters': {'target': 'box',}},]}"
    )
    plan = parse_plan(text)
    assert [s.id for s in plan.steps] == ["1", "2"]
    assert plan.steps[0].tool is None
    assert plan.steps[1].parameters == {"target": "box"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("I cannot plan this.", "no plan found"),
        ('{"steps": []}', "no steps"),
        ('{"steps": [1]}', "step 1: expected an object"),
        ('{"steps": [{"tool": "measure", "parameters": [1]}]}', "parameters must be an object"),
        ('{"steps": [{"id": "a b", "tool": "measure"}]}', "id 'a b'"),
    ],
)
def test_parse_errors(text: str, fragment: str) -> None:
    with pytest.raises(PlanError, match=fragment):
        parse_plan(text)


# ---------------------------------------------------------------- validate


def test_valid_plan_passes() -> None:
    validate_plan(parse_plan(json.dumps(THREE_STEPS)), SPECS)


def test_unknown_tool_lists_available() -> None:
    plan = Plan((PlanStep("1", tool="fly"),))
    with pytest.raises(PlanError) as err:
        validate_plan(plan, SPECS)
    assert "unknown tool 'fly'" in str(err.value)
    assert "available tools: double, measure, write_note" in str(err.value)


def test_a_plan_without_any_tool_is_rejected() -> None:
    plan = Plan((PlanStep("1", description="think"), PlanStep("2", description="answer")))
    with pytest.raises(PlanError, match="no step has a tool") as err:
        validate_plan(plan, SPECS)
    assert "available tools: double, measure, write_note" in str(err.value)


def test_reference_to_missing_step_names_valid_steps() -> None:
    plan = parse_plan(
        json.dumps(
            {
                "steps": [
                    {"id": 1, "tool": "measure", "parameters": {"target": "box"}},
                    {"id": 2, "tool": "double", "parameters": {"x": "{{steps.1.outputs.data}}"}},
                    {"id": 3, "tool": "double", "parameters": {"x": "{{steps.9.outputs.data}}"}},
                ]
            }
        )
    )
    with pytest.raises(PlanError) as err:
        validate_plan(plan, SPECS)
    msg = str(err.value)
    assert "step 3" in msg and "step 9" in msg and "does not exist" in msg
    assert "valid earlier steps: 1, 2" in msg


def test_reference_to_later_step_rejected() -> None:
    plan = Plan(
        (
            PlanStep("1", tool="double", parameters={"x": "{{steps.2.outputs.data}}"}),
            PlanStep("2", tool="measure", parameters={"target": "box"}),
        )
    )
    with pytest.raises(
        PlanError, match=r"step 2, which does not come before it; valid earlier steps: none"
    ):
        validate_plan(plan, SPECS)


def test_reference_nested_and_malformed() -> None:
    plan = Plan(
        (
            PlanStep("1", tool="measure", parameters={"target": "box"}),
            PlanStep(
                "2",
                tool="write_note",
                parameters={"name": "n", "body": {"list": ["{{steps.5.outputs.data}}"]}},
            ),
        )
    )
    with pytest.raises(PlanError, match="step 5"):
        validate_plan(plan, SPECS)
    bad = Plan((PlanStep("1", tool="measure", parameters={"target": "{{step1.data}}"}),))
    with pytest.raises(PlanError, match=r"bad reference \{\{step1.data\}\}"):
        validate_plan(bad, SPECS)


def test_parameter_names_checked() -> None:
    with pytest.raises(PlanError, match="no parameter 'distance'; parameters: x"):
        validate_plan(Plan((PlanStep("1", tool="double", parameters={"distance": 1}),)), SPECS)
    with pytest.raises(PlanError, match="needs parameter"):
        validate_plan(Plan((PlanStep("1", tool="double"),)), SPECS)


def test_duplicate_ids_rejected() -> None:
    plan = Plan(
        (
            PlanStep("1", tool="measure", parameters={"target": "a"}),
            PlanStep("1", tool="measure", parameters={"target": "b"}),
        )
    )
    with pytest.raises(PlanError, match="used twice"):
        validate_plan(plan, SPECS)


def test_reference_to_step_without_tool_rejected() -> None:
    plan = Plan(
        (
            PlanStep("1", description="think"),
            PlanStep("2", tool="double", parameters={"x": "{{steps.1.outputs.data}}"}),
        )
    )
    with pytest.raises(PlanError, match="no tool"):
        validate_plan(plan, SPECS)


# ---------------------------------------------------------------- resolve


def test_resolve_keeps_type_interpolates_and_nests() -> None:
    outputs = {
        "1": ToolResult.success(1.25, unit="m", box={"x": 3, "tags": ["a", "b"]}),
        "2": ToolResult.success([1, 2]),
    }
    params = {
        "whole": "{{steps.1.outputs.data}}",
        "spaced": "{{ steps.2.outputs.data }}",
        "meta": "{{steps.1.outputs.metadata.unit}}",
        "embedded": (
            "d={{steps.1.outputs.data}}{{steps.1.outputs.metadata.unit}} l={{steps.2.outputs.data}}"
        ),
        "nested": {
            "a": [
                "{{steps.1.outputs.metadata.box}}",
                7,
                {"b": "{{steps.1.outputs.metadata.box.tags.1}}"},
            ]
        },
        "plain": 5,
    }
    out = resolve_parameters(params, outputs)
    assert out["whole"] == 1.25 and isinstance(out["whole"], float)
    assert out["spaced"] == [1, 2]
    assert out["meta"] == "m"
    assert out["embedded"] == "d=1.25m l=[1, 2]"
    assert out["nested"] == {"a": [{"x": 3, "tags": ["a", "b"]}, 7, {"b": "b"}]}
    assert out["plain"] == 5
    assert params["whole"] == "{{steps.1.outputs.data}}"  # input not modified


def test_resolve_missing_key_names_available_keys() -> None:
    outputs = {"1": ToolResult.success(1.0, unit="m", target="box")}
    with pytest.raises(PlanError) as err:
        resolve_parameters({"x": "{{steps.1.outputs.metadata.colour}}"}, outputs)
    assert "no key 'colour'" in str(err.value)
    assert "available keys: unit, target" in str(err.value)
    with pytest.raises(PlanError, match="steps with outputs: 1"):
        resolve_parameters({"x": "{{steps.4.outputs.data}}"}, outputs)


# ---------------------------------------------------------------- run


async def test_three_step_plan_passes_data_between_steps() -> None:
    plan = parse_plan(json.dumps(THREE_STEPS))
    validate_plan(plan, SPECS)
    rec = Recorder()
    outcome = await run_plan(plan, rec.run_tool, rec.emit)
    assert rec.calls == [
        ("measure", {"target": "box"}),
        ("double", {"x": 1.25}),
        ("write_note", {"name": "m.md", "body": 2.5}),
    ]
    assert outcome.ok
    assert [s.status for s in outcome.steps] == ["ok", "ok", "ok"]
    assert outcome.files == ("notes/m.md",)
    assert outcome.summary() == (
        "Plan completed: 3 of 3 steps succeeded. Files written: notes/m.md.\n"
        "1. measure: 1.25\n2. double: 2.5\n3. write_note: written"
    )
    kinds = [k for k, _ in rec.events]
    assert kinds == ["plan"] + ["step_start", "step_end"] * 3
    assert rec.events[0][1]["steps"][2]["tool"] == "write_note"
    assert rec.events[1][1] == {"n": 1, "of": 3, "tool": "measure"}
    assert rec.events[6][1] == {"n": 3, "ok": True}


async def test_rejected_plan_runs_nothing() -> None:
    plan = parse_plan(
        json.dumps(
            {
                "steps": [
                    {"id": 1, "tool": "measure", "parameters": {"target": "box"}},
                    {"id": 2, "tool": "double", "parameters": {"x": "{{steps.9.outputs.data}}"}},
                ]
            }
        )
    )
    rec = Recorder()
    with pytest.raises(PlanError, match="valid earlier steps: 1"):
        validate_plan(plan, SPECS)
        await run_plan(plan, rec.run_tool, rec.emit)
    assert rec.calls == [] and rec.events == []


async def test_failed_step_stops_the_plan() -> None:
    plan = parse_plan(json.dumps(THREE_STEPS))
    rec = Recorder(fail={"double"})
    outcome = await run_plan(plan, rec.run_tool, rec.emit)
    assert [c[0] for c in rec.calls] == ["measure", "double"]
    assert [s.status for s in outcome.steps] == ["ok", "failed", "not_run"]
    assert not outcome.ok
    assert outcome.failed_step is not None and outcome.failed_step.error == "double broke"
    assert outcome.files == ()
    assert outcome.summary() == (
        "Plan stopped at step 2 of 3 (double): double broke. Not run: 3.\n"
        "1. measure: 1.25\n2. double: failed: double broke"
    )
    assert rec.events[-1] == ("step_end", {"n": 2, "ok": False, "error": "double broke"})


async def test_step_without_tool_is_skipped_and_exceptions_fail_the_step() -> None:
    plan = Plan(
        (
            PlanStep("1", description="think first"),
            PlanStep("2", tool="measure", parameters={"target": "box"}),
            PlanStep("3", tool="double", parameters={"x": "{{steps.2.outputs.metadata.nope}}"}),
        )
    )
    validate_plan(plan, SPECS)
    rec = Recorder()
    outcome = await run_plan(plan, rec.run_tool, rec.emit)
    assert [s.status for s in outcome.steps] == ["skipped", "ok", "failed"]
    assert rec.calls == [("measure", {"target": "box"})]
    assert "available keys: unit, target" in (outcome.steps[2].error or "")
    assert ("step_end", {"n": 1, "ok": True, "skipped": True}) in rec.events

    async def boom(name: str, args: dict[str, Any]) -> ToolResult:
        raise RuntimeError("link lost")

    out2 = await run_plan(
        Plan((PlanStep("1", tool="measure", parameters={"target": "a"}),)), boom, rec.emit
    )
    assert out2.steps[0].status == "failed" and out2.steps[0].error == "RuntimeError: link lost"


async def test_write_tools_filter_files() -> None:
    plan = parse_plan(json.dumps(THREE_STEPS))
    rec = Recorder()
    outcome = await run_plan(plan, rec.run_tool, rec.emit, write_tools={"other"})
    assert outcome.files == ()


def test_plan_request_messages() -> None:
    msgs = plan_request_messages("measure the box and write it down", SPECS)
    assert [m.role for m in msgs] == ["system", "user"]
    assert msgs[1].text == "measure the box and write it down"
    system = msgs[0].text
    for name in ("measure", "double", "write_note"):
        assert f"- {name}:" in system
    assert '"required": ["x"]' in system
    assert "{{steps.N.outputs.data}}" in system and "{{steps.N.outputs.metadata.KEY}}" in system
