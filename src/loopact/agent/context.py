"""Keeping the prompt inside the context window (SPEC E1).

Before each model request the agent asks :class:`ContextManager` whether the prompt has
passed its threshold. Token counts come from the provider's reported usage (the prompt tokens
of the last request plus an estimate of what was added since), or from an estimate before the
first response. Past the threshold, older turns are replaced by a rolling summary the model
writes (a request without tools); the system prompt and the most recent complete turns stay,
and no cut separates a tool call from its result. The summary is used only if its request
ended normally with text, no tool calls, and is smaller than what it replaces; otherwise the
history stays as it was — unless it is past the hard limit (default 1.25 x the threshold),
where a plain trim that keeps tool pairs intact is used. Before compressing, the task's state
is checkpointed to memory (when memory is enabled) so nothing of the task is lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from loopact.agent.compress import estimate_tokens
from loopact.llm.messages import Message

Checkpoint = Callable[[str], Awaitable[None]]

#: Hard limit as a multiple of the threshold when none is given.
HARD_LIMIT_FACTOR = 1.25


@dataclass
class ContextManager:
    """When to compress, and how many tokens the prompt has.

    Args:
        limit_tokens: The threshold (``--context-limit``).
        hard_limit_tokens: Above this a plain trim is used when no summary could be made;
            default ``HARD_LIMIT_FACTOR * limit_tokens``.
        keep_recent_turns: Complete turns kept verbatim.
        checkpoint: Writes a checkpoint text to memory before compressing, or None.
    """

    limit_tokens: int
    hard_limit_tokens: int | None = None
    keep_recent_turns: int = 2
    checkpoint: Checkpoint | None = None

    def __post_init__(self) -> None:
        if self.limit_tokens <= 0:
            raise ValueError(f"limit_tokens must be > 0, got {self.limit_tokens}")
        if self.hard_limit_tokens is None:
            self.hard_limit_tokens = int(self.limit_tokens * HARD_LIMIT_FACTOR)
        self._calibration: tuple[Message, ...] | None = None
        self._calibrated_tokens = 0

    @property
    def hard_limit(self) -> int:
        """The hard limit in tokens."""
        assert self.hard_limit_tokens is not None
        return self.hard_limit_tokens

    def note_usage(self, messages: Sequence[Message], input_tokens: int) -> None:
        """Remember that ``messages`` were reported as ``input_tokens`` prompt tokens."""
        if input_tokens > 0:
            self._calibration = tuple(messages)
            self._calibrated_tokens = input_tokens

    def prompt_tokens(self, history: Sequence[Message]) -> int:
        """Tokens of a prompt made of ``history``: reported usage plus an estimate of the rest."""
        cal = self._calibration
        if (
            cal is not None
            and len(history) >= len(cal)
            and all(a is b for a, b in zip(cal, history, strict=False))
        ):
            return self._calibrated_tokens + estimate_tokens(history[len(cal) :])
        return estimate_tokens(history)

    def over_limit(self, history: Sequence[Message]) -> bool:
        """True when ``history`` has passed the threshold."""
        return self.prompt_tokens(history) > self.limit_tokens
