"""Plan-and-execute mode: JSON plans whose steps pass data to each other (SPEC A4).

For a complex request the model first writes a plan from the live tool catalogue::

    {"steps": [
      {"id": 1, "description": "Look around", "tool": "observe_surroundings", "parameters": {}},
      {"id": 2, "description": "Find the box", "tool": "visual_positioning",
       "parameters": {"target": "red box"}},
      {"id": 3, "description": "Report", "tool": "write_document",
       "parameters": {"title": "Box", "body": "Found at {{steps.2.outputs.data}}"}}
    ]}

:func:`parse_plan` reads it (bare, in a ```json fence or surrounded by prose);
:func:`resolve_tool_names` maps mangled tool names to the declared ones (``functions.x``);
:func:`validate_plan` rejects it before anything runs when a tool is unknown, a parameter name
is not in the tool's schema, or a reference points to a step that does not exist or comes
later; :func:`run_plan` runs the steps in order, resolving ``{{steps.N.outputs.data}}`` and
``{{steps.N.outputs.metadata.KEY}}`` with :func:`resolve_parameters` (a string that is exactly
one placeholder takes the referenced value with its type; embedded placeholders interpolate as
text; references nested in lists and objects are resolved). A failed step stops the plan; a
step without a tool is skipped. :func:`plan_request_messages` builds the planning request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import json_repair

from loopact.agent.plan_refs import REFERENCE, placeholders, resolve_parameters
from loopact.errors import PlanError, ToolError
from loopact.events import EventType
from loopact.llm.base import ToolSpec
from loopact.llm.messages import Message
from loopact.llm.toolnames import resolve_tool_name
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

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)```", re.DOTALL)
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_PLAN_STEPS = 50

StepStatus = Literal["ok", "failed", "skipped", "not_run"]


@dataclass(frozen=True)
class PlanStep:
    """One plan step.

    Attributes:
        id: The step id used in references (``{{steps.<id>.outputs.data}}``); the 1-based
            position when the plan gave none.
        description: What the step does, for people.
        tool: The tool to call, or None for a step that only describes (skipped).
        parameters: The tool's arguments; string values may hold placeholders.
    """

    id: str
    description: str = ""
    tool: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form ``{id, description, tool, parameters}``."""
        return {
            "id": self.id,
            "description": self.description,
            "tool": self.tool,
            "parameters": self.parameters,
        }


@dataclass(frozen=True)
class Plan:
    """An ordered list of steps (SPEC A4).

    Attributes:
        steps: The steps, run in this order.
    """

    steps: tuple[PlanStep, ...]


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


# ---------------------------------------------------------------------------- parse


def parse_plan(text: str) -> Plan:
    """Parse a plan from the model's answer (SPEC A4).

    Args:
        text: JSON ``{"steps": [...]}`` (or a bare list of steps), possibly inside a
            ```json fence or surrounded by prose; slightly broken JSON is repaired.

    Returns:
        The plan. Step ids default to the 1-based position; ``parameters`` defaults to ``{}``.

    Raises:
        PlanError: No plan object was found, or a step is malformed (the message names the
            step and the field).
    """
    data = _find_plan_json(text)
    if data is None:
        raise PlanError(
            'no plan found: answer with JSON {"steps": [{"id": 1, "description": "...", '
            '"tool": "...", "parameters": {...}}]}'
        )
    raw_steps = data if isinstance(data, list) else data.get("steps")
    if not isinstance(raw_steps, list):
        raise PlanError('the plan must have "steps": a list of step objects')
    if not raw_steps:
        raise PlanError("the plan has no steps")
    if len(raw_steps) > _MAX_PLAN_STEPS:
        raise PlanError(f"the plan has {len(raw_steps)} steps; at most {_MAX_PLAN_STEPS}")
    return Plan(tuple(_parse_step(i, raw) for i, raw in enumerate(raw_steps)))


def _parse_step(index: int, raw: Any) -> PlanStep:
    where = f"step {index + 1}"
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where}: expected an object, got {type(raw).__name__}")
    raw_id = raw.get("id", index + 1)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
        raise PlanError(f"{where}: id must be a number or a short name, got {raw_id!r}")
    step_id = str(raw_id).strip()
    if not _ID_RE.match(step_id):
        raise PlanError(f"{where}: id {raw_id!r} must be letters, digits, '_' or '-'")
    tool = raw.get("tool")
    if tool is not None and not isinstance(tool, str):
        raise PlanError(f"{where}: tool must be a tool name or null, got {tool!r}")
    tool = (tool or "").strip() or None
    params = raw.get("parameters", raw.get("arguments", {}))
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise PlanError(f"{where}: parameters must be an object, got {type(params).__name__}")
    description = raw.get("description", "")
    return PlanStep(
        id=step_id,
        description=description if isinstance(description, str) else str(description),
        tool=tool,
        parameters=dict(params),
    )


def _find_plan_json(text: str) -> dict[str, Any] | list[Any] | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        found = _decode_first(cand)
        if found is not None:
            return found
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            repaired = json_repair.loads(text[start : end + 1])
        except Exception:  # json_repair may raise on pathological input
            repaired = None
        if isinstance(repaired, dict) and isinstance(repaired.get("steps"), list):
            return repaired
    return None


def _decode_first(text: str) -> dict[str, Any] | list[Any] | None:
    """The first JSON object with ``steps`` (or list of step objects) found in ``text``."""
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        value = None
    if _looks_like_plan(value):
        return value  # type: ignore[no-any-return]
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if _looks_like_plan(value):
            return value  # type: ignore[no-any-return]
    return None


def _looks_like_plan(value: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(value.get("steps"), list)
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, dict) and ("tool" in s or "description" in s) for s in value)
    )


def resolve_tool_names(plan: Plan, declared: Collection[str]) -> Plan:
    """``plan`` with each step's tool under the declared name its mangled name means
    (``functions.file_write`` -> ``file_write``, :func:`loopact.llm.toolnames.resolve_tool_name`,
    issue 22 items 3 and 4); a name that resolves to nothing stays (:func:`validate_plan`
    rejects it as an unknown tool)."""
    steps = []
    for step in plan.steps:
        resolved = resolve_tool_name(step.tool, declared) if step.tool else None
        if resolved is not None and resolved != step.tool:
            logger.info("plan step %s: tool name %r resolved to %s", step.id, step.tool, resolved)
            step = dataclasses.replace(step, tool=resolved)
        steps.append(step)
    return Plan(tuple(steps))


# ---------------------------------------------------------------------------- validate


def validate_plan(plan: Plan, specs: Sequence[ToolSpec]) -> None:
    """Check a plan before anything runs (SPEC A4).

    Checks: step ids are unique; every tool exists; parameter names are in the tool's schema
    and required ones are present; every ``{{...}}`` placeholder is a valid reference to an
    earlier step that has a tool; at least one step has a tool (a plan of descriptions only
    would report success having done nothing).

    Args:
        plan: The parsed plan.
        specs: The live tool catalogue.

    Raises:
        PlanError: The first problem found, naming what is valid (available tools, valid
            earlier steps, parameter names, the placeholder forms).
    """
    by_name = {s.name: s for s in specs}
    seen: dict[str, PlanStep] = {}
    all_ids = {s.id for s in plan.steps}
    for n, step in enumerate(plan.steps, start=1):
        where = f"step {n} (id {step.id})" if step.id != str(n) else f"step {n}"
        if step.id in seen:
            raise PlanError(f"{where}: id {step.id} is used twice; step ids must be unique")
        if step.tool is not None:
            spec = by_name.get(step.tool)
            if spec is None:
                available = ", ".join(sorted(by_name)) or "(none)"
                raise PlanError(
                    f"{where}: unknown tool {step.tool!r}; available tools: {available}"
                )
            _check_parameter_names(where, step, spec)
        elif step.parameters and placeholders(step.parameters):
            raise PlanError(f"{where}: has parameters with references but no tool")
        for ref in placeholders(step.parameters):
            m = REFERENCE.match(ref)
            if m is None:
                raise PlanError(
                    f"{where}: bad reference {{{{{ref}}}}}; use {{{{steps.N.outputs.data}}}} "
                    "or {{steps.N.outputs.metadata.KEY}}"
                )
            target = m.group("step")
            valid = ", ".join(k for k, s in seen.items() if s.tool is not None) or "none"
            if target not in all_ids:
                raise PlanError(
                    f"{where}: references step {target}, which does not exist; "
                    f"valid earlier steps: {valid}"
                )
            if target not in seen:
                raise PlanError(
                    f"{where}: references step {target}, which does not come before it; "
                    f"valid earlier steps: {valid}"
                )
            if seen[target].tool is None:
                raise PlanError(
                    f"{where}: references step {target}, which has no tool and no outputs; "
                    f"valid earlier steps: {valid}"
                )
        seen[step.id] = step
    if not any(step.tool is not None for step in plan.steps):
        available = ", ".join(sorted(by_name)) or "(none)"
        raise PlanError(
            'no step has a tool (every "tool" is null), so the plan would do nothing; give '
            f"each step that acts a tool; available tools: {available}"
        )


def _check_parameter_names(where: str, step: PlanStep, spec: ToolSpec) -> None:
    props = spec.parameters.get("properties") if spec.parameters else None
    if not isinstance(props, Mapping):
        props = {}
    names = list(props)
    additional = spec.parameters.get("additionalProperties", True) if spec.parameters else True
    if additional is False or props:
        unknown = [k for k in step.parameters if k not in props]
        if unknown:
            raise PlanError(
                f"{where}: tool {spec.name} has no parameter {unknown[0]!r}; "
                f"parameters: {', '.join(names) or 'none'}"
            )
    required = spec.parameters.get("required", []) if spec.parameters else []
    missing = [r for r in required if isinstance(r, str) and r not in step.parameters]
    if missing:
        raise PlanError(
            f"{where}: tool {spec.name} needs parameter(s) {', '.join(missing)}; "
            f"parameters: {', '.join(names)}"
        )


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
