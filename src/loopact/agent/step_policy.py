"""The small local model's policy: one turn per step, the reply from what ran (issue 13).

Small local models carry out the first action of "do A, then B" and then answer, claiming the
rest; after a failed call or a motion their words claim what did not happen. With
``split_steps`` (the local brain's default) a task gets one of these
:class:`~loopact.agent.turns.TaskPolicy` implementations instead of
:class:`~loopact.agent.turns.OneTurn` (:func:`task_policy`):

- :class:`StepPolicy`, for an instruction that splits into clauses
  (:func:`~loopact.agent.steps.split_clauses`): each clause is a turn of its own, in order,
  and the reply is what each step that ran did (:func:`~loopact.agent.steps.compose_reply`);
- :class:`ToldFromResults`, for any other instruction: one turn, whose reply is what ran
  when the last call failed, a motion or a write was dispatched, or a Chinese instruction was
  answered in English (:func:`~loopact.agent.steps.answered_from_results`,
  :func:`~loopact.agent.steps.chinese_from_results`).

Both answer a bound from what ran, without asking the model for a final answer
(:func:`~loopact.agent.steps.bounded_reply`).
"""

from __future__ import annotations

from collections.abc import Sequence

from loopact.agent.options import AgentOptions
from loopact.agent.steps import (
    ClauseResult,
    answered_from_results,
    bounded_reply,
    chinese_from_results,
    compose_reply,
    is_chinese,
    is_speech,
    split_clauses,
    with_seen,
)
from loopact.agent.turns import OneTurn, Outcomes, TaskPolicy, TaskView, Turn
from loopact.events import EventType
from loopact.i18n import t

__all__ = ["StepPolicy", "ToldFromResults", "task_policy"]


def task_policy(task: TaskView, options: AgentOptions) -> TaskPolicy:
    """The policy of ``task``: :class:`OneTurn` unless ``options.split_steps``; then
    :class:`StepPolicy` when a task-mode instruction without images or audio splits into clauses,
    else :class:`ToldFromResults`."""
    if not options.split_steps:
        return OneTurn(task)
    clauses = [task.text]
    if not task.images and not task.audio and options.mode == "task":
        clauses = split_clauses(task.text)
    return StepPolicy(task, clauses) if len(clauses) > 1 else ToldFromResults(task)


class ToldFromResults(OneTurn):
    """One turn whose reply is what ran when the model's words cannot be trusted (module
    docstring); a bound is answered from what ran.

    Attributes:
        clauses: The clauses of the instruction (here the whole instruction).
        marks: ``(clause, index in task.ran)`` where each started clause began.
    """

    asks_final_answer = False

    def __init__(self, task: TaskView) -> None:
        super().__init__(task)
        self.clauses: list[str] = [task.text]
        self.marks: list[tuple[str, int]] = [(task.text, 0)]

    def round_done(self, ran: Outcomes) -> None:
        """When the reply will be built from ``ran``, the model's words are not streamed."""
        if self.from_results(ran, ""):  # "": whatever the model will answer
            self.quiet = True

    def reply(self) -> str:
        """The model's answer, unless the reply is better built from what ran."""
        if self.turn_ran and not self.answer.strip():
            return self.told_from_results("")
        if self.from_results(self.turn_ran, self.answer):
            return self.told_from_results(self.answer)
        return self.answer

    def from_results(self, ran: Outcomes, reply: str) -> bool:
        """Whether the reply is built from ``ran`` rather than the model's ``reply``."""
        return answered_from_results(ran, self.task.acted) or chinese_from_results(
            self.task.text, reply, ran
        )

    def bounded_text(self, notice: str, said: str) -> str:
        """``notice``, then what ran (never the model's ``said``: a small model's words after
        a bound claim what never happened), or that nothing ran (SPEC A2)."""
        zh = is_chinese(self.task.text)
        said = bounded_reply(self.task.ran, self.marks, self.clauses, zh)
        said = said or t("bound.nothing_ran", self.task.lang)
        return f"{notice}\n\n{said}" if said else notice


class StepPolicy(ToldFromResults):
    """Each clause of a split instruction as a turn of its own, in order (issue 13).

    Each step is a user message of its own (a step after a look step gets what the look saw:
    :func:`~loopact.agent.steps.with_seen`) with the full round bound (the task's time and
    token bounds hold for the whole). A step is an action, so its first response must be a
    call (``act_first``), unless it only asks to be told something
    (:func:`~loopact.agent.steps.is_speech`). A step whose last call failed stops the steps
    after it; the reply says which did not run. The trace shows ``steps``, ``clause_start``
    and ``clause_end`` events (docs/trace.md).

    Args:
        task: The task the policy serves.
        clauses: The steps, from :func:`~loopact.agent.steps.split_clauses`.

    Attributes:
        done: What each step that ran did, in order (what a later step may build on).
        pending: Indices (into ``clauses``) of the steps not started yet.
        skipped: The steps that will not run (stopped by a failed step).
    """

    def __init__(self, task: TaskView, clauses: Sequence[str]) -> None:
        super().__init__(task)
        self.quiet = True  # a step's own answer is not the reply
        self.clauses, self.marks = list(clauses), []
        self.done: list[ClauseResult] = []
        self.pending = list(range(len(self.clauses)))
        self.skipped: list[str] = []
        self._current = -1

    def next_turn(self) -> Turn | None:
        """The next step not stopped, or None when none is left."""
        if not self.pending:
            return None
        if self._current < 0:
            self.task.emit(EventType.STEPS, clauses=list(self.clauses))
        self._current = self.pending.pop(0)
        clause = self.clauses[self._current]
        self.task.emit(
            EventType.CLAUSE_START, n=self._current + 1, of=len(self.clauses), text=clause
        )
        self.marks.append((clause, len(self.task.ran)))
        return Turn(self.step_text(clause), act_first=not is_speech(clause), native_rounds=True)

    def step_text(self, clause: str) -> str:
        """The user message of ``clause``, built from what the steps before it did
        (:attr:`done`): after the look step put before it, what the look saw
        (:func:`~loopact.agent.steps.with_seen`)."""
        return with_seen(clause, self.done[-1] if self.done else None)

    def turn_done(self, answer: str, ran: Outcomes) -> None:
        """Record the step's result; a failed step stops the rest."""
        result = ClauseResult.of(self.clauses[self._current], answer, ran)
        self.done.append(result)
        failed = result.failed
        self.task.emit(EventType.CLAUSE_END, n=self._current + 1, ok=failed is None, error=failed)
        if failed is not None:
            self.stop_remaining()

    def stop_remaining(self) -> None:
        """The steps not started yet will not run."""
        self.skipped += [self.clauses[i] for i in self.pending]
        self.pending = []

    def reply(self) -> str:
        """What each step that ran did, and which steps did not run."""
        return compose_reply(self.done, self.skipped, zh=is_chinese(self.task.text))
