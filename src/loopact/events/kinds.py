"""The event types: one enumeration of every ``type`` an event may have (SPEC A8, H3).

The names are a contract (``docs/trace.md``, its table of event types): they are the ``type``
of trace lines, of what the web console and the ROS 2 text channel forward, and of what the
eval reads back. :class:`EventType` is a ``str``-valued enumeration, so an event type compares
equal to its name (``EventType.TOOL_CALL == "tool_call"``), hashes like it, prints as it and is
written to JSON as it: a trace line is the same as when the types were bare strings.
"""

from __future__ import annotations

from enum import Enum


class EventType(str, Enum):
    """Every event type (``docs/trace.md``); ``str(member)`` is its name in traces."""

    TRACE_START = "trace_start"
    TASK_START = "task_start"
    MODEL_REQUEST = "model_request"
    MODEL_RESPONSE = "model_response"
    MODEL_RETRY = "model_retry"
    TEXT_DELTA = "text_delta"
    REASONING_DELTA = "reasoning_delta"
    TOOL_CALL = "tool_call"
    TOOL_PROGRESS = "tool_progress"
    TOOL_IMAGE = "tool_image"
    TOOL_RESULT = "tool_result"
    CONFIRM_REQUEST = "confirm_request"
    CONFIRM_RESPONSE = "confirm_response"
    CONFIRM_REFUSED = "confirm_refused"
    BOUND = "bound"
    REPLY = "reply"
    MESSAGE = "message"
    INPUT = "input"
    INPUT_SNAPSHOT = "input_snapshot"
    CONTEXT_COMPRESSED = "context_compressed"
    PROVIDER_SWITCH = "provider_switch"
    PLAN = "plan"
    STEP_START = "step_start"
    STEP_END = "step_end"
    STOP = "stop"
    ERROR = "error"
    ROBOT_STATE = "robot_state"
    GOVERNOR = "governor"
    STEPS = "steps"
    CLAUSE_START = "clause_start"
    CLAUSE_END = "clause_end"
    LOCAL_BRAIN = "local_brain"
    LOCAL_BRAIN_PROMPT = "local_brain_prompt"
    MCP_SERVER = "mcp_server"
    MQTT_LINK = "mqtt_link"
    NODE_ADDED = "node_added"
    NODE_REMOVED = "node_removed"
    NODE_ERROR = "node_error"
    NODE_RESTARTED = "node_restarted"
    NODE_CONFLICT = "node_conflict"
    MEMORY_SYNC = "memory_sync"
    SPEECH_IN = "speech_in"
    TRANSCRIPT = "transcript"
    SPEECH_OUT = "speech_out"
    TASK_END = "task_end"

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str.__str__(self), spec)


#: Event types that are only for live display and are not written to traces.
LIVE_ONLY_TYPES = frozenset({EventType.TEXT_DELTA, EventType.REASONING_DELTA})
