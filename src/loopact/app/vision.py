"""The vision model of the perception tools (SPEC D5, G2; issue 15).

``vision.model`` names a separate vision model: an OpenAI-compatible vision endpoint
(``base_url``), or a local llama.cpp vision model (``model_path`` + ``mmproj_path``) that loopact
serves itself on loopback as a supervised child process
(:class:`~loopact.llm.local.process.LocalBrain` with ``--clip_model_path``). That model then
describes frames for ``seewhat`` and selects boxes for ``visual_positioning`` while the main
brain stays as it is. Without ``vision.model`` the main model does both when it has vision
(``model.capabilities.vision``, ``vision.use_main_model``). The local brain has no vision:
perception then runs on the colour detector alone, and so it does when the local vision server
cannot start (a warning says why).
"""

from __future__ import annotations

import logging
import os
from contextlib import AsyncExitStack
from pathlib import Path

from loopact.config import Config, VisionModelConfig
from loopact.errors import ConfigError, ModelError
from loopact.llm.base import Capabilities, Model
from loopact.llm.local.process import LocalBrain
from loopact.robot.session import RobotSession
from loopact.vision.model import VisionModel

log = logging.getLogger(__name__)

VISION_CAPABILITIES = Capabilities(vision=True, native_tool_calls=False, stream_usage=False)
"""What a separate vision model is asked to do: look at images and answer in text."""


def _gguf(path: Path, key: str) -> Path:
    path = path.expanduser()
    if not path.is_file():
        raise ConfigError(f"{key} {path} does not exist; give the path of a .gguf file", key=key)
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ConfigError(
            f"{key} {path} is not a GGUF file (it does not start with 'GGUF')", key=key
        )
    return path


def local_vision_brain(vm: VisionModelConfig) -> LocalBrain:
    """The (not yet started) llama.cpp server for a local ``vision.model``.

    Args:
        vm: ``vision.model`` with ``model_path`` and ``mmproj_path`` set.

    Raises:
        ConfigError: A file is missing or not GGUF, or llama-cpp-python's server is not
            installed (``make local-brain`` installs it).
    """
    from loopact.llm.local.brain import check_installed_build, server_installed

    if vm.model_path is None or vm.mmproj_path is None:
        raise ConfigError("vision.model has no model_path and mmproj_path", key="vision.model")
    model = _gguf(vm.model_path, "vision.model.model_path")
    mmproj = _gguf(vm.mmproj_path, "vision.model.mmproj_path")
    if not server_installed():
        raise ConfigError(
            "a local vision model needs llama-cpp-python with its server extra; run "
            "`make local-brain`, or give vision.model a base_url",
            key="vision.model",
        )
    check_installed_build()
    return LocalBrain(
        model_path=model,
        clip_model_path=mmproj,
        chat_format=vm.chat_format,
        context_tokens=vm.context_tokens,
        threads=vm.threads or 0,
        start_timeout_s=vm.start_timeout_s,
        server_module="llama_cpp.server",  # images differ every time: no prompt-prefix cache
        log_name="local-vision",  # not the brain's log (issue 13)
    )


async def start_local_vision(
    brain: LocalBrain, vm: VisionModelConfig, stack: AsyncExitStack
) -> VisionModel | None:
    """Start ``brain`` and wrap it as a :class:`VisionModel`; None (detector alone) when the
    server does not come up (logged as a warning with the server's own last words).

    ``stack`` stops the server and closes the provider at exit.
    """
    from loopact.llm.local.brain import MODEL_NAME
    from loopact.llm.local.model import LocalBrainModel
    from loopact.llm.openai_chat import OpenAIChatModel

    stack.push_async_callback(brain.stop)
    try:
        await brain.start()
    except ModelError as exc:
        log.warning("the local vision model did not start; perception uses the detector: %s", exc)
        return None

    def on_endpoint(base_url: str) -> Model:
        return OpenAIChatModel(
            model=MODEL_NAME,
            base_url=base_url,
            api_key=None,
            capabilities=VISION_CAPABILITIES,
            request_timeout_s=vm.timeout_s,
        )

    model = LocalBrainModel(brain, on_endpoint)
    stack.push_async_callback(model.aclose)
    return VisionModel(model, timeout_s=vm.timeout_s)


async def make_vision_model(
    cfg: Config, main: Model | None, stack: AsyncExitStack
) -> VisionModel | None:
    """The vision model the config asks for, or None for the detector alone.

    Args:
        cfg: The configuration (``vision``).
        main: The main model, or None when it is the local brain (no vision).
        stack: Closes a separate vision model's connections (and stops its server) at exit.

    Raises:
        ConfigError: ``vision.model.api_key_env`` names an unset variable, or a local vision
            model's files or server are missing (:func:`local_vision_brain`).
    """
    vm = cfg.vision.model
    if vm is not None and vm.model_path is not None:
        return await start_local_vision(local_vision_brain(vm), vm, stack)
    if vm is not None and vm.base_url is not None:
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
            capabilities=VISION_CAPABILITIES,
            request_timeout_s=vm.timeout_s,
        )
        stack.push_async_callback(model.aclose)
        return VisionModel(model, timeout_s=vm.timeout_s)
    if main is not None and cfg.vision.use_main_model and main.capabilities.vision:
        return VisionModel(main, timeout_s=cfg.agent.bounds.request_timeout_s)
    return None


def use_vision(session: RobotSession, vision: VisionModel | None, separate: bool) -> None:
    """Give the robot's perception tools ``vision`` for box selection, and for descriptions
    when it is a ``separate`` model (else the main model sees ``seewhat``'s image itself)."""
    session.perception.vision = vision
    session.perception.describer = vision if separate else None


async def attach_vision(
    cfg: Config, session: RobotSession | None, main: Model | None, stack: AsyncExitStack
) -> None:
    """Give the robot's perception tools their vision model (see :func:`make_vision_model`)."""
    if session is None:
        return
    vision = await make_vision_model(cfg, main, stack)
    use_vision(session, vision, separate=cfg.vision.model is not None)
