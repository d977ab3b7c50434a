"""loopact's own state, kept out of reach of the file tools (issue 21, docs/security.md)."""

from __future__ import annotations

from pathlib import Path

from loopact.app.memory import memory_folder
from loopact.config import Config, default_config_paths
from loopact.llm.local import cache_dir
from loopact.tools.builtin import ProtectedPath


def agent_state_paths(cfg: Config, config_source: Path | None) -> list[ProtectedPath]:
    """What the file tools must never read, write or list (issue 21 items 1 and 2).

    The memory folder with its ``.git`` (also when memory is off, so that a later run does
    not find it tampered with), the config file in use and every file loopact would load as
    config by default (``./loopact.yaml``, the user config folder's), the trace file, the
    local-brain cache folder and model file, and the installed loopact package.

    Args:
        cfg: The configuration of this run.
        config_source: The config file it was loaded from, or None.
    """
    paths = [ProtectedPath(memory_folder(cfg), "the memory folder")]
    if config_source is not None:
        paths.append(ProtectedPath(config_source, "the config file in use"))
    paths += [
        ProtectedPath(p, "a config file loopact loads by default") for p in default_config_paths()
    ]
    if cfg.trace.path is not None:
        paths.append(ProtectedPath(cfg.trace.path, "the trace file"))
    paths.append(ProtectedPath(cache_dir(), "the local-brain cache folder"))
    if cfg.local.model_path is not None:
        paths.append(ProtectedPath(cfg.local.model_path, "the local-brain model file"))
    package = Path(__file__).resolve().parents[1]  # src/loopact: app/ is one of its packages
    paths.append(ProtectedPath(package, "loopact's program files"))
    return paths
