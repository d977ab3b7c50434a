"""Plan mode in a task: ask for a JSON plan, check it, run its steps, summarise (SPEC A4, A8).

The plan itself (parsing, checks, references, running the steps in order) is
:mod:`loopact.agent.plan`; this module connects it to a task's rounds: the planning request is
one round of the task (counted, traced, bounded), and each step's call goes through the task's
dispatcher (guards, confirmation, safety, timeouts), as a direct call would.
"""

from __future__ import annotations

import uuid
from typing import Any

from loopact.agent.plan import (
    PlanOutcome,
    parse_plan,
    plan_request_messages,
    resolve_tool_names,
    run_plan,
    validate_plan,
)
from loopact.agent.rounds import TaskRounds
from loopact.errors import PlanError, TaskFailed
from loopact.events import Event, EventType
from loopact.llm.base import ToolSpec
from loopact.llm.messages import Message, ToolCall
from loopact.tools.base import ToolResult

__all__ = ["PLAN_RETRIES", "plan_body", "run_plan_for"]

PLAN_RETRIES = 1
"""Planning requests after a rejected plan: the model sees why and answers again (SPEC A4)."""


def _replan(exc: PlanError) -> str:
    return (
        f"That plan was rejected, nothing has run: {exc}. Answer again with only the "
        "corrected JSON plan."
    )


async def plan_body(run: TaskRounds) -> str:
    """Plan mode's task body: plan ``run.text`` with the live catalogue, run it, summarise.

    Args:
        run: The task's rounds; the user message is already in its history.

    Returns:
        The plan's summary (also appended to the history as the assistant's answer).

    Raises:
        TaskFailed: The plan was rejected, or a step failed (the summary says which).
    """
    specs = tuple(s for s in run.env.tool_specs() if s.name != "agent_call")
    outcome = await run_plan_for(run, run.text, specs)
    summary = outcome.summary()
    run.conv.append(Message.assistant(summary))
    if not outcome.ok:
        raise TaskFailed(summary)
    return summary


async def run_plan_for(run: TaskRounds, task: str, specs: tuple[ToolSpec, ...]) -> PlanOutcome:
    """Plan ``task`` with the model and run the plan (plan mode and ``agent_call``).

    Args:
        run: The task whose rounds and dispatcher the plan uses.
        task: The request to plan, in words.
        specs: The tools the plan may use.

    Raises:
        TaskFailed: The model's plan is not valid JSON or names unknown tools or steps, also
            after it was told why and asked once more (:data:`PLAN_RETRIES`; nothing has run
            then; the message names what is valid).
    """
    messages = tuple(plan_request_messages(task, specs))
    for attempt in range(1 + PLAN_RETRIES):
        done, _, _ = await run.run_round((), messages=messages, kind="plan")
        try:
            plan = resolve_tool_names(parse_plan(done.message.text), [s.name for s in specs])
            validate_plan(plan, specs)
            break
        except PlanError as exc:
            if attempt == PLAN_RETRIES:
                raise TaskFailed(f"the plan was rejected before running anything: {exc}") from None
            messages += (Message.assistant(done.message.text), Message.user(_replan(exc)))
    bus = run.env.bus

    def emit(typ: EventType, data: dict[str, Any]) -> None:
        bus.publish(Event(typ, run.task_id, data))

    async def run_one(name: str, arguments: dict[str, Any]) -> ToolResult:
        call = ToolCall(f"step_{uuid.uuid4().hex[:8]}", name, arguments)
        result, _ = await run.dispatch_one(call, planned=True)
        return result

    return await run_plan(plan, run_one, emit)
