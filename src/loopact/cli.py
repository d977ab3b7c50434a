"""The ``loopact`` command (typer).

``loopact run`` starts the agent (interactive terminal chat, or ``--once TEXT``);
``loopact init`` writes a starter config; ``loopact trace`` reads a trace;
``loopact scripted-server`` replays a script over the OpenAI, Anthropic and Dify protocols;
``loopact sim`` works with the simulator; ``loopact mcp`` serves the agent's tools over MCP;
``loopact eval`` runs the graded task suite.
Exit codes of ``run --once``: 0 the task ended
with a reply, 3 it ended on a bound (the fallback text is printed), 1 an error (message on
stderr), 2 a usage or configuration error, 130 Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.logging import RichHandler

from loopact._version import __version__
from loopact.errors import ConfigError, LoopactError
from loopact.eval.cli import eval_command

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BOUNDED = 3
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="loopact",
    help="A runtime for multimodal autonomous agents that act in the physical world.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sim_app = typer.Typer(help="The built-in MuJoCo simulated robot.", no_args_is_help=True)

err = Console(stderr=True, highlight=False, soft_wrap=True)


def _setup_logging(verbose: bool) -> None:
    # A terminal gets rich's layout; logs, pipes and CI get one plain line per record, never
    # wrapped at 80 columns (issue 22: wrapped messages break every grep and test).
    handler: logging.Handler
    if err.is_terminal:
        handler = RichHandler(console=err, show_time=False, show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        handlers=[handler],
    )
    # The MCP SDK logs a traceback per line a server prints that is not JSON-RPC; loopact
    # reports such servers itself in one line (issue 18), so its records show only with -v.
    logging.getLogger("mcp").setLevel(logging.DEBUG if verbose else logging.CRITICAL)


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(f"loopact {__version__}")
        raise typer.Exit(EXIT_OK)


@app.command()
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
        help="Summarise older turns above this many prompt tokens (default: 60% of the "
        "model's context size).",
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
        None, "--scenario", help="Sim scenario: default or moving-target."
    ),
    sim_log: Path | None = typer.Option(
        None, "--sim-log", help="Sim: write ground-truth poses here (JSON Lines, 20 Hz)."
    ),
    workspace: Path | None = typer.Option(None, "--workspace", help="Folder for file tools."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow write tools without asking."),
    once: str | None = typer.Option(None, "--once", help="Run one instruction and exit."),
    trace: Path | None = typer.Option(None, "--trace", help="Write a JSON Lines trace here."),
    trace_full: bool = typer.Option(False, "--trace-full", help="Also trace request messages."),
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
    _setup_logging(verbose)
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
    "transport": "nodes.transport",
    "broker": "mqtt.broker",
    "board": "board.kind",
    "board_file": "board.file",
    "audio_in": "voice.audio_in",
    "audio_out": "voice.audio_out",
}
"""``loopact run`` flags that set a config key (``section.key``) to their value."""
_RUN_SWITCHES = {
    "no_memory": ("memory.enabled", False),
    "no_web": ("web.enabled", False),
    "yes": ("confirm.auto_approve", True),
    "trace_full": ("trace.full", True),
    "voice": ("voice.enabled", True),
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
        cfg, source = load_config(config, overrides=overrides, mcp_config=mcp_config)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if not cfg.endpoint_configured:
        # Issue 6: no endpoint means the local llama.cpp brain; one line says so.
        from loopact.llm.local import local_brain_banner

        try:
            banner = local_brain_banner(cfg.local, cfg.agent.lang)
        except ConfigError as exc:
            err.print(f"loopact: {exc}", markup=False)
            err.print(t("cli.no_endpoint", cfg.agent.lang), highlight=False, markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        err.print(banner, highlight=False, markup=False)
    try:
        return _run_async(build_and_run(cfg, once=once, config_source=source))
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        return EXIT_USAGE
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        return EXIT_ERROR


def _run_async(coro: Any) -> int:
    """Run the main coroutine; Ctrl-C outside the terminal chat exits 130."""
    loop = asyncio.new_event_loop()
    main = loop.create_task(coro)
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        main.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):
        pass
    try:
        code = int(loop.run_until_complete(main))
    except asyncio.CancelledError:
        code = EXIT_INTERRUPTED if interrupted else EXIT_ERROR
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
    if interrupted:
        err.print("interrupted")
        return EXIT_INTERRUPTED
    return code


@app.command()
def init(
    path: Path = typer.Option(Path("loopact.yaml"), "--path", help="Where to write the config."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented starter config (./loopact.yaml)."""
    from loopact.config import STARTER_CONFIG

    if path.exists() and not force:
        err.print(f"loopact: {path} exists; use --force to overwrite it", markup=False)
        raise typer.Exit(EXIT_USAGE)
    try:
        path.write_text(STARTER_CONFIG, encoding="utf-8")
    except OSError as exc:
        err.print(f"loopact: cannot write {path}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    typer.echo(f"wrote {path}; edit model.base_url / model.model, then: loopact run")


@app.command("trace")
def trace_cmd(
    path: Path = typer.Argument(..., help="A trace written by --trace."),
    to_script: Path | None = typer.Option(
        None, "--to-script", help="Write a scripted-server script that replays the run."
    ),
) -> None:
    """Print a trace as a timeline, or turn it into a replay script."""
    from loopact.trace import read_trace, timeline
    from loopact.trace import to_script as make_script

    try:
        events = list(read_trace(path))
    except (OSError, ValueError) as exc:
        err.print(f"loopact: cannot read trace: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if to_script is not None:
        try:
            script = make_script(events)
        except ValueError as exc:
            err.print(f"loopact: {exc}", markup=False)
            raise typer.Exit(EXIT_ERROR) from None
        try:
            to_script.write_text(json.dumps(script, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            err.print(f"loopact: cannot write {to_script}: {exc.strerror or exc}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        typer.echo(f"wrote {to_script} with {len(script['turns'])} turns")
        return
    for line in timeline(events):
        typer.echo(line)


@app.command("scripted-server")
def scripted_server(
    script: Path = typer.Argument(..., help="Script JSON (docs/scripted-server.md)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
) -> None:
    """Serve a script over the OpenAI, Anthropic and Dify protocols (demos, replays)."""
    from loopact.testing.server import serve_forever

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


@sim_app.callback(invoke_without_command=True)
def sim(
    describe: bool = typer.Option(
        False, "--describe", help="Print the world as JSON (objects, line, waypoints; m, deg)."
    ),
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="Write camera.png and topdown.png of the world into DIR "
        "(+ trajectory.png with --sim-log).",
    ),
    scenario: str = typer.Option("default", "--scenario", help="default or moving-target."),
    sim_log: Path | None = typer.Option(
        None,
        "--sim-log",
        help="With --snapshot: draw this log's trajectory; with --ros2: write one.",
    ),
    ros2: bool = typer.Option(
        False, "--ros2", help="Run the simulator as a ROS 2 robot (odom, camera, cmd_vel, head)."
    ),
    agent_name: str = typer.Option("loopact", "--agent-name", help="Agent the governor serves."),
    profile: str = typer.Option("sim", "--profile", help="Hardware profile (topic names)."),
    site: str = typer.Option("sim_room", "--site", help="Site map (geofence)."),
    no_base: bool = typer.Option(
        False, "--no-base", help="With --ros2: do not start the base-side safety governor."
    ),
    camera_hz: float = typer.Option(10.0, "--camera-hz", help="With --ros2: camera rate, Hz."),
    config: Path | None = typer.Option(
        None, "--config", help="With --ros2: config file (robot.estop of the governor)."
    ),
    reset_topic: str | None = typer.Option(
        None, "--reset-topic", help="With --ros2: operator topic on which 'reset' releases."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Work with the simulated robot: ``--describe``, ``--snapshot DIR``, ``--ros2``."""
    from loopact.sim.scenarios import SCENARIOS

    if scenario not in SCENARIOS:
        err.print(
            f"loopact sim: unknown scenario {scenario!r}; valid: {', '.join(SCENARIOS)}",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    if describe:
        from loopact.sim.describe import describe_world

        typer.echo(json.dumps(describe_world(scenario), indent=2, ensure_ascii=False))
        return
    if ros2:
        _setup_logging(verbose)
        from loopact.sim.ros2_bridge import run_sim_ros2

        _run_service(
            run_sim_ros2(
                profile,
                site,
                agent_name,
                with_base=not no_base,
                camera_hz=camera_hz,
                scenario=scenario,
                sim_log=sim_log,
                reset=_estop_reset(config, reset_topic),
            )
        )
        return
    if snapshot is None:
        err.print("loopact sim: give --describe, --snapshot DIR or --ros2", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if (profile, site) != ("sim", "sim_room"):
        err.print(
            "loopact sim: --profile and --site only apply with --ros2; the snapshot shows the "
            "built-in room and robot",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    from loopact.sim import write_snapshot

    if sim_log is not None and not sim_log.is_file():
        err.print(f"loopact sim: --sim-log {sim_log} is not a file", markup=False)
        raise typer.Exit(EXIT_USAGE)
    try:
        paths = write_snapshot(snapshot, scenario=scenario, sim_log=sim_log)
    except ValueError as exc:
        err.print(f"loopact: cannot read the sim log: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None
    except OSError as exc:
        err.print(f"loopact: cannot write the snapshot into {snapshot}: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    for p in paths:
        typer.echo(str(p))


app.add_typer(sim_app, name="sim")
app.command("eval")(eval_command)  # issue 20: the graded task suite (loopact/eval/cli.py)


def _run_service(coro: Any) -> None:
    """Run a ROS 2 service command; map errors to exit codes (it stops on SIGINT/SIGTERM)."""
    try:
        code = asyncio.run(coro)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None
    raise typer.Exit(code)


@app.command()
def node(
    file: Path = typer.Argument(..., help="A Python file with @loopact.tool functions."),
    agent_name: str = typer.Option("loopact", "--agent-name", help="Agent to serve."),
    transport: str = typer.Option("ros2", "--transport", help="ros2 (default) or mqtt."),
    broker: str | None = typer.Option(
        None, "--broker", help="MQTT broker, e.g. mqtt://host:1883 (default: mqtt.broker)."
    ),
    shared: bool = typer.Option(
        False, "--shared", help="Serve every agent of the fleet, not only --agent-name."
    ),
    config: Path | None = typer.Option(None, "--config", help="Config file (mqtt.* keys)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Serve a file's tools and inputs as nodes for running agents (ROS 2 or MQTT; C2-C4)."""
    _setup_logging(verbose)
    from loopact.nodes.protocol import SHARED_AGENT
    from loopact.nodes.runner import serve_file

    if transport not in ("ros2", "mqtt"):
        err.print(f"loopact node: --transport must be ros2 or mqtt, not {transport!r}")
        raise typer.Exit(EXIT_USAGE)
    _check_agent_name(agent_name)
    agent = SHARED_AGENT if shared else agent_name
    connector = None
    if transport == "mqtt":
        from loopact.app.mqtt import node_connector

        try:
            connector = node_connector(config, broker, file)
        except ConfigError as exc:
            err.print(f"loopact: {exc}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
    elif broker is not None or shared:
        err.print("loopact node: --broker and --shared need --transport mqtt", markup=False)
        raise typer.Exit(EXIT_USAGE)
    _run_service(serve_file(file, agent, connector))


@app.command()
def base(
    profile: str = typer.Option("sim", "--profile", help="Hardware profile (topics, limits)."),
    site: str | None = typer.Option(
        None, "--site", help="Site map whose geofence to enforce (default: no geofence)."
    ),
    agent_name: str = typer.Option("loopact", "--agent-name", help="Agent whose requests to take."),
    config: Path | None = typer.Option(
        None, "--config", help="Config file (robot.estop: who may release an emergency stop)."
    ),
    reset_topic: str | None = typer.Option(
        None, "--reset-topic", help="Operator topic on which 'reset' releases an e-stop."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Run the safety governor as a ROS 2 node next to the base (SPEC X3)."""
    _setup_logging(verbose)
    from loopact.robot.base_node import run_base

    _check_agent_name(agent_name)
    _run_service(run_base(profile, site, agent_name, _estop_reset(config, reset_topic)))


def _check_agent_name(name: str) -> None:
    """A bad ``--agent-name`` is a usage error (exit 2), as every other bad flag is."""
    from loopact.errors import ProtocolError
    from loopact.nodes.protocol import check_name

    try:
        check_name(name, "--agent-name")
    except ProtocolError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


def _estop_reset(config: Path | None, reset_topic: str | None) -> Any:
    """Who may release the base governor's emergency stop: ``robot.estop`` of the config
    (``LOOPACT_ESTOP_TOKEN``), ``--reset-topic`` over it (issue 21)."""
    from loopact.config import load_config
    from loopact.robot.base_node import EstopReset

    try:
        cfg, _source = load_config(
            config, overrides={"robot": {"estop": {"reset_topic": reset_topic}}}
        )
        return EstopReset.from_config(cfg.robot.estop)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


@app.command("mcp")
def mcp_cmd(
    http: str | None = typer.Option(
        None, "--http", help="Serve streamable HTTP at HOST:PORT (default: stdio)."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        help="Bearer token for --http, >= 16 characters without spaces (required beyond "
        "loopback; or LOOPACT_MCP_TOKEN).",
    ),
    agent: bool = typer.Option(
        False, "--agent", help="Also serve instruct(text): a whole task for loopact's agent."
    ),
    config: Path | None = typer.Option(None, "--config", help="Config file (YAML)."),
    robot: str | None = typer.Option(None, "--robot", help="Robot: sim (default), ros2, none."),
    profile: str | None = typer.Option(None, "--profile", help="Hardware profile name/path."),
    site: str | None = typer.Option(None, "--site", help="Site map name or path."),
    sim_speed: float | None = typer.Option(None, "--sim-speed", help="Sim time per real s."),
    workspace: Path | None = typer.Option(None, "--workspace", help="Folder for file tools."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow write tools without asking."),
    no_web: bool = typer.Option(
        False, "--no-web", help="No web console (writes refused, unless --http on a terminal)."
    ),
    web_port: int | None = typer.Option(None, "--web-port", help="Console port (8080)."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Without long-term memory."),
    provider: str | None = typer.Option(None, "--provider", help="--agent: model protocol."),
    base_url: str | None = typer.Option(None, "--base-url", help="--agent: API root."),
    model: str | None = typer.Option(None, "--model", help="--agent: model name."),
    api_key: str | None = typer.Option(None, "--api-key", help="--agent: API key."),
    trace: Path | None = typer.Option(None, "--trace", help="Write a JSON Lines trace here."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Serve the agent's tools, robot included, to MCP clients (governed; docs/mcp.md)."""
    _setup_logging(verbose)
    from loopact.config import load_config
    from loopact.mcp.address import check_access, parse_address

    overrides: dict[str, Any] = {
        "model": {"provider": provider, "base_url": base_url, "model": model, "api_key": api_key},
        "robot": {"kind": robot, "profile": profile, "site": site, "sim_speed": sim_speed},
        "agent": {"workspace": workspace},
        "memory": {"enabled": False if no_memory else None},
        "web": {"port": web_port, "enabled": False if no_web else None},
        "confirm": {"auto_approve": True if yes else None},
        "trace": {"path": trace},
        "mcp": {"token": token},
    }
    try:
        cfg, source = load_config(config, overrides=overrides)
        address = parse_address(http) if http is not None else None
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    secret = cfg.mcp.token.get_secret_value() if cfg.mcp.token else None
    try:
        if address is not None:
            check_access(address[0], secret)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    from loopact.app.mcp_serve import serve_mcp

    try:
        code = _run_async(
            serve_mcp(cfg, http=address, token=secret, agent_mode=agent, config_source=source)
        )
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        code = EXIT_USAGE
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        code = EXIT_ERROR
    raise typer.Exit(code)


def main() -> None:
    """Entry point of the ``loopact`` command."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
