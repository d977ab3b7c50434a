"""One task: the ReAct loop with its bounds (SPEC A1, A2, A3, B6, X1).

Read top to bottom: the user message goes into the history; each round sends the history
to the model, starts tool calls as soon as the stream makes them ready, waits for their
results (in call order) and appends them; the task ends when the model answers in text, or a
bound trips and one last request without tools asks for a final answer. Retries (B6) happen
here rather than in providers, because only the loop knows whether a call was already
dispatched from a stream that was then cut: such a stream is never replayed (X1).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from loopact._compat import reschedule, timeout_after
from loopact.agent.actiontext import observation_text, parse_actions, render_catalogue
from loopact.agent.compress import (
    accept_summary,
    hard_trim,
    plan_compression,
    summary_request_messages,
)
from loopact.agent.compress import estimate_tokens as estimate_history_tokens
from loopact.agent.dispatch import RoundDispatcher, TaskState
from loopact.agent.plan import (
    PlanError,
    PlanOutcome,
    parse_plan,
    plan_request_messages,
    run_plan,
    validate_plan,
)
from loopact.errors import LoopactError, ModelError, ModelRetryableError
from loopact.i18n import t
from loopact.llm.base import (
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallReady,
    ToolSpec,
)
from loopact.llm.messages import Image, Message, ToolCall, Usage, history_summary
from loopact.tools.base import ToolResult

if TYPE_CHECKING:
    from loopact.agent.runtime import Agent

log = logging.getLogger(__name__)

#: Longest tool-result text sent to the model, in characters.
MAX_RESULT_CHARS = 16_000


class TaskFailed(LoopactError):
    """The task cannot go on (a rejected plan, a failed plan step); the text says why."""


class BoundReached(Exception):
    """A bound tripped; carries the fallback text for the user (SPEC A2)."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name
        self.text = text


@dataclass
class TaskOutcome:
    """How a task ended.

    Attributes:
        task_id: The command id.
        status: ``completed``, ``bounded``, ``preempted`` or ``failed``.
        reply: The text for the user (the answer, or the fallback text of a bound).
        error: The error message when ``failed``.
        rounds: Model rounds used.
    """

    task_id: str
    status: str
    reply: str = ""
    error: str | None = None
    rounds: int = 0


@dataclass
class _RoundState:
    """What one model request has produced so far (local to its round: an ``agent_call``
    tool may run a nested planning request while the outer response still streams)."""

    dispatcher: RoundDispatcher | None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


def result_text(result: ToolResult, limit: int = MAX_RESULT_CHARS) -> str:
    """The tool message text the model reads: compact JSON of ``{ok, data, error, metadata}``."""
    body: dict[str, Any] = {"ok": result.ok}
    if result.data is not None:
        body["data"] = result.data
    if result.error:
        body["error"] = result.error
    if result.metadata:
        body["metadata"] = result.metadata
    if result.images:
        body["images"] = len(result.images)
    text = json.dumps(body, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f'... [truncated: {len(text)} characters in all]"'
    return text


def estimate_tokens(messages: tuple[Message, ...] | list[Message]) -> int:
    """Rough token count (characters / 4, 800 per image) for endpoints that report no usage."""
    chars = 0
    images = 0
    for m in messages:
        chars += len(m.text) + sum(len(c.raw_arguments or c.arguments_json()) for c in m.tool_calls)
        images += len(m.images)
    return chars // 4 + 800 * images


class TaskRun:
    """The rounds of one task. Created and driven by :class:`~loopact.agent.runtime.Agent`.

    Args:
        agent: The agent (model, registry, history, options, bus).
        task_id: The command id.
        text: The user's instruction.
        images: Images sent with it (already through the image gate).
    """

    def __init__(self, agent: Agent, task_id: str, text: str, images: tuple[Image, ...]) -> None:
        self.agent = agent
        self.task_id = task_id
        self.text = text
        self.images = images
        self.state = TaskState(task_id, instruction=text)
        self.rounds = 0
        self._bounds = agent.options.bounds
        self._lang = agent.options.lang

    # ----------------------------------------------------------------- the loop
    async def body(self) -> str:
        """Run the task; returns the reply text.

        Raises:
            BoundReached: A bound tripped (the fallback text is in the exception).
            ModelError: The model failed after its retries.
            asyncio.CancelledError: The task was preempted (history is left consistent).
        """
        self.agent.append(Message.user(self.text, self.images))
        if self.agent.options.mode == "plan":
            return await self._plan_body()
        if self.agent.action_text:
            return await self._action_body()
        b = self._bounds
        while True:
            await self._check_rounds(self.rounds, b.max_rounds)
            self.rounds += 1
            self.agent.inject_pending_inputs()
            done, outcomes, invalid = await self._round(self.rounds, self.agent.tool_specs())
            if not outcomes:
                return done.message.text
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            self._check_tokens()

    async def _check_rounds(self, rounds: int, limit: int) -> None:
        """Before a round: too many invalid rounds or rounds end the task (SPEC A2, A3).

        Raises:
            BoundReached: With the final answer of one last request without tools.
        """
        b = self._bounds
        if self.state.invalid_streak >= b.max_invalid_rounds:
            await self._final_answer("invalid_rounds", b.max_invalid_rounds)
        if rounds >= limit:
            await self._final_answer("max_rounds", limit)

    def _check_tokens(self) -> None:
        """After a round: the task's token budget (SPEC A2).

        Raises:
            BoundReached: The budget is used up (no further request is made).
        """
        limit = self._bounds.token_budget
        if self.state.tokens > limit:
            self._bound_event("tokens", limit)
            raise BoundReached(
                "tokens", t("bound.tokens", self._lang, used=self.state.tokens, limit=limit)
            )

    async def _final_answer(self, name: str, limit: int) -> NoReturn:
        """One last request without tools asking for a final answer (SPEC A2)."""
        self._bound_event(name, limit)
        notice = t(f"bound.{name}", self._lang, limit=limit)
        ask = Message.user(t("final.ask", self._lang))
        self.rounds += 1
        try:
            done, _, _ = await self._round(self.rounds, (), extra=(ask,))
            answer = done.message.text.strip()
        except ModelError as exc:
            log.info("final answer request failed: %s", exc)
            answer = ""
        raise BoundReached(name, f"{notice}\n\n{answer}" if answer else notice)

    def _inject_inputs(self) -> None:
        """Add waiting messages and sensor events as one snapshot user message (A7, C3)."""
        from loopact.agent.runtime import format_inputs

        inputs = self.agent.take_inputs()
        if inputs:
            images = tuple(img for i in inputs for img in i.images)
            self.agent.append(Message.user(format_inputs(inputs), images))
        self.agent.inject_pending_inputs()

    # ----------------------------------------------------------------- continuous (A7)
    async def continuous_body(self) -> str:
        """Work on the waiting inputs, taking in new ones as they come, until idle (A7).

        Returns when the model stops calling tools and no input waits. A plain-text answer
        is delivered to people as a ``message`` event rather than lost.

        Raises:
            BoundReached: The rolling-hour budget or the invalid-round guard tripped.
        """
        b = self._bounds
        since_input = 0
        while True:
            if self.agent.has_inputs:
                since_input = 0
            await self._check_rounds(since_input, b.max_rounds * 4)
            if self.agent.hourly_budget_wait() > 0:
                self._bound_event("hourly_budget", self.agent.options.hourly_rounds)
                raise BoundReached(
                    "hourly_budget",
                    t(
                        "bound.hourly",
                        self._lang,
                        rounds=self.agent.options.hourly_rounds,
                        tokens=self.agent.options.hourly_tokens,
                    ),
                )
            self.rounds += 1
            since_input += 1
            tokens_before = self.state.tokens
            done, outcomes, invalid = await self._round(self.rounds, self.agent.tool_specs())
            self.agent.record_round(self.state.tokens - tokens_before)
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            if outcomes:
                continue
            text = done.message.text.strip()
            if text:
                self.agent.bus.emit("message", self.task_id, text=text, source="agent")
            if not self.agent.has_inputs:
                return ""

    # ----------------------------------------------------------------- action text (A5)
    async def _action_body(self) -> str:
        """Action-text mode: one ``name(args)`` action per round until ``finishtask()``."""
        b = self._bounds
        while True:
            await self._check_rounds(self.rounds, b.max_rounds)
            self.rounds += 1
            self.agent.inject_pending_inputs()
            specs = self.agent.tool_specs()
            system = self._system_with(render_catalogue(specs))
            done, _, _ = await self._round(self.rounds, (), system=system)
            parse = parse_actions(done.message.text, specs)
            if parse.finished:
                return parse.progress.strip() or t("task.done", self._lang)
            if parse.call is None:
                if not parse.has_action:
                    return done.message.text
                self.state.invalid_streak += 1
                self.agent.append(Message.user(parse.feedback()))
                continue
            call = parse.call
            try:
                result, invalid = await self._dispatch_one(call)
            except BaseException:
                cancelled = ToolResult.failure(t("tool.cancelled", self._lang))
                self.agent.append(
                    Message.user(observation_text(call, False, result_text(cancelled), parse))
                )
                raise
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            text = observation_text(call, result.ok, result_text(result), parse)
            self.agent.append(Message.user(text, result.images))
            self._check_tokens()

    def _system_with(self, section: str) -> Message:
        base = (
            self.agent.history[0].text
            if self.agent.history and (self.agent.history[0].role == "system")
            else ""
        )
        return Message.system(f"{base}\n\n{section}" if base else section)

    # ----------------------------------------------------------------- plan (A4)
    async def _plan_body(self) -> str:
        """Plan mode: ask for a JSON plan, validate it, run its steps, summarise."""
        specs = tuple(s for s in self.agent.tool_specs() if s.name != "agent_call")
        outcome = await self.run_plan_for(self.text, specs)
        summary = outcome.summary()
        self.agent.append(Message.assistant(summary))
        if not outcome.ok:
            raise TaskFailed(summary)
        return summary

    async def run_plan_for(self, task: str, specs: tuple[ToolSpec, ...]) -> PlanOutcome:
        """Plan ``task`` with the model and run the plan (plan mode and ``agent_call``).

        Raises:
            TaskFailed: The model's plan is not valid JSON or names unknown tools or steps
                (nothing has run then; the message names what is valid).
        """
        self.rounds += 1
        messages = tuple(plan_request_messages(task, specs))
        done, _, _ = await self._round(self.rounds, (), messages=messages)
        try:
            plan = parse_plan(done.message.text)
            validate_plan(plan, specs)
        except PlanError as exc:
            raise TaskFailed(f"the plan was rejected before running anything: {exc}") from None
        bus = self.agent.bus

        def emit(typ: str, data: dict[str, Any]) -> None:
            bus.emit(typ, self.task_id, **data)

        return await run_plan(plan, self._run_one, emit)

    async def _run_one(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one plan step's tool call (guards, confirmation, timeouts)."""
        call = ToolCall(f"step_{uuid.uuid4().hex[:8]}", name, arguments)
        result, _ = await self._dispatch_one(call)
        return result

    async def _dispatch_one(self, call: ToolCall) -> tuple[ToolResult, bool]:
        """Run one call through a fresh dispatcher; returns its result and round validity.

        Raises:
            asyncio.CancelledError: The task was cancelled; the tool was stopped first.
        """
        dispatcher = self.agent.new_dispatcher(self.state)
        dispatcher.add(call)
        try:
            ((_, result),) = await dispatcher.gather()
        except BaseException:
            await dispatcher.cancel()
            raise
        if result.images:
            self.agent.remember_images(call.id, list(result.images))
        return result, dispatcher.invalid

    # ----------------------------------------------------------------- context (E1)
    async def _maybe_compress(self) -> None:
        """Compress the history when the prompt has passed the threshold (SPEC E1)."""
        ctx = self.agent.options.context
        assert ctx is not None
        history = self.agent.history
        before = ctx.prompt_tokens(history)
        if before <= ctx.limit_tokens:
            return
        method = "kept"
        new_history: list[Message] | None = None
        plan = plan_compression(history, ctx.keep_recent_turns)
        if plan is not None:
            if ctx.checkpoint is not None:
                await ctx.checkpoint(self._checkpoint_text())
            self.rounds += 1
            request = tuple(summary_request_messages(plan, self.text))
            try:
                done, _, _ = await self._round(self.rounds, (), messages=request)
                new_history = accept_summary(
                    plan, done.message, done.finish_reason, estimate_history_tokens
                )
            except ModelError as exc:
                log.info("summary request failed, history kept: %s", exc)
            if new_history is not None:
                method = "summary"
        if new_history is None and before > ctx.hard_limit:
            new_history = hard_trim(history, ctx.hard_limit, estimate_history_tokens)
            method = "trim"
        if new_history is not None:
            self.agent.history[:] = new_history
        self.agent.bus.emit(
            "context_compressed",
            self.task_id,
            method=method,
            before_tokens=before,
            after_tokens=ctx.prompt_tokens(self.agent.history),
            limit=ctx.limit_tokens,
        )

    def _checkpoint_text(self) -> str:
        """The task's state for memory before compressing: goal, progress, last replies."""
        done = [f"{m.name}: {m.text[:80]}" for m in self.agent.history[-12:] if m.role == "tool"]
        said = [m.text[:160] for m in self.agent.history[-12:] if m.role == "assistant" and m.text]
        parts = [f"checkpoint of task {self.task_id}: goal: {self.text}"]
        if done:
            parts.append("recent actions: " + "; ".join(done[-5:]))
        if said:
            parts.append("last said: " + said[-1])
        return " | ".join(parts)

    def _bound_event(self, name: str, limit: int) -> None:
        self.agent.bus.emit("bound", self.task_id, name=name, limit=limit)

    # ----------------------------------------------------------------- one round
    async def _round(
        self,
        round_no: int,
        specs: tuple[ToolSpec, ...],
        extra: tuple[Message, ...] = (),
        *,
        system: Message | None = None,
        messages: tuple[Message, ...] | None = None,
    ) -> tuple[ResponseDone, list[tuple[ToolCall, ToolResult]], bool]:
        """One model request and its tool calls.

        Args:
            round_no: The round number for events.
            specs: Tools offered (empty: a request without tools).
            extra: Messages appended to the history for this request only.
            system: Replaces the history's system message for this request only.
            messages: A separate conversation (planning); nothing is added to the history.
        """
        agent = self.agent
        commit = messages is None
        if commit:
            self._inject_inputs()
        if commit and agent.options.context is not None:
            await self._maybe_compress()
        if messages is None:
            history = agent.history
            if system is not None:
                rest = history[1:] if history and history[0].role == "system" else history
                messages = (system, *rest, *extra)
            else:
                messages = (*history, *extra)
        request = ModelRequest(messages=messages, tools=specs)
        fields: dict[str, Any] = {
            "round": round_no,
            "n_messages": len(request.messages),
            "tools": [s.name for s in specs],
        }
        if agent.options.trace_full:
            fields["messages"] = history_summary(request.messages)
        agent.bus.emit("model_request", self.task_id, **fields)

        b = self._bounds
        attempt = 0
        while True:
            attempt += 1
            rs = _RoundState(agent.new_dispatcher(self.state) if specs else None)
            try:
                done = await self._stream(request, rs)
                break
            except ModelRetryableError as exc:
                if rs.dispatcher is not None and rs.dispatcher.started_any:
                    # X1: never replay a stream whose calls already ran; go on from them.
                    done = self._cut_response(str(exc), rs)
                    break
                if attempt >= b.max_tries:
                    raise
                delay = b.backoff_base_s * (2 ** (attempt - 1)) * (0.8 + 0.4 * random.random())
                if exc.retry_after_s is not None:
                    delay = max(delay, exc.retry_after_s)
                delay = min(delay, b.backoff_max_s)
                agent.bus.emit(
                    "model_retry", self.task_id, attempt=attempt, error=str(exc), delay_s=delay
                )
                await asyncio.sleep(delay)
            except BaseException:
                await self._abort_round(rs)
                raise

        usage = done.usage
        if commit and agent.options.context is not None:
            agent.options.context.note_usage(request.messages, usage.input_tokens)
        if usage.total_tokens == 0:
            usage = Usage(estimate_tokens(request.messages), estimate_tokens([done.message]))
        self.state.tokens += usage.total_tokens
        agent.bus.emit(
            "model_response",
            self.task_id,
            round=round_no,
            text=done.message.text,
            reasoning=done.message.reasoning or "",
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                for c in (*done.message.tool_calls, *done.truncated_calls)
            ],
            finish_reason=done.finish_reason,
            usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        )

        dispatcher = rs.dispatcher
        if dispatcher is None:
            if commit:
                agent.append(dataclasses.replace(done.message, tool_calls=()))
            return done, [], False
        try:
            for call in done.message.tool_calls:
                if not dispatcher.has(call.id):
                    dispatcher.add(call)
            for call in done.truncated_calls:
                dispatcher.add_refused(call, t("tool.truncated", self._lang, name=call.name))
            outcomes = await dispatcher.gather()
        except BaseException:
            await self._abort_round(rs, done.message)
            raise
        self._commit_round(done.message, outcomes)
        return done, outcomes, dispatcher.invalid

    async def _stream(self, request: ModelRequest, rs: _RoundState) -> ResponseDone:
        """Consume one streamed response, dispatching ready calls (X1), under the timeouts."""
        agent = self.agent
        b = self._bounds
        loop = asyncio.get_running_loop()
        emit = agent.bus.emit
        stream = agent.model.stream(request)
        started = False
        try:
            async with timeout_after(b.request_timeout_s) as deadline:
                async for event in stream:
                    started = True
                    reschedule(deadline, loop.time() + b.stream_idle_timeout_s)
                    if isinstance(event, TextDelta):
                        rs.text.append(event.text)
                        emit("text_delta", self.task_id, text=event.text)
                    elif isinstance(event, ReasoningDelta):
                        rs.reasoning.append(event.text)
                        emit("reasoning_delta", self.task_id, text=event.text)
                    elif isinstance(event, ToolCallReady):
                        if rs.dispatcher is not None:
                            rs.dispatcher.add(event.call)
                    elif isinstance(event, ResponseDone):
                        return event
        except (TimeoutError, asyncio.TimeoutError) as exc:
            if started:
                what = f"the model's stream went silent for {b.stream_idle_timeout_s:g} s"
            else:
                what = f"the model did not start answering within {b.request_timeout_s:g} s"
            raise ModelRetryableError(what) from exc
        finally:
            await _aclose_quietly(stream)
        raise ModelRetryableError("the model stream ended without a final event")

    def _cut_response(self, error: str, rs: _RoundState) -> ResponseDone:
        """Build the response from what arrived before a cut, once calls were dispatched."""
        assert rs.dispatcher is not None
        self.agent.bus.emit(
            "error",
            self.task_id,
            message=f"{error}; continuing from the calls that were already started",
        )
        msg = Message.assistant(
            "".join(rs.text),
            tool_calls=rs.dispatcher.calls,
            reasoning="".join(rs.reasoning) or None,
        )
        return ResponseDone(message=msg, finish_reason="cut", usage=Usage())

    async def _abort_round(self, rs: _RoundState, message: Message | None = None) -> None:
        """On cancellation or failure: stop running tools, keep the history consistent."""
        dispatcher, rs.dispatcher = rs.dispatcher, None
        if dispatcher is None or not dispatcher.entries:
            return
        outcomes = await dispatcher.cancel()
        if message is None:
            message = Message.assistant(
                "".join(rs.text),
                reasoning="".join(rs.reasoning) or None,
            )
        self._commit_round(message, outcomes)

    def _commit_round(self, message: Message, outcomes: list[tuple[ToolCall, ToolResult]]) -> None:
        """Append the assistant message and one tool message per call, in call order."""
        calls = tuple(call for call, _ in outcomes)
        self.agent.append(dataclasses.replace(message, tool_calls=calls))
        for call, result in outcomes:
            self.agent.append(
                Message.tool(call.id, call.name, result_text(result), images=result.images)
            )
            if result.images:
                self.agent.remember_images(call.id, list(result.images))


async def _aclose_quietly(stream: Any) -> None:
    aclose: Callable[[], Any] | None = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        # Not asyncio.wait_for: it can swallow a cancellation that arrives as the inner
        # awaitable finishes, and a preempted task must always see its cancellation.
        async with timeout_after(5.0):
            await aclose()
    except Exception as exc:  # closing a broken stream must not hide the real error
        log.debug("closing the model stream failed: %r", exc)
