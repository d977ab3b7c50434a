"""``loopact run`` (the agent), ``loopact trace`` and ``loopact scripted-server``.

Exit codes of ``run --once``: 0 the task ended with a reply, 3 it ended on a bound (the fallback
text is printed), 1 an error (message on stderr), 2 a usage or configuration error, 130 Ctrl-C.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from loopact.cli._common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    err,
    run_async,
    setup_logging,
)
from loopact.errors import ConfigError, LoopactError
from loopact.events import EventType
from loopact.redact import printable


def run(
    config: Path | None = typer.Option(None, "--config", help="Config file (YAML)."),
    mcp_config: Path | None = typer.Option(
        None, "--mcp-config", help="MCP servers file (JSON or YAML with a servers mapping)."
    ),
    provider: str | None = typer.Option(
        None, "--provider", help="Model protocol: openai, anthropic or dify."
    ),
    mode: str | None = typer.Option(
        None, "--mode", help="task (default), plan, or continuous (always running)."
    ),
    context_limit: int | None = typer.Option(
        None,
        "--context-limit",
        help="Summarise older turns above this many prompt tokens (default: the system "
        "prompt and tools plus 60% of the room they leave in the model's context size).",
    ),
    memory: Path | None = typer.Option(None, "--memory", help="Memory folder (a Git repo)."),
    web_host: str | None = typer.Option(None, "--web-host", help="Console address."),
    web_port: int | None = typer.Option(None, "--web-port", help="Console port (8080)."),
    web_token: str | None = typer.Option(
        None, "--web-token", help="Token required by the console (needed beyond loopback)."
    ),
    no_web: bool = typer.Option(False, "--no-web", help="Do not serve the web console."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Run without long-term memory."),
    tool_calling: str | None = typer.Option(
        None, "--tool-calling", help="native, text (action lines) or auto."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. .../v1."),
    model: str | None = typer.Option(None, "--model", help="Model name."),
    api_key: str | None = typer.Option(None, "--api-key", help="API key (prefer env vars)."),
    thinking_budget: int | None = typer.Option(
        None,
        "--thinking-budget",
        help="Anthropic extended thinking with this budget in tokens (at least 1024).",
    ),
    robot: str | None = typer.Option(
        None, "--robot", help="Robot: sim (default), ros2 (ROS 2 topics) or none."
    ),
    agent_name: str | None = typer.Option(
        None, "--agent-name", help="Agent name: prefix of its node topics (default loopact)."
    ),
    transport: str | None = typer.Option(
        None, "--transport", help="Nodes over: auto (ROS 2 with --robot ros2), ros2, mqtt, none."
    ),
    broker: str | None = typer.Option(
        None, "--broker", help="MQTT broker, e.g. mqtt://host:1883 (with --transport mqtt)."
    ),
    board: str | None = typer.Option(
        None, "--board", help="Board devices: sim (default, simulated), linux or none."
    ),
    board_file: Path | None = typer.Option(
        None, "--board-file", help="Board description (YAML) of its pins and devices."
    ),
    profile: str | None = typer.Option(None, "--profile", help="Hardware profile name/path."),
    site: str | None = typer.Option(None, "--site", help="Site map name or path."),
    sim_speed: float | None = typer.Option(None, "--sim-speed", help="Sim time per real s."),
    scenario: str | None = typer.Option(
        None, "--scenario", help="Sim scenario: default, moving-target, flat, flat-blocked, arm."
    ),
    sim_log: Path | None = typer.Option(
        None, "--sim-log", help="Sim: write ground-truth poses here (JSON Lines, 20 Hz)."
    ),
    recentre_on_stop: bool = typer.Option(
        False,
        "--recentre-on-stop",
        help="Bring the camera back to centre when a task is stopped or preempted.",
    ),
    workspace: Path | None = typer.Option(None, "--workspace", help="Folder for file tools."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow write tools without asking."),
    once: str | None = typer.Option(None, "--once", help="Run one instruction and exit."),
    trace: Path | None = typer.Option(None, "--trace", help="Write a JSON Lines trace here."),
    trace_full: bool = typer.Option(False, "--trace-full", help="Also trace request messages."),
    record: Path | None = typer.Option(
        None, "--record", help="Record the run as MCAP here, for Foxglove (docs/observability.md)."
    ),
    foxglove: bool = typer.Option(
        False, "--foxglove", help="Serve the run live to Foxglove (WebSocket, loopback)."
    ),
    lang: str | None = typer.Option(None, "--lang", help="Language for people: en or zh."),
    voice: bool = typer.Option(
        False, "--voice", help="Talk to the robot: microphone and speaker (docs/voice.md)."
    ),
    audio_in: str | None = typer.Option(
        None,
        "--audio-in",
        help="Spoken commands from a WAV file, or raw 16 kHz mono s16le PCM on stdin (-); "
        "exits after the last reply.",
    ),
    audio_out: str | None = typer.Option(
        None, "--audio-out", help="Spoken replies into a WAV file, or raw PCM on stdout (-)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Start the agent: an interactive terminal chat, or one task with --once."""
    setup_logging(verbose)
    overrides = _run_overrides(locals())
    if once is not None and audio_in is not None:
        err.print("loopact: give --once TEXT or --audio-in FILE, not both", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if once is not None and not once.strip():
        err.print("loopact: --once needs an instruction (got an empty one)", markup=False)
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(_start(config, mcp_config, overrides, once))


_RUN_FLAG_KEYS = {
    "provider": "model.provider",
    "base_url": "model.base_url",
    "model": "model.model",
    "api_key": "model.api_key",
    "thinking_budget": "model.thinking_budget_tokens",
    "robot": "robot.kind",
    "profile": "robot.profile",
    "site": "robot.site",
    "sim_speed": "robot.sim_speed",
    "scenario": "robot.scenario",
    "sim_log": "robot.sim_log",
    "workspace": "agent.workspace",
    "lang": "agent.lang",
    "agent_name": "agent.name",
    "mode": "agent.mode",
    "tool_calling": "agent.tool_calling",
    "context_limit": "agent.context_limit",
    "memory": "memory.path",
    "web_host": "web.host",
    "web_port": "web.port",
    "web_token": "web.token",
    "trace": "trace.path",
    "record": "record.path",
    "transport": "nodes.transport",
    "broker": "mqtt.broker",
    "board": "board.kind",
    "board_file": "board.file",
    "audio_in": "voice.audio_in",
    "audio_out": "voice.audio_out",
}
"""``loopact run`` flags that set a config key (``section.key``) to their value."""
_RUN_FLAG_NAMES = {key: "--" + flag.replace("_", "-") for flag, key in _RUN_FLAG_KEYS.items()}
"""The flag that sets each config key, named in an error about its value."""
_RUN_SWITCHES = {
    "no_memory": ("memory.enabled", False),
    "no_web": ("web.enabled", False),
    "yes": ("confirm.auto_approve", True),
    "trace_full": ("trace.full", True),
    "foxglove": ("foxglove.enabled", True),
    "voice": ("voice.enabled", True),
    "recentre_on_stop": ("robot.recentre_on_stop", True),
}
"""``loopact run`` switches that, when given, set a config key to a fixed value."""


def _run_overrides(flags: dict[str, Any]) -> dict[str, Any]:
    """The config overrides of ``loopact run``'s flags (None: not given, the config decides)."""
    out: dict[str, dict[str, Any]] = {}
    for flag, key in _RUN_FLAG_KEYS.items():
        section, name = key.split(".")
        out.setdefault(section, {})[name] = flags[flag]
    for flag, (key, value) in _RUN_SWITCHES.items():
        section, name = key.split(".")
        out.setdefault(section, {})[name] = value if flags[flag] else None
    return out


def _start(
    config: Path | None, mcp_config: Path | None, overrides: dict[str, Any], once: str | None
) -> int:
    """Load the configuration, say which brain runs, and run the agent; returns the exit code.

    Raises:
        typer.Exit: With :data:`EXIT_USAGE` when the configuration is wrong (message on stderr).
    """
    from loopact.app.run import build_and_run
    from loopact.config import load_config
    from loopact.i18n import t

    try:
        cfg, source = load_config(
            config, overrides=overrides, mcp_config=mcp_config, flag_names=_RUN_FLAG_NAMES
        )
    except ConfigError as exc:
        err.print(f"loopact: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if not cfg.endpoint_configured:
        # Issue 6: no endpoint means the local llama.cpp brain; one line says so.
        from loopact.llm.local.brain import local_brain_banner

        try:
            banner = local_brain_banner(cfg.local, cfg.agent.lang)
        except ConfigError as exc:
            err.print(f"loopact: {exc}", markup=False)
            err.print(t("cli.no_endpoint", cfg.agent.lang), highlight=False, markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        err.print(banner, highlight=False, markup=False)
    try:
        return run_async(build_and_run(cfg, once=once, config_source=source))
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        return EXIT_USAGE
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        return EXIT_ERROR


def trace_cmd(
    path: Path = typer.Argument(..., help="A trace written by --trace."),
    to_script: Path | None = typer.Option(
        None, "--to-script", help="Write a scripted-server script that replays the run."
    ),
    to_mcap: Path | None = typer.Option(
        None, "--to-mcap", help="Write the trace (and --sim-log) as MCAP, for Foxglove."
    ),
    sim_log: Path | None = typer.Option(
        None, "--sim-log", help="The run's --sim-log file: ground truth for --to-mcap."
    ),
) -> None:
    """Print a trace as a timeline, turn it into a replay script, or into MCAP for Foxglove."""
    # The docstring is the --help text. SPEC H3, docs/trace.md "Reading a trace": exit 2 when
    # the trace cannot be read, is empty, has a line that is not an event (named) or a call
    # the replay would have to guess; 1 when it has nothing to replay; a cut-off last line
    # is skipped with a warning.
    from loopact.trace import NOTHING_TO_REPLAY, load_trace, timeline
    from loopact.trace import to_script as make_script

    if to_mcap is not None or sim_log is not None:
        raise typer.Exit(_trace_to_mcap(path, to_mcap, sim_log, to_script))
    try:
        trace = load_trace(path)
    except (OSError, ValueError) as exc:
        err.print(f"loopact: cannot read trace: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    for warning in trace.warnings:
        err.print(f"loopact: {warning}", markup=False)
    if not trace.events:
        err.print(f"loopact: {path}: the trace is empty", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if to_script is None:
        for line in timeline(trace.events):
            typer.echo(printable(line))  # a recorded instruction may hold escape sequences
        return
    if not any(ev.get("type") == EventType.MODEL_RESPONSE for ev in trace.events):
        err.print(f"loopact: {NOTHING_TO_REPLAY}", markup=False)
        raise typer.Exit(EXIT_ERROR)
    try:
        script = make_script(trace)
    except ValueError as exc:  # a recorded call the replay would have to guess
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        to_script.write_text(json.dumps(script, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        err.print(f"loopact: cannot write {to_script}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    typer.echo(f"wrote {to_script} with {len(script['turns'])} turns")


def _trace_to_mcap(
    trace: Path, out: Path | None, sim_log: Path | None, to_script: Path | None
) -> int:
    """``loopact trace T --to-mcap OUT [--sim-log LOG]`` (issue 44); returns the exit code:
    2 for a usage error or a file that cannot be read or written."""
    if out is None or to_script is not None:
        what = "--sim-log goes with --to-mcap" if out is None else "give --to-mcap or --to-script"
        err.print(f"loopact: {what}", markup=False)
        return EXIT_USAGE
    try:
        from loopact.observe.convert import trace_to_mcap
    except ImportError as exc:
        err.print(
            f"loopact: --to-mcap needs foxglove-sdk ({exc.name} is missing): "
            "pip install 'loopact[observe]'",
            markup=False,
        )
        return EXIT_USAGE
    try:
        done = trace_to_mcap(trace, out, sim_log)
    except (OSError, ValueError) as exc:
        err.print(f"loopact: cannot convert: {exc}", markup=False)
        return EXIT_USAGE
    for warning in done.warnings:
        err.print(f"loopact: {warning}", markup=False)
    counts = ", ".join(f"{topic} {n}" for topic, n in sorted(done.counts.items()))
    typer.echo(f"wrote {out}: {counts}")
    return EXIT_OK


def scripted_server(
    script: Path = typer.Argument(..., help="Script JSON (docs/scripted-server.md)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
) -> None:
    """Serve a script over the OpenAI, Anthropic and Dify protocols (demos, replays)."""
    # The docstring is the --help text. Exit 2 for a port outside 0-65535 (checked here, as
    # `run --web-port` is by web.port, not left to bind()'s OverflowError), one that cannot
    # be bound, or a missing or malformed script (docs/scripted-server.md, SPEC X2).
    from loopact.testing.server import serve_forever

    if not 0 <= port <= 65535:
        err.print(f"loopact: --port must be 0-65535 (got {port})", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if not script.is_file():
        what = "is not a file" if script.exists() else "does not exist"
        err.print(f"loopact: script {script} {what}", markup=False)
        raise typer.Exit(EXIT_USAGE)
    try:
        serve_forever(str(script), host=host, port=port)
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        err.print(f"loopact: cannot listen on {host}:{port}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_OK) from None
