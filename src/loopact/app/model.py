"""The model endpoint a configuration names (SPEC B1-B4, issue 6, issue 13)."""

from __future__ import annotations

from loopact.config import Config
from loopact.errors import ConfigError
from loopact.llm.base import Capabilities, Model
from loopact.llm.local.process import LocalBrain

#: Model timeouts for the local CPU brain (issue 6), in seconds, unless configured higher.
LOCAL_REQUEST_TIMEOUT_S = 300.0
LOCAL_IDLE_TIMEOUT_S = 120.0


def make_model(cfg: Config, local_brain: LocalBrain | None = None) -> Model:
    """The model endpoint the config names.

    Args:
        cfg: The configuration.
        local_brain: The running local brain (issue 6, issue 13) when no endpoint is
            configured: the same OpenAI-compatible provider then talks to it with the local
            capability descriptor (text only, tool calls as text, constrained decoding),
            wrapped by :class:`~loopact.llm.local.model.LocalBrainModel` (crash-aware, warm
            prompt).

    Raises:
        ConfigError: The provider is unknown, the Dify provider has no base URL,
            ``model.temperature`` is set for Dify (the app sets its own), or
            ``model.thinking_budget_tokens`` for another provider than Anthropic.
    """
    from loopact.llm.openai_chat import OpenAIChatModel
    from loopact.llm.small_model import SmallModelPolicy, needs_small_model_policy

    if local_brain is not None:
        return _local_model(cfg, local_brain)
    caps = Capabilities(**cfg.model.capabilities.model_dump())
    provider = cfg.model.provider
    budget = cfg.model.thinking_budget_tokens
    if provider == "anthropic":
        from loopact.llm.anthropic import AnthropicModel

        return AnthropicModel(
            model=cfg.model.model,
            base_url=cfg.model.base_url,
            api_key=cfg.api_key,
            capabilities=caps,
            # a request without its own cap still leaves the answer room past the thinking
            max_tokens=max(2048, (budget or 0) + 1024),
            thinking_budget_tokens=budget,
            request_timeout_s=cfg.agent.bounds.request_timeout_s,
        )
    if budget is not None:
        raise ConfigError(
            f"model.thinking_budget_tokens (--thinking-budget) is Anthropic's extended "
            f"thinking and does not apply to the {provider} provider; remove it, or use "
            "--provider anthropic",
            key="model.thinking_budget_tokens",
        )
    if provider == "dify" and cfg.model.temperature is not None:
        raise ConfigError(
            "model.temperature does not apply to the dify provider: a Dify app sets its own "
            "temperature in the app's model settings; remove model.temperature",
            key="model.temperature",
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
    model = OpenAIChatModel(
        model=cfg.model.model,
        base_url=cfg.model.base_url,
        api_key=cfg.api_key,
        capabilities=caps,
        request_timeout_s=cfg.agent.bounds.request_timeout_s,
    )
    # tool calls as grammar-constrained text (a llama.cpp server): small models get the policy
    return SmallModelPolicy(model) if needs_small_model_policy(caps) else model


def _local_model(cfg: Config, local_brain: LocalBrain) -> Model:
    """The provider for the running local brain: the OpenAI-compatible one with the local
    capabilities and the small-model policy, crash-aware (issue 6, issue 13)."""
    from loopact.llm.local.brain import MODEL_NAME, installed_build, local_capabilities
    from loopact.llm.local.model import LocalBrainModel
    from loopact.llm.openai_chat import OpenAIChatModel
    from loopact.llm.small_model import SmallModelPolicy

    def on_endpoint(base_url: str) -> Model:
        return SmallModelPolicy(
            OpenAIChatModel(
                model=MODEL_NAME,
                base_url=base_url,
                api_key=None,
                capabilities=local_capabilities(cfg.local.context_tokens),
                extra_body={
                    "temperature": cfg.local.temperature,
                    "max_tokens": cfg.local.max_output_tokens,
                },
                request_timeout_s=max(cfg.agent.bounds.request_timeout_s, LOCAL_REQUEST_TIMEOUT_S),
                current_task_only=not cfg.local.keep_history,
            )
        )

    return LocalBrainModel(local_brain, on_endpoint, build_id=installed_build()[0])
