"""The vision model of the perception tools (SPEC D5, G2; issue 15).

``vision.model`` names a separate OpenAI-compatible vision endpoint; otherwise the main model
does descriptions and box selection when it has vision (``model.capabilities.vision``,
``vision.use_main_model``). The local brain has no vision: perception then runs on the colour
detector alone.
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack

from loopact.config import Config
from loopact.errors import ConfigError
from loopact.llm.base import Capabilities, Model
from loopact.robot.session import RobotSession
from loopact.vision.model import VisionModel


def make_vision_model(cfg: Config, main: Model | None, stack: AsyncExitStack) -> VisionModel | None:
    """The vision model the config asks for, or None for the detector alone.

    Args:
        cfg: The configuration (``vision``).
        main: The main model, or None when it is the local brain (no vision).
        stack: Closes a separate vision model's connections at exit.

    Raises:
        ConfigError: ``vision.model.api_key_env`` names an unset variable.
    """
    vm = cfg.vision.model
    if vm is not None:
        from loopact.llm.openai_chat import OpenAIChatModel

        key = vm.api_key.get_secret_value() if vm.api_key else None
        if key is None and vm.api_key_env:
            key = os.environ.get(vm.api_key_env)
            if not key:
                raise ConfigError(
                    f"vision.model.api_key_env names {vm.api_key_env}, which is not set",
                    key="vision.model.api_key_env",
                )
        model = OpenAIChatModel(
            model=vm.model,
            base_url=vm.base_url,
            api_key=key,
            capabilities=Capabilities(vision=True, native_tool_calls=False, stream_usage=False),
            request_timeout_s=vm.timeout_s,
        )
        stack.push_async_callback(model.aclose)
        return VisionModel(model, timeout_s=vm.timeout_s)
    if main is not None and cfg.vision.use_main_model and main.capabilities.vision:
        return VisionModel(main, timeout_s=cfg.agent.bounds.request_timeout_s)
    return None


def attach_vision(
    cfg: Config, session: RobotSession | None, main: Model | None, stack: AsyncExitStack
) -> None:
    """Give the robot's perception tools their vision model (see :func:`make_vision_model`)."""
    if session is None:
        return
    vision = make_vision_model(cfg, main, stack)
    session.perception.vision = vision
    if cfg.vision.model is not None:
        session.perception.describer = vision  # else the main model sees seewhat's image
