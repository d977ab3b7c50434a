"""Starting the web console for a run (SPEC F2)."""

from __future__ import annotations

import dataclasses
from contextlib import AsyncExitStack
from typing import Any, Protocol

from rich.console import Console

from loopact.agent import Agent
from loopact.app.robot import image_gate
from loopact.config import Config
from loopact.errors import ConfigError, LoopactError
from loopact.llm.base import Model


class ModelFactory(Protocol):
    """``factory(args, api_key=None, *, env_key_elsewhere=True, said_by="/provider")``: a
    model from ``/provider NAME [MODEL [BASE_URL]]`` args (``env_key_elsewhere=False``: an
    environment key only with the provider's own endpoint; ``said_by``: where the values came
    from, named in an error). Raises ConfigError or ValueError for values it cannot use."""

    def __call__(
        self,
        args: list[str],
        api_key: str | None = None,
        *,
        env_key_elsewhere: bool = True,
        said_by: str = "/provider",
    ) -> Model: ...


async def serve_web(
    cfg: Config,
    agent: Agent,
    session: Any,
    stack: AsyncExitStack,
    console: Console,
    model_factory: ModelFactory,
) -> str | None:
    """Start the web console (SPEC F2) unless disabled; returns its URL, or None.

    A console that cannot start (port taken, web extra missing) is reported and the agent
    runs on without it; a console bound beyond loopback without a token is a config error.

    Raises:
        ConfigError: ``web.host`` is beyond loopback and ``web.token`` is not set.
    """
    if not cfg.web.enabled:
        return None
    try:
        from loopact.channels.web import serve_console, settings_from_config
    except ImportError as exc:
        console.print(
            f"[yellow]web console not installed ({exc.name}): pip install 'loopact[web]'[/]"
        )
        return None
    token = cfg.web.token.get_secret_value() if cfg.web.token else None

    def apply(new: dict[str, Any]) -> str | None:
        if new.get("robot_profile") and new["robot_profile"] != cfg.robot.profile:
            return (
                f"robot_profile: changing the robot needs a restart: "
                f"loopact run --profile {new['robot_profile']}"
            )
        args = [
            str(new.get("provider") or cfg.model.provider),
            str(new.get("model") or cfg.model.model),
        ]
        if new.get("base_url"):
            args.append(str(new["base_url"]))
        try:
            # The key the page may use (issue 21 item 4); none: no key from the environment
            # goes to a base URL other than the provider's own.
            model = model_factory(
                args, api_key=new.get("api_key"), env_key_elsewhere=False, said_by="settings"
            )
        except (LoopactError, ValueError) as exc:
            return str(exc)
        agent.set_model(model)
        return None

    try:
        web = await serve_console(
            agent,
            session,
            host=cfg.web.host,
            port=cfg.web.port,
            token=token,
            settings=_with_voice(
                dataclasses.replace(
                    settings_from_config(cfg, on_settings=apply, token=token),
                    gate=image_gate(cfg),  # uploads pass the configured gate (SPEC G1)
                ),
                cfg,
                agent,
                stack,
            ),
        )
    except ConfigError as exc:
        if exc.key == "web.token":
            raise
        console.print(f"[yellow]web console not started: {exc}[/]")
        return None
    stack.push_async_callback(web.stop)
    if token:
        return f"{web.url} (open {web.url}/?token=<your --web-token> once; it sets a cookie)"
    return str(web.url)


def _with_voice(settings: Any, cfg: Config, agent: Agent, stack: AsyncExitStack) -> Any:
    """The console's microphone button (issue 16): a :class:`WebVoice` whose engines are
    built from ``cfg.voice`` on first use; refused with a reason under a text-only or
    image+text modality (G3)."""
    from loopact.app.voice import listener_options, make_stt, make_tts, voice_refusal
    from loopact.channels.web.voice import WebVoice

    modality = cfg.agent.modality
    voice = WebVoice(
        agent,
        agent.bus,
        lambda: make_stt(cfg),
        lambda: make_tts(cfg),
        voice_refusal(modality),  # the command line's line (G3)
        lambda: listener_options(cfg),
        to_model=cfg.voice.to_model,  # SPEC B8: the clip to a model that hears it
    )
    stack.push_async_callback(voice.close)
    settings.voice = voice
    settings.modality = modality
    return settings
