"""The agent's bounds and options (SPEC A2, A3, C5)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loopact.agent.context import ContextManager
from loopact.tools.base import SafetyClass

RequestKind = Literal["round", "final", "summary", "plan"]
"""What a model request is for; each kind has its own ``max_tokens`` (SPEC A2)."""


@dataclass(frozen=True)
class Bounds:
    """Limits that keep every task finite (SPEC A2, A3). Defaults are the issue's.

    Attributes:
        max_rounds: Tool rounds per task; then one last request without tools.
        max_tries: Tries per model request (first try included) on retryable errors (B6).
        request_timeout_s: Seconds until the first streamed event of a model response.
        stream_idle_timeout_s: Longest silence in seconds between two streamed events.
        tool_timeout_s: Default per-call timeout in seconds (a tool may set its own).
        task_timeout_s: Wall-clock budget of a task in seconds.
        token_budget: Tokens (prompt + completion, summed over requests) per task; a
            response is not read on past it (about 4 characters a token).
        max_tokens_round: ``max_tokens`` of a tool round's request (answer and calls).
        max_tokens_final: ``max_tokens`` of the final answer after a bound.
        max_tokens_summary: ``max_tokens`` of a context summary (SPEC E1).
        max_tokens_plan: ``max_tokens`` of plan mode's plan (SPEC A4). A response whose
            answer passes its request's ``max_tokens`` (a server that ignores it) is not
            read on: the task ends on the ``output_tokens`` bound.
        max_calls_read_only: Calls of one read-only tool per task before a round is invalid.
        max_calls_state: Calls of one idempotent/write/motion tool per task before a round
            is invalid.
        max_invalid_rounds: Invalid rounds in a row that force a text answer.
        backoff_base_s: First retry delay in seconds; doubles per try (B6).
        backoff_max_s: Longest retry delay of the backoff, in seconds.
        retry_after_max_s: Longest ``Retry-After`` honoured, in seconds: a retry never goes
            sooner than the server asked (it would be refused again); a server asking for
            longer fails the request at once with what it asked (B6).
    """

    max_rounds: int = 6
    max_tries: int = 3
    request_timeout_s: float = 60.0
    stream_idle_timeout_s: float = 30.0
    tool_timeout_s: float = 30.0
    task_timeout_s: float = 300.0
    token_budget: int = 200_000
    max_tokens_round: int = 8192
    max_tokens_final: int = 1024
    max_tokens_summary: int = 1024
    max_tokens_plan: int = 2048
    max_calls_read_only: int = 3
    max_calls_state: int = 10
    max_invalid_rounds: int = 2
    backoff_base_s: float = 0.5
    backoff_max_s: float = 20.0
    retry_after_max_s: float = 60.0

    def max_tokens(self, kind: RequestKind) -> int:
        """The ``max_tokens`` to send with a request of ``kind`` (SPEC A2)."""
        return {
            "round": self.max_tokens_round,
            "final": self.max_tokens_final,
            "summary": self.max_tokens_summary,
            "plan": self.max_tokens_plan,
        }[kind]

    def call_limit(self, safety: SafetyClass) -> int:
        """How often one tool of class ``safety`` may run in one task (SPEC A3)."""
        return self.max_calls_read_only if safety is SafetyClass.READ_ONLY else self.max_calls_state


StopHook = Callable[[str], Awaitable[None]]
StateProvider = Callable[[], Awaitable[dict[str, Any]]]


@dataclass
class AgentOptions:
    """How an :class:`~loopact.agent.runtime.Agent` behaves.

    Attributes:
        bounds: The task bounds.
        system_prompt: The system message text.
        workspace: Folder the file tools are confined to.
        lang: Language of user-facing texts, ``en`` or ``zh`` (F5).
        mode: ``task`` (a new command preempts) or ``plan`` (each command is planned as
            JSON steps first, then run step by step, SPEC A4).
            ``continuous`` (SPEC A7): the agent is always running; messages are injected
            into the running loop instead of preempting it, and it talks through
            ``send_message``.
        hourly_rounds: Continuous mode: model rounds allowed per rolling hour.
        hourly_tokens: Continuous mode: tokens allowed per rolling hour.
        tool_calling: ``native`` (the API's tool calls), ``text`` (action-text mode, SPEC A5:
            tools are offered as action signatures in the prompt and one ``name(args)`` line
            of the answer runs per round) or ``auto`` (text when the model's capability
            descriptor says it has no native tool calls).
        auto_approve: Pre-approve every write tool (``--yes``).
        allow: Write tools pre-approved by name (config ``confirm.allow``).
        interactive: Whether a channel can answer confirmations; when False (``--once``) a
            write tool that is not pre-approved is refused with a result saying how to allow it.
        confirm_timeout_s: Seconds to wait for a confirmation; no answer means denied.
        confirm_channels: The channels that may answer confirmations (``confirm.channels``,
            issue 41); None: any channel.
        stop_hooks: Called with a reason on every stop and preemption (e.g. the safety
            governor's ``stop_all``), before the model is involved (A6); the reason is a
            :class:`~loopact.errors.StopReason`, a string that carries its typed cause.
        after_stop_hooks: Called with the reason once the stop hooks have finished, and only
            when a running task was stopped or preempted (re-centring the camera:
            ``robot.recentre_on_stop``, A6); never for a command that finds the agent idle.
        state_provider: Returns the robot state for the ``robot_state`` event, or None.
        trace_full: Put each request's messages into ``model_request`` events (H3).
        temperature: Sampling temperature (0-2) sent with every model request; None for the
            endpoint's default (config ``model.temperature``).
        context: Context-window management (SPEC E1), or None to never compress. The
            default compresses above the system prompt and the tools plus 60 % of the
            room they leave in the model's context size (``Capabilities.context_tokens``),
            when the model has one.
        split_steps: Run a sequencing instruction ("do A, then B") as one single-step task
            per clause, in order, and answer from what ran (issue 13;
            :mod:`loopact.agent.steps`); a single instruction whose last call failed, or
            one that moved the robot or wrote something, is answered the same way (what ran,
            what failed and why), not with the model's words. On for the local brain
            (``local.split_steps``).
    """

    bounds: Bounds = field(default_factory=Bounds)
    system_prompt: str = ""
    workspace: Path = field(default_factory=lambda: Path("workspace"))
    lang: str = "en"
    mode: Literal["task", "plan", "continuous"] = "task"
    hourly_rounds: int = 120
    hourly_tokens: int = 400_000
    tool_calling: Literal["native", "text", "auto"] = "auto"
    auto_approve: bool = False
    allow: frozenset[str] = frozenset()
    interactive: bool = True
    confirm_timeout_s: float = 60.0
    confirm_channels: frozenset[str] | None = None
    stop_hooks: tuple[StopHook, ...] = ()
    after_stop_hooks: tuple[StopHook, ...] = ()
    state_provider: StateProvider | None = None
    trace_full: bool = False
    temperature: float | None = None
    context: ContextManager | None = field(default_factory=ContextManager)
    split_steps: bool = False
