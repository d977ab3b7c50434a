"""Where each event and each robot reading goes: the MCAP / Foxglove topics and the span roles
(SPEC H3, A8; issue 44).

This is the one place that reads event types for recording and telemetry: the recorder
(:mod:`loopact.observe.recorder`), the trace converter (:mod:`loopact.observe.convert`) and the
span builder (:mod:`loopact.observe.spans`) all ask it. Event types are still the strings of
docs/trace.md; when they become an enumeration only this mapping changes.

Topics and their Foxglove schemas (docs/observability.md, "Channels"):

======================  ==========================  ===========================================
topic                   schema                      what
======================  ==========================  ===========================================
``/tf``                 ``foxglove.FrameTransforms``  map -> odom -> base_link -> camera (REP 105)
``/odom/pose``          ``foxglove.PoseInFrame``    the pose the robot reports (``odom``)
``/camera/image``       ``foxglove.CompressedImage``  camera frames, JPEG
``/loopact/tool_image`` ``foxglove.CompressedImage``  what a perception tool showed (its overlay)
``/loopact/log``        ``foxglove.Log``            every agent event as a line (Log panel)
``/loopact/events``     JSON                        every agent event as in the trace, plus
                                                    ``duration_s`` on tool results
``/governor``           ``foxglove.SceneUpdate``    the governor's decisions where they happened
``/sim/ground_truth``   ``foxglove.PoseInFrame``    the simulator's true pose (``map``), 20 Hz
``/sim/objects``        ``foxglove.SceneUpdate``    the simulator's moving objects
``/site``               ``foxglove.SceneUpdate``    the site's waypoints and geofence
``/map``                ``foxglove.Grid``           an occupancy map, when there is one
``/plan``               ``foxglove.PosesInFrame``   a planned path, when there is one
======================  ==========================  ===========================================
"""

from __future__ import annotations

from typing import Any, Literal

from loopact.events import EventType

TF = "/tf"
ODOM_POSE = "/odom/pose"
CAMERA = "/camera/image"
TOOL_IMAGE = "/loopact/tool_image"
LOG = "/loopact/log"
EVENTS = "/loopact/events"
GOVERNOR = "/governor"
TRUTH_POSE = "/sim/ground_truth"
TRUTH_OBJECTS = "/sim/objects"
SITE = "/site"
MAP = "/map"
PLAN = "/plan"

SCHEMAS = {
    TF: "foxglove.FrameTransforms",
    ODOM_POSE: "foxglove.PoseInFrame",
    CAMERA: "foxglove.CompressedImage",
    TOOL_IMAGE: "foxglove.CompressedImage",
    LOG: "foxglove.Log",
    EVENTS: "loopact.Event",
    GOVERNOR: "foxglove.SceneUpdate",
    TRUTH_POSE: "foxglove.PoseInFrame",
    TRUTH_OBJECTS: "foxglove.SceneUpdate",
    SITE: "foxglove.SceneUpdate",
    MAP: "foxglove.Grid",
    PLAN: "foxglove.PosesInFrame",
}
"""Topic -> the schema name its channel has in the MCAP file (``loopact.Event`` is JSON)."""

#: Frames (ROS REP 105): the site map, odometry, the robot, its camera.
MAP_FRAME = "map"
ODOM_FRAME = "odom"
BASE_FRAME = "base_link"
CAMERA_FRAME = "camera"

#: Event types that are only for live display: never recorded (as in the trace).
SKIPPED_TYPES = frozenset({EventType.TEXT_DELTA, EventType.REASONING_DELTA})

#: Event types whose fields also go to a channel of their own.
EVENT_TOPICS = {EventType.TOOL_IMAGE: TOOL_IMAGE, EventType.GOVERNOR: GOVERNOR}

Level = Literal["debug", "info", "warning", "error"]

_LEVELS: dict[str, Level] = {
    EventType.ERROR: "error",
    EventType.BOUND: "warning",
    EventType.GOVERNOR: "warning",
    EventType.STOP: "warning",
    EventType.MODEL_RETRY: "warning",
    EventType.NODE_ERROR: "warning",
    EventType.TEXT_DELTA: "debug",
    EventType.REASONING_DELTA: "debug",
}


def level_of(event: dict[str, Any]) -> Level:
    """The Log level of an event (its JSON form): a failed tool or task is an error."""
    kind = event.get("type")
    if kind == EventType.TOOL_RESULT and not event.get("ok", True):
        return "error"
    if kind == EventType.TASK_END and event.get("status") in ("failed", "bounded"):
        return "error" if event.get("status") == "failed" else "warning"
    return _LEVELS.get(str(kind), "info")


SpanRole = Literal[
    "task_begin",
    "task_end",
    "model_begin",
    "model_end",
    "model_retry",
    "tool_begin",
    "tool_end",
    "governor",
    "failure",
    "provider",
]

SPAN_ROLES: dict[str, SpanRole] = {
    EventType.TASK_START: "task_begin",
    EventType.TASK_END: "task_end",
    EventType.MODEL_REQUEST: "model_begin",
    EventType.MODEL_RESPONSE: "model_end",
    EventType.MODEL_RETRY: "model_retry",
    EventType.TOOL_CALL: "tool_begin",
    EventType.TOOL_RESULT: "tool_end",
    EventType.GOVERNOR: "governor",
    EventType.ERROR: "failure",
    EventType.BOUND: "failure",
    EventType.PROVIDER_SWITCH: "provider",
}
"""Event type -> what it does to the spans (:mod:`loopact.observe.spans`); other types do
nothing there."""


def summary(event: dict[str, Any]) -> str:
    """One readable line of an event for the Log panel (its JSON form; the whole event is on
    :data:`EVENTS`)."""
    kind = event.get("type")
    if kind == EventType.TOOL_CALL:
        return f"{event.get('name')}({_short(event.get('arguments'), 200)})"
    if kind == EventType.TOOL_RESULT:
        took = event.get("duration_s")
        after = f" after {took:.2f} s" if isinstance(took, (int, float)) else ""
        if event.get("ok"):
            return f"{event.get('name')} ok{after}: {_short(event.get('data'), 200)}"
        return f"{event.get('name')} FAILED{after}: {_short(event.get('error'), 200)}"
    if kind in (EventType.TASK_START, EventType.REPLY, EventType.MESSAGE):
        return _short(event.get("text", ""), 400)
    if kind == EventType.ERROR:
        return _short(event.get("message", ""), 400)
    if kind == EventType.TASK_END:
        return f"{event.get('status')} after {event.get('rounds')} rounds"
    if kind == EventType.GOVERNOR:
        return f"{event.get('decision')} {event.get('motion') or ''}: {event.get('detail', '')}"
    rest = {k: v for k, v in event.items() if k not in ("ts", "type", "task_id", "data_b64")}
    return _short(rest, 400)


def _short(value: Any, limit: int) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
