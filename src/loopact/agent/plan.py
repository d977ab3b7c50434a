"""Plan-and-execute mode: JSON plans whose steps pass data to each other (SPEC A4).

For a complex request the model first writes a plan from the live tool catalogue::

    {"steps": [
      {"id": 1, "description": "Look around", "tool": "observe_surroundings", "parameters": {}},
      {"id": 2, "description": "Find the box", "tool": "visual_positioning",
       "parameters": {"target": "red box"}},
      {"id": 3, "description": "Report", "tool": "write_document",
       "parameters": {"title": "Box", "body": "Found at {{steps.2.outputs.data}}"}}
    ]}

The plan is read and checked before anything runs (:mod:`loopact.agent.plan_check`):
:func:`parse_plan` reads it (bare, in a ```json fence or surrounded by prose);
:func:`resolve_tool_names` maps mangled tool names to the declared ones (``functions.x``);
:func:`validate_plan` rejects it when a tool is unknown, a parameter name is not in the tool's
schema, or a reference points to a step that does not exist or comes later. Here,
:func:`run_plan` runs the steps in order, resolving ``{{steps.N.outputs.data}}`` and
``{{steps.N.outputs.metadata.KEY}}`` with :func:`resolve_parameters` (a string that is exactly
one placeholder takes the referenced value with its type; embedded placeholders interpolate as
text; references nested in lists and objects are resolved). A failed step stops the plan; a
step without a tool is skipped. :func:`plan_request_messages` builds the planning request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopact.agent.plan_check import (
    Plan,
    PlanStep,
    parse_plan,
    resolve_tool_names,
    validate_plan,
)
from loopact.agent.plan_refs import resolve_parameters
from loopact.errors import PlanError, ToolError
from loopact.events import EventType
from loopact.llm.base import ToolSpec
from loopact.llm.messages import Message
from loopact.tools.base import ToolResult

__all__ = [
    "Plan",
    "PlanError",
    "PlanOutcome",
    "PlanStep",
    "StepOutcome",
    "parse_plan",
    "plan_request_messages",
    "resolve_parameters",
    "resolve_tool_names",
    "run_plan",
    "validate_plan",
]

logger = logging.getLogger(__name__)

StepStatus = Literal["ok", "failed", "skipped", "not_run"]


@dataclass(frozen=True)
class StepOutcome:
    """What happened to one step.

    Attributes:
        n: 1-based position in the plan.
        id: The step id.
        tool: The tool, or None for a skipped step.
        status: ``ok``, ``failed``, ``skipped`` (no tool) or ``not_run`` (an earlier step
            failed).
        parameters: The resolved parameters the tool was called with (empty if not called).
        result: The tool's result, None when the tool was not called.
        error: Why the step failed, None otherwise.
    """

    n: int
    id: str
    tool: str | None
    status: StepStatus
    parameters: dict[str, Any] = field(default_factory=dict)
    result: ToolResult | None = None
    error: str | None = None


@dataclass(frozen=True)
class PlanOutcome:
    """The result of running a plan.

    Attributes:
        steps: One outcome per plan step, in order.
        files: Paths written by successful write steps (their ``metadata.path``), in order.
    """

    steps: tuple[StepOutcome, ...]
    files: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no step failed (skipped steps count as fine)."""
        return all(s.status in ("ok", "skipped") for s in self.steps)

    @property
    def failed_step(self) -> StepOutcome | None:
        """The step that stopped the plan, or None."""
        return next((s for s in self.steps if s.status == "failed"), None)

    def summary(self) -> str:
        """A short text summary for the user and the model (SPEC A4).

        Returns:
            E.g. ``"Plan completed: 3 of 3 steps succeeded. Files written: a.md."`` or
            ``"Plan stopped at step 2 of 3 (visual_positioning): not found. Not run: 3."``
        """
        total = len(self.steps)
        done = sum(1 for s in self.steps if s.status == "ok")
        failed = self.failed_step
        if failed is None:
            text = f"Plan completed: {done} of {total} steps succeeded"
            skipped = sum(1 for s in self.steps if s.status == "skipped")
            if skipped:
                text += f" ({skipped} without a tool skipped)"
            text += "."
        else:
            text = f"Plan stopped at step {failed.n} of {total} ({failed.tool}): {failed.error}."
            not_run = [str(s.n) for s in self.steps if s.status == "not_run"]
            if not_run:
                text += f" Not run: {', '.join(not_run)}."
        if self.files:
            text += f" Files written: {', '.join(self.files)}."
        lines = [text]
        for s in self.steps:
            if s.status == "ok" and s.result is not None:
                lines.append(f"{s.n}. {s.tool}: {_short(s.result.data)}")
            elif s.status == "failed":
                lines.append(f"{s.n}. {s.tool}: failed: {s.error}")
        return "\n".join(lines)


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- run


RunTool = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
Emit = Callable[[EventType, dict[str, Any]], None]


async def run_plan(
    plan: Plan,
    run_tool: RunTool,
    emit: Emit,
    write_tools: Collection[str] | None = None,
) -> PlanOutcome:
    """Run a validated plan's steps in order (SPEC A4, A8).

    Emits ``plan {steps}`` first, then per step ``step_start {n, of, tool}`` and
    ``step_end {n, ok}`` (plus ``skipped`` for a step without a tool and ``error`` for a
    failed one, ``"cancelled"`` when the plan is cancelled during the step). A step without
    a tool is skipped; a failed step (a failed result, a bad reference, or an exception from
    ``run_tool``) stops the plan.

    Args:
        plan: The plan, already checked with :func:`validate_plan`.
        run_tool: Runs one tool call ``(name, arguments)`` and returns its result (the loop
            passes it through the registry, confirmation and safety included).
        emit: Receives ``(event_type, data)`` for progress events.
        write_tools: Names of the tools that write files; ``metadata.path`` of their
            successful results is listed in ``files``. None means any successful step whose
            metadata has a string ``path``.

    Returns:
        The :class:`PlanOutcome`.

    Raises:
        asyncio.CancelledError: The plan was cancelled (preemption); nothing more runs.
    """
    emit(EventType.PLAN, {"steps": [s.to_dict() for s in plan.steps]})
    total = len(plan.steps)
    outcomes: list[StepOutcome] = []
    outputs: dict[str, ToolResult] = {}
    files: list[str] = []
    stopped = False
    for n, step in enumerate(plan.steps, start=1):
        if stopped:
            outcomes.append(StepOutcome(n, step.id, step.tool, "not_run"))
            continue
        emit(EventType.STEP_START, {"n": n, "of": total, "tool": step.tool})
        if step.tool is None:
            outcomes.append(StepOutcome(n, step.id, None, "skipped"))
            emit(EventType.STEP_END, {"n": n, "ok": True, "skipped": True})
            continue
        try:
            outcome = await _run_step(n, step, step.tool, outputs, run_tool)
        except asyncio.CancelledError:
            # every start ends
            emit(EventType.STEP_END, {"n": n, "ok": False, "error": "cancelled"})
            raise
        outcomes.append(outcome)
        if outcome.status == "ok" and outcome.result is not None:
            outputs[step.id] = outcome.result
            path = outcome.result.metadata.get("path")
            if isinstance(path, str) and (write_tools is None or step.tool in write_tools):
                files.append(path)
            emit(EventType.STEP_END, {"n": n, "ok": True})
        else:
            stopped = True
            emit(EventType.STEP_END, {"n": n, "ok": False, "error": outcome.error})
    return PlanOutcome(tuple(outcomes), tuple(files))


async def _run_step(
    n: int, step: PlanStep, tool: str, outputs: Mapping[str, ToolResult], run_tool: RunTool
) -> StepOutcome:
    try:
        params = resolve_parameters(step.parameters, outputs)
    except PlanError as exc:
        return StepOutcome(n, step.id, tool, "failed", error=str(exc))
    try:
        result = await run_tool(tool, params)
    except ToolError as exc:
        return StepOutcome(n, step.id, tool, "failed", params, error=str(exc))
    except Exception as exc:
        logger.warning("plan step %d (%s) raised %s: %s", n, tool, type(exc).__name__, exc)
        return StepOutcome(n, step.id, tool, "failed", params, error=f"{type(exc).__name__}: {exc}")
    if not result.ok:
        return StepOutcome(
            n, step.id, tool, "failed", params, result, result.error or "the tool failed"
        )
    return StepOutcome(n, step.id, tool, "ok", params, result)


# ---------------------------------------------------------------------------- prompt


def plan_request_messages(task: str, specs: Sequence[ToolSpec]) -> list[Message]:
    """The planning request: a system prompt with the format and catalogue, then the task.

    Args:
        task: The user's request.
        specs: The live tool catalogue (names, descriptions, parameter schemas).

    Returns:
        ``[system, user]`` messages; send them with no tools offered.
    """
    catalogue = "\n".join(
        f"- {s.name}: {s.description.strip().splitlines()[0] if s.description.strip() else ''}"
        f"\n  parameters: "
        + json.dumps(s.parameters or {"type": "object", "properties": {}}, ensure_ascii=False)
        for s in specs
    )
    system = (
        "You plan robot tasks. Break the user's request into steps that use the tools below, "
        "then answer with one JSON object and nothing else:\n"
        '{"steps": [{"id": 1, "description": "what this step does", "tool": "tool_name", '
        '"parameters": {...}}]}\n'
        "Rules:\n"
        "- Steps run in order; ids are 1, 2, 3, ...\n"
        "- Use only the tools listed, with parameters from their schema.\n"
        "- To use an earlier step's output, write {{steps.N.outputs.data}} or "
        "{{steps.N.outputs.metadata.KEY}} (N an earlier step's id). A value that is only the "
        "placeholder keeps the output's type; inside longer text it is inserted as text.\n"
        '- A step that needs no tool has "tool": null.\n'
        "- If a step fails the plan stops, so keep the plan short.\n\n"
        f"Tools:\n{catalogue or '(no tools)'}"
    )
    return [Message.system(system), Message.user(task)]
