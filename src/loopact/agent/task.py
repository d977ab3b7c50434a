"""One task: its bodies, read top to bottom (SPEC A1, A2, A4, A5, A7; issue 13).

The user message goes into the history; then one body runs it: ReAct rounds until the model
answers in text (:meth:`TaskRun.body`), one single-step task per clause of a sequencing
instruction (``split_steps``), a JSON plan (:mod:`loopact.agent.plan_body`), action-text rounds
(:mod:`loopact.agent.action_body`), or, in continuous mode, rounds on the waiting inputs until
the agent is idle (:meth:`TaskRun.continuous_body`). What one round does, and the bounds, are
in :class:`~loopact.agent.rounds.TaskRounds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopact.agent.action_body import action_body
from loopact.agent.plan import PlanOutcome
from loopact.agent.plan_body import plan_body, run_plan_for
from loopact.agent.rounds import Outcomes, TaskEnv, TaskRounds
from loopact.agent.steps import (
    ClauseResult,
    compose_reply,
    is_chinese,
    run_clauses,
    split_clauses,
)
from loopact.errors import BoundReached
from loopact.events import Event, EventType
from loopact.i18n import t
from loopact.llm.base import ToolChoice, ToolSpec
from loopact.llm.messages import Message

__all__ = ["TaskEnv", "TaskOutcome", "TaskRun"]


@dataclass
class TaskOutcome:
    """How a task ended.

    Attributes:
        task_id: The command id.
        status: ``completed``, ``bounded``, ``preempted`` or ``failed``.
        reply: The text for the user (the answer, or the fallback text of a bound).
        error: The error message when ``failed``.
        rounds: Model rounds used.
    """

    task_id: str
    status: str
    reply: str = ""
    error: str | None = None
    rounds: int = 0


class TaskRun(TaskRounds):
    """The rounds of one task. Created and driven by :class:`~loopact.agent.runtime.Agent`.

    Args:
        env: The conversation and services of the agent.
        task_id: The command id.
        text: The user's instruction.
        images: Images sent with it (already through the image gate).
    """

    # ----------------------------------------------------------------- the loop
    async def body(self) -> str:
        """Run the task; returns the reply text.

        Raises:
            BoundReached: A bound tripped (the fallback text is in the exception).
            ModelError: The model failed after its retries.
            TaskFailed: Plan mode: the plan was rejected or a step failed.
            asyncio.CancelledError: The task was preempted (history is left consistent).
        """
        clauses = [self.text]
        if self.env.options.split_steps and not self.images and self.env.options.mode == "task":
            clauses = split_clauses(self.text)
        if len(clauses) > 1:
            return await self._steps_body(clauses)
        self.conv.append(Message.user(self.text, self.images))
        if self.env.options.mode == "plan":
            return await plan_body(self)
        if self.env.action_text:
            reply = await action_body(self)
            ran = self.ran
        else:
            reply, ran = await self._react()
        if ran and not reply.strip():
            # Empty even when asked again: say what ran rather than "no final answer".
            return compose_reply([ClauseResult.of(self.text, "", ran)], [], is_chinese(self.text))
        if self.answers_from_results(ran, reply):
            # The local brain's words claim what did not happen: after a failed call ("The
            # robot is driving at a distance of 50 meters.") and after a motion (a drive in
            # circles "stopped within half a meter of the red box"); in action-text mode it
            # echoed a turn's result as JSON. Say what ran, as for a step.
            result = ClauseResult.of(self.text, reply, ran)
            return compose_reply([result], [], zh=is_chinese(self.text))
        return reply

    async def _react(self, act_first: bool = False) -> tuple[str, Outcomes]:
        """ReAct rounds on the history until an answer without calls (SPEC A1, A2).

        Args:
            act_first: The first round must call a tool (``tool_choice: "required"``).

        An empty answer (no text, no calls) is asked again once, within the round limit.

        Returns:
            The answer text and every ``(call, result)`` pair the rounds ran.
        """
        b = self.bounds
        ran: Outcomes = []
        # Tool rounds of these ReAct rounds: the planning request of an agent_call and a
        # summary request are model requests of the task (``self.rounds``), not rounds (A2).
        n = 0
        asked_again = False
        while True:
            await self.check_rounds(n, b.max_rounds)
            n += 1
            self.rounds += 1
            self.conv.pull_sources(self.task_id)
            choice: ToolChoice = "required" if act_first and n == 1 else "auto"
            specs = self.env.tool_specs()
            done, outcomes, invalid = await self.run_round(self.rounds, specs, tool_choice=choice)
            if not outcomes:
                if done.message.text.strip() or asked_again or self.quiet_answer:
                    return self._noted_if_cut(done.message.text, done.finish_reason), ran
                # An empty answer is no answer: ask once more (a step's own answer, which
                # is not the reply, may be empty).
                asked_again = True
                self.conv.append(Message.user(t("final.empty", self.lang)))
                continue
            ran.extend(outcomes)
            if self.answers_from_results(ran, ""):  # "": whatever the model will answer
                self.quiet_answer = True  # body() may answer with what ran instead
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            self.check_tokens()

    def _noted_if_cut(self, text: str, finish_reason: str) -> str:
        """``text``, with a note when the server cut it at ``max_tokens`` (``length``): the
        user must not take half an answer for the whole one (SPEC A2)."""
        if finish_reason != "length" or not text.strip():
            return text
        note = t("final.cut", self.lang, limit=self.bounds.max_tokens("round"))
        return f"{text.rstrip()}\n\n{note}"

    async def _steps_body(self, clauses: list[str]) -> str:
        """One single-step task per clause, in order (:func:`~loopact.agent.steps.
        run_clauses`); each clause's rounds are ReAct rounds on this task's history."""
        self.quiet_answer = True  # a step's own answer is not the reply
        self.clauses, self.clause_marks = list(clauses), []  # for a bound's reply

        async def clause_rounds(text: str, act_first: bool) -> tuple[str, Outcomes]:
            self.conv.append(Message.user(text))
            return await self._react(act_first=act_first)

        def emit(typ: EventType, **data: Any) -> None:
            if typ == EventType.CLAUSE_START:
                self.clause_marks.append((str(data["text"]), len(self.ran)))
            self.env.bus.publish(Event(typ, self.task_id, data))

        return await run_clauses(clauses, clause_rounds, emit, zh=is_chinese(self.text))

    # ----------------------------------------------------------------- continuous (A7)
    async def continuous_body(self) -> str:
        """Work on the waiting inputs, taking in new ones as they come, until idle (A7).

        Returns when the model stops calling tools and no input waits. A plain-text answer
        is delivered to people as a ``message`` event rather than lost.

        Raises:
            BoundReached: The rolling-hour budget or the invalid-round guard tripped.
        """
        b = self.bounds
        budget = self.conv.budget
        since_input = 0
        while True:
            if self.conv.has_inputs:
                since_input = 0
            await self.check_rounds(since_input, b.max_rounds * 4)
            if budget.wait_s() > 0:
                self.bound_event("hourly_budget", budget.rounds)
                raise BoundReached(
                    "hourly_budget",
                    t("bound.hourly", self.lang, rounds=budget.rounds, tokens=budget.tokens),
                )
            self.rounds += 1
            since_input += 1
            tokens_before = self.state.tokens
            done, outcomes, invalid = await self.run_round(self.rounds, self.env.tool_specs())
            budget.record(self.state.tokens - tokens_before)
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            if outcomes:
                continue
            text = done.message.text.strip()
            if text:
                self.env.bus.emit(EventType.MESSAGE, self.task_id, text=text, source="agent")
            if not self.conv.has_inputs:
                return ""

    # ----------------------------------------------------------------- plan (A4)
    async def run_plan_for(self, task: str, specs: tuple[ToolSpec, ...]) -> PlanOutcome:
        """Plan ``task`` with the model and run the plan in this task (``agent_call``).

        See :func:`loopact.agent.plan_body.run_plan_for`.

        Raises:
            TaskFailed: The plan was rejected before anything ran.
        """
        return await run_plan_for(self, task, specs)
