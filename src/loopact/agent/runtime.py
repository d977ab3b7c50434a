"""The agent: one inbox, one loop (SPEC A1-A3, A6, A8).

Every channel (terminal, web, ROS 2, voice) calls :meth:`Agent.submit`; each command gets a new
command id, which is the ``task_id`` of every event the task emits. In task mode a new command
preempts the running task: the task is cancelled (its in-flight model request and tools are
cancelled, and cancellation reaches each tool so it can stop hardware), the stop hooks halt the
robot at once, and the new task starts only after the old one has ended ``preempted``. A stop
("/stop", or a message that is only "stop" / "停" / "停止") does the same without starting a
model request.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loopact._compat import wait_within
from loopact.agent.confirm import AllowList, ConfirmationBroker
from loopact.agent.context import ContextManager
from loopact.agent.dispatch import RoundDispatcher, TaskState
from loopact.agent.options import AgentOptions
from loopact.agent.state import Conversation, HourlyBudget, InputSource
from loopact.agent.task import TaskEnv, TaskOutcome, TaskRun
from loopact.errors import (
    BoundReached,
    ModelError,
    ModelRefused,
    PromptTooLong,
    StopCause,
    StopReason,
    TaskFailed,
)
from loopact.events import EventBus, EventType
from loopact.i18n import t
from loopact.llm.base import Model, ToolSpec
from loopact.llm.messages import Audio, Image, Message, valid_text
from loopact.tools.base import Tool
from loopact.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

#: Providers whose histories convert into each other without loss (SPEC B4).
_CARRY_OVER = frozenset({"openai", "anthropic"})

#: Messages that are a stop request on any channel (SPEC A6).
STOP_WORDS = frozenset({"/stop", "stop", "停", "停止"})


def is_stop(text: str) -> bool:
    """True when ``text`` is only a stop word (case, spaces and final punctuation ignored)."""
    return text.strip().strip(".!。！").strip().lower() in STOP_WORDS


@dataclass
class _Command:
    id: str
    text: str
    images: tuple[Image, ...]
    source: str
    superseded: bool = False
    audio: tuple[Audio, ...] = ()


class Agent:
    """The agent runtime.

    Args:
        model: The model endpoint (any :class:`~loopact.llm.base.Model`).
        registry: The tools offered to the model: a registry, or the tools themselves (a new
            registry is made of them).
        options: Bounds, prompt, confirmation policy, hooks.
        bus: The event bus channels and the trace subscribe to (a new one if None).

    Attributes:
        conversation: The history, pending inputs, recent images and hourly budget
            (:class:`~loopact.agent.state.Conversation`).
    """

    def __init__(
        self,
        model: Model,
        registry: ToolRegistry | Iterable[Tool],
        options: AgentOptions | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.model = model
        self.registry = registry if isinstance(registry, ToolRegistry) else ToolRegistry(registry)
        self.options = options or AgentOptions()
        self.bus = bus or EventBus()
        self.bus.redactor.add(*model_secrets(model))
        opts = self.options
        self.conversation = Conversation(
            opts.system_prompt, self.bus, HourlyBudget(opts.hourly_rounds, opts.hourly_tokens)
        )
        self.broker = ConfirmationBroker(
            self.bus,
            auto_approve=opts.auto_approve,
            allow=AllowList(opts.allow, lambda name: self.registry.get(name)),
            interactive=opts.interactive,
            timeout_s=opts.confirm_timeout_s,
            lang=opts.lang,
            channels=opts.confirm_channels,
        )
        self._inbox: asyncio.Queue[_Command] = asyncio.Queue()
        self._queued: list[_Command] = []
        self._current: asyncio.Task[TaskOutcome] | None = None
        self._current_id: str | None = None
        self._current_run: TaskRun | None = None
        self._end_reason: str | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self._status_parts: dict[str, Callable[[], Any]] = {}
        self._closed = False
        self._context = self._context_for(model)

    # ---------------------------------------------------------------- state
    @property
    def history(self) -> list[Message]:
        """The conversation's messages, system message first."""
        return self.conversation.history

    def reset_history(self) -> None:
        """Start a new conversation: only the system message stays."""
        self.conversation.reset()

    def append(self, message: Message) -> None:
        """Append a message to the conversation."""
        self.conversation.append(message)

    def add_input_source(self, source: InputSource) -> None:
        """Register a source of pending input snapshots (SPEC C3).

        ``source()`` returns one user message with the sensor data that arrived since it was
        last asked (accumulate-mode inputs, see ``loopact.nodes.inputs.InputHub``), or None.
        It is asked at every round boundary; in continuous mode, call :meth:`wake` when it
        has new data so that an idle agent starts working on it (SPEC A7).
        """
        self.conversation.add_source(source)

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered in the next request (the live catalogue)."""
        return self.registry.specs()

    def new_dispatcher(self, state: TaskState) -> RoundDispatcher:
        """A dispatcher for one round of ``state``'s task."""
        return RoundDispatcher(
            registry=self.registry,
            state=state,
            bounds=self.options.bounds,
            broker=self.broker,
            bus=self.bus,
            workspace=self.options.workspace,
            lang=self.options.lang,
        )

    def last_images(self, call_id: str) -> list[Image]:
        """Images a recent tool call returned (empty when unknown or expired)."""
        return self.conversation.last_images(call_id)

    @property
    def current_run(self) -> TaskRun | None:
        """The running task's rounds, or None between tasks (``agent_call`` plans in it)."""
        return self._current_run

    def context_manager(self) -> ContextManager | None:
        """When the next request compresses the history (SPEC E1), or None to never.

        ``options.context`` bound to the current model's context size: by default the
        threshold is a safe fraction of that size (:mod:`loopact.agent.context`).
        """
        return self._context

    def learn_context_size(self, tokens: int) -> ContextManager | None:
        """The server refused a prompt as longer than the model's context window: use a
        window of ``tokens`` (at most the known one) from now on (SPEC E1).

        Args:
            tokens: The context window in tokens the server named, or the size of the
                refused prompt when it named none (the window is smaller).

        Returns:
            The new manager, or None when compression is off (``options.context`` is None).
        """
        ctx = self.options.context
        if ctx is None:
            return None
        known = self._context.context_tokens if self._context is not None else None
        size = max(1, tokens if known is None else min(known, tokens))
        self._context = ctx.for_model(size)
        return self._context

    def _context_for(self, model: Model) -> ContextManager | None:
        ctx = self.options.context
        if ctx is None:
            return None
        bound = ctx.for_model(model.capabilities.context_tokens)
        return bound if bound.threshold is not None else None

    def _task_env(self) -> TaskEnv:
        return TaskEnv(
            conversation=self.conversation,
            options=self.options,
            bus=self.bus,
            model=lambda: self.model,
            tool_specs=self.tool_specs,
            new_dispatcher=self.new_dispatcher,
            context=self.context_manager,
            learn_context=self.learn_context_size,
            action_text=self.action_text,
        )

    # ---------------------------------------------------------------- commands
    def submit(
        self,
        text: str,
        images: Iterable[Image] = (),
        source: str = "terminal",
        audio: Iterable[Audio] = (),
    ) -> str | None:
        """Put a user command into the inbox; returns its command id (None for a stop).

        In task mode the running task is preempted (SPEC A6). Call on the event loop thread.
        Bytes that were not UTF-8 (lone surrogates) become U+FFFD. ``text`` is what the
        command says (a spoken command's transcript); ``audio`` its spoken clips, for a model
        that hears them (SPEC B8; continuous mode injects the transcript only).
        """
        text = valid_text(text)
        if is_stop(text) and not images:
            self.stop(source)
            return None
        if self.options.mode == "continuous":
            return self.inject(text, source, images)
        cmd = _Command(uuid.uuid4().hex[:12], text, tuple(images), source, audio=tuple(audio))
        self._preempt(f"new command from {source}")
        self._queued.append(cmd)
        self._inbox.put_nowait(cmd)
        return cmd.id

    def inject(self, text: str, source: str, images: Iterable[Image] = ()) -> str:
        """Queue a message or accumulate-mode sensor event for the conversation (A7, C3).

        It goes into the conversation as part of one snapshot user message before the next
        model request of the running task; in continuous mode it also wakes the agent.
        Never preempts. Returns the input's id.
        """
        text = valid_text(text)
        return self.conversation.add_input(text, source, images, task_id=self._current_id).id

    def wake(self) -> None:
        """Tell a waiting continuous-mode agent that an input source has new data (A7, C3).

        Safe to call at any time on the event loop thread; an agent in task mode or one that
        is busy takes the data in at its next round boundary anyway.
        """
        self.conversation.notify()

    def stop(self, source: str = "terminal") -> None:
        """Stop the current task and the robot now, without asking the model (SPEC A6)."""
        self.bus.emit(EventType.STOP, self._current_id, source=source)
        self._preempt(f"stop from {source}", StopCause.STOPPED)

    def interrupt(self, reason: str) -> bool:
        """End the running task without the stop hooks: the robot is not stopped (issue 41:
        an operator took it over and drives it). In task mode the task ends ``preempted``
        with ``reason`` in its ``task_end``; in continuous mode the work goes on (its motion
        tools say what happened) and nothing is cancelled.

        Returns:
            True when a task was ended.
        """
        if self.options.mode == "continuous" or self._current is None or self._current.done():
            return False
        self._end_reason = reason
        self._current.cancel()
        return True

    def _preempt(self, reason: str, cause: StopCause = StopCause.PREEMPTED) -> None:
        """Cancel the running task and call the stop hooks with ``reason`` and its ``cause``
        (a :class:`~loopact.errors.StopReason`: the governor's ``stop_all`` ends the motions
        with that cause, SPEC A6, X3)."""
        for queued in self._queued:
            queued.superseded = True
        running = self._current is not None and not self._current.done()
        if running and self._current is not None:
            self._current.cancel()
        why = StopReason(reason, cause)
        stops = [asyncio.ensure_future(hook(why)) for hook in self.options.stop_hooks]
        if running and self.options.after_stop_hooks:
            stops.append(asyncio.ensure_future(self._after_stop(list(stops), why)))
        for fut in stops:
            self._background.add(fut)
            fut.add_done_callback(self._hook_done)

    async def _after_stop(self, stops: list[asyncio.Future[Any]], reason: str) -> None:
        """Run the after-stop hooks once the stop hooks are done (A6: re-centre the camera)."""
        if stops:
            await asyncio.wait(stops)
        for hook in self.options.after_stop_hooks:
            await hook(reason)

    def _hook_done(self, fut: asyncio.Future[Any]) -> None:
        self._background.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.error("stop hook failed: %r", fut.exception())

    def answer_confirmation(self, request_id: str, allow: bool, source: str = "terminal") -> bool:
        """Answer a ``confirm_request``; False when it is unknown or already answered (C5)."""
        return self.broker.answer(request_id, allow, source)

    def reset(self) -> None:
        """New conversation: stop what runs, clear the history, reset provider state."""
        self._preempt("reset", StopCause.STOPPED)
        self.conversation.reset()
        self.model.reset()

    def set_model(self, model: Model) -> bool:
        """Use another model from the next request on (SPEC B4: switch at run time).

        The conversation is carried over when both protocols can hold it (OpenAI <->
        Anthropic); otherwise a new conversation starts.

        Returns:
            True when the history was carried over, False when it was reset.
        """
        carried = self.model.provider in _CARRY_OVER and model.provider in _CARRY_OVER
        self.bus.redactor.add(*model_secrets(model))
        old, self.model = self.model, model
        self._context = self._context_for(model)
        fut = asyncio.ensure_future(old.aclose())
        self._background.add(fut)
        fut.add_done_callback(self._background.discard)
        if not carried:
            self.conversation.reset()
        self.bus.emit(
            EventType.PROVIDER_SWITCH,
            self._current_id,
            provider=model.provider,
            model=model.model,
            carried_over=carried,
        )
        return carried

    @property
    def action_text(self) -> bool:
        """Whether tools go to the model as action text (SPEC A5) rather than native calls.

        ``auto`` picks action text for endpoints with neither native tool calls nor
        constrained decoding (Dify apps, plain text models). An endpoint that can constrain
        its output (llama.cpp) gets the tools in the request and writes grammar-constrained
        calls instead, which measured better for small models (bench/HISTORY.md, local brain).
        """
        mode = self.options.tool_calling
        if mode != "auto":
            return mode == "text"
        caps = self.model.capabilities
        return not caps.native_tool_calls and not caps.constrained_decoding

    def add_status(self, name: str, report: Callable[[], Any]) -> None:
        """Add ``name: report()`` to :meth:`status` (``/status``, the web console): the state
        of a part of the run, e.g. the memory's sync with its remote (SPEC E2)."""
        self._status_parts[name] = report

    def status(self) -> dict[str, Any]:
        """What the agent is doing: busy, task_id, provider, model, n_messages, tools, backend,
        and what :meth:`add_status` added (a report that fails shows its error)."""
        busy = self._current is not None and not self._current.done()
        parts: dict[str, Any] = {}
        for name, report in self._status_parts.items():
            try:
                parts[name] = report()
            except Exception as exc:
                parts[name] = {"error": f"{type(exc).__name__}: {exc}"}
        return {
            **parts,
            "busy": busy,
            "task_id": self._current_id if busy else None,
            "provider": self.model.provider,
            "model": self.model.model,
            "n_messages": len(self.conversation.history),
            "tools": self.registry.names,
            "pending_confirmations": self.broker.pending,
            "backend": self.backend_status(),
        }

    def backend_status(self) -> dict[str, Any] | None:
        """The model server's own state when the model reports one (the local brain, issue 13)."""
        report = getattr(self.model, "backend_status", None)
        return report() if callable(report) else None

    @property
    def busy(self) -> bool:
        """True while a task runs."""
        return self._current is not None and not self._current.done()

    # ---------------------------------------------------------------- running
    async def run(self) -> None:
        """Serve the inbox until :meth:`close`: one task at a time, newest command wins.

        In continuous mode (SPEC A7): wait for inputs without spending tokens, then work on
        them (new inputs join the running work) until nothing is left to do.
        """
        if self.options.mode == "continuous":
            await self._run_continuous()
            return
        while not self._closed:
            cmd = await self._inbox.get()
            if cmd in self._queued:
                self._queued.remove(cmd)
            if self._current is not None and not self._current.done():
                await asyncio.wait({self._current})
            if cmd.superseded:
                self.bus.emit(EventType.TASK_START, cmd.id, text=cmd.text, source=cmd.source)
                self.bus.emit(EventType.TASK_END, cmd.id, status="preempted", rounds=0)
                continue
            self._current_id = cmd.id
            self._current = asyncio.ensure_future(self._execute(cmd))

    async def run_task(
        self, text: str, images: Iterable[Image] = (), source: str = "cli"
    ) -> TaskOutcome:
        """Run one instruction as one task and return how it ended (``--once``)."""
        cmd = _Command(uuid.uuid4().hex[:12], text, tuple(images), source)
        if self._current is not None and not self._current.done():
            self._preempt(f"new command from {source}")
            await asyncio.wait({self._current})
        self._current_id = cmd.id
        self._current = asyncio.ensure_future(self._execute(cmd))
        return await self._current

    async def wait_idle(self) -> None:
        """Wait until no task runs and the inbox is empty."""
        while self._queued or self.busy:
            if self._current is not None and not self._current.done():
                await asyncio.wait({self._current})
            else:
                await asyncio.sleep(0.01)

    async def _run_continuous(self) -> None:
        conv = self.conversation
        cmd: _Command | None = None
        while not self._closed:
            if cmd is None:
                await conv.arrived.wait()
                conv.arrived.clear()
                cmd = self._continuous_command()
                if cmd is None:
                    continue
            wait_s = conv.budget.wait_s()
            if wait_s > 0:
                self.bus.emit(EventType.BOUND, None, name="hourly_budget", limit=conv.budget.rounds)
                await asyncio.sleep(wait_s)
                continue
            self._current_id = cmd.id
            self._current = asyncio.ensure_future(self._execute(cmd, continuous=True))
            cmd = None
            await asyncio.wait({self._current})

    def _continuous_command(self) -> _Command | None:
        """The work an arrival starts: the oldest queued input, or the sensor snapshots that
        the input sources had (already in the history), or None when nothing is new."""
        conv = self.conversation
        first = conv.first_input
        if first is not None:
            return _Command(first.id, first.text, (), first.source)
        if conv.pull_sources(None):
            return _Command(uuid.uuid4().hex[:12], "sensor data", (), "inputs")
        return None

    async def _execute(self, cmd: _Command, continuous: bool = False) -> TaskOutcome:
        bus = self.bus
        bus.emit(EventType.TASK_START, cmd.id, text=cmd.text, source=cmd.source)
        run = TaskRun(self._task_env(), cmd.id, cmd.text, cmd.images, cmd.audio)
        self._current_run = run
        self._end_reason = None
        outcome = TaskOutcome(cmd.id, "failed")
        lang = self.options.lang
        mark = self.conversation.last_message()
        try:
            if continuous:
                # No wall clock per activation: the rolling-hour budget bounds it (A7).
                reply = await run.continuous_body()
                outcome = TaskOutcome(cmd.id, "completed", reply=reply)
            else:
                reply = await wait_within(run.body(), self.options.bounds.task_timeout_s)
                reply = reply or t("bound.no_answer", lang)
                outcome = TaskOutcome(cmd.id, "completed", reply=reply)
        except BoundReached as exc:
            outcome = TaskOutcome(cmd.id, "bounded", reply=exc.text)
        except asyncio.TimeoutError:
            limit = self.options.bounds.task_timeout_s
            bus.emit(EventType.BOUND, cmd.id, name="wall_clock", limit=limit)
            notice = t("bound.wall_clock", lang, limit=f"{limit:g}")
            outcome = TaskOutcome(cmd.id, "bounded", reply=run.bounded_text(notice))
        except asyncio.CancelledError:
            outcome = TaskOutcome(cmd.id, "preempted", error=self._end_reason)
        except TaskFailed as exc:
            bus.emit(EventType.ERROR, cmd.id, message=str(exc))
            outcome = TaskOutcome(cmd.id, "failed", error=str(exc))
        except ModelError as exc:
            if isinstance(exc, (ModelRefused, PromptTooLong)):
                # the refused turn, or one that can never fit, must not be sent again
                self.conversation.drop_after(mark)
            key = "model.not_sent" if isinstance(exc, PromptTooLong) else "model.failed"
            message = t(key, lang, error=str(exc))
            bus.emit(EventType.ERROR, cmd.id, message=message)
            outcome = TaskOutcome(cmd.id, "failed", error=message)
        except Exception as exc:  # a bug must not kill the long-running agent
            log.exception("task %s failed", cmd.id)
            message = f"internal error: {type(exc).__name__}: {exc}"
            bus.emit(EventType.ERROR, cmd.id, message=message)
            outcome = TaskOutcome(cmd.id, "failed", error=message)
        self._current_run = None
        outcome.rounds = run.rounds
        if outcome.reply and outcome.status in ("completed", "bounded"):
            bus.emit(EventType.REPLY, cmd.id, text=outcome.reply)
        await self._emit_robot_state(cmd.id)
        ended = {"reason": outcome.error} if outcome.status == "preempted" and outcome.error else {}
        bus.emit(EventType.TASK_END, cmd.id, status=outcome.status, rounds=outcome.rounds, **ended)
        return outcome

    async def _emit_robot_state(self, task_id: str) -> None:
        provider = self.options.state_provider
        if provider is None:
            return
        try:
            state = await wait_within(provider(), 2.0)
        except Exception as exc:
            log.warning("could not read the robot state: %r", exc)
            return
        self.bus.emit(EventType.ROBOT_STATE, task_id, **state)

    async def close(self) -> None:
        """Stop the running task, wait for it and for the stop hooks, close the model."""
        self._closed = True
        self._preempt("shutdown", StopCause.STOPPED)
        if self._current is not None and not self._current.done():
            await asyncio.wait({self._current}, timeout=10)
        if self._background:
            await asyncio.wait(self._background, timeout=5)
        await self.model.aclose()


def model_secrets(model: Model) -> tuple[str, ...]:
    """The values a model says must never be shown (its API key), for the event bus."""
    secrets = getattr(model, "secrets", ())
    return tuple(s for s in secrets if isinstance(s, str))
