"""Opening the Git-backed memory and the skills for a run (SPEC E2-E4)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from loopact.agent import Agent
from loopact.agent.prompt import preferences_section
from loopact.config import Config, config_secret_settings
from loopact.errors import ConfigError, MemoryRepoError
from loopact.events import EventType
from loopact.memory import (
    GitMemory,
    MemorySyncer,
    SyncResult,
    default_memory_dir,
    make_memory_tools,
    make_sync_tool,
)
from loopact.memory.recorder import MemoryRecorder
from loopact.redact import Redactor
from loopact.skills.loader import SkillLibrary, builtin_dir
from loopact.skills.tool import make_skill_tool
from loopact.tools.registry import ToolRegistry


@dataclass(frozen=True)
class OpenedMemory:
    """What :func:`open_memory` opened.

    Attributes:
        rules: Rule and preference text for the system prompt, or None.
        skills: The skills catalogue for the system prompt, or None.
        recorder: Writes diaries and snapshots; None when memory is disabled.
        syncer: Syncs the memory with its remote while the agent runs (not started yet);
            None without ``memory.remote``.
    """

    rules: str | None
    skills: str | None
    recorder: MemoryRecorder | None
    syncer: MemorySyncer | None = None


def memory_rules(memory: GitMemory) -> str | None:
    """The rule files and the remembered preferences for the system prompt (E2, E4)."""
    prefs = [(i.text, i.date) for i in memory.preference_items()]
    parts = [memory.rules_text(), preferences_section(prefs)]
    return "\n\n".join(p for p in parts if p.strip()) or None


def machine_id() -> str:
    """This machine's id for diary entries: ``/etc/machine-id`` (12 chars) or the hostname."""
    try:
        mid = Path("/etc/machine-id").read_text(encoding="ascii").strip()[:12]
    except OSError:
        mid = ""
    mid = mid or socket.gethostname()
    return re.sub(r"[^A-Za-z0-9_.-]", "-", mid)[:64] or "loopact"


def memory_folder(cfg: Config) -> Path:
    """The memory folder the config names (``memory.path`` or the default), ``~`` expanded."""
    return (cfg.memory.path or default_memory_dir()).expanduser()


async def open_memory(
    cfg: Config,
    registry: ToolRegistry,
    stack: AsyncExitStack,
    redactor: Redactor | None = None,
) -> OpenedMemory:
    """Open the Git-backed memory and the skills (SPEC E2-E4); ``stack`` closes them.

    Adds ``remember``/``recall`` and ``skill`` to ``registry``, and with ``memory.remote``
    ``memory_sync`` and the :class:`~loopact.memory.MemorySyncer` (started by the caller).

    Args:
        cfg: The configuration (``memory``).
        registry: Gets the memory and skill tools.
        stack: Closes the memory.
        redactor: Masks secrets in what memory writes (the event bus's, so secrets learnt
            later count too, SPEC H6); None: one that knows the config's secrets.

    Raises:
        ConfigError: The memory folder cannot be used (``memory.path``).
    """
    skill_dirs = [builtin_dir()]
    rules: str | None = None
    recorder: MemoryRecorder | None = None
    syncer: MemorySyncer | None = None
    if cfg.memory.enabled:
        path = memory_folder(cfg)
        memory = GitMemory(
            path,
            cfg.memory.machine_id or machine_id(),
            remote=cfg.memory.remote,
            snapshot_retention=cfg.memory.snapshot_retention,
            redactor=redactor or Redactor(v for _, v in config_secret_settings(cfg)),
        )
        try:
            await memory.open()
        except (OSError, ValueError, MemoryRepoError) as exc:
            raise ConfigError(
                f"memory.path {path} cannot be used: {exc} (set --memory DIR or "
                "memory.enabled: false)",
                key="memory.path",
            ) from None
        stack.push_async_callback(memory.close)
        if cfg.memory.remote:
            stack.push_async_callback(memory.sync)  # after the syncer stopped (E2)
            syncer = MemorySyncer(memory, cfg.memory.sync_interval_s)
            stack.push_async_callback(syncer.stop)
            registry.add(make_sync_tool(syncer))
        rules = memory_rules(memory)
        for tool in make_memory_tools(memory):
            registry.add(tool)
        recorder = MemoryRecorder(memory, list, snapshots=cfg.memory.snapshots)
        skill_dirs.append(path / "skills")
    library = SkillLibrary.load(skill_dirs)
    if library.names:
        registry.add(make_skill_tool(library))
    return OpenedMemory(rules, library.catalogue_text() or None, recorder, syncer)


async def start_memory_sync(
    opened: OpenedMemory, agent: Agent, prompt: Callable[[str | None], str]
) -> None:
    """Start syncing the memory with its remote while the agent runs (SPEC E2, issue 46).

    Each sync is a ``memory_sync`` event on the agent's bus (``why``, ``ok``, ``integration``,
    ``pushed``, ``conflicts``, ``error``, ``unsynced_commits``); ``/status`` shows the sync
    under ``memory``; rules and preferences that arrive are in the system prompt from the next
    request on. Nothing without ``memory.remote``.

    Args:
        opened: What :func:`open_memory` opened.
        agent: The agent.
        prompt: The system prompt for given rules and preferences text.
    """
    syncer = opened.syncer
    if syncer is None:
        return
    memory = syncer.memory
    agent.add_status("memory", syncer.status)

    def on_result(result: SyncResult, why: str) -> None:
        agent.bus.emit(
            EventType.MEMORY_SYNC,
            None,
            why=why,
            ok=result.ok,
            integration=result.integration,
            pushed=result.pushed,
            conflicts=list(result.conflicts),
            error=result.error,
            unsynced_commits=syncer.unsynced,
        )
        if result.integration != "none":  # another robot's rules or preferences may be new
            agent.conversation.set_system_prompt(prompt(memory_rules(memory)))

    syncer.on_result = on_result
    await syncer.start()  # open_memory's stack stops it before the exit sync
