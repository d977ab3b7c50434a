"""What loopact connects to (SPEC C2-C4, C7, C8): ``mcp``, ``nodes``, ``mqtt``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic

from loopact.config.base import STRICT as _STRICT

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
    _env_refs: list[tuple[str, str]] = pydantic.PrivateAttr(default_factory=list)
    _written: dict[str, Any] = pydantic.PrivateAttr(default_factory=dict)

    @property
    def env_refs(self) -> list[tuple[str, str]]:
        """``(VAR, value)`` for every ``${VAR}`` the config file's entry referenced (set by
        :func:`~loopact.config.load_config`): the values of secret-named variables are
        masked everywhere (issue 39 item 14)."""
        return self._env_refs

    @property
    def written(self) -> dict[str, Any]:
        """``command``, ``args`` and ``url`` as the config file wrote them, ``${VAR}``
        references unexpanded (empty for an entry built in code): what events show."""
        return self._written

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
    retained: Literal["skip", "inject"] | None = None  # None: mqtt.retained


class MqttConfig(pydantic.BaseModel):
    """``mqtt``: the broker, its credentials, the MQTT tools and rules (SPEC C4, C7, X4).

    ``text_channel`` (default off; issue 39 item 17): the text channel on
    ``<p>/<agent>/text_input`` / ``text_output``. Whoever may publish on the first instructs
    the agent as its user, whoever may subscribe to the second reads everything the agent
    reads; turn it on only where the broker's ACL is the boundary (docs/security.md).

    ``retained`` (issue 39 item 8): what rules and inject mode do with a retained message
    (published before the subscription): ``skip`` (the default) or ``inject`` it, marked
    retained with its age where known; a subscription may say otherwise.

    ``teleop`` (default off; issue 41): an operator's drive commands on ``<p>/<agent>/teleop``
    take the robot over (0.5 s deadman); whoever may publish there drives the robot within
    its governor's limits, so give that topic to the operator alone in the broker's ACL. The
    emergency stop (``<p>/<agent>/estop``, ``<p>/_fleet/estop``) is always on: anyone may
    stop, only a proof of the operator's secret releases."""

    model_config = _STRICT
    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = "loopact"
    username: str | None = None
    password: pydantic.SecretStr | None = None
    tls: MqttTlsConfig = MqttTlsConfig()
    keepalive_s: int = pydantic.Field(10, ge=2, le=3600)
    client_id: str | None = pydantic.Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    tools: bool = True
    text_channel: bool = False
    teleop: bool = False
    brokers: list[str] = pydantic.Field(default_factory=list)
    allow_subscribe: list[str] = pydantic.Field(default_factory=lambda: ["#"])
    allow_publish: list[str] = pydantic.Field(default_factory=lambda: ["#"])
    min_publish_interval_s: float = pydantic.Field(0.1, ge=0.1)
    max_publish_bytes: int = pydantic.Field(65_536, ge=1, le=8_000_000)
    history_per_topic: int = pydantic.Field(100, ge=1, le=10_000)
    retained: Literal["skip", "inject"] = "skip"
    subscriptions: list[MqttSubscriptionConfig] = pydantic.Field(default_factory=list)

    @property
    def password_text(self) -> str | None:
        """The password in clear text, for the MQTT client only (never logged)."""
        return self.password.get_secret_value() if self.password else None
