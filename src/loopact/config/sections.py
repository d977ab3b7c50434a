"""The configuration's sections (SPEC H1): one strict pydantic model per YAML section.

Unknown keys are refused (``extra="forbid"``); :class:`Config` is the whole file. The agent's
own sections are here; the others live by concern (:mod:`~loopact.config.brain`,
:mod:`~loopact.config.robot`, :mod:`~loopact.config.tools`, :mod:`~loopact.config.connect`,
:mod:`~loopact.config.voice`) and are imported here, so every section is reachable from this
module. Loading, merging and the environment are in :mod:`loopact.config.load`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pydantic

from loopact.access import check_token
from loopact.config.base import STRICT as _STRICT
from loopact.config.brain import (
    DEFAULT_LOCAL_PACKAGES,
    DEFAULT_LOCAL_SHA256,
    LLAMA_CPP_SDIST_SHA256,
    LLAMA_CPP_VERSION,
    CapabilitiesConfig,
    LocalConfig,
    ModelConfig,
)
from loopact.config.connect import (
    McpConfig,
    McpSafety,
    McpServerConfig,
    McpServerName,
    MqttConfig,
    MqttSubscriptionConfig,
    MqttTlsConfig,
    NodeSafety,
    NodesConfig,
)
from loopact.config.observe import FoxgloveConfig, RecordConfig, TelemetryConfig
from loopact.config.robot import (
    BoardConfig,
    EstopConfig,
    HsvTriple,
    RobotConfig,
    VisionChatFormat,
    VisionConfig,
    VisionModelConfig,
)
from loopact.config.tools import (
    DocumentsConfig,
    EmailConfig,
    ImagesConfig,
    MessagesConfig,
    ShellConfig,
    ToolsConfig,
    TopicMessagesConfig,
)
from loopact.config.voice import SttConfig, TtsConfig, VoiceConfig


class BoundsConfig(pydantic.BaseModel):
    """``agent.bounds``: see loopact.agent.options.Bounds (SPEC A2, A3)."""

    model_config = _STRICT
    max_rounds: int = pydantic.Field(6, ge=1)
    max_tries: int = pydantic.Field(3, ge=1)
    request_timeout_s: float = pydantic.Field(60.0, gt=0)
    stream_idle_timeout_s: float = pydantic.Field(30.0, gt=0)
    tool_timeout_s: float = pydantic.Field(30.0, gt=0)
    task_timeout_s: float = pydantic.Field(300.0, gt=0)
    token_budget: int = pydantic.Field(200_000, gt=0)
    max_tokens_round: int = pydantic.Field(8192, ge=16)
    max_tokens_final: int = pydantic.Field(1024, ge=16)
    max_tokens_summary: int = pydantic.Field(1024, ge=16)
    max_tokens_plan: int = pydantic.Field(2048, ge=16)
    max_calls_read_only: int = pydantic.Field(3, ge=1)
    max_calls_state: int = pydantic.Field(10, ge=1)


class AgentConfig(pydantic.BaseModel):
    """``agent``: behaviour of the loop."""

    model_config = _STRICT
    mode: Literal["task", "plan", "continuous"] = "task"
    tool_calling: Literal["native", "text", "auto"] = "auto"
    context_limit: int | None = pydantic.Field(None, ge=1000)
    hourly_rounds: int = pydantic.Field(120, ge=1)
    hourly_tokens: int = pydantic.Field(400_000, ge=1000)
    lang: Literal["en", "zh"] = "en"
    name: str = pydantic.Field("loopact", pattern=r"^[a-zA-Z][a-zA-Z0-9_]{0,63}$")
    workspace: Path = Path("workspace")
    system_prompt: str | None = None
    bounds: BoundsConfig = BoundsConfig()
    modality: Literal["any", "text", "image+text", "voice+text"] = "any"


ConfirmChannel = Literal["terminal", "web", "voice", "ros2", "mqtt"]
"""A channel that may answer confirmation requests (``confirm.channels``, issue 41)."""

DEFAULT_CONFIRM_CHANNELS: tuple[ConfirmChannel, ...] = ("terminal", "web", "voice")
"""The channels the operator trusts by default (docs/security.md)."""


class ConfirmConfig(pydantic.BaseModel):
    """``confirm``: who may run write tools (SPEC C5).

    ``allow`` lists what runs without asking: a tool's name for loopact's own tools (and
    nodes'), ``mcp:SERVER/TOOL`` for a tool of an MCP server (``TOOL`` its name on the
    server, or an ``fnmatch`` pattern: ``mcp:lab/read_*``). A plain name never allows an MCP
    tool: whichever server lists a name first gets it (issue 39 item 13).

    ``channels`` (issue 41): which channels may answer a confirmation request, by default the
    ones the operator trusts: ``terminal`` (the operator's own), ``web`` (the console's token
    holder), ``voice`` (whoever speaks to the robot). ``ros2`` (the ROS 2 text channel) and
    ``mqtt`` (the MQTT text channel) answer only when listed: whoever may publish on their
    input topic would approve writes (docs/security.md).
    """

    model_config = _STRICT
    auto_approve: bool = False
    allow: list[str] = pydantic.Field(default_factory=list)
    timeout_s: float = pydantic.Field(60.0, gt=0)
    channels: list[ConfirmChannel] = pydantic.Field(
        default_factory=lambda: list(DEFAULT_CONFIRM_CHANNELS)
    )

    @pydantic.field_validator("allow")
    @classmethod
    def _entries(cls, allow: list[str]) -> list[str]:
        bad = [e for e in allow if e.startswith("mcp:") and not _MCP_ENTRY.fullmatch(e)]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not mcp:SERVER/TOOL (the server's name in mcp.servers, a "
                "slash, the tool's name on that server or a pattern like read_*)"
            )
        return allow


_MCP_ENTRY = re.compile(r"mcp:[^/\s]{1,64}/\S+")
"""A ``confirm.allow`` entry for an MCP server's tool."""


class TraceConfig(pydantic.BaseModel):
    """``trace``: JSON Lines trace of every event (SPEC H3)."""

    model_config = _STRICT
    path: Path | None = None
    full: bool = False


class WebConfig(pydantic.BaseModel):
    """``web``: the browser console (SPEC F2)."""

    model_config = _STRICT
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    token: pydantic.SecretStr | None = None
    language: Literal["en", "zh"] | None = None

    @pydantic.field_validator("token")
    @classmethod
    def _token_strong(cls, token: pydantic.SecretStr | None) -> pydantic.SecretStr | None:
        """A short token can be guessed (issue 21 item 12): refused when the config is read,
        before anything starts or warns about it (:func:`loopact.access.check_token`)."""
        weak = check_token(None if token is None else token.get_secret_value(), "web.token")
        if weak is not None:
            raise ValueError(weak)
        return token


class MemoryConfig(pydantic.BaseModel):
    """``memory``: the Git-backed long-term memory (SPEC E2, E3, E4)."""

    model_config = _STRICT
    enabled: bool = True
    path: Path | None = None
    remote: str | None = None
    machine_id: str | None = None
    snapshots: bool = True
    snapshot_retention: int = pydantic.Field(200, ge=1)
    sync_interval_s: float = pydantic.Field(300.0, ge=0)
    """With ``remote``: seconds between syncs while running (0: at start and exit only)."""


class Config(pydantic.BaseModel):
    """The whole configuration file."""

    model_config = _STRICT
    model: ModelConfig = ModelConfig()
    agent: AgentConfig = AgentConfig()
    confirm: ConfirmConfig = ConfirmConfig()
    robot: RobotConfig = RobotConfig()
    trace: TraceConfig = TraceConfig()
    memory: MemoryConfig = MemoryConfig()
    web: WebConfig = WebConfig()
    local: LocalConfig = LocalConfig()
    vision: VisionConfig = VisionConfig()
    tools: ToolsConfig = ToolsConfig()
    documents: DocumentsConfig = DocumentsConfig()
    images: ImagesConfig = ImagesConfig()
    board: BoardConfig = BoardConfig()
    messages: MessagesConfig = MessagesConfig()
    mcp: McpConfig = McpConfig()
    nodes: NodesConfig = NodesConfig()
    mqtt: MqttConfig = MqttConfig()
    voice: VoiceConfig = VoiceConfig()
    record: RecordConfig = RecordConfig()
    foxglove: FoxgloveConfig = FoxgloveConfig()
    telemetry: TelemetryConfig = TelemetryConfig()

    @property
    def endpoint_configured(self) -> bool:
        """True when a base URL or an API key was given by flag, config or environment."""
        return bool(self.model.base_url) or self.model.api_key is not None

    @property
    def api_key(self) -> str | None:
        """The API key in clear text, for the provider only (never logged)."""
        return self.model.api_key.get_secret_value() if self.model.api_key else None


__all__ = [
    "AgentConfig",
    "BoardConfig",
    "BoundsConfig",
    "CapabilitiesConfig",
    "Config",
    "ConfirmConfig",
    "DEFAULT_LOCAL_PACKAGES",
    "DEFAULT_LOCAL_SHA256",
    "DocumentsConfig",
    "EmailConfig",
    "EstopConfig",
    "FoxgloveConfig",
    "HsvTriple",
    "ImagesConfig",
    "LLAMA_CPP_SDIST_SHA256",
    "LLAMA_CPP_VERSION",
    "LocalConfig",
    "McpConfig",
    "McpSafety",
    "McpServerConfig",
    "McpServerName",
    "MemoryConfig",
    "MessagesConfig",
    "ModelConfig",
    "MqttConfig",
    "MqttSubscriptionConfig",
    "MqttTlsConfig",
    "NodeSafety",
    "NodesConfig",
    "RecordConfig",
    "RobotConfig",
    "ShellConfig",
    "SttConfig",
    "TelemetryConfig",
    "ToolsConfig",
    "TopicMessagesConfig",
    "TraceConfig",
    "TtsConfig",
    "VisionChatFormat",
    "VisionConfig",
    "VisionModelConfig",
    "VoiceConfig",
    "WebConfig",
]
