"""The typed front door of the event bus: ``emit`` checked per event type (issue 38).

One overload of :meth:`TypedEmit.emit` per :class:`~loopact.events.kinds.EventType` ties the
type to its fields (:mod:`loopact.events.payloads`), so mypy checks every
``bus.emit(EventType.X, task_id, **fields)``: a field that is missing, misnamed or of the wrong
kind is an error where the event is built. At run time there is one ``emit``
(:class:`~loopact.events.bus.EventBus`); this class only declares its signatures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload
from typing import Literal as L

from loopact.events.kinds import EventType as E

if TYPE_CHECKING:
    from typing_extensions import Unpack as U

    from loopact.events import payloads as p
    from loopact.events.event import Event


TaskId = str | None


class TypedEmit:
    """The signatures of ``emit``, one per event type (see the module docstring)."""

    @overload
    def emit(
        self, type: L[E.TASK_START], task_id: TaskId = None, **data: U[p.TaskStartPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MODEL_REQUEST], task_id: TaskId = None, **data: U[p.ModelRequestPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MODEL_RESPONSE], task_id: TaskId = None, **data: U[p.ModelResponsePayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MODEL_RETRY], task_id: TaskId = None, **data: U[p.ModelRetryPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TEXT_DELTA], task_id: TaskId = None, **data: U[p.DeltaPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.REASONING_DELTA], task_id: TaskId = None, **data: U[p.DeltaPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TOOL_CALL], task_id: TaskId = None, **data: U[p.ToolCallPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TOOL_PROGRESS], task_id: TaskId = None, **data: U[p.ToolProgressPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TOOL_IMAGE], task_id: TaskId = None, **data: U[p.ToolImagePayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TOOL_RESULT], task_id: TaskId = None, **data: U[p.ToolResultPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.CONFIRM_REQUEST], task_id: TaskId = None, **data: U[p.ConfirmRequestPayload]
    ) -> Event: ...
    @overload
    def emit(
        self,
        type: L[E.CONFIRM_RESPONSE],
        task_id: TaskId = None,
        **data: U[p.ConfirmResponsePayload],
    ) -> Event: ...
    @overload
    def emit(
        self,
        type: L[E.CONFIRM_REFUSED],
        task_id: TaskId = None,
        **data: U[p.ConfirmRefusedPayload],
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.BOUND], task_id: TaskId = None, **data: U[p.BoundPayload]
    ) -> Event: ...
    @overload
    def emit(self, type: L[E.REPLY], task_id: TaskId = None, **data: U[p.TextPayload]) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MESSAGE], task_id: TaskId = None, **data: U[p.MessagePayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.INPUT], task_id: TaskId = None, **data: U[p.InputPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.INPUT_SNAPSHOT], task_id: TaskId = None, **data: U[p.TextPayload]
    ) -> Event: ...
    @overload
    def emit(
        self,
        type: L[E.CONTEXT_COMPRESSED],
        task_id: TaskId = None,
        **data: U[p.ContextCompressedPayload],
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.PROVIDER_SWITCH], task_id: TaskId = None, **data: U[p.ProviderSwitchPayload]
    ) -> Event: ...
    @overload
    def emit(self, type: L[E.PLAN], task_id: TaskId = None, **data: U[p.PlanPayload]) -> Event: ...
    @overload
    def emit(
        self, type: L[E.STEP_START], task_id: TaskId = None, **data: U[p.StepStartPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.STEP_END], task_id: TaskId = None, **data: U[p.StepEndPayload]
    ) -> Event: ...
    @overload
    def emit(self, type: L[E.STOP], task_id: TaskId = None, **data: U[p.StopPayload]) -> Event: ...
    @overload
    def emit(
        self, type: L[E.ERROR], task_id: TaskId = None, **data: U[p.ErrorPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.ROBOT_STATE], task_id: TaskId = None, **data: U[p.RobotStatePayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.GOVERNOR], task_id: TaskId = None, **data: U[p.GovernorPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.STEPS], task_id: TaskId = None, **data: U[p.StepsPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.CLAUSE_START], task_id: TaskId = None, **data: U[p.ClauseStartPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.CLAUSE_END], task_id: TaskId = None, **data: U[p.ClauseEndPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.LOCAL_BRAIN], task_id: TaskId = None, **data: U[p.LocalBrainPayload]
    ) -> Event: ...
    @overload
    def emit(
        self,
        type: L[E.LOCAL_BRAIN_PROMPT],
        task_id: TaskId = None,
        **data: U[p.LocalBrainPromptPayload],
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MCP_SERVER], task_id: TaskId = None, **data: U[p.McpServerPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MQTT_LINK], task_id: TaskId = None, **data: U[p.MqttLinkPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.NODE_ADDED], task_id: TaskId = None, **data: U[p.NodeAddedPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.NODE_REMOVED], task_id: TaskId = None, **data: U[p.NodeRemovedPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.NODE_ERROR], task_id: TaskId = None, **data: U[p.NodeErrorPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.NODE_RESTARTED], task_id: TaskId = None, **data: U[p.NodeRestartedPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.NODE_CONFLICT], task_id: TaskId = None, **data: U[p.NodeConflictPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.MEMORY_SYNC], task_id: TaskId = None, **data: U[p.MemorySyncPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.SPEECH_IN], task_id: TaskId = None, **data: U[p.SpeechInPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TRANSCRIPT], task_id: TaskId = None, **data: U[p.TranscriptPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.SPEECH_OUT], task_id: TaskId = None, **data: U[p.SpeechOutPayload]
    ) -> Event: ...
    @overload
    def emit(
        self, type: L[E.TASK_END], task_id: TaskId = None, **data: U[p.TaskEndPayload]
    ) -> Event: ...

    def emit(self, type: E, task_id: str | None = None, **data: Any) -> Event:
        """Build an event of ``type`` with ``data`` as its fields and hand it to every
        subscriber; returns the event (masked). ``task_id``: the task it belongs to, or None."""
        return self._emit_event(type, task_id, data)

    def _emit_event(self, type: E, task_id: str | None, data: dict[str, Any]) -> Event:
        raise NotImplementedError
