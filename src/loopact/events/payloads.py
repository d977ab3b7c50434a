"""The fields of each event type: one typed definition per type (SPEC A8, H3; issue 38).

Each :class:`~loopact.events.kinds.EventType` has one ``TypedDict`` here naming its fields and
their kinds, as ``docs/trace.md`` documents them (a contract: the names never change; new
fields may be added). A ``TypedDict`` is a plain ``dict`` at run time, so an event's
:attr:`~loopact.events.event.Event.data` and its trace line are exactly what they were.

- Building: :meth:`EventBus.emit <loopact.events.bus.EventBus.emit>` is typed per event type
  with these definitions (``bus.emit(EventType.TOOL_CALL, task_id, id=..., name=...,
  arguments=...)`` is checked by mypy: a missing, misnamed or mistyped field is an error).
- Reading: :meth:`Event.payload <loopact.events.event.Event.payload>` gives an event's fields
  as its definition (``ev.payload(ToolResultPayload)["ok"]`` is a ``bool`` to mypy).

:data:`PAYLOADS` maps every type to its definition (``tests/test_events.py`` checks it against
``docs/trace.md`` and against the events a run emits). A field marked ``NotRequired`` is only
present in some events of its type (``step_end.skipped``, ``model_request.messages`` with
``--trace-full``).

The events of the services beside the tasks (the local brain, MCP, MQTT, nodes, memory sync,
voice) have theirs in :mod:`loopact.events.services`, exported here too. This module is
evaluated without postponed annotations, so that ``__required_keys__`` and
``__optional_keys__`` of each definition are right at run time (the tests read them).
"""

from typing import Any

from typing_extensions import NotRequired, TypedDict

from loopact.events.kinds import EventType
from loopact.events.services import (
    LocalBrainPayload,
    LocalBrainPromptPayload,
    McpServerPayload,
    MemorySyncPayload,
    MqttLinkPayload,
    NodeAddedPayload,
    NodeConflictPayload,
    NodeErrorPayload,
    NodeRemovedPayload,
    NodeRestartedPayload,
    SpeechInPayload,
    SpeechOutPayload,
    TranscriptPayload,
)

__all__ = [
    "BoundPayload",
    "CallSummary",
    "ClauseEndPayload",
    "ClauseStartPayload",
    "ConfirmRequestPayload",
    "ConfirmResponsePayload",
    "ContextCompressedPayload",
    "DeltaPayload",
    "ErrorPayload",
    "GovernorPayload",
    "ImageSummary",
    "InputPayload",
    "LocalBrainPayload",
    "LocalBrainPromptPayload",
    "McpServerPayload",
    "MemorySyncPayload",
    "MessagePayload",
    "ModelRequestPayload",
    "ModelResponsePayload",
    "ModelRetryPayload",
    "MqttLinkPayload",
    "NodeAddedPayload",
    "NodeConflictPayload",
    "NodeErrorPayload",
    "NodeRemovedPayload",
    "NodeRestartedPayload",
    "PAYLOADS",
    "PlanPayload",
    "ProviderSwitchPayload",
    "RobotStatePayload",
    "SpeechInPayload",
    "SpeechOutPayload",
    "StepEndPayload",
    "StepStartPayload",
    "StepsPayload",
    "StopPayload",
    "TaskEndPayload",
    "TaskStartPayload",
    "TextPayload",
    "ToolCallPayload",
    "ToolImagePayload",
    "ToolProgressPayload",
    "ToolResultPayload",
    "TraceStartPayload",
    "TranscriptPayload",
    "UsagePayload",
]


class TraceStartPayload(TypedDict):
    """``trace_start``: the header line of a trace file (written by the trace, not emitted)."""

    schema: int
    loopact: NotRequired[str]
    provider: NotRequired[str]
    model: NotRequired[str]
    robot: NotRequired[str]
    config: NotRequired[str | None]


class TaskStartPayload(TypedDict):
    """``task_start``: a command became a task (``source``: terminal, web, cli, ros2, ...)."""

    text: str
    source: str


class ModelRequestPayload(TypedDict):
    """``model_request``: before each model request; ``messages`` only with ``--trace-full``."""

    round: int
    n_messages: int
    tools: list[str]
    messages: NotRequired[list[dict[str, Any]]]


class CallSummary(TypedDict):
    """One tool call of a ``model_response``."""

    id: str
    name: str
    arguments: dict[str, Any]


class UsagePayload(TypedDict):
    """Token usage of one response."""

    input_tokens: int
    output_tokens: int


class ModelResponsePayload(TypedDict):
    """``model_response``: after each response (``finish_reason`` ``cut`` after a broken
    stream whose calls had started)."""

    round: int
    text: str
    reasoning: str
    tool_calls: list[CallSummary]
    finish_reason: str
    usage: UsagePayload


class ModelRetryPayload(TypedDict):
    """``model_retry``: a retryable model error; retried after ``delay_s`` seconds."""

    attempt: int
    error: str
    delay_s: float


class DeltaPayload(TypedDict):
    """``text_delta`` / ``reasoning_delta``: streamed text (live only, never in traces)."""

    text: str


class ToolCallPayload(TypedDict):
    """``tool_call``: a call was accepted. ``arguments`` as validated (over MCP: as the
    client sent them, which may not be an object when the call is refused)."""

    id: str
    name: str
    arguments: Any


class ToolProgressPayload(TypedDict):
    """``tool_progress``: a long tool reports progress."""

    id: str
    name: str
    text: str


class ImageSummary(TypedDict):
    """An image as traces show it: its hash and size, never its bytes."""

    sha256: str
    bytes: int
    media_type: str
    width_px: int
    height_px: int


class ToolImagePayload(TypedDict):
    """``tool_image``: a tool shows people an image it used (SPEC F6); ``data_b64`` is the
    JPEG itself, ``n`` counts from 0 per call."""

    id: str
    name: str
    n: int
    caption: str
    sha256: str
    bytes: int
    media_type: str
    width_px: int
    height_px: int
    data_b64: str


class ToolResultPayload(TypedDict):
    """``tool_result``: a call finished (every call gets exactly one); built by
    :func:`loopact.tools.payload.tool_result_event`."""

    id: str
    name: str
    ok: bool
    data: Any
    metadata: dict[str, Any]
    error: str | None
    n_images: int
    images: list[ImageSummary]
    outcome: dict[str, Any] | None
    outcome_text: str | None


class ConfirmRequestPayload(TypedDict):
    """``confirm_request``: a write tool waits for a person; ``shown`` is the arguments as
    the person sees them."""

    id: str
    name: str
    arguments: dict[str, Any]
    shown: str
    call_id: str
    timeout_s: float
    channels: NotRequired[list[str] | None]


class ConfirmResponsePayload(TypedDict):
    """``confirm_response``: the answer; ``by`` is the channel or ``timeout``."""

    id: str
    allowed: bool
    by: str


class ConfirmRefusedPayload(TypedDict):
    """``confirm_refused``: an answer that did not count (issue 41): ``reason`` ``answered``
    (another channel, ``answered_by``, was first), ``unknown`` (no such request) or
    ``channel`` (``by`` may not answer: ``confirm.channels``)."""

    id: str
    by: str
    reason: str
    answered_by: NotRequired[str]


class BoundPayload(TypedDict):
    """``bound``: a bound tripped (``max_rounds``, ``tokens``, ``output_tokens``,
    ``wall_clock``, ``invalid_rounds``, ``hourly_budget``)."""

    name: str
    limit: float


class TextPayload(TypedDict):
    """``reply`` (the task's answer) and ``input_snapshot`` (sensor data went in)."""

    text: str


class MessagePayload(TypedDict):
    """``message``: continuous mode, the agent spoke through ``send_message``."""

    text: str
    source: str


class InputPayload(TypedDict):
    """``input``: an input waiting to be injected."""

    id: str
    source: str
    text: str


class ContextCompressedPayload(TypedDict):
    """``context_compressed``: the history passed the context limit (``method``: ``summary``,
    ``trim``, ``kept``; ``reason``: ``threshold`` or ``overflow``)."""

    method: str
    before_tokens: int
    after_tokens: int
    limit: int
    reason: str


class ProviderSwitchPayload(TypedDict):
    """``provider_switch``: ``/provider`` switched the model."""

    provider: str
    model: str
    carried_over: bool


class PlanPayload(TypedDict):
    """``plan``: plan mode, the validated plan."""

    steps: list[dict[str, Any]]


class StepStartPayload(TypedDict):
    """``step_start``: plan mode, step ``n`` of ``of`` calls ``tool``."""

    n: int
    of: int
    tool: str


class StepEndPayload(TypedDict):
    """``step_end``: every ``step_start`` gets one (``error`` ``cancelled`` when the task was
    preempted or timed out during the step)."""

    n: int
    ok: bool
    error: NotRequired[str | None]
    skipped: NotRequired[bool]


class StopPayload(TypedDict):
    """``stop``: a stop arrived (``/stop``, "stop", the web button)."""

    source: str


class ErrorPayload(TypedDict):
    """``error``: something failed; the agent carries on."""

    message: str


class RobotStatePayload(TypedDict):
    """``robot_state``: where the robot is, metres and radians, in ``frame``."""

    x_m: float
    y_m: float
    yaw_rad: float
    frame: str


class GovernorPayload(TypedDict):
    """``governor``: the safety governor changed what a motion does (issue 44): ``decision``
    (``halt``, ``clamp``, ``refuse``, ``stop``, ``emergency_stop``, ``estop_reset``), ``reason``
    (``obstacle``, ``geofence``, ..., or the clamped field), ``motion`` (the tool holding the
    base, or None)."""

    decision: str
    reason: str
    motion: str | None
    detail: str


class StepsPayload(TypedDict):
    """``steps``: a sequencing instruction was split into clauses, one task each."""

    clauses: list[str]


class ClauseStartPayload(TypedDict):
    """``clause_start``: clause ``n`` of ``of`` of a split instruction begins."""

    n: int
    of: int
    text: str


class ClauseEndPayload(TypedDict):
    """``clause_end``: a clause ended; after a failed one the rest are not run."""

    n: int
    ok: bool
    error: str | None


class TaskEndPayload(TypedDict):
    """``task_end``: the task ended (``completed``, ``bounded``, ``preempted``, ``failed``)."""

    status: str
    rounds: int
    reason: NotRequired[str]


PAYLOADS: dict[str, type[Any]] = {
    EventType.TRACE_START: TraceStartPayload,
    EventType.TASK_START: TaskStartPayload,
    EventType.MODEL_REQUEST: ModelRequestPayload,
    EventType.MODEL_RESPONSE: ModelResponsePayload,
    EventType.MODEL_RETRY: ModelRetryPayload,
    EventType.TEXT_DELTA: DeltaPayload,
    EventType.REASONING_DELTA: DeltaPayload,
    EventType.TOOL_CALL: ToolCallPayload,
    EventType.TOOL_PROGRESS: ToolProgressPayload,
    EventType.TOOL_IMAGE: ToolImagePayload,
    EventType.TOOL_RESULT: ToolResultPayload,
    EventType.CONFIRM_REQUEST: ConfirmRequestPayload,
    EventType.CONFIRM_RESPONSE: ConfirmResponsePayload,
    EventType.CONFIRM_REFUSED: ConfirmRefusedPayload,
    EventType.BOUND: BoundPayload,
    EventType.REPLY: TextPayload,
    EventType.MESSAGE: MessagePayload,
    EventType.INPUT: InputPayload,
    EventType.INPUT_SNAPSHOT: TextPayload,
    EventType.CONTEXT_COMPRESSED: ContextCompressedPayload,
    EventType.PROVIDER_SWITCH: ProviderSwitchPayload,
    EventType.PLAN: PlanPayload,
    EventType.STEP_START: StepStartPayload,
    EventType.STEP_END: StepEndPayload,
    EventType.STOP: StopPayload,
    EventType.ERROR: ErrorPayload,
    EventType.ROBOT_STATE: RobotStatePayload,
    EventType.GOVERNOR: GovernorPayload,
    EventType.STEPS: StepsPayload,
    EventType.CLAUSE_START: ClauseStartPayload,
    EventType.CLAUSE_END: ClauseEndPayload,
    EventType.LOCAL_BRAIN: LocalBrainPayload,
    EventType.LOCAL_BRAIN_PROMPT: LocalBrainPromptPayload,
    EventType.MCP_SERVER: McpServerPayload,
    EventType.MQTT_LINK: MqttLinkPayload,
    EventType.NODE_ADDED: NodeAddedPayload,
    EventType.NODE_REMOVED: NodeRemovedPayload,
    EventType.NODE_ERROR: NodeErrorPayload,
    EventType.NODE_RESTARTED: NodeRestartedPayload,
    EventType.NODE_CONFLICT: NodeConflictPayload,
    EventType.MEMORY_SYNC: MemorySyncPayload,
    EventType.SPEECH_IN: SpeechInPayload,
    EventType.TRANSCRIPT: TranscriptPayload,
    EventType.SPEECH_OUT: SpeechOutPayload,
    EventType.TASK_END: TaskEndPayload,
}
"""Every event type's definition (one class may serve two types with the same fields:
``text_delta`` and ``reasoning_delta``; ``reply`` and ``input_snapshot``)."""
