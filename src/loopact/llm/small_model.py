"""The small-model policy: a model wrapper for endpoints with grammar-constrained text calls.

Small local models (the 0.5B offline brain, llama.cpp servers) behind an endpoint without
native tool calls but with constrained decoding (``Capabilities.constrained_decoding``) need
three rules the wire adapters know nothing about (issue 6, issue 14; SPEC B7, A3):

- **the reply pseudo-tool** (:data:`~loopact.llm.toolprompt.REPLY_TOOL`): offered with the
  tools in every round, so the catalogue at the start of the prompt never changes (llama.cpp
  keeps its prompt cache); a call to it comes back as answer text;
- **a call first**: the first round of a task (no result yet), and every round while all the
  task's results are calls the runtime refused for their units, must be a call (the reply
  tool keeps words possible): given free text, small models answer "what do you see?" from
  imagination or describe a refusal instead of choosing;
- **no echo of a finished call or of the prompt**: a response that only calls again the tool
  the previous round just ran successfully, repeats exactly the call that just failed, or
  answers with nothing but the runtime's instruction line after a result ("Call one of those
  functions instead.": :func:`~loopact.llm.toolprompt.echoes_instruction`) is not passed on;
  the same request is sent once more with ``tool_choice="none"`` and that answer is yielded.

The rules read the typed outcomes of the results (``Message.outcome``), never their text, and
speak to the wrapped model only through :class:`~loopact.llm.base.ModelRequest`
(``tools``, ``tool_choice``, ``allowed_tools``), so any provider that honours those fields can
be wrapped. Responses are collected, not streamed, whenever a rule may rewrite them; every
fragment held back meanwhile is passed on as ``StreamProgress`` (issue 21 item 8).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeGuard

from loopact.llm.base import (
    Capabilities,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamProgress,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.messages import (
    Message,
    ToolCall,
    ToolOutcome,
    current_task,
    refused_for_units,
)
from loopact.llm.tokens import estimate_prompt_tokens
from loopact.llm.toolprompt import REPLY_TOOL, echoes_instruction

logger = logging.getLogger(__name__)


def needs_small_model_policy(capabilities: Capabilities) -> bool:
    """Whether an endpoint with ``capabilities`` gets the policy: tool calls as grammar-
    constrained text (``constrained_decoding`` without ``native_tool_calls``)."""
    return capabilities.constrained_decoding and not capabilities.native_tool_calls


class SmallModelPolicy:
    """Wraps ``inner`` with the small-model policy (module docstring); a :class:`Model`.

    Args:
        inner: The model of a constrained text-call endpoint (usually
            :class:`~loopact.llm.openai_chat.OpenAIChatModel` on a llama.cpp server).
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.capabilities = inner.capabilities

    def __repr__(self) -> str:
        return f"SmallModelPolicy({self.inner!r})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The wrapped model's secrets (its API key)."""
        return tuple(getattr(self.inner, "secrets", ()))

    def offers_reply(self, request: ModelRequest) -> bool:
        """Whether the reply pseudo-tool is offered: the request has tools, none of them is
        itself named ``reply``, and the endpoint calls tools as constrained text."""
        if not request.tools or not needs_small_model_policy(self.capabilities):
            return False
        return not any(t.name == REPLY_TOOL.name for t in request.tools)

    def requires_call(self, request: ModelRequest) -> bool:
        """Whether this request's response must be a call (first round, or only unit refusals
        so far); see the module docstring."""
        if not self.offers_reply(request):
            return False
        return all(refused_for_units(m) for m in current_task(request.messages) if m.role == "tool")

    def shape(self, request: ModelRequest) -> ModelRequest:
        """The request the wrapped model gets: the reply tool described with the others; a
        forced call (``tool_choice="required"``) may call only the caller's tools; a first
        round must call something, the reply tool included."""
        if not self.offers_reply(request):
            return request
        tools = (*request.tools, REPLY_TOOL)
        if request.tool_choice == "required":
            names = request.allowed_tools or tuple(t.name for t in request.tools)
            return dataclasses.replace(request, tools=tools, allowed_tools=names)
        if request.tool_choice == "auto" and self.requires_call(request):
            return dataclasses.replace(request, tools=tools, tool_choice="required")
        return dataclasses.replace(request, tools=tools)

    def estimate_prompt_tokens(self, request: ModelRequest) -> int:
        """The wrapped model's estimate for the shaped ``request`` (the reply tool with the
        others; :func:`loopact.llm.tokens.estimate_prompt_tokens`)."""
        return estimate_prompt_tokens(self.inner, self.shape(request))

    def build_body(self, request: ModelRequest) -> dict[str, object]:
        """The wrapped model's request body for the shaped ``request`` (the local brain warms
        its prompt cache with it); raises AttributeError when the wrapped model has none."""
        build = self.inner.build_body  # type: ignore[attr-defined]
        body: dict[str, object] = build(self.shape(request))
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` through the policy and yield the events (see :class:`Model`).

        Raises:
            ModelRetryableError, ModelFatalError: As the wrapped model raises them.
        """
        shaped = self.shape(request)
        reply = shaped is not request
        constrained = bool(request.tools) and needs_small_model_policy(self.capabilities)
        previous = previous_calls(request.messages) if constrained else ()
        if not previous and not reply:
            async with _closing(self.inner.stream(shaped)) as events:
                async for event in events:
                    yield event
            return
        collected: list[ModelEvent] = []
        async for event in self._collect(shaped, collected):
            yield event
        if reply:
            collected = _reply_as_text(collected)
        done = collected[-1] if collected else None
        if isinstance(done, ResponseDone) and _not_an_answer(done, previous):
            logger.info("model repeated its previous call or the prompt; asking for the answer")
            collected = []
            answer_only = _answer_only(shaped)
            async for event in self._collect(answer_only, collected):
                yield event
        for event in collected:
            yield event

    async def _collect(
        self, request: ModelRequest, into: list[ModelEvent]
    ) -> AsyncIterator[StreamProgress]:
        """Collect the wrapped model's events into ``into``; yield progress for fragments."""
        async with _closing(self.inner.stream(request)) as events:
            async for event in events:
                into.append(event)
                if _held_back(event):
                    yield StreamProgress(len(event.text))

    async def aclose(self) -> None:
        """Release the wrapped model's connections."""
        await self.inner.aclose()

    def reset(self) -> None:
        """Reset the wrapped model."""
        self.inner.reset()


@asynccontextmanager
async def _closing(
    events: AsyncIterator[ModelEvent],
) -> AsyncGenerator[AsyncIterator[ModelEvent], None]:
    """Close the wrapped model's stream (an async generator) however the caller leaves."""
    try:
        yield events
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def previous_calls(
    messages: tuple[Message, ...] | list[Message],
) -> tuple[tuple[ToolCall, bool], ...]:
    """The calls of the last assistant message with their success, when only results follow.

    A result counts as failed when its typed outcome says so (``Message.outcome``); one
    without an outcome counts as success.

    Returns:
        ``(call, succeeded)`` pairs, or ``()`` when the history does not end with results.
    """
    failed: set[str] = set()
    saw_result = False
    for msg in reversed(messages):
        if msg.role == "tool":
            saw_result = True
            if msg.outcome is not None and not msg.outcome.ok:
                failed.add(msg.tool_call_id or "")
            continue
        if msg.role == "assistant" and msg.tool_calls and saw_result:
            return tuple((c, c.id not in failed) for c in msg.tool_calls)
        return ()
    return ()


def _answer_only(request: ModelRequest) -> ModelRequest:
    """The re-ask for an answer in words: no call possible, and the task's unit refusals shown
    as results to tell the user about, not as calls to make again (their instruction line,
    "Call one of those functions instead.", is what a small model copies)."""
    messages = tuple(
        dataclasses.replace(m, outcome=ToolOutcome(ok=False)) if refused_for_units(m) else m
        for m in request.messages
    )
    return dataclasses.replace(request, messages=messages, tool_choice="none", allowed_tools=None)


def _not_an_answer(done: ResponseDone, previous: tuple[tuple[ToolCall, bool], ...]) -> bool:
    """A response that only repeats the previous call (:func:`_repeats`) or only copies the
    runtime's instruction line (:func:`~loopact.llm.toolprompt.echoes_instruction`)."""
    calls = done.message.tool_calls
    if calls:
        return all(_repeats(c, previous) for c in calls)
    return bool(previous) and echoes_instruction(done.message.text)


def _repeats(call: ToolCall, previous: tuple[tuple[ToolCall, bool], ...]) -> bool:
    # The same tool right after it succeeded (small models echo the finished call, often with
    # numbers copied from its result), or exactly the call that just failed.
    return any(call.name == p.name and (ok or call.arguments == p.arguments) for p, ok in previous)


def _held_back(event: ModelEvent) -> TypeGuard[TextDelta | ReasoningDelta | ToolCallDelta]:
    """Whether ``event`` is a fragment (text, reasoning, call arguments): while a response is
    collected each one is passed on as :class:`StreamProgress` at once, so that the response
    is not silence for the idle timeout (issue 21 item 8)."""
    return isinstance(event, (TextDelta, ReasoningDelta, ToolCallDelta))


def _reply_as_text(events: list[ModelEvent]) -> list[ModelEvent]:
    """Turn a response whose calls are all to :data:`REPLY_TOOL` into an answer-text one."""
    done = events[-1] if events else None
    if not (
        isinstance(done, ResponseDone)
        and done.message.tool_calls
        and all(c.name == REPLY_TOOL.name for c in done.message.tool_calls)
    ):
        return events
    text = " ".join(
        str(c.arguments.get("text", "")).strip() for c in done.message.tool_calls
    ).strip()
    kept = [e for e in events[:-1] if not isinstance(e, (ToolCallReady, ToolCallDelta, TextDelta))]
    message = Message.assistant(text, reasoning=done.message.reasoning)
    return [
        *kept,
        *([TextDelta(text)] if text else []),
        dataclasses.replace(done, message=message, finish_reason="stop"),
    ]
