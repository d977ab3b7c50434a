"""The offline brain in a running agent: start it supervised, warm its prompt (issue 6, 13).

Used by :func:`loopact.app.run.build_and_run` when no model endpoint is configured.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

from rich.console import Console

from loopact.agent import Agent
from loopact.config import Config
from loopact.events import EventBus, EventType
from loopact.llm.base import ModelRequest
from loopact.llm.local.model import WARM_USER_TEXT, LocalBrainModel
from loopact.llm.local.process import BrainStatus, LocalBrain
from loopact.llm.messages import Message

log = logging.getLogger(__name__)


async def start_local_brain(
    cfg: Config, stack: AsyncExitStack, bus: EventBus
) -> tuple[Config, LocalBrain | None]:
    """With no endpoint configured, start the offline brain as a supervised child process.

    It is started first so that a missing model fails fast, and stopped with the agent. Its
    state changes become ``local_brain`` events on ``bus`` (the terminal prints the crash
    line, the web console shows a badge, the trace records them).

    Returns:
        The config with the brain's model name and URL filled in, and the brain (None when
        an endpoint is configured and nothing was started).

    Raises:
        ConfigError: The model or llama-cpp-python is missing, or the installed build does
            not run on this CPU.
        ModelFatalError: The server exited or did not answer while starting.
    """
    if cfg.endpoint_configured:
        return cfg, None
    for note in local_brain_notes(cfg):
        log.warning("%s", note)
    brain = LocalBrain.from_config(cfg.local)

    def on_status(status: BrainStatus) -> None:
        bus.emit(EventType.LOCAL_BRAIN, None, **status.as_dict())

    brain.on_status = on_status
    stack.push_async_callback(brain.stop)
    await brain.start()
    return use_local_brain(cfg, brain)


def local_brain_notes(cfg: Config) -> list[str]:
    """What a user of the offline brain should know about the modes they chose (H2).

    The 0.5B model writes no usable JSON plan, even with a grammar that allows only the
    tools' names (measured 2026-12-05: "turn left 90 degrees, then nod" became one step
    ``turn_left`` with invented parameters; "go to the kitchen" became ``move_forward 10``);
    sequences run clause by clause in the default mode instead (docs/local-brain.md).
    """
    notes = []
    if cfg.agent.mode == "plan":
        notes.append(
            "--mode plan with the local brain: the small offline model rarely writes a "
            "usable plan; without --mode plan it runs 'do A, then B' one step at a time "
            "(docs/local-brain.md). Point loopact at a hosted model for plan mode."
        )
    return notes


def use_local_brain(cfg: Config, brain: LocalBrain) -> tuple[Config, LocalBrain]:
    """The config with a running brain's model file and URL filled in, and the brain."""
    update: dict[str, Any] = {
        "model": cfg.model.model_copy(
            update={"model": brain.model_path.name, "base_url": brain.base_url}
        )
    }
    return cfg.model_copy(update=update), brain


async def prepare_local_prompt(agent: Agent) -> dict[str, Any] | None:
    """Have the local brain evaluate the system prompt and tool catalogue now (issue 13).

    Loaded in a fraction of a second from the state an earlier run saved; evaluated (tens of
    seconds on 2 cores, with a spinner) only when the prompt, the tools, the model or the
    build changed. Emits a ``local_brain_prompt`` event.

    Returns:
        The server's answer (``source``: ``disk``, ``evaluated`` or ``skipped``), or None
        when the agent's model is not the local brain.
    """
    model = agent.model
    if not isinstance(model, LocalBrainModel) or not agent.history:
        return None
    request = ModelRequest((agent.history[0], Message.user(WARM_USER_TEXT)), agent.tool_specs())
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with err.status("loopact: preparing the local brain's prompt (once per prompt change) ..."):
        result = await model.prepare(request)
    agent.bus.emit(EventType.LOCAL_BRAIN_PROMPT, None, **result)
    if result.get("source") == "evaluated":
        err.print(
            f"loopact: the local brain read its prompt ({result.get('tokens')} tokens) in "
            f"{result.get('seconds', 0):.1f} s; later runs load it from the cache.",
            markup=False,
        )
    elif result.get("source") == "skipped":
        log.warning("local brain prompt not prepared: %s", result.get("reason"))
    return result
