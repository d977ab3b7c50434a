"""loopact's own state, kept out of reach of the file tools (issue 21, docs/security.md)."""

from __future__ import annotations

import json
from pathlib import Path

from loopact.app.memory import memory_folder
from loopact.config import Config, default_config_paths
from loopact.errors import ConfigError
from loopact.llm.local.brain import cache_dir
from loopact.robot.profile import yaml_file
from loopact.tools.builtin import ProtectedPath


def agent_state_paths(cfg: Config, config_source: Path | None) -> list[ProtectedPath]:
    """What the file tools must never read, write or list (issue 21 items 1 and 2).

    The memory folder with its ``.git`` (also when memory is off, so that a later run does
    not find it tampered with), the config file in use and every file loopact would load as
    config by default (``./loopact.yaml``, the user config folder's), the trace file, the
    local-brain cache folder and model file, and the installed loopact package; and every
    other file the configuration names that loopact loads or writes: the ``--mcp-config``
    file (its commands are started), the robot profile and site map files (the governor's
    limits and geofence), the device board file, the TLS files of MQTT and e-mail (a key,
    the certificates trusted), the vision and speech model files, the simulator log, and
    the memory remote when it is a folder on this machine (other robots read it).

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
    return paths + _named_files(cfg)


def _named_files(cfg: Config) -> list[ProtectedPath]:
    """The files other config keys name (see :func:`agent_state_paths`)."""
    named: list[tuple[Path | None, str]] = [
        (cfg.mcp.config_file, "the MCP config file in use (--mcp-config)"),
        (yaml_file(cfg.robot.profile), "the robot profile file in use"),
        (yaml_file(cfg.robot.site), "the site map file in use"),
        (cfg.board.file, "the device board file in use"),
        (cfg.robot.sim_log, "the simulator log"),
        (cfg.record.path, "the MCAP recording"),
        (cfg.mqtt.tls.ca_file, "a TLS file loopact uses"),
        (cfg.mqtt.tls.cert_file, "a TLS file loopact uses"),
        (cfg.mqtt.tls.key_file, "a TLS file loopact uses"),
        (cfg.voice.stt.model_path, "a model file loopact loads"),
    ]
    email = cfg.messages.email
    if email is not None:
        named.append((email.ca_file, "a TLS file loopact uses"))
    remote = cfg.memory.remote
    if remote and Path(remote).expanduser().is_dir():  # a repository on this machine
        named.append((Path(remote), "the memory remote"))
    vision = cfg.vision.model
    if vision is not None:
        named += [
            (vision.model_path, "a model file loopact loads"),
            (vision.mmproj_path, "a model file loopact loads"),
        ]
    return [ProtectedPath(p.expanduser(), what) for p, what in named if p is not None]


#: What the first line of a file loopact may overwrite holds: a trace starts with its
#: ``trace_start`` event, a simulator log with a pose at ``t_s``.
_OWN_FIRST_LINE = {"trace.path": "type", "robot.sim_log": "t_s"}


def check_output_files(cfg: Config) -> None:
    """The files a run writes (``--trace``, ``--sim-log``, ``--record``, ``--audio-out``) are
    files, each its own, and none overwrites a file loopact did not write (SPEC H3; nothing
    lost).

    Raises:
        ConfigError: A path is a folder, two keys name the same file (their lines would be
            spliced into each other), or a trace or simulator log path holds something else
            (a newcomer's ``--trace workspace/notes.txt`` replaced the notes); names the key.
    """
    audio = cfg.voice.audio_out
    outputs = [
        (cfg.trace.path, "trace.path"),
        (cfg.robot.sim_log, "robot.sim_log"),
        (cfg.record.path, "record.path"),
        (Path(audio) if audio not in (None, "-") else None, "voice.audio_out"),
    ]
    seen: dict[Path, str] = {}
    for path, key in outputs:
        if path is None:
            continue
        path = path.expanduser()
        if path.is_dir():
            raise ConfigError(f"{key} {path} is a folder; give a file name in it", key=key)
        resolved = path.resolve()
        if resolved in seen:
            raise ConfigError(
                f"{seen[resolved]} and {key} name the same file {resolved}; give each its own",
                key=key,
            )
        seen[resolved] = key
        field = _OWN_FIRST_LINE.get(key)
        if key == "record.path":
            ours = _is_mcap(path)
        else:
            ours = field is None or _written_by_loopact(path, field)
        if not ours:
            raise ConfigError(
                f"{key} {path} holds something else (not a file loopact wrote) and "
                "would be overwritten; choose another file or remove it",
                key=key,
            )


def _is_mcap(path: Path) -> bool:
    """True when ``path`` is missing, empty, unreadable here, or an MCAP file (its magic)."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
    except OSError:
        return True
    return not head or head.startswith(b"\x89MCAP")


def _written_by_loopact(path: Path, field: str) -> bool:
    """True when ``path`` is missing, empty, unreadable here (opening it will say why), or
    starts with a JSON object that has ``field``."""
    try:
        with path.open("rb") as f:
            first = f.readline(65536)
    except OSError:
        return True
    if not first.strip():
        return True
    try:
        value = json.loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and field in value
