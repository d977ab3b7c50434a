"""The rounds of a task: one model request, its tool calls, bounds and retries (SPEC A1-A3, B6, X1).

:class:`TaskRounds` is what every task body is built from: :meth:`TaskRounds.run_round` sends
the history to the model, starts tool calls as soon as the stream makes them ready, waits for
their results (in call order) and appends them; :meth:`TaskRounds.check_rounds` and
:meth:`TaskRounds.check_tokens` end a task on its bounds, with one last request without tools
asking for a final answer. Retries (B6) happen here rather than in providers, because only the
loop knows whether a call was already dispatched from a stream that was then cut: such a stream
is never replayed (X1). Keeping each request inside the context window (E1) is
:class:`~loopact.agent.fitting.ContextFit`'s. The bodies themselves (ReAct, steps, continuous,
plan, action text) are in :mod:`loopact.agent.task`, :mod:`loopact.agent.plan_body` and
:mod:`loopact.agent.action_body`.

A task does not hold its agent: it gets a :class:`TaskEnv` with the conversation it changes
(:class:`~loopact.agent.state.Conversation`) and the few services it calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from loopact.agent.compress import estimate_tokens as estimate_history_tokens
from loopact.agent.context import ContextManager
from loopact.agent.dispatch import RoundDispatcher, TaskState
from loopact.agent.fitting import ContextFit
from loopact.agent.options import AgentOptions, RequestKind
from loopact.agent.round_events import request_event, response_event
from loopact.agent.state import Conversation
from loopact.agent.step_policy import task_policy
from loopact.agent.stream import (
    OutputLimitReached,
    RoundState,
    cut_response,
    result_text,
    retry_delay_s,
    stream_response,
    too_long_to_wait,
)
from loopact.agent.turns import Outcomes, TaskPolicy, TaskView
from loopact.errors import (
    BoundReached,
    ContextOverflow,
    ModelError,
    ModelRetryableError,
)
from loopact.events import Event, EventBus, EventType
from loopact.i18n import t
from loopact.llm.base import Model, ModelRequest, ResponseDone, ToolChoice, ToolSpec
from loopact.llm.messages import Audio, Image, Message, ToolCall, ToolOutcome, Usage
from loopact.llm.tokens import estimate_fixed_tokens, estimate_prompt_tokens
from loopact.tools.base import ToolResult

log = logging.getLogger(__name__)

#: Characters of an answer cut by a bound that the bound's reply still shows.
_SAID_CHARS = 2000


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
        learn_context: Tell the agent the model's context window in tokens (a server refused
            a longer prompt); returns the manager for it, or None when compression is off.
        action_text: Tools go to the model as action text (SPEC A5).
        new_policy: The policy of a new task (:mod:`loopact.agent.turns`), from the task
            and the options; by default :func:`~loopact.agent.step_policy.task_policy`.
    """

    conversation: Conversation
    options: AgentOptions
    bus: EventBus
    model: Callable[[], Model]
    tool_specs: Callable[[], tuple[ToolSpec, ...]]
    new_dispatcher: Callable[[TaskState], RoundDispatcher]
    context: Callable[[], ContextManager | None] = lambda: None
    learn_context: Callable[[int], ContextManager | None] = lambda _tokens: None
    action_text: bool = False
    new_policy: Callable[[TaskView, AgentOptions], TaskPolicy] = task_policy


class TaskRounds:
    """The rounds of one task, and its bounds; the task bodies are built on it.

    Args:
        env: The conversation and services of the agent.
        task_id: The command id.
        text: The user's instruction.
        images: Images sent with it (already through the image gate).
        audio: Spoken clips of it, for a model that hears them (SPEC B8).

    Attributes:
        state: The task's guard state (tokens used, repeat guard, invalid streak; SPEC A3).
        requests: Model requests made so far, by kind (:meth:`run_round` counts them).
        ran: Every ``(call, result)`` pair the task ran or refused, in call order.
        policy: How the instruction is put to the model and the reply composed
            (:mod:`loopact.agent.turns`; made by :attr:`TaskEnv.new_policy`).
    """

    def __init__(
        self,
        env: TaskEnv,
        task_id: str,
        text: str,
        images: tuple[Image, ...],
        audio: tuple[Audio, ...] = (),
    ) -> None:
        self.env = env
        self.conv = env.conversation
        self.task_id = task_id
        self.text = text
        self.images = images
        self.audio = audio
        self.state = TaskState(task_id, instruction=text)
        self.requests: Counter[RequestKind] = Counter()
        self.bounds = env.options.bounds
        self.lang = env.options.lang
        self.ran: Outcomes = []
        self.policy = env.new_policy(self, env.options)
        self.fit = ContextFit(
            self.conv, env.bus, env.model, env.learn_context, task_id, text, self._summary
        )

    @property
    def rounds(self) -> int:
        """Model requests made so far (final, plan and summary requests included)."""
        return self.requests.total()

    @property
    def tool_rounds(self) -> int:
        """Tool rounds made so far (requests of kind ``round``; the bound of SPEC A2)."""
        return self.requests["round"]

    @property
    def acted(self) -> bool:
        """Whether a motion or a write was dispatched in this task."""
        return self.state.state_version > 0

    @property
    def tools(self) -> frozenset[str]:
        """The names of the tools offered to the model."""
        return frozenset(spec.name for spec in self.env.tool_specs())

    def emit(self, typ: EventType, **data: Any) -> None:
        """Emit an event of this task on the agent's bus (docs/trace.md)."""
        self.env.bus.publish(Event(typ, self.task_id, data))

    # ----------------------------------------------------------------- bounds (A2, A3)

    async def check_rounds(self, rounds: int, limit: int) -> None:
        """Before a round: too many invalid rounds or rounds end the task (SPEC A2, A3).

        Args:
            rounds: The body's rounds so far (tool rounds: planning and summary requests
                are not rounds).
            limit: The rounds allowed.

        Raises:
            BoundReached: With the final answer of one last request without tools.
        """
        b = self.bounds
        if self.state.invalid_streak >= b.max_invalid_rounds:
            await self._final_answer("invalid_rounds", b.max_invalid_rounds)
        if rounds >= limit:
            await self._final_answer("max_rounds", limit)

    def check_tokens(self) -> None:
        """After a round: the task's token budget (SPEC A2).

        Raises:
            BoundReached: The budget is used up (no further request is made).
        """
        limit = self.bounds.token_budget
        if self.state.tokens > limit:
            self.bound_event("tokens", limit)
            notice = t("bound.tokens", self.lang, used=self.state.tokens, limit=limit)
            raise BoundReached("tokens", self.bounded_text(notice))

    async def _final_answer(self, name: str, limit: int) -> NoReturn:
        """One last request without tools asking for a final answer (SPEC A2), unless the
        policy answers a bound from what ran (:meth:`bounded_text`: no request is made)."""
        self.bound_event(name, limit)
        notice = t(f"bound.{name}", self.lang, limit=limit)
        if not self.policy.asks_final_answer:
            raise BoundReached(name, self.bounded_text(notice))
        ask = Message.user(t("final.ask", self.lang))
        try:
            done, _, _ = await self.run_round((), extra=(ask,), kind="final")
            answer = done.message.text.strip()
        except ModelError as exc:
            log.info("final answer request failed: %s", exc)
            answer = ""
        raise BoundReached(name, self.bounded_text(notice, answer))

    def bounded_text(self, notice: str, said: str = "") -> str:
        """The reply of a task that ended on a bound (SPEC A2): the bound's ``notice``, then
        what the task did, as the policy tells it (:meth:`TaskPolicy.bounded_text`): by
        default ``said``, the model's own words (a hosted model's final answer, which sees
        every result in the history; the start of a cut answer), when there are any; with
        ``split_steps`` (the local brain) what ran: a small model's words after a bound claim
        what never happened (its final answer to a ``turn_left`` that did not parse listed
        the skills of its system prompt as done, 2026-12-05).
        """
        return self.policy.bounded_text(notice, said)

    def bound_event(self, name: str, limit: int) -> None:
        """Emit ``bound {name, limit}`` (docs/trace.md)."""
        self.env.bus.emit(EventType.BOUND, self.task_id, name=name, limit=limit)

    # ----------------------------------------------------------------- one call
    async def dispatch_one(
        self, call: ToolCall, *, planned: bool = False
    ) -> tuple[ToolResult, bool]:
        """Run one call through a fresh dispatcher; returns its result and round validity.

        Args:
            call: The call (an action of action-text mode, a step of a plan).
            planned: A step of a checked plan (:meth:`RoundDispatcher.add`).

        Raises:
            asyncio.CancelledError: The task was cancelled; the tool was stopped first.
        """
        dispatcher = self.env.new_dispatcher(self.state)
        dispatcher.add(call, planned=planned)
        try:
            ((ran, result),) = await dispatcher.gather()
        except BaseException:
            await dispatcher.cancel()
            raise
        self.ran.append((ran, result))
        if result.images:
            self.conv.remember_images(call.id, list(result.images))
        return result, dispatcher.invalid

    async def refuse_one(self, call: ToolCall, error: str) -> ToolResult:
        """Answer a call that must not run with a failed result (``tool_call`` and
        ``tool_result`` events, as for any call; SPEC A1, A8).

        Args:
            call: The call (e.g. an action whose arguments do not parse).
            error: Why it was not run, for the model.
        """
        dispatcher = self.env.new_dispatcher(self.state)
        dispatcher.add_refused(call, error)
        ((_, result),) = await dispatcher.gather()
        self.ran.append((call, result))
        return result

    def system_with(self, section: str) -> Message:
        """The history's system message with ``section`` appended (for one request)."""
        base = self.conv.system_text
        return Message.system(f"{base}\n\n{section}" if base else section)

    async def _summary(self, messages: tuple[Message, ...]) -> ResponseDone:
        """One summary request of the history's older turns (:class:`ContextFit`)."""
        done, _, _ = await self.run_round((), messages=messages, kind="summary")
        return done

    # ----------------------------------------------------------------- one round
    async def run_round(
        self,
        specs: tuple[ToolSpec, ...],
        extra: tuple[Message, ...] = (),
        *,
        system: Message | None = None,
        messages: tuple[Message, ...] | None = None,
        kind: RequestKind = "round",
        tool_choice: ToolChoice = "auto",
        allowed_tools: tuple[str, ...] | None = None,
    ) -> tuple[ResponseDone, Outcomes, bool]:
        """One model request and its tool calls: the one place requests are counted
        (:attr:`requests`; its number is the ``round`` of its events).

        Args:
            specs: Tools offered (empty: a request without tools).
            extra: Messages appended to the history for this request only.
            system: Replaces the history's system message for this request only.
            messages: A separate conversation (planning, summaries); nothing is added to
                the history.
            kind: What the request is for; sets its ``max_tokens`` (SPEC A2).
            tool_choice: ``"required"``: the response must be a call (a step of a split
                instruction, issue 13).
            allowed_tools: The tools the response may call (``ModelRequest.allowed_tools``),
                or None for all of ``specs``.

        Raises:
            BoundReached: The response passed its ``max_tokens`` or the task's token budget
                while streaming (it was not read on).

        Returns:
            The response, the ``(call, result)`` pairs in call order, and whether the round
            was invalid (SPEC A3).

        A prompt the server refused as longer than the context window
        (:class:`~loopact.errors.ContextOverflow`) is compressed to fit the window it named
        and asked once more (SPEC E1, B6); a separate conversation (``messages``) is not.
        """
        self.requests[kind] += 1
        args = (self.rounds, specs, extra, system, messages, kind, tool_choice, allowed_tools)
        try:
            return await self._round_once(*args)
        except ContextOverflow as exc:
            if messages is not None or not await self.fit.refit(exc):
                raise
        return await self._round_once(*args)

    async def _round_once(
        self,
        round_no: int,
        specs: tuple[ToolSpec, ...],
        extra: tuple[Message, ...],
        system: Message | None,
        messages: tuple[Message, ...] | None,
        kind: RequestKind,
        tool_choice: ToolChoice,
        allowed_tools: tuple[str, ...] | None,
    ) -> tuple[ResponseDone, Outcomes, bool]:
        """One try of :meth:`run_round`."""
        commit = messages is None
        ctx = self.env.context() if commit else None
        if commit:
            self.conv.inject_inputs(self.task_id)
        request = ModelRequest(
            messages=self._prompt(extra, system) if messages is None else messages,
            tools=specs,
            max_output_tokens=self.bounds.max_tokens(kind),
            temperature=self.env.options.temperature,
            task=self.text,
            tool_choice=tool_choice if specs else "auto",
            allowed_tools=allowed_tools if specs else None,
        )
        if ctx is not None:
            ctx.fixed_tokens = estimate_fixed_tokens(self.env.model(), request)
            compressed = await self.fit.compress(ctx)
            if compressed in ("summary", "trim"):  # the history changed
                request = dataclasses.replace(request, messages=self._prompt(extra, system))
            request = await self.fit.fitted(
                ctx, request, compressed, lambda: self._prompt(extra, system)
            )
        fields = request_event(round_no, request, self.env.options.trace_full)
        self.env.bus.emit(EventType.MODEL_REQUEST, self.task_id, **fields)
        done, rs = await self._respond(request)
        usage = done.usage
        if ctx is not None:
            ctx.note_usage(request.messages, usage.input_tokens)
        if usage.total_tokens == 0:  # the endpoint reported none
            said = estimate_history_tokens([done.message])
            usage = Usage(estimate_prompt_tokens(self.env.model(), request), said)
        self.state.tokens += usage.total_tokens
        self.env.bus.emit(
            EventType.MODEL_RESPONSE, self.task_id, **response_event(round_no, done, usage)
        )
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
        b = self.bounds
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
                    emit_text=not self.policy.quiet,
                )
                return done, rs
            except OutputLimitReached as exc:
                await self._abort_round(rs)
                raise self._output_bound(exc, rs) from None
            except ModelRetryableError as exc:
                if rs.started_calls:
                    env.bus.emit(
                        EventType.ERROR,
                        self.task_id,
                        message=f"{exc}; continuing from the calls that were already started",
                    )
                    return cut_response(rs), rs
                if attempt >= b.max_tries:
                    raise
                too_long = too_long_to_wait(b, exc)
                if too_long is not None:
                    raise too_long from None
                delay = retry_delay_s(b, attempt, exc)
                env.bus.emit(
                    EventType.MODEL_RETRY,
                    self.task_id,
                    attempt=attempt,
                    error=str(exc),
                    delay_s=delay,
                )
                await asyncio.sleep(delay)
            except BaseException:
                await self._abort_round(rs)
                raise

    def _output_bound(self, exc: OutputLimitReached, rs: RoundState) -> BoundReached:
        """The bound for a response that was not read on (SPEC A2), with the start of what
        the model had said."""
        self.bound_event(exc.name, exc.limit)
        if exc.name == "tokens":
            notice = t("bound.tokens", self.lang, used=exc.used, limit=exc.limit)
        else:
            notice = t("bound.output_tokens", self.lang, limit=exc.limit)
        said = "".join(rs.text).strip()
        if len(said) > _SAID_CHARS:
            said = said[:_SAID_CHARS].rstrip() + " ..."
        return BoundReached(exc.name, self.bounded_text(notice, said))

    async def _finish_calls(self, done: ResponseDone, rs: RoundState) -> Outcomes:
        """Add the calls the stream did not start, wait for every result, commit the round."""
        dispatcher = rs.dispatcher
        assert dispatcher is not None
        try:
            for call in done.message.tool_calls:
                if not dispatcher.has(call.id):
                    dispatcher.add(call)
            for call in done.truncated_calls:
                dispatcher.add_refused(call, t("tool.truncated", self.lang, name=call.name))
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
        self.ran.extend(outcomes)
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
