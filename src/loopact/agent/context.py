"""Keeping the prompt inside the context window (SPEC E1).

Before each model request the agent asks :class:`ContextManager` whether the prompt has
passed its threshold: the configured ``--context-limit``, or by default
the system prompt and the tools plus :data:`DEFAULT_CONTEXT_FRACTION` of the room they leave in
the model's context size (``Capabilities.context_tokens``: from the config, the provider, or the
size the local brain's server was started with). Token
counts come from the provider's reported usage (the prompt tokens of the last request plus an
estimate of what was added since), or from an estimate before the first response. Past the
threshold, older turns are replaced by a rolling summary the model writes (a request without
tools); the system prompt and the most recent complete turns stay, and no cut separates a tool
call from its result. The summary is used only if its request ended normally with text, no
tool calls, and is smaller than what it replaces; otherwise the history stays as it was —
unless it is past the hard limit (default 1.25 x the threshold), where a plain trim that keeps
tool pairs intact is used. Neither limit ever passes :data:`MAX_PROMPT_FRACTION` of a known
context size, so that the answer still fits. Before compressing, the task's state is
checkpointed to memory (when memory is enabled) so nothing of the task is lost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from loopact.agent.compress import estimate_tokens
from loopact.errors import PromptTooLong
from loopact.llm.base import Model, ModelRequest
from loopact.llm.messages import Message
from loopact.llm.tokens import estimate_fixed_tokens

Checkpoint = Callable[[str], Awaitable[None]]

#: Hard limit as a multiple of the threshold when none is given.
HARD_LIMIT_FACTOR = 1.25
#: The default threshold as a fraction of the model's context size.
DEFAULT_CONTEXT_FRACTION = 0.6
#: Neither limit passes this fraction of the model's context size: the rest is for the answer.
MAX_PROMPT_FRACTION = 0.85


@dataclass
class ContextManager:
    """When to compress, and how many tokens the prompt has (SPEC E1).

    Args:
        limit_tokens: The threshold in prompt tokens (``--context-limit``); None for
            ``fraction`` of ``context_tokens``.
        hard_limit_tokens: Above this a plain trim is used when no summary could be made;
            default ``HARD_LIMIT_FACTOR`` times the threshold.
        keep_recent_turns: Complete turns kept verbatim.
        checkpoint: Writes a checkpoint text to memory before compressing, or None.
        context_tokens: The model's context size in tokens, None when unknown (then only a
            configured ``limit_tokens`` applies). Set by :meth:`for_model`.
        fraction: The default threshold as a fraction of ``context_tokens``: of the room
            the fixed part of every prompt leaves, when :attr:`fixed_tokens` is known.
        fixed_tokens: The part of every prompt no compression can shrink, in tokens: the
            system prompt and the tools (or their catalogue in the system message), set by
            the loop before each request. The default threshold is ``fixed_tokens +
            fraction * (context_tokens - fixed_tokens)``: the local brain's catalogue alone
            is about 5,200 of its 8,192 tokens, above 60 % of the window, so every round
            after a long tool result was "past the threshold" and asked the model for a
            summary that could not help (and evicted its cached prompt: 275 s for "go to the
            kitchen, look around, then come back", 2026-12-05).

    Raises:
        ValueError: A limit is not positive, or ``fraction`` is not in (0, 1).
    """

    limit_tokens: int | None = None
    hard_limit_tokens: int | None = None
    keep_recent_turns: int = 2
    checkpoint: Checkpoint | None = None
    context_tokens: int | None = None
    fraction: float = DEFAULT_CONTEXT_FRACTION
    fixed_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("limit_tokens", "hard_limit_tokens", "context_tokens"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        if not 0 < self.fraction < 1:
            raise ValueError(f"fraction must be between 0 and 1, got {self.fraction}")
        self._calibration: tuple[Message, ...] | None = None
        self._calibrated_tokens = 0
        self._overhead = 0

    def for_model(self, context_tokens: int | None) -> ContextManager:
        """A manager like this one for a model with ``context_tokens`` of context (fresh
        token calibration: another model counts tokens differently)."""
        return dataclasses.replace(self, context_tokens=context_tokens)

    @property
    def threshold(self) -> int | None:
        """The prompt size in tokens above which the history is compressed; None: never."""
        ctx = self.context_tokens
        limit = self.limit_tokens
        if limit is None:
            if ctx is None:
                return None
            fixed = min(max(0, self.fixed_tokens), ctx)
            limit = int(fixed + self.fraction * (ctx - fixed))
        return limit if ctx is None else min(limit, int(MAX_PROMPT_FRACTION * ctx))

    @property
    def hard_limit(self) -> int:
        """The hard limit in tokens (meaningful only while :attr:`threshold` is not None)."""
        hard = self.hard_limit_tokens or int((self.threshold or 0) * HARD_LIMIT_FACTOR)
        ctx = self.context_tokens
        return hard if ctx is None else min(hard, int(MAX_PROMPT_FRACTION * ctx))

    def note_usage(self, messages: Sequence[Message], input_tokens: int) -> None:
        """Remember that ``messages`` were reported as ``input_tokens`` prompt tokens.

        What the report has beyond the estimate of the messages (the tool catalogue, the
        wire framing) is kept as a fixed overhead for prompts not yet reported.
        """
        if input_tokens > 0:
            self._calibration = tuple(messages)
            self._calibrated_tokens = input_tokens
            self._overhead = max(0, input_tokens - estimate_tokens(messages))

    def prompt_tokens(self, history: Sequence[Message]) -> int:
        """Tokens of a prompt made of ``history``: the reported usage of its longest reported
        prefix plus an estimate of the rest, or an estimate plus the last known overhead."""
        cal = self._calibration
        if (
            cal is not None
            and len(history) >= len(cal)
            and all(a is b for a, b in zip(cal, history, strict=False))
        ):
            return self._calibrated_tokens + estimate_tokens(history[len(cal) :])
        return estimate_tokens(history) + self._overhead

    def over_limit(self, history: Sequence[Message]) -> bool:
        """True when ``history`` has passed the threshold."""
        threshold = self.threshold
        return threshold is not None and self.prompt_tokens(history) > threshold


def prompt_too_long(
    model: Model, request: ModelRequest, need: int, window: int, instruction: str
) -> PromptTooLong:
    """The error for a request that does not fit the context window (SPEC E1): how long it
    is and of what, the window, and what to do.

    Args:
        model: The model it was for (its estimate of what it sends).
        request: The request, not sent.
        need: Its whole prompt in tokens (estimated): system prompt, tools, conversation.
        window: The model's context window in tokens.
        instruction: The user's instruction.

    Returns:
        E.g. "the request would be about 10261 tokens, more than the model's context window
        of 8192 tokens (the system prompt and the tool descriptions about 5250, the
        instruction about 5011). Shorten the instruction to at most about 11700 characters, or
        use a model with a larger context window (...)."
    """
    fixed = estimate_fixed_tokens(model, request)
    said = estimate_tokens([Message.user(instruction)])
    rest = max(0, need - fixed - said)
    parts = f"the system prompt and the tool descriptions about {fixed}, the instruction "
    parts += f"about {said}" + (f", the task's tool calls and results about {rest}" if rest else "")
    room = window - (need - said)  # tokens left for the instruction
    if rest > said:
        advice = "A tool result is too long for this model: ask for less (a part of a file, say)"
    elif room > 0:
        advice = f"Shorten the instruction to at most about {room * 4} characters"
    else:
        advice = "The system prompt and the tool descriptions leave no room: offer fewer tools"
    message = (
        f"the request would be about {need} tokens, more than the model's context window of "
        f"{window} tokens ({parts}). {advice}, or use a model with a larger "
        "context window (local.context_tokens for the local brain, "
        "model.capabilities.context_tokens for an endpoint)."
    )
    return PromptTooLong(message, need, window)
