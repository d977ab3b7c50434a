"""The model endpoint a configuration names (SPEC B1-B4, issue 6)."""

from __future__ import annotations

from loopact.config import Config
from loopact.errors import ConfigError
from loopact.llm.base import Capabilities, Model

#: Model timeouts for the local CPU brain (issue 6), in seconds, unless configured higher.
LOCAL_REQUEST_TIMEOUT_S = 300.0
LOCAL_IDLE_TIMEOUT_S = 120.0


def make_model(cfg: Config, local_base_url: str | None = None) -> Model:
    """The model endpoint the config names.

    Args:
        cfg: The configuration.
        local_base_url: The running local brain's endpoint (issue 6) when no endpoint is
            configured; the same OpenAI-compatible provider then talks to it with the local
            capability descriptor (text only, tool calls as text, constrained decoding).

    Raises:
        ConfigError: The provider is unknown, or the Dify provider has no base URL.
    """
    from loopact.llm.openai_chat import OpenAIChatModel

    if local_base_url is not None:
        from loopact.llm.local import MODEL_NAME, local_capabilities

        return OpenAIChatModel(
            model=MODEL_NAME,
            base_url=local_base_url,
            api_key=None,
            capabilities=local_capabilities(cfg.local.context_tokens),
            extra_body={
                "temperature": cfg.local.temperature,
                "max_tokens": cfg.local.max_output_tokens,
            },
            request_timeout_s=max(cfg.agent.bounds.request_timeout_s, LOCAL_REQUEST_TIMEOUT_S),
            current_task_only=not cfg.local.keep_history,
        )
    caps = Capabilities(**cfg.model.capabilities.model_dump())
    provider = cfg.model.provider
    if provider == "anthropic":
        from loopact.llm.anthropic import AnthropicModel

        return AnthropicModel(
            model=cfg.model.model,
            base_url=cfg.model.base_url,
            api_key=cfg.api_key,
            capabilities=caps,
            request_timeout_s=cfg.agent.bounds.request_timeout_s,
        )
    if provider == "dify":
        from loopact.llm.dify import DIFY_CAPABILITIES, DifyModel

        if not cfg.model.base_url:
            raise ConfigError(
                "model.base_url is required for the dify provider: the API root ending in /v1 "
                "(--base-url or LOOPACT_BASE_URL)",
                key="model.base_url",
            )
        return DifyModel(
            model=cfg.model.model,
            base_url=cfg.model.base_url,
            api_key=cfg.api_key,
            capabilities=DIFY_CAPABILITIES,
            request_timeout_s=cfg.agent.bounds.request_timeout_s,
        )
    return OpenAIChatModel(
        model=cfg.model.model,
        base_url=cfg.model.base_url,
        api_key=cfg.api_key,
        capabilities=caps,
        request_timeout_s=cfg.agent.bounds.request_timeout_s,
    )
