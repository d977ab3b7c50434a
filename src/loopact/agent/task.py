"""One task: the ReAct loop with its bounds (SPEC A1, A2, A3, B6, X1).

Read top to bottom: the user message goes into the history; each round sends the history
to the model, starts tool calls as soon as the stream makes them ready, waits for their
results (in call order) and appends them; the task ends when the model answers in text, or a
bound trips and one last request without tools asks for a final answer. Retries (B6) happen
here rather than in providers, because only the loop knows whether a call was already
dispatched from a stream that was then cut: such a stream is never replayed (X1).

A task does not hold its agent: it gets a :class:`TaskEnv` with the conversation it changes
(:class:`~loopact.agent.state.Conversation`) and the few services it calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from loopact.agent.actiontext import observation_text, parse_actions, render_catalogue
from loopact.agent.compress import (
    accept_summary,
    checkpoint_text,
    hard_trim,
    plan_compression,
    summary_request_messages,
)
from loopact.agent.compress import estimate_tokens as estimate_history_tokens
from loopact.agent.context import ContextManager
from loopact.agent.dispatch import RoundDispatcher, TaskState
from loopact.agent.options import AgentOptions, RequestKind
from loopact.agent.plan import (
    PlanOutcome,
    parse_plan,
    plan_request_messages,
    resolve_tool_names,
    run_plan,
    validate_plan,
)
from loopact.agent.round_events import request_event, response_event
from loopact.agent.state import Conversation
from loopact.agent.steps import (
    ClauseResult,
    answered_from_results,
    chinese_from_results,
    compose_reply,
    is_chinese,
    run_clauses,
    split_clauses,
)
from loopact.agent.stream import (
    OutputLimitReached,
    RoundState,
    cut_response,
    estimate_tokens,
    result_text,
    retry_delay_s,
    stream_response,
)
from loopact.errors import BoundReached, ModelError, ModelRetryableError, PlanError, TaskFailed
from loopact.events import EventBus
from loopact.i18n import t
from loopact.llm.base import Model, ModelRequest, ResponseDone, ToolChoice, ToolSpec
from loopact.llm.messages import (
    Image,
    Message,
    ToolCall,
    ToolOutcome,
    Usage,
)
from loopact.tools.base import ToolResult

log = logging.getLogger(__name__)

#: Characters of an answer cut by a bound that the bound's reply still shows.
_SAID_CHARS = 2000

Outcomes = list[tuple[ToolCall, ToolResult]]


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


@dataclass(frozen=True)
class TaskEnv:
    """What a task needs from its agent, and nothing more.

    Attributes:
        conversation: The history, inputs, images and hourly budget the task changes.
        options: Bounds, mode, language, tracing.
        bus: Where the task's events go.
        model: The model of the next request (it may be switched between requests, B4).
        tool_specs: The live tool catalogue.
        new_dispatcher: A dispatcher for one round of the task's guard state.
        context: The context-window manager of the next request (E1), or None.
        action_text: Tools go to the model as action text (SPEC A5).
    """

    conversation: Conversation
    options: AgentOptions
    bus: EventBus
    model: Callable[[], Model]
    tool_specs: Callable[[], tuple[ToolSpec, ...]]
    new_dispatcher: Callable[[TaskState], RoundDispatcher]
    context: Callable[[], ContextManager | None] = lambda: None
    action_text: bool = False


class TaskRun:
    """The rounds of one task. Created and driven by :class:`~loopact.agent.runtime.Agent`.

    Args:
        env: The conversation and services of the agent.
        task_id: The command id.
        text: The user's instruction.
        images: Images sent with it (already through the image gate).
    """

    def __init__(self, env: TaskEnv, task_id: str, text: str, images: tuple[Image, ...]) -> None:
        self.env = env
        self.conv = env.conversation
        self.task_id = task_id
        self.text = text
        self.images = images
        self.state = TaskState(task_id, instruction=text)
        self.rounds = 0
        self._bounds = env.options.bounds
        self._lang = env.options.lang
        # The model's answer is not the reply (a step's, or one after a failed call with
        # split_steps): its text is not streamed.
        self._quiet_answer = False

    # ----------------------------------------------------------------- the loop
    async def body(self) -> str:
        """Run the task; returns the reply text.

        Raises:
            BoundReached: A bound tripped (the fallback text is in the exception).
            ModelError: The model failed after its retries.
            TaskFailed: Plan mode: the plan was rejected or a step failed.
            asyncio.CancelledError: The task was preempted (history is left consistent).
        """
        clauses = [self.text]
        if self.env.options.split_steps and not self.images and self.env.options.mode == "task":
            clauses = split_clauses(self.text)
        if len(clauses) > 1:
            return await self._steps_body(clauses)
        self.conv.append(Message.user(self.text, self.images))
        if self.env.options.mode == "plan":
            return await self._plan_body()
        if self.env.action_text:
            return await self._action_body()
        reply, ran = await self._react()
        if self._answers_from_results(ran, reply):
            # The local brain's words claim what did not happen: after a failed call ("The
            # robot is driving at a distance of 50 meters.") and after a motion (a drive in
            # circles "stopped within half a meter of the red box"). Say what ran, as for a step.
            result = ClauseResult.of(self.text, reply, ran)
            return compose_reply([result], [], zh=is_chinese(self.text))
        return reply

    def _answers_from_results(self, ran: Outcomes, reply: str) -> bool:
        """With ``split_steps``: :func:`~loopact.agent.steps.answered_from_results`, or
        :func:`~loopact.agent.steps.chinese_from_results`."""
        acted = self.state.state_version > 0  # a motion or a write was dispatched
        return self.env.options.split_steps and (
            answered_from_results(ran, acted) or chinese_from_results(self.text, reply, ran)
        )

    async def _react(self, act_first: bool = False) -> tuple[str, Outcomes]:
        """ReAct rounds on the history until an answer without calls (SPEC A1, A2).

        Args:
            act_first: The first round must call a tool (``tool_choice: "required"``).

        Returns:
            The answer text and every ``(call, result)`` pair the rounds ran.
        """
        b = self._bounds
        ran: Outcomes = []
        first = self.rounds
        while True:
            await self._check_rounds(self.rounds - first, b.max_rounds)
            self.rounds += 1
            self.conv.pull_sources(self.task_id)
            choice: ToolChoice = "required" if act_first and self.rounds == first + 1 else "auto"
            specs = self.env.tool_specs()
            done, outcomes, invalid = await self._round(self.rounds, specs, tool_choice=choice)
            if not outcomes:
                return done.message.text, ran
            ran.extend(outcomes)
            if self._answers_from_results(ran, ""):  # "": whatever the model will answer
                self._quiet_answer = True  # body() may answer with what ran instead
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            self._check_tokens()

    async def _steps_body(self, clauses: list[str]) -> str:
        """One single-step task per clause, in order (:func:`~loopact.agent.steps.
        run_clauses`); each clause's rounds are ReAct rounds on this task's history."""
        self._quiet_answer = True  # a step's own answer is not the reply

        async def clause_rounds(text: str, act_first: bool) -> tuple[str, Outcomes]:
            self.conv.append(Message.user(text))
            return await self._react(act_first=act_first)

        def emit(typ: str, **data: Any) -> None:
            self.env.bus.emit(typ, self.task_id, **data)

        return await run_clauses(clauses, clause_rounds, emit, zh=is_chinese(self.text))

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
            done, _, _ = await self._round(self.rounds, (), extra=(ask,), kind="final")
            answer = done.message.text.strip()
        except ModelError as exc:
            log.info("final answer request failed: %s", exc)
            answer = ""
        raise BoundReached(name, f"{notice}\n\n{answer}" if answer else notice)

    # ----------------------------------------------------------------- continuous (A7)
    async def continuous_body(self) -> str:
        """Work on the waiting inputs, taking in new ones as they come, until idle (A7).

        Returns when the model stops calling tools and no input waits. A plain-text answer
        is delivered to people as a ``message`` event rather than lost.

        Raises:
            BoundReached: The rolling-hour budget or the invalid-round guard tripped.
        """
        b = self._bounds
        budget = self.conv.budget
        since_input = 0
        while True:
            if self.conv.has_inputs:
                since_input = 0
            await self._check_rounds(since_input, b.max_rounds * 4)
            if budget.wait_s() > 0:
                self._bound_event("hourly_budget", budget.rounds)
                raise BoundReached(
                    "hourly_budget",
                    t("bound.hourly", self._lang, rounds=budget.rounds, tokens=budget.tokens),
                )
            self.rounds += 1
            since_input += 1
            tokens_before = self.state.tokens
            done, outcomes, invalid = await self._round(self.rounds, self.env.tool_specs())
            budget.record(self.state.tokens - tokens_before)
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            if outcomes:
                continue
            text = done.message.text.strip()
            if text:
                self.env.bus.emit("message", self.task_id, text=text, source="agent")
            if not self.conv.has_inputs:
                return ""

    # ----------------------------------------------------------------- action text (A5)
    async def _action_body(self) -> str:
        """Action-text mode: one ``name(args)`` action per round until ``finishtask()``."""
        b = self._bounds
        while True:
            await self._check_rounds(self.rounds, b.max_rounds)
            self.rounds += 1
            self.conv.pull_sources(self.task_id)
            specs = self.env.tool_specs()
            system = self._system_with(render_catalogue(specs))
            done, _, _ = await self._round(self.rounds, (), system=system)
            parse = parse_actions(done.message.text, specs)
            if parse.finished:
                return parse.progress.strip() or t("task.done", self._lang)
            if parse.call is None:
                if not parse.has_action:
                    return done.message.text
                self.state.invalid_streak += 1
                self.conv.append(Message.user(parse.feedback()))
                continue
            call = parse.call
            try:
                result, invalid = await self._dispatch_one(call)
            except BaseException:
                cancelled = ToolResult.failure(t("tool.cancelled", self._lang))
                self.conv.append(
                    Message.user(observation_text(call, False, result_text(cancelled), parse))
                )
                raise
            self.state.invalid_streak = self.state.invalid_streak + 1 if invalid else 0
            text = observation_text(call, result.ok, result_text(result), parse)
            self.conv.append(Message.user(text, result.images))
            self._check_tokens()

    def _system_with(self, section: str) -> Message:
        base = self.conv.system_text
        return Message.system(f"{base}\n\n{section}" if base else section)

    # ----------------------------------------------------------------- plan (A4)
    async def _plan_body(self) -> str:
        """Plan mode: ask for a JSON plan, validate it, run its steps, summarise."""
        specs = tuple(s for s in self.env.tool_specs() if s.name != "agent_call")
        outcome = await self.run_plan_for(self.text, specs)
        summary = outcome.summary()
        self.conv.append(Message.assistant(summary))
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
        done, _, _ = await self._round(self.rounds, (), messages=messages, kind="plan")
        try:
            plan = resolve_tool_names(parse_plan(done.message.text), [s.name for s in specs])
            validate_plan(plan, specs)
        except PlanError as exc:
            raise TaskFailed(f"the plan was rejected before running anything: {exc}") from None
        bus = self.env.bus

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
        dispatcher = self.env.new_dispatcher(self.state)
        dispatcher.add(call)
        try:
            ((_, result),) = await dispatcher.gather()
        except BaseException:
            await dispatcher.cancel()
            raise
        if result.images:
            self.conv.remember_images(call.id, list(result.images))
        return result, dispatcher.invalid

    # ----------------------------------------------------------------- context (E1)
    async def _maybe_compress(self, ctx: ContextManager) -> None:
        """Compress the history when the prompt has passed the threshold (SPEC E1)."""
        history = self.conv.history
        threshold = ctx.threshold
        before = ctx.prompt_tokens(history)
        if threshold is None or before <= threshold:
            return
        method = "kept"
        new_history = await self._summarised(ctx, history)
        if new_history is not None:
            method = "summary"
        elif before > ctx.hard_limit:
            new_history = hard_trim(history, ctx.hard_limit, ctx.prompt_tokens)
            method = "trim"
        if new_history is not None:
            self.conv.replace(new_history)
        self.env.bus.emit(
            "context_compressed",
            self.task_id,
            method=method,
            before_tokens=before,
            after_tokens=ctx.prompt_tokens(self.conv.history),
            limit=threshold,
        )

    async def _summarised(
        self, ctx: ContextManager, history: list[Message]
    ) -> list[Message] | None:
        """The history with older turns replaced by a model-written summary, or None when
        there is nothing to summarise or the summary was not usable (SPEC E1)."""
        plan = plan_compression(history, ctx.keep_recent_turns)
        if plan is None:
            return None
        if ctx.checkpoint is not None:
            await ctx.checkpoint(checkpoint_text(self.conv.history, self.task_id, self.text))
        self.rounds += 1
        request = tuple(summary_request_messages(plan, self.text))
        try:
            done, _, _ = await self._round(self.rounds, (), messages=request, kind="summary")
        except ModelError as exc:
            log.info("summary request failed, history kept: %s", exc)
            return None
        return accept_summary(plan, done.message, done.finish_reason, estimate_history_tokens)

    def _bound_event(self, name: str, limit: int) -> None:
        self.env.bus.emit("bound", self.task_id, name=name, limit=limit)

    # ----------------------------------------------------------------- one round
    async def _round(
        self,
        round_no: int,
        specs: tuple[ToolSpec, ...],
        extra: tuple[Message, ...] = (),
        *,
        system: Message | None = None,
        messages: tuple[Message, ...] | None = None,
        kind: RequestKind = "round",
        tool_choice: ToolChoice = "auto",
    ) -> tuple[ResponseDone, Outcomes, bool]:
        """One model request and its tool calls.

        Args:
            round_no: The round number for events.
            specs: Tools offered (empty: a request without tools).
            extra: Messages appended to the history for this request only.
            system: Replaces the history's system message for this request only.
            messages: A separate conversation (planning, summaries); nothing is added to
                the history.
            kind: What the request is for; sets its ``max_tokens`` (SPEC A2).
            tool_choice: ``"required"``: the response must be a call (a step of a split
                instruction, issue 13).

        Raises:
            BoundReached: The response passed its ``max_tokens`` or the task's token budget
                while streaming (it was not read on).

        Returns:
            The response, the ``(call, result)`` pairs in call order, and whether the round
            was invalid (SPEC A3).
        """
        commit = messages is None
        ctx = self.env.context() if commit else None
        if commit:
            self.conv.inject_inputs(self.task_id)
            if ctx is not None:
                await self._maybe_compress(ctx)
        if messages is None:
            messages = self._prompt(extra, system)
        request = ModelRequest(
            messages=messages,
            tools=specs,
            max_output_tokens=self._bounds.max_tokens(kind),
            temperature=self.env.options.temperature,
            task=self.text,
            tool_choice=tool_choice if specs else "auto",
        )
        fields = request_event(round_no, request, self.env.options.trace_full)
        self.env.bus.emit("model_request", self.task_id, **fields)
        done, rs = await self._respond(request)
        usage = done.usage
        if ctx is not None:
            ctx.note_usage(request.messages, usage.input_tokens)
        if usage.total_tokens == 0:
            usage = Usage(estimate_tokens(request.messages), estimate_tokens([done.message]))
        self.state.tokens += usage.total_tokens
        self.env.bus.emit("model_response", self.task_id, **response_event(round_no, done, usage))
        if rs.dispatcher is None:
            if commit:
                self.conv.append(dataclasses.replace(done.message, tool_calls=()))
            return done, [], False
        outcomes = await self._finish_calls(done, rs)
        return done, outcomes, rs.dispatcher.invalid

    def _prompt(self, extra: tuple[Message, ...], system: Message | None) -> tuple[Message, ...]:
        """The history as this request's messages, with its system message replaced by
        ``system`` and ``extra`` appended, for this request only."""
        history = self.conv.history
        if system is None:
            return (*history, *extra)
        rest = history[1:] if history and history[0].role == "system" else history
        return (system, *rest, *extra)

    async def _respond(self, request: ModelRequest) -> tuple[ResponseDone, RoundState]:
        """Stream the response, retrying retryable failures with backoff (SPEC B6) unless a
        call of the failed response already ran (X1: then go on from those calls).

        Raises:
            ModelError: The last try failed, or the failure is not retryable.
            asyncio.CancelledError: The task was preempted; running tools were stopped and
                the history was left consistent.
        """
        b = self._bounds
        env = self.env
        attempt = 0
        while True:
            attempt += 1
            rs = RoundState(env.new_dispatcher(self.state) if request.tools else None)
            try:
                done = await stream_response(
                    env.model(),
                    request,
                    rs,
                    b,
                    env.bus,
                    self.task_id,
                    self.state.tokens,
                    emit_text=not self._quiet_answer,
                )
                return done, rs
            except OutputLimitReached as exc:
                await self._abort_round(rs)
                raise self._output_bound(exc, rs) from None
            except ModelRetryableError as exc:
                if rs.started_calls:
                    env.bus.emit(
                        "error",
                        self.task_id,
                        message=f"{exc}; continuing from the calls that were already started",
                    )
                    return cut_response(rs), rs
                if attempt >= b.max_tries:
                    raise
                delay = retry_delay_s(b, attempt, exc)
                env.bus.emit(
                    "model_retry", self.task_id, attempt=attempt, error=str(exc), delay_s=delay
                )
                await asyncio.sleep(delay)
            except BaseException:
                await self._abort_round(rs)
                raise

    def _output_bound(self, exc: OutputLimitReached, rs: RoundState) -> BoundReached:
        """The bound for a response that was not read on (SPEC A2), with the start of what
        the model had said."""
        self._bound_event(exc.name, exc.limit)
        if exc.name == "tokens":
            notice = t("bound.tokens", self._lang, used=exc.used, limit=exc.limit)
        else:
            notice = t("bound.output_tokens", self._lang, limit=exc.limit)
        said = "".join(rs.text).strip()
        if len(said) > _SAID_CHARS:
            said = said[:_SAID_CHARS].rstrip() + " ..."
        return BoundReached(exc.name, f"{notice}\n\n{said}" if said else notice)

    async def _finish_calls(self, done: ResponseDone, rs: RoundState) -> Outcomes:
        """Add the calls the stream did not start, wait for every result, commit the round."""
        dispatcher = rs.dispatcher
        assert dispatcher is not None
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
        return outcomes

    async def _abort_round(self, rs: RoundState, message: Message | None = None) -> None:
        """On cancellation or failure: stop running tools, keep the history consistent."""
        dispatcher, rs.dispatcher = rs.dispatcher, None
        if dispatcher is None or not dispatcher.entries:
            return
        outcomes = await dispatcher.cancel()
        self._commit_round(message or rs.partial_message(), outcomes)

    def _commit_round(self, message: Message, outcomes: Outcomes) -> None:
        """Append the assistant message and one tool message per call, in call order."""
        calls = tuple(call for call, _ in outcomes)
        self.conv.append(dataclasses.replace(message, tool_calls=calls))
        for call, result in outcomes:
            outcome = ToolOutcome(result.ok, result.metadata.get("error_kind"))
            self.conv.append(
                Message.tool(
                    call.id, call.name, result_text(result), images=result.images, outcome=outcome
                )
            )
            if result.images:
                self.conv.remember_images(call.id, list(result.images))
