"""Configuration (SPEC H1): one YAML file plus environment overrides, validated at start.

Where it comes from, first match wins: ``--config PATH``; ``./loopact.yaml``; ``loopact.yaml``
in the user config folder (platformdirs). Then environment variables override (read in
:mod:`loopact.config.load` and nowhere else): ``LOOPACT_API_KEY``, ``LOOPACT_BASE_URL``,
``LOOPACT_MODEL``, ``LOOPACT_PROVIDER``, ``LOOPACT_ROBOT``, ``LOOPACT_ROBOT_PROFILE``,
``LOOPACT_LANG`` and the provider's usual key (``OPENAI_API_KEY``); the SMTP password comes
from the variable that ``messages.email.password_env`` names, ``LOOPACT_IMAGES_API_KEY``
(``images.api_key``), ``LOOPACT_MCP_TOKEN`` (``mcp.token``), ``LOOPACT_ESTOP_TOKEN``
(``robot.estop.reset_token``); ``LOOPACT_MQTT_BROKER`` / ``_USERNAME`` / ``_PASSWORD`` /
``_CA_FILE`` / ``_CERT_FILE`` / ``_KEY_FILE`` (``mqtt.*``). Then CLI flags override those.
Errors name the key and the fix (:class:`~loopact.errors.ConfigError`).

The sections are in :mod:`loopact.config.sections`, the loading in :mod:`loopact.config.load`,
the starter file of ``loopact init`` in :mod:`loopact.config.starter`; everything public is
imported here, so ``from loopact.config import Config, load_config`` is the way in.
"""

from loopact.config.load import (
    PROVIDER_KEY_ENV,
    config_secret_settings,
    config_secrets,
    default_config_paths,
    flag_names,
    load_config,
    read_mcp_servers,
)
from loopact.config.sections import (
    DEFAULT_LOCAL_PACKAGES,
    DEFAULT_LOCAL_SHA256,
    LLAMA_CPP_SDIST_SHA256,
    LLAMA_CPP_VERSION,
    AgentConfig,
    BoardConfig,
    BoundsConfig,
    CapabilitiesConfig,
    Config,
    ConfirmConfig,
    DocumentsConfig,
    EmailConfig,
    EstopConfig,
    ImagesConfig,
    LocalConfig,
    McpConfig,
    McpServerConfig,
    MemoryConfig,
    MessagesConfig,
    ModelConfig,
    MqttConfig,
    MqttSubscriptionConfig,
    MqttTlsConfig,
    NodesConfig,
    RobotConfig,
    ShellConfig,
    SttConfig,
    ToolsConfig,
    TopicMessagesConfig,
    TraceConfig,
    TtsConfig,
    VisionConfig,
    VisionModelConfig,
    VoiceConfig,
    WebConfig,
)
from loopact.config.starter import STARTER_CONFIG

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
    "ImagesConfig",
    "LLAMA_CPP_SDIST_SHA256",
    "LLAMA_CPP_VERSION",
    "LocalConfig",
    "McpConfig",
    "McpServerConfig",
    "MemoryConfig",
    "MessagesConfig",
    "ModelConfig",
    "MqttConfig",
    "MqttSubscriptionConfig",
    "MqttTlsConfig",
    "NodesConfig",
    "PROVIDER_KEY_ENV",
    "RobotConfig",
    "STARTER_CONFIG",
    "ShellConfig",
    "SttConfig",
    "ToolsConfig",
    "TopicMessagesConfig",
    "TraceConfig",
    "TtsConfig",
    "VisionConfig",
    "VisionModelConfig",
    "VoiceConfig",
    "WebConfig",
    "config_secret_settings",
    "config_secrets",
    "default_config_paths",
    "flag_names",
    "load_config",
    "read_mcp_servers",
]
