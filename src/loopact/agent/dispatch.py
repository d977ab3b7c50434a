"""Running one round's tool calls: stream-early dispatch (X1) and loop guards (A3).

Calls are added in call order as the stream makes them ready (``ToolCallReady``) and start at
once, before the response has finished streaming. Ordering rules:

- a read-only call runs concurrently with earlier read-only calls of *other* tools; it waits
  for every earlier state-changing call (idempotent, write, motion) and for earlier calls of
  the same tool unless that tool is re-entrant;
- any other call waits for every earlier call of the round (motion and writes run in order);
- a write call additionally waits for the user's confirmation (C5); so does any call whose
  tool asks for it by its arguments (:meth:`~loopact.tools.base.Tool.needs_confirmation`,
  e.g. ``remember`` of a preference the user did not say, issue 21).

Results go back in call order regardless of finishing order. Guards (SPEC A3; issue 39 item 1):

- a read-only call identical to an earlier one in the task, with no state-changing call in
  between, is answered from the earlier result with "result unchanged, answer now" only when
  its tool declares its answer constant (:attr:`~loopact.tools.base.Tool.constant`, e.g. a
  skill's text). Every other read-only tool reads something that changes by itself — a clock,
  a sensor, a camera, a file, any node or MCP tool — and runs again: a cached reading would
  be stale. When the fresh result is the same as the earlier one it carries the same note
  and ``repeat_of``, which is what stops a model from asking again and again;
- a tool called more than its class's limit is refused and makes the round invalid. A step
  of a checked plan (SPEC A4) is not refused by that limit: the plan was written once and is
  bounded by its step limit, so a plan of twelve turns runs twelve turns instead of stopping
  half-way after the tenth; it still counts.

A call whose name is a declared tool's name mangled the way models mangle it (whitespace,
a ``functions.`` prefix, a template token glued on, :mod:`loopact.llm.toolnames`) runs that
tool under its clean name, in the events and the history; ``metadata.normalized.tool`` of its
result records what the model wrote (issue 22).

Arguments are checked against the user's own words (SPEC B7, :mod:`loopact.tools.units`,
:mod:`loopact.tools.directions`): a number written with another unit of the same kind is
converted ("50 centimeters" as ``distance_m: 50`` runs as 0.5), a sign that contradicts the
user's one direction word is flipped ("look right" as ``pan_deg: 45`` runs as -45), and a call
that puts a number the user wrote as one kind of quantity into an argument of another kind
("drive ahead 0.3 m" as
``drive(linear_mps=0.3, ...)``) is not run: its result (``error_kind: "units"``) names the
functions that take that kind, so that the model can choose again.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loopact.agent.confirm import ConfirmationBroker
from loopact.agent.grounding import align_target
from loopact.agent.options import Bounds
from loopact.errors import ToolError
from loopact.events import EventBus, EventType
from loopact.i18n import t
from loopact.llm.messages import Image, ToolCall
from loopact.llm.toolnames import resolve_tool_name
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult
from loopact.tools.directions import normalize_directions
from loopact.tools.names import align_names
from loopact.tools.registry import ToolRegistry, ValidCall
from loopact.tools.report import tool_result_event
from loopact.tools.units import normalize_units, unit_conflicts, unit_of

log = logging.getLogger(__name__)


@dataclass
class TaskState:
    """What the guards remember across the rounds of one task (reset per task, SPEC A3).

    Attributes:
        task_id: The task's command id.
        call_counts: Calls per tool name so far.
        state_version: Bumped by every dispatched state-changing call (motion, write).
        readonly_results: ``(name, arguments_json)`` -> (state_version, call id, result future).
        tokens: Tokens used by the task's model requests so far.
        invalid_streak: Invalid rounds in a row.
        instruction: The user's instruction text, for unit-aware argument normalisation
            (:mod:`loopact.tools.units`; empty: none).
    """

    task_id: str
    call_counts: Counter[str] = field(default_factory=Counter)
    state_version: int = 0
    readonly_results: dict[tuple[str, str], tuple[int, str, asyncio.Future[ToolResult]]] = field(
        default_factory=dict
    )
    tokens: int = 0
    invalid_streak: int = 0
    instruction: str = ""


@dataclass
class _Entry:
    call: ToolCall
    tool: Tool | None
    task: asyncio.Future[ToolResult]
    executes: bool  # True when the tool itself runs (not refused, not answered from cache)


class RoundDispatcher:
    """Starts a round's tool calls as they become ready and collects results in call order.

    Args:
        registry: Where tools are looked up and executed.
        state: The task's guard state.
        bounds: Limits (per-tool timeout, per-class call counts).
        broker: Confirmation of write tools.
        bus: Event bus for ``tool_call`` / ``tool_result`` / ``tool_progress``.
        workspace: Passed to tools in their context.
        lang: Language of guard texts.
    """

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        state: TaskState,
        bounds: Bounds,
        broker: ConfirmationBroker,
        bus: EventBus,
        workspace: Any,
        lang: str = "en",
    ) -> None:
        self.registry = registry
        self.state = state
        self.bounds = bounds
        self.broker = broker
        self.bus = bus
        self.workspace = workspace
        self.lang = lang
        self.entries: list[_Entry] = []
        self.invalid = False
        self._ids: set[str] = set()
        self._normalized: dict[str, dict[str, Any]] = {}

    @property
    def started_any(self) -> bool:
        """True once any call has actually been handed to its tool (no replay after this)."""
        return any(e.executes for e in self.entries)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls added so far, in call order."""
        return [e.call for e in self.entries]

    def has(self, call_id: str) -> bool:
        """Whether a call with this id was already added."""
        return call_id in self._ids

    def add(self, call: ToolCall, *, planned: bool = False) -> None:
        """Accept a ready call: check it, apply the guards, start it (subject to ordering).

        Args:
            call: The call, as the model (or a plan step) wrote it.
            planned: A step of a checked plan (SPEC A4): the per-tool call limit (A3) does
                not refuse it; it still counts towards that limit.
        """
        self._ids.add(call.id)
        task_id = self.state.task_id
        call = self._resolve_name(call)
        tool = self.registry.get(call.name)
        self.bus.emit(
            EventType.TOOL_CALL, task_id, id=call.id, name=call.name, arguments=call.arguments
        )
        call = self._normalise_arguments(call, tool)
        try:
            valid = self.registry.check(call)  # the one validation of this call's arguments
        except ToolError as exc:
            self._add_done(call, tool, self.registry.refusal(exc))
            return
        refusal = self._unit_conflict(call)
        if refusal is not None:
            self._add_done(call, tool, refusal)
            return
        call, tool = valid.call, valid.tool

        self.state.call_counts[call.name] += 1
        count = self.state.call_counts[call.name]
        limit = self.bounds.call_limit(tool.safety)
        if count > limit and not planned:
            self.invalid = True
            msg = t("guard.too_many", self.lang, name=call.name, count=count - 1, limit=limit)
            self._add_done(call, tool, ToolResult.failure(msg))
            return

        same: tuple[str, asyncio.Future[ToolResult]] | None = None
        if tool.safety is SafetyClass.READ_ONLY:
            key = (call.name, call.arguments_json())
            earlier = self.state.readonly_results.get(key)
            if earlier is not None and earlier[0] == self.state.state_version:
                if tool.constant:
                    self._add_task(call, tool, self._repeat(call, earlier[1], earlier[2]), False)
                    return
                same = (earlier[1], earlier[2])  # runs again; noted if its answer is the same
        deps = self._dependencies(tool)
        task = self._add_task(call, tool, self._run(valid, deps, same), True)
        if tool.safety is SafetyClass.READ_ONLY:
            key = (call.name, call.arguments_json())
            self.state.readonly_results[key] = (self.state.state_version, call.id, task)
        elif tool.safety.changes_state:
            self.state.state_version += 1

    def _resolve_name(self, call: ToolCall) -> ToolCall:
        """The call under the declared name its mangled name means (issue 22, SPEC B7).

        ``" file_write\n"`` or ``functions.file_write`` runs ``file_write``; the history and
        the events carry the clean name and the result's ``metadata.normalized.tool`` says
        what the model wrote (:func:`loopact.llm.toolnames.resolve_tool_name`). A name that
        resolves to nothing is left as it is (an "unknown tool" result).
        """
        if call.name in self.registry:
            return call
        resolved = resolve_tool_name(call.name, self.registry.names)
        if resolved is None:
            return call
        log.info("tool name %r resolved to %s", call.name, resolved)
        self._normalized.setdefault(call.id, {})["tool"] = {"from": call.name, "to": resolved}
        return dataclasses.replace(call, name=resolved)

    def _normalise_arguments(self, call: ToolCall, tool: Tool | None) -> ToolCall:
        """Convert numbers the model copied from the instruction without their unit, and flip
        signs that contradict the user's direction word (B7).

        "move forward 50 centimeters" answered with ``distance_m: 50`` runs as 0.5, "look
        right 45 degrees" answered with ``pan_deg: 45`` runs as -45 (the tool declares pan
        left positive); the ``tool_call`` event keeps the model's arguments and the result's
        metadata says what was changed (``normalized``). See
        :func:`loopact.tools.units.normalize_units` and
        :func:`loopact.tools.directions.normalize_directions`.
        """
        if tool is None or call.error or not self.state.instruction:
            return call
        if not isinstance(call.arguments, dict):
            return call
        arguments, normalized = normalize_units(call.arguments, self.state.instruction)
        arguments, flipped = normalize_directions(
            arguments, tool.directions, self.state.instruction
        )
        normalized.update(flipped)
        arguments, aligned = align_target(arguments, self.state.instruction)  # issue 45
        normalized.update(aligned)
        arguments, named = align_names(arguments, tool.names, self.state.instruction)
        normalized.update(named)
        if not normalized:
            return call
        self._normalized.setdefault(call.id, {}).update(normalized)
        log.info("argument normalisation of %s: %s", call.name, normalized)
        return ToolCall(call.id, call.name, arguments, call.raw_arguments, call.error)

    def _unit_conflict(self, call: ToolCall) -> ToolResult | None:
        """A refusal when the call gives a quantity the user said to an argument of another kind.

        See :func:`loopact.tools.units.unit_conflicts`. The error names the tools whose
        arguments take the user's kind of quantity, e.g. ``"0.3 m" is a length, but
        drive.linear_mps is a speed. Call a function that takes a length: move_forward
        (distance_m), move_backward(distance_m).``

        Returns:
            A failed result with ``metadata.error_kind == "units"``, or None (no conflict).
        """
        if not self.state.instruction or not isinstance(call.arguments, dict):
            return None
        conflicts = unit_conflicts(call.arguments, self.state.instruction)
        if not conflicts:
            return None
        c = conflicts[0]
        takers = [
            f"{spec.name}({arg})"
            for spec in self.registry.specs()
            for arg in (spec.parameters.get("properties") or {})
            if (declared := unit_of(arg)) is not None and declared[0] == c.said_kind
        ]
        kind = t("unit." + c.kind, self.lang)
        said_kind = t("unit." + c.said_kind, self.lang)
        key = "guard.units" if takers else "guard.units_none"
        msg = t(
            key,
            self.lang,
            said=c.said,
            said_kind=said_kind,
            name=call.name,
            argument=c.argument,
            kind=kind,
            takers=", ".join(takers),
        )
        log.info("refused %s: %s", call.name, msg)
        return ToolResult.failure(
            msg,
            error_kind="units",
            conflicts=[
                {"argument": x.argument, "value": x.value, "said": x.said} for x in conflicts
            ],
        )

    def add_refused(self, call: ToolCall, error: str) -> None:
        """Add a call that must not run (e.g. truncated by the length limit) with its error."""
        self._ids.add(call.id)
        self.bus.emit(
            EventType.TOOL_CALL,
            self.state.task_id,
            id=call.id,
            name=call.name,
            arguments=call.arguments,
        )
        self._add_done(call, self.registry.get(call.name), ToolResult.failure(error))

    def _dependencies(self, tool: Tool) -> list[asyncio.Future[ToolResult]]:
        deps = []
        for e in self.entries:
            if (
                tool.safety is not SafetyClass.READ_ONLY
                or e.tool is not None
                and (
                    e.tool.safety is not SafetyClass.READ_ONLY
                    or (e.tool.name == tool.name and not tool.reentrant)
                )
            ):
                deps.append(e.task)
        return deps

    def _add_task(
        self, call: ToolCall, tool: Tool | None, coro: Any, executes: bool
    ) -> asyncio.Task[ToolResult]:
        task: asyncio.Task[ToolResult] = asyncio.ensure_future(coro)
        self.entries.append(_Entry(call, tool, task, executes))
        return task

    def _add_done(self, call: ToolCall, tool: Tool | None, result: ToolResult) -> None:
        result = self._annotate(call, result)
        self._emit_result(call, result)
        fut: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        fut.set_result(result)
        self.entries.append(_Entry(call, tool, fut, False))

    async def _repeat(
        self, call: ToolCall, earlier_id: str, earlier: asyncio.Future[ToolResult]
    ) -> ToolResult:
        await asyncio.wait({earlier})
        prev = earlier.result() if not earlier.cancelled() else ToolResult.failure("cancelled")
        note = t("guard.repeat", self.lang)
        result = ToolResult(
            ok=prev.ok,
            data=prev.data,
            metadata={**prev.metadata, "repeat_of": earlier_id, "note": note},
            error=prev.error,
            outcome=prev.outcome,
        )
        self._emit_result(call, result)
        return result

    async def _run(
        self,
        valid: ValidCall,
        deps: list[asyncio.Future[ToolResult]],
        same: tuple[str, asyncio.Future[ToolResult]] | None = None,
    ) -> ToolResult:
        """Run one call after ``deps``; ``same`` is an identical earlier read of a tool that
        is not constant (SPEC A3): the result is noted as unchanged when it equals that one's."""
        call, tool = valid.call, valid.tool
        if deps:
            await asyncio.wait(deps)
        if tool.needs_confirmation(call.arguments, self.state.instruction):
            decision = await self.broker.request(self.state.task_id, call, tool.untrusted_source)
            if not decision.allowed:
                result = ToolResult.failure(decision.reason)
                self._emit_result(call, result)
                return result

        def progress(text: str) -> None:
            self.bus.emit(
                EventType.TOOL_PROGRESS, self.state.task_id, id=call.id, name=call.name, text=text
            )

        shown = 0

        def show_image(image: Image, caption: str) -> None:
            nonlocal shown
            self.bus.emit(
                EventType.TOOL_IMAGE,
                self.state.task_id,
                id=call.id,
                name=call.name,
                n=shown,
                caption=caption,
                **image.summary(),
                data_b64=base64.b64encode(image.data).decode("ascii"),
            )
            shown += 1

        ctx = ToolContext(
            task_id=self.state.task_id,
            call_id=call.id,
            workspace=self.workspace,
            progress=progress,
            show_image=show_image,
            executor=self.registry.blocking,
        )
        result = await self.registry.run(valid, ctx, self.bounds.tool_timeout_s)
        if same is not None:
            result = self._note_unchanged(result, *same)
        result = self._annotate(call, result)
        self._emit_result(call, result)
        return result

    def _note_unchanged(
        self, result: ToolResult, earlier_id: str, earlier: asyncio.Future[ToolResult]
    ) -> ToolResult:
        """``result`` with the repeat note when it reads the same as the earlier identical
        call (same outcome, data, error and images; metadata such as time stamps may differ)."""
        if not earlier.done() or earlier.cancelled() or earlier.exception() is not None:
            return result
        prev = earlier.result()
        if (prev.ok, prev.data, prev.error) != (result.ok, result.data, result.error) or [
            i.data for i in prev.images
        ] != [i.data for i in result.images]:
            return result
        note = t("guard.repeat", self.lang)
        return dataclasses.replace(
            result, metadata={**result.metadata, "repeat_of": earlier_id, "note": note}
        )

    def _annotate(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result with ``metadata.normalized`` when the call's units were converted."""
        normalized = self._normalized.get(call.id)
        if not normalized:
            return result
        return dataclasses.replace(result, metadata={**result.metadata, "normalized": normalized})

    def _emit_result(self, call: ToolCall, result: ToolResult) -> None:
        fields = tool_result_event(call.id, call.name, result, self.lang)
        self.bus.emit(EventType.TOOL_RESULT, self.state.task_id, **fields)

    async def gather(self) -> list[tuple[ToolCall, ToolResult]]:
        """Wait for every call; results in call order."""
        out = []
        for e in self.entries:
            out.append((e.call, await e.task))
        return out

    async def cancel(self) -> list[tuple[ToolCall, ToolResult]]:
        """Cancel unfinished calls, wait until their tools have stopped, return all results.

        Unfinished calls get a "cancelled" result so the history keeps one result per call.
        """
        for e in self.entries:
            if not e.task.done():
                e.task.cancel()
        if self.entries:
            await asyncio.wait([e.task for e in self.entries])
        out = []
        for e in self.entries:
            if e.task.cancelled() or e.task.exception() is not None:
                result = ToolResult.failure(t("tool.cancelled", self.lang), error_kind="cancelled")
                self._emit_result(e.call, result)
                out.append((e.call, result))
            else:
                out.append((e.call, e.task.result()))
        return out
