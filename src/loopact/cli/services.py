"""The long-running service commands: ``loopact sim``, ``node``, ``base`` and ``mcp``.

``sim`` works with the built-in MuJoCo robot (SPEC D6), ``node`` serves a file's tools and
inputs as nodes (C2-C4), ``base`` runs the safety governor next to the base (X3), ``mcp``
serves the agent's tools over the Model Context Protocol (C8).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from loopact.cli._common import (
    EXIT_ERROR,
    EXIT_USAGE,
    check_agent_name,
    err,
    estop_reset,
    run_async,
    run_service,
    setup_logging,
)
from loopact.errors import ConfigError, LoopactError


def sim(
    describe: bool = typer.Option(
        False, "--describe", help="Print the world as JSON (objects, line, waypoints; m, deg)."
    ),
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="Write camera.png, topdown.png and map.png of the world into DIR "
        "(+ trajectory.png and the path on map.png with --sim-log).",
    ),
    scenario: str = typer.Option(
        "default", "--scenario", help="default, moving-target, flat, flat-blocked or arm."
    ),
    write_map: Path | None = typer.Option(
        None,
        "--write-map",
        help="Write the world's map into DIR as Nav2 map_server files (<site>.yaml + .pgm).",
    ),
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
    """The built-in MuJoCo simulated robot: --describe, --snapshot, --write-map or --ros2."""
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
    if write_map is not None:
        _write_map(write_map, scenario)
        return
    if ros2:
        setup_logging(verbose)
        from loopact.sim.ros2_bridge import run_sim_ros2

        run_service(
            run_sim_ros2(
                profile,
                site,
                agent_name,
                with_base=not no_base,
                camera_hz=camera_hz,
                scenario=scenario,
                sim_log=sim_log,
                reset=estop_reset(config, reset_topic),
            )
        )
        return
    if snapshot is None:
        err.print(
            "loopact sim: give --describe, --snapshot DIR, --write-map DIR or --ros2", markup=False
        )
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


def _write_map(directory: Path, scenario: str) -> None:
    """``loopact sim --write-map DIR``: the world's map as map_server files (issue 40)."""
    from loopact.sim.worldmap import write_world_map

    try:
        paths = write_world_map(directory, scenario)
    except OSError as exc:
        err.print(f"loopact: cannot write the map into {directory}: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    for p in paths:
        typer.echo(str(p))


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
    """Serve a file's tools and inputs as nodes for running agents (ROS 2 or MQTT)."""
    # The docstring is the --help text; SPEC C2-C4.
    setup_logging(verbose)
    from loopact.nodes.protocol import SHARED_AGENT
    from loopact.nodes.runner import serve_file

    if transport not in ("ros2", "mqtt"):
        err.print(f"loopact node: --transport must be ros2 or mqtt, not {transport!r}")
        raise typer.Exit(EXIT_USAGE)
    check_agent_name(agent_name)
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
    run_service(serve_file(file, agent, connector))


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
    """Run the safety governor as a ROS 2 node next to the base."""
    # The docstring is the --help text; SPEC X3.
    setup_logging(verbose)
    from loopact.robot.base_node import run_base

    check_agent_name(agent_name)
    run_service(run_base(profile, site, agent_name, estop_reset(config, reset_topic)))


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
    setup_logging(verbose)
    from loopact.config import flag_names, load_config
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
        flags = flag_names(
            overrides,
            robot__kind="--robot",
            memory__enabled="--no-memory",
            web__enabled="--no-web",
            confirm__auto_approve="--yes",
            trace__path="--trace",
            mcp__token="--token",
        )
        cfg, source = load_config(config, overrides=overrides, flag_names=flags)
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
        code = run_async(
            serve_mcp(cfg, http=address, token=secret, agent_mode=agent, config_source=source)
        )
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        code = EXIT_USAGE
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        code = EXIT_ERROR
    raise typer.Exit(code)
