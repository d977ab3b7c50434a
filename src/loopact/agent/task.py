"""One task: its loop, read top to bottom (SPEC A1, A2, A4, A5, A7; issue 13, 38).

The task's policy (:mod:`loopact.agent.turns`) says what to ask the model: each turn is a user
message in the history, then rounds until the model answers in text: ReAct rounds
(:meth:`TaskRun._react`) or action-text rounds (:mod:`loopact.agent.action_body`); the policy
sees what each round and turn ran, says when the task is done and composes the reply. Plan mode
runs a JSON plan instead (:mod:`loopact.agent.plan_body`); continuous mode works on the waiting
inputs until the agent is idle (:meth:`TaskRun.continuous_body`). What one round does, and the
bounds, are in :class:`~loopact.agent.rounds.TaskRounds`.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopact.agent.action_body import action_body
from loopact.agent.plan import PlanOutcome
from loopact.agent.plan_body import plan_body, run_plan_for
from loopact.agent.rounds import TaskEnv, TaskRounds
from loopact.agent.turns import Outcomes, Turn
from loopact.errors import BoundReached
from loopact.events import EventType
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
        error: The error message when ``failed``; when ``preempted`` by
            :meth:`~loopact.agent.runtime.Agent.interrupt`, why ("taken over by the
            operator"; the ``task_end`` event's ``reason``).
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
        if self.env.options.mode == "plan":
            self.conv.append(Message.user(self.text, self.images, self.audio))
            return await plan_body(self)
        policy = self.policy
        while (turn := policy.next_turn()) is not None:
            self.conv.append(Message.user(turn.text, turn.images, turn.audio))
            answer, ran = await self._turn(turn)
            policy.turn_done(answer, ran)
        return policy.reply()

    async def _turn(self, turn: Turn) -> tuple[str, Outcomes]:
        """The rounds of one turn: action-text rounds when the agent offers tools as action
        text (SPEC A5) and the turn allows it, else ReAct rounds."""
        if self.env.action_text and not turn.native_rounds:
            return await action_body(self)
        return await self._react(turn)

    async def _react(self, turn: Turn) -> tuple[str, Outcomes]:
        """ReAct rounds on the history until an answer without calls (SPEC A1, A2).

        Args:
            turn: How the rounds start: with ``act_first`` the first round must call a tool
                (``tool_choice: "required"``); the responses may call only ``turn.tools``;
                with ``calls_only`` the turn ends after the first round whose calls ran.

        An empty answer (no text, no calls) is asked again once, within the round limit,
        unless the policy will not reply with it (:attr:`TaskPolicy.quiet`).

        Returns:
            The answer text and every ``(call, result)`` pair the rounds ran.
        """
        ran: Outcomes = []
        first = self.tool_rounds  # each turn has the full round bound (A2)
        asked_again = False
        while True:
            await self.check_rounds(self.tool_rounds - first, self.bounds.max_rounds)
            self.conv.pull_sources(self.task_id)
            forced = turn.act_first and (self.tool_rounds == first or turn.calls_only)
            choice: ToolChoice = "required" if forced else "auto"
            specs = self.env.tool_specs()
            done, outcomes, invalid = await self.run_round(
                specs, tool_choice=choice, allowed_tools=turn.tools
            )
            if not outcomes:
                if done.message.text.strip() or asked_again or self.policy.quiet:
                    return self._noted_if_cut(done.message.text, done.finish_reason), ran
                asked_again = True  # an empty answer is no answer: ask once more
                self.conv.append(Message.user(t("final.empty", self.lang)))
                continue
            ran.extend(outcomes)
            self.policy.round_done(ran)
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            self.check_tokens()
            if turn.calls_only and not invalid and not _refused(outcomes):
                return done.message.text, ran

    def _noted_if_cut(self, text: str, finish_reason: str) -> str:
        """``text``, with a note when the server cut it at ``max_tokens`` (``length``): the
        user must not take half an answer for the whole one (SPEC A2)."""
        if finish_reason != "length" or not text.strip():
            return text
        note = t("final.cut", self.lang, limit=self.bounds.max_tokens("round"))
        return f"{text.rstrip()}\n\n{note}"

    # ----------------------------------------------------------------- continuous (A7)
    async def continuous_body(self) -> str:
        """Work on the waiting inputs, taking in new ones as they come, until idle (A7).

        Returns when the model stops calling tools and no input waits. A plain-text answer
        is delivered to people as a ``message`` event rather than lost.

        Raises:
            BoundReached: The rolling-hour budget or the invalid-round guard tripped.
        """
        budget = self.conv.budget
        first = self.tool_rounds  # the rounds since the last input are bounded
        while True:
            if self.conv.has_inputs:
                first = self.tool_rounds
            await self.check_rounds(self.tool_rounds - first, self.bounds.max_rounds * 4)
            if budget.wait_s() > 0:
                self.bound_event("hourly_budget", budget.rounds)
                raise BoundReached(
                    "hourly_budget",
                    t("bound.hourly", self.lang, rounds=budget.rounds, tokens=budget.tokens),
                )
            tokens_before = self.state.tokens
            done, outcomes, invalid = await self.run_round(self.env.tool_specs())
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


REFUSALS = frozenset(("unknown_tool", "arguments", "units"))
"""``error_kind`` of a call refused before it ran (:mod:`loopact.tools.registry`, the units
check of :mod:`loopact.agent.dispatch`)."""


def _refused(outcomes: Outcomes) -> bool:
    """Whether any call of a round was refused before it ran (the model may correct it)."""
    return any(r.metadata.get("error_kind") in REFUSALS for _, r in outcomes)
