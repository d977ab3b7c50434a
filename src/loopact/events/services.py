"""The fields of the events of what runs beside the agent's tasks (SPEC A8, H3; issue 38):
the offline brain's server, MCP servers, MQTT links, hot-pluggable nodes, the memory's sync and
voice. One ``TypedDict`` per type, as :mod:`loopact.events.payloads` (which maps every type to
its definition and exports these too) explains; evaluated without postponed annotations for the
same reason.
"""

from typing_extensions import NotRequired, TypedDict


class LocalBrainPayload(TypedDict):
    """``local_brain``: the offline brain's server changed state (issue 13)."""

    state: str
    model_file: str
    port: int
    restarts: int
    log_path: str
    detail: str


class LocalBrainPromptPayload(TypedDict):
    """``local_brain_prompt``: the system prompt was made ready in the local server
    (``source``: ``disk``, ``evaluated``, ``skipped``; ``reason`` when skipped)."""

    source: str
    tokens: NotRequired[int]
    seconds: NotRequired[float]
    wall_s: NotRequired[float]
    reason: NotRequired[str]


class McpServerPayload(TypedDict):
    """``mcp_server``: an MCP server changed state (issue 18)."""

    name: str
    transport: str
    state: str
    detail: str
    restarts: int
    delay_s: float | None
    protocol: str | None


class MqttLinkPayload(TypedDict):
    """``mqtt_link``: an MQTT connection came up, was lost or was refused (issue 17)."""

    state: str
    broker: str
    client: str
    detail: str


class NodeAddedPayload(TypedDict):
    """``node_added``: a hot-pluggable tool or input appeared (``kind``: ``output``, ``input``,
    ``mcp``); the other fields depend on the kind."""

    name: str
    kind: str
    safety: NotRequired[str]
    announced: NotRequired[str]
    instance: NotRequired[str]
    mode: NotRequired[str]
    data_kind: NotRequired[str]
    server: NotRequired[str]
    remote_name: NotRequired[str]


class NodeRemovedPayload(TypedDict):
    """``node_removed``: a tool or input went away (``server`` for an MCP tool)."""

    name: str
    kind: str
    reason: str
    server: NotRequired[str]


class NodeErrorPayload(TypedDict):
    """``node_error``: a tool or input could not be offered; ``topic`` as named on the
    transport (``mcp:<server>/<tool>`` for MCP)."""

    topic: str
    message: str


class NodeRestartedPayload(TypedDict):
    """``node_restarted``: a node's tool is now served by a new instance of it."""

    name: str
    instance: str
    previous: str


class NodeConflictPayload(TypedDict):
    """``node_conflict``: two live nodes claim one tool name (the first stays)."""

    name: str
    kept: str
    ignored: str


class MemorySyncPayload(TypedDict):
    """``memory_sync``: the memory synced with ``memory.remote`` while running."""

    why: str
    ok: bool
    integration: str
    pushed: bool
    conflicts: list[str]
    error: str | None
    unsynced_commits: int


class SpeechInPayload(TypedDict):
    """``speech_in``: speech began (``started``), an utterance ended (``ended``) or a false
    start was dropped (``discarded``) (issue 16)."""

    state: str
    t_s: NotRequired[float]
    barge_in: NotRequired[bool]
    duration_s: NotRequired[float]
    truncated: NotRequired[bool]
    notes: NotRequired[list[str]]
    reason: NotRequired[str]


class TranscriptPayload(TypedDict):
    """``transcript``: an utterance was transcribed (or the engine failed: ``error``)."""

    text: str
    lang: NotRequired[str | None]
    engine: NotRequired[str]
    audio_s: NotRequired[float]
    elapsed_s: NotRequired[float]
    rtf: NotRequired[float]
    latency_s: NotRequired[float]
    note: NotRequired[str]
    error: NotRequired[str | None]


class SpeechOutPayload(TypedDict):
    """``speech_out``: a sentence of a reply starts playing, or playback changed state."""

    state: str
    gen: int | None
    text: NotRequired[str]
    lang: NotRequired[str | None]
    n: NotRequired[int]
    engine: NotRequired[str]
    duration_s: NotRequired[float]
    synth_s: NotRequired[float]
    reason: NotRequired[str]
    error: NotRequired[str]
