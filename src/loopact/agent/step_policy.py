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

A step that finds, goes up to or faces an object the camera must find, and a step that refers
to an earlier step's object, are built here from what the earlier steps found (issue 45,
:mod:`loopact.agent.grounding`): the step is asked with the object named ("go to it" after
"find the blue ball" is "go to the blue ball") and may call only the robot tool that does it,
searching when the object is out of view (``approach``, ``face``); a step whose object was not
found does not run, and the reply says what was not found. "if you see X, A, otherwise B" is a
look at the view (``visual_positioning``) whose result, not the model, picks the branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopact.agent.grounding import (
    TOOLS,
    Grounding,
    grounding,
    refers_back,
    resolve,
    split_condition,
)
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

__all__ = ["Branch", "StepPlan", "StepPolicy", "ToldFromResults", "plan_steps", "task_policy"]


def task_policy(task: TaskView, options: AgentOptions) -> TaskPolicy:
    """The policy of ``task``: :class:`OneTurn` unless ``options.split_steps``; then
    :class:`StepPolicy` when a task-mode instruction without images or audio has steps of its own
    (:func:`plan_steps`), else :class:`ToldFromResults`."""
    if not options.split_steps:
        return OneTurn(task)
    plan = None
    if not task.images and not task.audio and options.mode == "task":
        plan = plan_steps(task.text, task.tools)
    if plan is None:
        return ToldFromResults(task)
    return StepPolicy(task, plan.clauses, plan.branch)


@dataclass(frozen=True)
class Branch:
    """The branches of "if you see X, A, otherwise B": step 0 looks for ``target``.

    Attributes:
        target: The object looked for, in the user's words.
        then: Indices of the steps run when it is in view.
        otherwise: Indices of the steps run when it is not.
    """

    target: str
    then: tuple[int, ...]
    otherwise: tuple[int, ...]


@dataclass(frozen=True)
class StepPlan:
    """The steps of an instruction, and its branches when it is a check of the view."""

    clauses: list[str]
    branch: Branch | None = None


def plan_steps(text: str, tools: frozenset[str]) -> StepPlan | None:
    """The steps of ``text``, or None when it is one step of no concern here.

    - "if you see X, A, otherwise B" (:func:`~loopact.agent.grounding.split_condition`, when
      ``visual_positioning`` is among ``tools``): a look for X, then each branch split into
      its clauses;
    - an instruction that splits into clauses (:func:`~loopact.agent.steps.split_clauses`);
    - one step that acts on an object perception must find
      (:func:`~loopact.agent.grounding.grounding`), so that it gets its tool.

    Args:
        text: The instruction.
        tools: The names of the tools offered.
    """
    condition = split_condition(text) if TOOLS["see"] in tools else None
    if condition is not None:
        lang = "zh" if is_chinese(text) else "en"
        check = t("step.check", lang, target=condition.target)
        then = split_clauses(condition.then)
        other = split_clauses(condition.otherwise) if condition.otherwise else []
        first, second = range(1, 1 + len(then)), range(1 + len(then), 1 + len(then) + len(other))
        branch = Branch(condition.target, tuple(first), tuple(second))
        return StepPlan([check, *then, *other], branch)
    clauses = split_clauses(text)
    if len(clauses) > 1 or grounding(clauses[0], tools) is not None:
        return StepPlan(clauses)
    return None


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

    def planned(self) -> list[str]:
        """The clauses started, then those still to run, in order."""
        return self.clauses

    def bounded_text(self, notice: str, said: str) -> str:
        """``notice``, then what ran (never the model's ``said``: a small model's words after
        a bound claim what never happened), or that nothing ran (SPEC A2)."""
        zh = is_chinese(self.task.text)
        said = bounded_reply(self.task.ran, self.marks, self.planned(), zh)
        said = said or t("bound.nothing_ran", self.task.lang)
        return f"{notice}\n\n{said}" if said else notice


class StepPolicy(ToldFromResults):
    """Each clause of a split instruction as a turn of its own, in order (issue 13, 45).

    Each step is a user message of its own (built from what the steps before it did:
    :meth:`step_text`) with the full round bound (the task's time and token bounds hold for
    the whole). A step is an action, so its first response must be a call (``act_first``),
    unless it only asks to be told something (:func:`~loopact.agent.steps.is_speech`). A step
    that acts on an object perception must find (:func:`~loopact.agent.grounding.grounding`)
    may call only its tool, and ends once that call ran. A step whose last call failed stops
    the steps after it, and so does a step whose object the step it refers to did not find;
    the reply says which did not run. The trace shows ``steps``, ``clause_start`` and
    ``clause_end`` events (docs/trace.md).

    Args:
        task: The task the policy serves.
        clauses: The steps, from :func:`plan_steps`.
        branch: The branches when step 0 is the look of "if you see X, ...".

    Attributes:
        done: What each step that ran did, in order (what a later step may build on).
        objects: For each step that ran, ``(name, found)`` of the object it looked for or
            acted on (``name`` in the user's words where they named it), or None.
        pending: Indices (into ``clauses``) of the steps not started yet.
        skipped: The steps that will not run (stopped by a failed step).
    """

    def __init__(
        self, task: TaskView, clauses: Sequence[str], branch: Branch | None = None
    ) -> None:
        super().__init__(task)
        self.quiet = True  # a step's own answer is not the reply
        self.clauses, self.marks = list(clauses), []
        self.done: list[ClauseResult] = []
        self.objects: list[tuple[str, bool] | None] = []
        self.pending = [0] if branch is not None else list(range(len(self.clauses)))
        self.skipped: list[str] = []
        self.branch = branch
        tools = task.tools
        self.grounds = [grounding(c, tools) for c in self.clauses]
        if branch is not None:
            self.grounds[0] = Grounding("see", branch.target)
        self._current = -1

    def next_turn(self) -> Turn | None:
        """The next step not stopped, or None when none is left."""
        if not self.pending:
            return None
        clause = self.clauses[self.pending[0]]
        referent = self.referent()
        if refers_back(clause) and referent is not None and not referent[1]:
            self.stop_remaining()  # what it refers to was not found
            return None
        if self._current < 0:
            self.task.emit(EventType.STEPS, clauses=list(self.clauses))
        self._current = self.pending.pop(0)
        self.task.emit(
            EventType.CLAUSE_START, n=self._current + 1, of=len(self.clauses), text=clause
        )
        self.marks.append((clause, len(self.task.ran)))
        text = self.step_text(clause)
        ground = self.grounds[self._current]
        if ground is not None and (ground.target or referent is not None):
            return Turn(
                text, act_first=True, native_rounds=True, tools=(ground.tool,), calls_only=True
            )
        return Turn(text, act_first=not is_speech(clause), native_rounds=True)

    def referent(self) -> tuple[str, bool] | None:
        """``(name, found)`` of the latest object a step that ran looked for, or None."""
        return next((o for o in reversed(self.objects) if o is not None), None)

    def step_text(self, clause: str) -> str:
        """The user message of ``clause``, built from what the steps before it did
        (:attr:`done`): after the look step put before it, what the look saw
        (:func:`~loopact.agent.steps.with_seen`); a reference to an earlier step's object,
        that object by name (:func:`~loopact.agent.grounding.resolve`)."""
        text = with_seen(clause, self.done[-1] if self.done else None)
        referent = self.referent()
        if referent is not None and referent[1]:
            text = resolve(text, referent[0])
        return text

    def turn_done(self, answer: str, ran: Outcomes) -> None:
        """Record the step's result and the object it found; a failed step stops the rest;
        the look of "if you see X" picks the branch."""
        result = ClauseResult.of(self.clauses[self._current], answer, ran)
        seen = self._object(result)
        lang = "zh" if is_chinese(self.task.text) else "en"
        if seen is not None and result.failed is None:
            name, found = seen
            if self.branch is not None and self._current == 0:
                result.answer = t("step.seen" if found else "step.not_seen", lang, target=name)
                result.perceived = True
                self.pending = list(self.branch.then if found else self.branch.otherwise)
            elif not found:
                result.answer = t("step.not_found", lang, target=name)
                result.perceived = True
        self.objects.append(seen)
        self.done.append(result)
        failed = result.failed
        self.task.emit(EventType.CLAUSE_END, n=self._current + 1, ok=failed is None, error=failed)
        if failed is not None:
            self.stop_remaining()

    def _object(self, result: ClauseResult) -> tuple[str, bool] | None:
        """``(name, found)`` of the object the step's results say it looked for (their
        ``found``), named in the user's words where the step or the one it refers to named
        it; None when no result looked for an object."""
        found: bool | None = None
        named = ""
        for ran in result.results:
            ok, data = ran.ok, ran.data
            if isinstance(data, dict) and isinstance(data.get("found"), bool):
                found = ok and bool(data["found"])
                named = _target(data) or named
        if found is None:
            return None
        ground = self.grounds[self._current]
        referent = self.referent()
        if ground is not None and ground.target:
            named = ground.target
        elif refers_back(result.text) and referent is not None:
            named = referent[0]
        return named, found

    def stop_remaining(self) -> None:
        """The steps not started yet will not run."""
        self.skipped += [self.clauses[i] for i in self.pending]
        self.pending = []

    def planned(self) -> list[str]:
        """The clauses started, then those still to run (the branch not taken is neither)."""
        return [c for c, _ in self.marks] + [self.clauses[i] for i in self.pending]

    def reply(self) -> str:
        """What each step that ran did, and which steps did not run."""
        return compose_reply(self.done, self.skipped, zh=is_chinese(self.task.text))


def _target(data: dict[str, Any]) -> str:
    """The object a result names (``target``), "" when none."""
    target = data.get("target")
    return target.strip() if isinstance(target, str) else ""
