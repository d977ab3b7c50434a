"""A task's prompt kept inside the model's context window (SPEC E1, E2).

Before each request of a task, :meth:`ContextFit.compress` replaces the history's older turns by
a model-written summary once the prompt passes the threshold (after writing a checkpoint to
memory), or trims them when no summary is usable and the hard limit is passed, and says so in a
``context_compressed`` event; :meth:`ContextFit.fitted` makes sure the whole request (system
prompt, tools, history, instruction) fits the window before it is sent; :meth:`ContextFit.refit`
learns the window from a server that refused a prompt as too long. :class:`~loopact.agent.
rounds.TaskRounds` holds one per task.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loopact.agent.compress import (
    CompressionPlan,
    accept_summary,
    checkpoint_text,
    hard_trim,
    plan_compression,
    summary_request_messages,
)
from loopact.agent.compress import estimate_tokens as estimate_history_tokens
from loopact.agent.context import ContextManager, prompt_too_long
from loopact.agent.state import Conversation
from loopact.errors import ContextOverflow, ModelError
from loopact.events import EventBus, EventType
from loopact.llm.base import Model, ModelRequest, ResponseDone
from loopact.llm.messages import Message
from loopact.llm.tokens import estimate_prompt_tokens

log = logging.getLogger(__name__)


@dataclass
class ContextFit:
    """Keeps one task's prompt inside the model's context window (SPEC E1).

    Attributes:
        conv: The history it compresses.
        bus: Where ``context_compressed`` events go.
        model: The model of the next request (its window and how it counts tokens).
        learn_context: Tell the agent the model's window (tokens); the manager for it, or None
            when compression is off.
        task_id: The task's command id (its events and checkpoints).
        text: The user's instruction (it is always kept, and counted).
        summarise: Send one summary request (a separate conversation) and return the
            response; it is counted as the task's request.
    """

    conv: Conversation
    bus: EventBus
    model: Callable[[], Model]
    learn_context: Callable[[int], ContextManager | None]
    task_id: str
    text: str
    summarise: Callable[[tuple[Message, ...]], Awaitable[ResponseDone]]

    async def refit(self, exc: ContextOverflow) -> bool:
        """After the server refused the prompt as too long: learn the window and compress.

        The window is the one the server named, else the size of the refused prompt (the
        window is smaller than that). Returns whether the history is smaller now.
        """
        before = estimate_history_tokens(self.conv.history)
        window = exc.context_tokens or max(1, before)
        ctx = self.learn_context(window)
        log.info("the prompt passed the context window (%s tokens): compressing", window)
        if ctx is None:
            return False
        await self.compress(ctx, reason="overflow")
        return estimate_history_tokens(self.conv.history) < before

    async def compress(self, ctx: ContextManager, reason: str = "threshold") -> str | None:
        """Compress the history when the prompt has passed the threshold (SPEC E1).

        Args:
            ctx: The context manager of this request.
            reason: ``threshold`` (before a request) or ``overflow`` (the request does not
                fit the window, or the server refused it as too long); written to the
                ``context_compressed`` event.

        Returns:
            How: ``summary``, ``trim`` or ``kept`` (nothing older could be compressed); None
            when the prompt is below the threshold.
        """
        history = self.conv.history
        threshold = ctx.threshold
        before = ctx.prompt_tokens(history)
        if threshold is None or before <= threshold:
            return None
        method = "kept"
        plan = plan_compression(history, ctx.keep_recent_turns)
        new_history = None if plan is None else await self._summarised(ctx, plan)
        if new_history is not None:
            method = "summary"
        elif before > ctx.hard_limit:
            trimmed = hard_trim(history, ctx.hard_limit, ctx.prompt_tokens)
            if len(trimmed) < len(history):
                if plan is None:
                    await self._checkpoint(ctx)  # else the summary attempt wrote it already
                new_history, method = trimmed, "trim"
        if new_history is not None:
            self.conv.replace(new_history)
        after = ctx.prompt_tokens(self.conv.history)
        self.bus.emit(
            EventType.CONTEXT_COMPRESSED,
            self.task_id,
            method=method,
            before_tokens=before,
            after_tokens=after,
            limit=threshold,
            reason=reason,
        )
        return method

    async def fitted(
        self,
        ctx: ContextManager,
        request: ModelRequest,
        compressed: str | None,
        rebuild: Callable[[], tuple[Message, ...]],
    ) -> ModelRequest:
        """``request`` when its whole prompt fits the model's context window (SPEC E1).

        The estimate counts what the model is sent (:func:`~loopact.llm.tokens.
        estimate_prompt_tokens`): the system prompt, the tools or the catalogue that describes
        them, the history and the instruction. The local brain's catalogue alone is about
        5,000 tokens of its 8,192: left out, a 20 kB instruction was counted 5,301 tokens and
        sent, and the server refused its 9,251. A request that does not fit is compressed to
        fit (unless this round's compression found nothing older to compress) and measured
        again; ``rebuild`` makes the request's messages again from the history.

        Raises:
            PromptTooLong: It cannot fit: it is not sent (no retry could make it fit).
        """
        window, model = ctx.context_tokens, self.model()
        need = estimate_prompt_tokens(model, request)
        if window is None or need <= window:
            return request
        before = estimate_history_tokens(self.conv.history)
        if compressed != "kept" and before > need - window:
            tight = before - (need - window)
            await self.compress(
                dataclasses.replace(ctx, limit_tokens=tight, hard_limit_tokens=tight), "overflow"
            )
            request = dataclasses.replace(request, messages=rebuild())
            need = estimate_prompt_tokens(model, request)
            if need <= window:
                return request
        raise prompt_too_long(model, request, need, window, self.text)

    async def _checkpoint(self, ctx: ContextManager) -> None:
        """Write the task's state to memory before the history loses turns (SPEC E1, E2)."""
        if ctx.checkpoint is not None:
            await ctx.checkpoint(checkpoint_text(self.conv.history, self.task_id, self.text))

    async def _summarised(self, ctx: ContextManager, plan: CompressionPlan) -> list[Message] | None:
        """The history with ``plan``'s older turns replaced by a model-written summary (after
        a checkpoint), or None when the summary was not usable (SPEC E1)."""
        await self._checkpoint(ctx)
        request = tuple(summary_request_messages(plan, self.text))
        try:
            done = await self.summarise(request)
        except ModelError as exc:
            log.info("summary request failed, history kept: %s", exc)
            return None
        return accept_summary(plan, done.message, done.finish_reason, estimate_history_tokens)
