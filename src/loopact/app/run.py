"""``loopact run``: assemble a running agent from a :class:`~loopact.config.Config` (SPEC H2).

:func:`build_and_run` opens (:func:`open_agent`), in order, the workspace and the built-in
tools, the local brain (when no endpoint is configured), the robot, the memory and skills, the
MCP servers' tools, the agent, the nodes and the trace; then runs one task (``--once``), an
audio file or the terminal chat with the web console (:mod:`loopact.app.modes`); and tears
everything down in reverse order, so that the robot is stopped whatever happens.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from loopact._version import __version__
from loopact.agent import Agent, AgentOptions, Bounds
from loopact.agent.context import ContextManager
from loopact.agent.prompt import build_system_prompt
from loopact.agent.tools import AgentCallTool, SayTool, make_send_message_tool
from loopact.app import modes
from loopact.app.devices import attach_board
from loopact.app.general import general_tools
from loopact.app.local import prepare_local_prompt, start_local_brain, use_local_brain
from loopact.app.mcp import allow_warnings, attach_mcp
from loopact.app.memory import OpenedMemory, open_memory, start_memory_sync
from loopact.app.messages import open_message_channels
from loopact.app.model import LOCAL_IDLE_TIMEOUT_S, LOCAL_REQUEST_TIMEOUT_S, make_model
from loopact.app.nodes import open_nodes_connector
from loopact.app.observe import open_observe
from loopact.app.operator import attach_operator
from loopact.app.own_state import agent_state_paths, check_output_files
from loopact.app.robot import Body, image_gate, open_body
from loopact.app.vision import attach_vision
from loopact.app.voice import VoiceRun
from loopact.config import Config, config_secret_settings
from loopact.errors import ConfigError
from loopact.events import EventBus
from loopact.llm.base import Model
from loopact.llm.local.process import LocalBrain
from loopact.nodes.connector import Connector
from loopact.redact import MIN_SECRET_CHARS
from loopact.tools.base import Tool
from loopact.tools.builtin.files import Workspace
from loopact.tools.builtin.messages import MessageChannel
from loopact.tools.registry import ToolRegistry

logger = logging.getLogger(__name__)


async def build_and_run(cfg: Config, *, once: str | None, config_source: Path | None) -> int:
    """Run the agent as configured; returns the process exit code (see ``loopact.cli``).

    Args:
        cfg: The loaded configuration.
        once: The instruction of ``--once``, or None for the terminal chat.
        config_source: The config file it was loaded from (for the trace header and
            ``/provider``), or None.

    Raises:
        ConfigError: A robot profile, site, workspace, memory folder or other setting is wrong.
    """
    bus = EventBus()
    async with AsyncExitStack() as stack:
        cfg, opened = await open_agent(
            cfg, stack, bus, once=once, config_source=config_source, interactive=once is None
        )
        voice = await _open_voice(cfg, opened, stack)  # issue 16
        freeze_startup_heap()
        if voice is not None and voice.from_file:
            return await modes.run_audio_file(cfg, opened.agent, voice)
        if once is not None:
            code = await modes.run_once(opened.agent, once, cfg.agent.lang)
            if voice is not None:  # --audio-out: the reply is spoken to its end before exit
                from loopact.app.voice import finish_speaking

                await finish_speaking(voice, Console(stderr=True, highlight=False))
            return code
        return await modes.run_terminal(cfg, opened.agent, opened.body, stack, config_source, voice)


def freeze_startup_heap() -> None:
    """Keep what start-up built out of the garbage collector's full collections (SPEC X1).

    Start-up leaves a large heap that lives as long as the process (imported modules, the SDK
    clients, the simulator, the tool schemas); every generation-2 collection walked all of it,
    a 70 ms pause of the loop on this machine, which once in about 30 tasks fell between a
    tool call's arguments completing and the tool starting (``bench/first_action.py``,
    docs/performance.md). ``gc.freeze()`` after one collection moves those objects to the
    permanent generation (CPython's documented use); what the agent allocates later is still
    collected as usual.
    """
    gc.collect()
    gc.freeze()


@dataclass(frozen=True)
class OpenedAgent:
    """What :func:`open_agent` opened.

    Attributes:
        agent: The agent, its tools in ``agent.registry``.
        body: The robot (or none).
        workspace: The file tools' folder.
        files: The workspace as the tools use it, loopact's own state out of reach
            (issue 21); None only when built without :func:`open_agent`.
    """

    agent: Agent
    body: Body
    workspace: Path
    files: Workspace | None = None


async def open_agent(
    cfg: Config,
    stack: AsyncExitStack,
    bus: EventBus,
    *,
    once: str | None,
    config_source: Path | None,
    interactive: bool,
    local_brain: bool | LocalBrain = True,
    mcp_servers: bool = True,
) -> tuple[Config, OpenedAgent]:
    """Open, in order, the workspace and the built-in tools, the local brain (when no
    endpoint is configured), the robot, the nodes, the memory and skills, the MCP servers'
    tools, the agent and what watches it; ``stack`` closes them in reverse order.

    Args:
        cfg: The loaded configuration.
        stack: Closes everything opened here.
        bus: The agent's event bus.
        once: The ``--once`` instruction (nodes get time to be discovered), or None.
        config_source: The config file, for the trace header and the protected paths.
        interactive: Whether a channel can answer confirmations.
        local_brain: Start the offline brain when no endpoint is configured; or a running
            :class:`~loopact.llm.local.process.LocalBrain` to use (bench/local_brain.py runs
            many agents on one server).
        mcp_servers: Connect the servers of ``mcp.servers`` (issue 18); ``loopact mcp``
            does not.

    Returns:
        The config (with the local brain's model filled in) and what was opened.
    """
    check_output_files(cfg)  # before anything is opened or written
    secrets = config_secret_settings(cfg)
    bus.redactor.add(*(value for _, value in secrets))  # issue 21 item 5: every secret
    _warn_short_secrets(secrets)
    files, builtin = _workspace(cfg, config_source)
    workspace = files.root
    registry = ToolRegistry([*builtin, *general_tools(cfg, files)])
    brain = None
    if isinstance(local_brain, LocalBrain):
        cfg, brain = use_local_brain(cfg, local_brain)
    elif local_brain:
        cfg, brain = await start_local_brain(cfg, stack, bus)
    _open_trace(cfg, bus, stack, config_source)  # before anything connects: every event
    observe = open_observe(cfg, bus, stack, Console(stderr=True, soft_wrap=True))  # issue 44
    body = await open_body(cfg, stack)
    connector = await open_nodes_connector(cfg, body, stack, bus)
    served = await _robot_tools(cfg, body, connector, registry, stack)
    memory = await open_memory(cfg, registry, stack, bus.redactor)  # H6: masked memory
    if mcp_servers:
        await attach_mcp(cfg, registry, bus, stack)  # issue 18: MCP servers' tools
    model = make_model(cfg, local_brain=brain)
    await attach_vision(cfg, body.session, None if brain is not None else model, stack)
    options = agent_options(cfg, body, memory, workspace, local=brain is not None)
    options = dataclasses.replace(options, interactive=interactive)
    channels = await open_message_channels(cfg, stack, body.connector)
    agent = _make_agent(cfg, model, registry, options, stack, bus, channels)
    await observe.attach(body.session, bus, agent)  # issue 44: robot readings, governor
    await attach_operator(cfg, agent, body, connector, stack)  # issue 41: e-stop, teleop
    _warn_unknown_allowed(cfg, registry)
    await _attach(cfg, agent, connector, served, memory, stack, once)
    await start_memory_sync(memory, agent, lambda r: system_prompt(cfg, body, r, memory.skills))
    await attach_board(cfg, agent, stack, connector)
    if brain is not None and cfg.local.prompt_cache:
        await prepare_local_prompt(agent)
    return cfg, OpenedAgent(agent, body, workspace, files)


def _warn_short_secrets(secrets: list[tuple[str, str]]) -> None:
    """One warning naming the settings whose secret is too short to be masked (never the
    values): :class:`~loopact.redact.Redactor` skips them, since masking a 3-letter value
    would mangle ordinary words (issue 21, audit B finding 4)."""
    short = sorted({name for name, value in secrets if 0 < len(value) < MIN_SECRET_CHARS})
    if short:
        logger.warning(
            "%s: shorter than %d characters, so not masked in the trace, terminal and web "
            "console (fine for a placeholder such as 'none'; use a longer secret otherwise)",
            ", ".join(short),
            MIN_SECRET_CHARS,
        )


def _warn_unknown_allowed(cfg: Config, registry: ToolRegistry) -> None:
    """One warning per ``confirm.allow`` entry that allows no tool at start
    (:func:`~loopact.app.mcp.allow_warnings`): a typo such as ``fiel_write``, a plain name
    of an MCP server's tool, an ``mcp:`` entry of no configured server (SPEC H2, C5)."""
    for line in allow_warnings(cfg.confirm.allow, registry, list(cfg.mcp.servers)):
        logger.warning("%s", line)


def _open_trace(
    cfg: Config, bus: EventBus, stack: AsyncExitStack, config_source: Path | None
) -> None:
    """``--trace``: the trace file records the bus from here on (SPEC H3), so the first
    connections of nodes and MCP servers are in it (their ``node_added``, ``mcp_server``,
    ``mqtt_link`` events), not only what changes later.

    Raises:
        ConfigError: The trace file cannot be created or written (names ``trace.path``).
    """
    from loopact.trace import TraceWriter

    if cfg.trace.path is None:
        return
    header = {
        "loopact": __version__,
        "provider": cfg.model.provider,
        "model": cfg.model.model,
        "robot": cfg.robot.kind,
        "config": str(config_source) if config_source else None,
    }
    try:
        writer = TraceWriter(cfg.trace.path, header=header).attach(bus)
    except OSError as exc:
        raise ConfigError(
            f"trace.path {cfg.trace.path} cannot be written: {exc.strerror or exc}",
            key="trace.path",
        ) from None
    stack.callback(writer.close)


async def _robot_tools(
    cfg: Config,
    body: Body,
    connector: Connector | None,
    registry: ToolRegistry,
    stack: AsyncExitStack,
) -> list[str]:
    """The robot's tools go into the registry, or, for an in-process robot with the MQTT
    transport, are served as MQTT nodes next to the robot and its governor (issue 17).

    Returns:
        The names served over MQTT (the agent discovers them), or [].
    """
    if body.session is None:
        return []
    if connector is not None and connector.transport == "mqtt" and body.kind == "sim":
        from loopact.app.mqtt import serve_robot_tools
        from loopact.nodes.mqtt.connector import MqttConnector

        assert isinstance(connector, MqttConnector)
        return await serve_robot_tools(body.session.tools, connector, cfg.agent.name, stack)
    for tool in body.session.tools:
        registry.add(tool)
    return []


def _workspace(cfg: Config, config_source: Path | None) -> tuple[Workspace, list[Tool]]:
    """The file tools' folder (created if missing) and the built-in tools confined to it.

    The file tools never reach loopact's own state (issue 21, :mod:`loopact.app.own_state`);
    every other tool that reads or writes workspace files is given the same
    :class:`Workspace`.

    Raises:
        ConfigError: It cannot be used as a folder, or it lies inside loopact's own state
            (``agent.workspace``).
    """
    from loopact.tools.builtin import make_builtin_tools

    workspace = cfg.agent.workspace.expanduser().resolve()
    try:
        files = Workspace(workspace, agent_state_paths(cfg, config_source))
        tools = make_builtin_tools(files)
    except ValueError as exc:  # inside the memory folder, say
        raise ConfigError(
            f"agent.workspace: {exc} (set --workspace DIR)", key="agent.workspace"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"agent.workspace {workspace} cannot be used as a folder: {exc.strerror or exc} "
            "(set --workspace DIR)",
            key="agent.workspace",
        ) from None
    return files, tools


def system_prompt(cfg: Config, body: Body, rules: str | None, skills: str | None) -> str:
    """The system prompt of a run: the robot, the user's instructions, the memory's rules and
    preferences, the skills catalogue (SPEC E2, E3)."""
    return build_system_prompt(
        body.prompt_info(),
        cfg.agent.system_prompt,
        rules=rules,
        skills=skills,
        continuous=cfg.agent.mode == "continuous",
    )


def agent_options(
    cfg: Config, body: Body, memory: OpenedMemory, workspace: Path, *, local: bool = False
) -> AgentOptions:
    """The agent's options from the config, the robot and the memory (SPEC A2, A7, C5, E1).

    Args:
        cfg: The configuration.
        body: The robot (stop hooks, state for ``robot_state`` events, prompt facts).
        memory: Rules, skills and the checkpoint writer for context compression.
        workspace: The file tools' folder.
        local: The model is the local CPU brain: model timeouts are raised to what it needs.
    """
    recorder = memory.recorder
    context = ContextManager(
        cfg.agent.context_limit,
        checkpoint=recorder.checkpoint if recorder is not None else None,
    )
    bounds = Bounds(**cfg.agent.bounds.model_dump())
    if local:
        # A CPU model reads a long prompt slowly (minutes on a busy 2-core machine): give
        # the first token and the stream more time than a hosted endpoint needs.
        bounds = dataclasses.replace(
            bounds,
            request_timeout_s=max(bounds.request_timeout_s, LOCAL_REQUEST_TIMEOUT_S),
            stream_idle_timeout_s=max(bounds.stream_idle_timeout_s, LOCAL_IDLE_TIMEOUT_S),
        )
    session = body.session
    return AgentOptions(
        bounds=bounds,
        system_prompt=system_prompt(cfg, body, memory.rules, memory.skills),
        context=context,
        hourly_rounds=cfg.agent.hourly_rounds,
        hourly_tokens=cfg.agent.hourly_tokens,
        workspace=workspace,
        lang=cfg.agent.lang,
        mode=cfg.agent.mode,
        tool_calling=cfg.agent.tool_calling,
        auto_approve=cfg.confirm.auto_approve,
        allow=frozenset(cfg.confirm.allow),
        confirm_timeout_s=cfg.confirm.timeout_s,
        confirm_channels=frozenset(cfg.confirm.channels),
        stop_hooks=(session.stop,) if session is not None else (),
        after_stop_hooks=(session.recentre_after_stop,)
        if session is not None and session.recentre_on_stop
        else (),
        state_provider=session.state if session is not None else None,
        trace_full=cfg.trace.full,
        split_steps=local and cfg.local.split_steps,
        temperature=cfg.model.temperature if not local else None,
    )


def _make_agent(
    cfg: Config,
    model: Model,
    registry: ToolRegistry,
    options: AgentOptions,
    stack: AsyncExitStack,
    bus: EventBus,
    channels: Sequence[MessageChannel] = (),
) -> Agent:
    """The agent with its own tools: ``agent_call``; ``send_message`` in continuous mode or
    when message channels are configured (issue 19); its alias ``say`` in continuous mode
    (issue 41)."""
    agent = Agent(model, registry, options, bus=bus)
    registry.add(AgentCallTool(agent))
    if cfg.agent.mode == "continuous" or channels:
        registry.add(make_send_message_tool(agent, channels))
    if cfg.agent.mode == "continuous":
        registry.add(SayTool(agent))
    stack.push_async_callback(agent.close)
    return agent


async def _attach(
    cfg: Config,
    agent: Agent,
    connector: Connector | None,
    served: list[str],
    memory: OpenedMemory,
    stack: AsyncExitStack,
    once: str | None,
) -> None:
    """Attach what watches the agent: memory recorder, nodes (ROS 2 or MQTT) and the text
    channel, the MQTT tools."""
    recorder = memory.recorder
    if recorder is not None:
        recorder.history = lambda: agent.history
        recorder.attach(agent.bus)
        stack.push_async_callback(recorder.close)
    if connector is not None:
        # Issue 4: hot-pluggable ROS 2 nodes and the ROS 2 text channel (C2-C4, F3); issue
        # 17: the same over MQTT, with the nodes shared by a fleet.
        from loopact.app.nodes import attach_nodes, node_trust

        nodes = await attach_nodes(
            agent,
            connector,
            cfg.agent.name,
            # issue 39 item 17: over MQTT the text channel is the operator's choice
            text_channel=connector.transport != "mqtt" or cfg.mqtt.text_channel,
            settle_s=1.5 if once is not None else 0.0,
            shared=cfg.nodes.shared and connector.transport == "mqtt",
            trust=node_trust(cfg, own=served),
            gate=image_gate(cfg),  # SPEC G1: the configured limits
            # the robot's own seewhat comes as a node (MQTT transport): no second one
            seewhat=False if "seewhat" in served else None,
        )
        stack.push_async_callback(nodes.close)
        if served:
            from loopact.app.mqtt import wait_discovered

            await wait_discovered(agent.registry, served, timeout_s=10.0)
    if cfg.mqtt.tools and (
        (connector is not None and connector.transport == "mqtt") or cfg.mqtt.subscriptions
    ):
        from loopact.app.mqtt import attach_mqtt_tools

        await attach_mqtt_tools(cfg, agent, stack)


async def _open_voice(cfg: Config, opened: OpenedAgent, stack: AsyncExitStack) -> VoiceRun | None:
    """Voice for the run when asked for (``--voice``, ``--audio-in``, ``--audio-out``,
    ``voice.ros2_topics``); its file tools get the run's workspace (issue 21)."""
    from loopact.app.voice import open_voice

    console = Console(stderr=True, highlight=False, soft_wrap=True)  # issue 22: never wrap
    session = opened.body.session
    return await open_voice(
        cfg,
        opened.agent,
        stack,
        console,
        opened.body.connector,
        workspace=opened.files,
        panel=session.panel if session is not None else None,  # issue 41: "emergency stop"
    )
