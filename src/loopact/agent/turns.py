"""The seam between a task's loop and how its instruction is put to the model (issue 38, 13).

The loop (:meth:`~loopact.agent.task.TaskRun.body`) asks a :class:`TaskPolicy` four things and
knows nothing else about what the instruction means:

- **what to ask next** (:meth:`TaskPolicy.next_turn`): the next user message, or None when the
  task is done;
- **what to do with a finished round** (:meth:`TaskPolicy.round_done`) and with a finished
  turn (:meth:`TaskPolicy.turn_done`): the policy sees every call the turn ran, may decide
  that the model's words will not be the reply (:attr:`TaskPolicy.quiet`: they are then not
  streamed), and may stop the turns it has not asked yet;
- **how the reply is composed** (:meth:`TaskPolicy.reply`), and the reply after a bound
  (:meth:`TaskPolicy.bounded_text`, with or without a last request for the model's own final
  answer: :attr:`TaskPolicy.asks_final_answer`).

:class:`OneTurn` is the ordinary behaviour: the instruction is one turn and the model's
answer is the reply. The small local model's policy, one turn per clause of "do A, then B"
with the reply built from what ran, is :class:`~loopact.agent.step_policy.StepPolicy`; the
policy of a task is chosen by :func:`~loopact.agent.step_policy.task_policy`.

A policy reads its task through :class:`TaskView`: the instruction, the ``(call, result)``
pairs of every turn so far (a later turn may be built from an earlier one's results), and an
``emit`` for its own events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from loopact.agent.steps import ClauseResult, compose_reply, is_chinese
from loopact.events import EventType
from loopact.llm.messages import Audio, Image, ToolCall
from loopact.tools.base import ToolResult

__all__ = ["OneTurn", "Outcomes", "TaskPolicy", "TaskView", "Turn"]

Outcomes = list[tuple[ToolCall, ToolResult]]
"""The ``(call, result)`` pairs of rounds, in call order."""


@dataclass(frozen=True)
class Turn:
    """One user message of a task, and how its rounds start.

    Attributes:
        text: The user message.
        images: Images sent with it (already through the image gate).
        audio: Spoken clips of it, for a model that hears them (SPEC B8).
        act_first: The first round's response must be a call (``tool_choice: "required"``).
        native_rounds: The turn runs ReAct rounds with the tools in the request even when the
            agent offers tools as action text (SPEC A5): a split instruction's steps have
            always run that way (issue 13), and only such a request can require a call.
        tools: The names of the tools the turn's responses may call (``allowed_tools``: the
            others stay described, so a server's prompt cache holds), or None for all: a step
            the policy knows the tool of (issue 45: ``approach`` for "go to the blue ball").
        calls_only: The turn ends after the first round whose calls all ran (none refused as
            an invalid call): the model is not asked to answer, for a policy that tells the
            turn from its results.
    """

    text: str
    images: tuple[Image, ...] = ()
    audio: tuple[Audio, ...] = ()
    act_first: bool = False
    native_rounds: bool = False
    tools: tuple[str, ...] | None = None
    calls_only: bool = False


class TaskView(Protocol):
    """What a policy sees of its task (:class:`~loopact.agent.rounds.TaskRounds` is one)."""

    @property
    def text(self) -> str:
        """The user's instruction."""

    @property
    def images(self) -> tuple[Image, ...]:
        """Images sent with it."""

    @property
    def audio(self) -> tuple[Audio, ...]:
        """Spoken clips of it (SPEC B8)."""

    @property
    def lang(self) -> str:
        """The language of user-facing texts (``en`` or ``zh``, F5)."""

    @property
    def ran(self) -> Sequence[tuple[ToolCall, ToolResult]]:
        """Every ``(call, result)`` pair the task ran or refused so far, in call order."""

    @property
    def acted(self) -> bool:
        """Whether a motion or a write was dispatched in this task."""

    @property
    def tools(self) -> frozenset[str]:
        """The names of the tools offered to the model."""

    def emit(self, typ: EventType, **data: Any) -> None:
        """Emit an event of the task (docs/trace.md)."""


class TaskPolicy(Protocol):
    """How a task's instruction is put to the model and its reply composed (module docstring).

    Attributes:
        quiet: The model's answer text will not be the reply: it is not streamed to the
            channels, and an empty answer is not asked again.
        asks_final_answer: A bound asks the model for a final answer without tools (SPEC A2);
            when False the reply after a bound is built by :meth:`bounded_text` alone.
    """

    quiet: bool
    asks_final_answer: bool

    def next_turn(self) -> Turn | None:
        """The next user message to send, or None when the task is done."""

    def round_done(self, ran: Outcomes) -> None:
        """After a round that ran calls; ``ran`` holds every pair of the turn so far."""

    def turn_done(self, answer: str, ran: Outcomes) -> None:
        """After the turn's last round: the model's ``answer`` and the pairs the turn ran."""

    def reply(self) -> str:
        """The reply of the finished task."""

    def bounded_text(self, notice: str, said: str) -> str:
        """The reply of a task that ended on a bound: the bound's ``notice``, then what the
        task did (``said``: the model's final answer or the start of a cut answer, or "")."""


class OneTurn:
    """The ordinary policy: the instruction is one turn, the model's answer is the reply.

    An answer left empty after calls ran (the model was asked again) is replaced by what
    ran (:func:`~loopact.agent.steps.compose_reply`) rather than "no final answer".

    Args:
        task: The task the policy serves.
    """

    asks_final_answer = True

    def __init__(self, task: TaskView) -> None:
        self.task = task
        self.quiet = False
        self.answer = ""
        self.turn_ran: Outcomes = []
        self._asked = False

    def next_turn(self) -> Turn | None:
        """The instruction (with its images), once."""
        if self._asked:
            return None
        self._asked = True
        return self.first_turn()

    def first_turn(self) -> Turn:
        """The turn of the whole instruction."""
        return Turn(self.task.text, self.task.images, self.task.audio)

    def round_done(self, ran: Outcomes) -> None:
        """Nothing to do: the model's answer will be the reply."""

    def turn_done(self, answer: str, ran: Outcomes) -> None:
        """Keep the answer and what ran for :meth:`reply`."""
        self.answer, self.turn_ran = answer, ran

    def reply(self) -> str:
        """The model's answer; what ran when that answer is empty."""
        if self.turn_ran and not self.answer.strip():
            return self.told_from_results("")
        return self.answer

    def told_from_results(self, answer: str) -> str:
        """What the turn's calls did, in the instruction's language (``answer``: the model's
        words, used only for a call whose result has no sentence of its own)."""
        result = ClauseResult.of(self.task.text, answer, self.turn_ran)
        return compose_reply([result], [], zh=is_chinese(self.task.text))

    def bounded_text(self, notice: str, said: str) -> str:
        """``notice``, then ``said`` when there is anything (SPEC A2)."""
        return f"{notice}\n\n{said}" if said else notice
