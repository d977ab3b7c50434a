"""One streamed model response under the loop's timeouts (SPEC A2, B5, B6, X1).

:func:`stream_response` consumes a response event by event: text and reasoning deltas go to
the event bus as they arrive, and each tool call is handed to the round's dispatcher the moment
its arguments are complete (X1), before the response has finished. A response that stays
silent too long, or ends without its final event, raises a retryable error; the round decides
whether a retry is safe (:meth:`RoundState.started_calls`). Every fragment (text, reasoning,
tool arguments) counts as activity for the idle timeout. A response is not read on once its
answer passes the request's ``max_tokens`` (a server that ignores it, issue 21 item 6) or the
whole response passes what is left of the task's token budget: :class:`OutputLimitReached`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loopact._compat import reschedule, timeout_after, wait_within
from loopact.agent.dispatch import RoundDispatcher
from loopact.agent.options import Bounds
from loopact.errors import ModelRetryableError
from loopact.errors import OutputLimitReached as OutputLimitReached
from loopact.events import EventBus, EventType
from loopact.llm.base import (
    Model,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.messages import Message, Usage
from loopact.redact import StreamMasker
from loopact.tools.base import ToolResult
from loopact.tools.report import result_json

log = logging.getLogger(__name__)

_Delta = Literal[EventType.TEXT_DELTA, EventType.REASONING_DELTA]
"""The live-only event types of streamed text."""

#: Longest tool-result text sent to the model, in characters.
MAX_RESULT_CHARS = 16_000
#: Characters a token may stand for before an answer counts as past its ``max_tokens``:
#: generous (real tokenizers average about 4 for English and fewer for Chinese), so that only
#: a server that ignores ``max_tokens`` trips it.
CHARS_PER_TOKEN_LIMIT = 8
#: Characters per token when the task's token budget is checked mid-stream.
CHARS_PER_TOKEN = 4


@dataclass
class RoundState:
    """What one model request has produced so far (local to its round: an ``agent_call``
    tool may run a nested planning request while the outer response still streams).

    Attributes:
        dispatcher: Runs the round's tool calls; None for a request without tools.
        text: Answer-text deltas so far.
        reasoning: Reasoning deltas so far.
    """

    dispatcher: RoundDispatcher | None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)

    @property
    def started_calls(self) -> bool:
        """True once a call of this response has run: the response must never be replayed."""
        return self.dispatcher is not None and self.dispatcher.started_any

    def partial_message(self, with_calls: bool = False) -> Message:
        """The assistant message from what arrived so far (a cut or cancelled response)."""
        calls = self.dispatcher.calls if with_calls and self.dispatcher is not None else ()
        return Message.assistant(
            "".join(self.text), tool_calls=calls, reasoning="".join(self.reasoning) or None
        )


async def stream_response(
    model: Model,
    request: ModelRequest,
    rs: RoundState,
    bounds: Bounds,
    bus: EventBus,
    task_id: str,
    tokens_used: int = 0,
    emit_text: bool = True,
) -> ResponseDone:
    """Consume one streamed response, dispatching ready calls (X1), under the timeouts.

    Args:
        tokens_used: Tokens the task used before this request (for its token budget).
        emit_text: Emit ``text_delta`` events (False for a step of a split instruction,
            whose answer is not the reply, issue 13; the text is still collected).

    Raises:
        ModelRetryableError: The response did not start within ``request_timeout_s``, went
            silent for ``stream_idle_timeout_s``, or ended without a final event; or the
            provider raised it (connection error, 429/5xx, cut stream).
        ModelFatalError: The provider raised it.
        OutputLimitReached: The answer passed ``request.max_output_tokens`` (at
            :data:`CHARS_PER_TOKEN_LIMIT` characters a token) or the response passed the
            task's ``token_budget`` (at :data:`CHARS_PER_TOKEN`); the stream was closed.
    """
    loop = asyncio.get_running_loop()
    stream = model.stream(request)
    started = False
    meter = _OutputMeter(request.max_output_tokens, bounds.token_budget, tokens_used)
    # A secret split across deltas is held back until it is whole, then masked (issue 21).
    shown: dict[_Delta, StreamMasker] = {
        EventType.TEXT_DELTA: StreamMasker(bus.redactor),
        EventType.REASONING_DELTA: StreamMasker(bus.redactor),
    }
    try:
        async with timeout_after(bounds.request_timeout_s) as deadline:
            async for event in stream:
                started = True
                reschedule(deadline, loop.time() + bounds.stream_idle_timeout_s)
                if isinstance(event, TextDelta):
                    meter.add(event.text, answer=True)
                    rs.text.append(event.text)
                    if emit_text:
                        _emit_delta(bus, task_id, EventType.TEXT_DELTA, shown, event.text)
                elif isinstance(event, ReasoningDelta):
                    meter.add(event.text, answer=False)
                    rs.reasoning.append(event.text)
                    _emit_delta(bus, task_id, EventType.REASONING_DELTA, shown, event.text)
                elif isinstance(event, ToolCallDelta):
                    meter.add(event.text, answer=True)
                elif isinstance(event, ToolCallReady):
                    if rs.dispatcher is not None:
                        rs.dispatcher.add(event.call)
                elif isinstance(event, ResponseDone):
                    return event
    except (TimeoutError, asyncio.TimeoutError) as exc:
        if started:
            what = f"the model's stream went silent for {bounds.stream_idle_timeout_s:g} s"
        else:
            what = f"the model did not start answering within {bounds.request_timeout_s:g} s"
        raise ModelRetryableError(what) from exc
    finally:
        for kind, masker in shown.items():
            rest = masker.flush()
            if rest:
                bus.emit(kind, task_id, text=rest)
        await _aclose_quietly(stream)
    raise ModelRetryableError("the model stream ended without a final event")


def _emit_delta(
    bus: EventBus, task_id: str, kind: _Delta, shown: dict[_Delta, StreamMasker], text: str
) -> None:
    """Emit what of ``text`` can be shown yet (see :class:`~loopact.redact.StreamMasker`)."""
    safe = shown[kind].feed(text)
    if safe:
        bus.emit(kind, task_id, text=safe)


class _OutputMeter:
    """Counts a response's characters against its limits (SPEC A2, issue 21 item 6)."""

    def __init__(self, max_tokens: int | None, budget: int, used: int) -> None:
        self.max_tokens = max_tokens
        self.answer_limit = None if max_tokens is None else max_tokens * CHARS_PER_TOKEN_LIMIT
        self.budget = budget
        self.used = used
        self.answer_chars = 0
        self.chars = 0

    def add(self, text: str, *, answer: bool) -> None:
        self.chars += len(text)
        if answer:
            self.answer_chars += len(text)
            if self.answer_limit is not None and self.answer_chars > self.answer_limit:
                assert self.max_tokens is not None
                raise OutputLimitReached(
                    "output_tokens", self.max_tokens, self.answer_chars // CHARS_PER_TOKEN
                )
        if self.used + self.chars // CHARS_PER_TOKEN > self.budget:
            raise OutputLimitReached("tokens", self.budget, self.used + self.chars // 4)


def retry_delay_s(bounds: Bounds, attempt: int, exc: ModelRetryableError) -> float:
    """Seconds before try ``attempt + 1``: jittered exponential backoff up to
    ``backoff_max_s``, and never sooner than the server's ``Retry-After`` (SPEC B6; one
    longer than ``retry_after_max_s`` is not waited for: :func:`too_long_to_wait`)."""
    delay = bounds.backoff_base_s * (2 ** (attempt - 1)) * (0.8 + 0.4 * random.random())
    delay = min(delay, bounds.backoff_max_s)
    if exc.retry_after_s is not None:
        delay = max(delay, exc.retry_after_s)
    return float(delay)


def too_long_to_wait(bounds: Bounds, exc: ModelRetryableError) -> ModelRetryableError | None:
    """The error to fail with when the server's ``Retry-After`` is longer than
    ``retry_after_max_s`` (SPEC B6), else None."""
    asked = exc.retry_after_s
    if asked is None or asked <= bounds.retry_after_max_s:
        return None
    return ModelRetryableError(
        f"{exc}; the server asks to wait {asked:g} s before the next request, longer than "
        f"loopact waits ({bounds.retry_after_max_s:g} s): not retried, try again later",
        status=exc.status,
        retry_after_s=asked,
    )


def cut_response(rs: RoundState) -> ResponseDone:
    """The response from what arrived before a cut, once calls were dispatched (X1)."""
    message = rs.partial_message(with_calls=True)
    return ResponseDone(message=message, finish_reason="cut", usage=Usage())


def result_text(result: ToolResult, limit: int = MAX_RESULT_CHARS) -> str:
    """The tool message text the model reads: compact JSON of ``{ok, data, error, metadata}``
    (:func:`~loopact.tools.report.result_json`), cut at ``limit`` characters."""
    text = json.dumps(result_json(result), ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f'... [truncated: {len(text)} characters in all]"'
    return text


async def _aclose_quietly(stream: Any) -> None:
    aclose: Callable[[], Any] | None = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        await wait_within(aclose(), 5.0)  # a preempted task always sees its cancellation
    except Exception as exc:  # closing a broken stream must not hide the real error
        log.debug("closing the model stream failed: %r", exc)
