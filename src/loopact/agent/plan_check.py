"""A plan as the model wrote it, read and checked before anything runs (SPEC A4).

:func:`parse_plan` reads a plan (bare, in a ```json fence or surrounded by prose; slightly
broken JSON repaired); :func:`resolve_tool_names` maps mangled tool names to the declared ones
(``functions.x``); :func:`validate_plan` rejects it when a tool is unknown, a parameter name is
not in the tool's schema, or a reference points to a step that does not exist or comes later.
:mod:`loopact.agent.plan` runs it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair

from loopact.agent.plan_refs import REFERENCE, placeholders
from loopact.errors import PlanError
from loopact.llm.base import ToolSpec
from loopact.llm.toolnames import resolve_tool_name

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)```", re.DOTALL)
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_PLAN_STEPS = 50


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
