"""Assembly of a running agent from a :class:`~loopact.config.Config` (SPEC H2).

``build_and_run`` creates the model, the tool registry (built-in tools, then the robot's),
the robot session, the trace writer and the channel, runs until done, and tears everything
down in reverse order so that the robot is stopped whatever happens.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from loopact import __version__
from loopact.agent import Agent, AgentOptions, Bounds
from loopact.agent.context import ContextManager
from loopact.agent.prompt import build_system_prompt
from loopact.agent.tools import AgentCallTool, make_send_message_tool
from loopact.config import Config
from loopact.errors import ConfigError, LoopactError
from loopact.llm.base import Capabilities, Model
from loopact.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from loopact.memory.recorder import MemoryRecorder

log = logging.getLogger(__name__)

#: Model timeouts for the local CPU brain (issue 6), in seconds, unless configured higher.
LOCAL_REQUEST_TIMEOUT_S = 300.0
LOCAL_IDLE_TIMEOUT_S = 120.0


def make_model(cfg: Config, local_base_url: str | None = None) -> Model:
    """The model endpoint the config names.

    Args:
        cfg: The configuration.
        local_base_url: The running local brain's endpoint (issue 6) when no endpoint is
            configured; the same OpenAI-compatible provider then talks to it with the local
            capability descriptor (text only, tool calls as text, constrained decoding).

    Raises:
        ConfigError: The provider is unknown.
    """
    from loopact.llm.openai_chat import OpenAIChatModel

    if local_base_url is not None:
        from loopact.llm.local import MODEL_NAME, local_capabilities

        return OpenAIChatModel(
            model=MODEL_NAME,
            base_url=local_base_url,
            api_key=None,
            capabilities=local_capabilities(cfg.local.context_tokens),
            extra_body={
                "temperature": cfg.local.temperature,
                "max_tokens": cfg.local.max_output_tokens,
            },
            request_timeout_s=max(cfg.agent.bounds.request_timeout_s, LOCAL_REQUEST_TIMEOUT_S),
            current_task_only=not cfg.local.keep_history,
        )
    caps = Capabilities(**cfg.model.capabilities.model_dump())
    provider = cfg.model.provider
    if provider == "anthropic":
        from loopact.llm.anthropic import AnthropicModel

        return AnthropicModel(
            model=cfg.model.model,
            base_url=cfg.model.base_url,
            api_key=cfg.api_key,
            capabilities=caps,
            request_timeout_s=cfg.agent.bounds.request_timeout_s,
        )
    if provider == "dify":
        from loopact.llm.dify import DIFY_CAPABILITIES, DifyModel

        if not cfg.model.base_url:
            raise ConfigError(
                "model.base_url is required for the dify provider: the API root ending in /v1 "
                "(--base-url or LOOPACT_BASE_URL)",
                key="model.base_url",
            )
        return DifyModel(
            model=cfg.model.model,
            base_url=cfg.model.base_url,
            api_key=cfg.api_key,
            capabilities=DIFY_CAPABILITIES,
            request_timeout_s=cfg.agent.bounds.request_timeout_s,
        )
    return OpenAIChatModel(
        model=cfg.model.model,
        base_url=cfg.model.base_url,
        api_key=cfg.api_key,
        capabilities=caps,
        request_timeout_s=cfg.agent.bounds.request_timeout_s,
    )


async def build_and_run(cfg: Config, *, once: str | None, config_source: Path | None) -> int:
    """Run the agent as configured; returns the process exit code (see ``loopact.cli``).

    Raises:
        ConfigError: A robot profile, site or other setting is wrong.
    """
    from loopact.channels.terminal import ProgressPrinter, TerminalChannel
    from loopact.tools.builtin import make_builtin_tools
    from loopact.trace import TraceWriter

    workspace = cfg.agent.workspace.expanduser().resolve()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"agent.workspace {workspace} cannot be used as a folder: {exc.strerror or exc} "
            "(set --workspace DIR)",
            key="agent.workspace",
        ) from None
    registry = ToolRegistry(make_builtin_tools(workspace))

    async with AsyncExitStack() as stack:
        local_url: str | None = None
        if not cfg.endpoint_configured:
            # No endpoint: start the offline brain as a child process, stopped with the
            # agent (issue 6). It is started first so that a missing model fails fast.
            from loopact.llm.local import LocalBrain

            brain = LocalBrain.from_config(cfg.local)
            stack.push_async_callback(brain.stop)
            local_url = await brain.start()
            update: dict[str, Any] = {
                "model": cfg.model.model_copy(
                    update={"model": brain.model_path.name, "base_url": local_url}
                )
            }
            cfg = cfg.model_copy(update=update)
        robot_info: dict[str, Any] | None = None
        stop_hooks: list[Any] = []
        state_provider = None
        robot_label = "none"
        session: Any = None
        ros2_conn = None
        if cfg.robot.kind != "none":
            if cfg.robot.kind == "ros2":
                # Issue 4: the robot over ROS 2 topics behind the base-side governor.
                from loopact.nodes.ros2 import Ros2Connector
                from loopact.robot.ros2_robot import open_ros2_session

                ros2_conn = Ros2Connector(f"{cfg.agent.name}_agent")
                stack.push_async_callback(ros2_conn.shutdown)
                session = await open_ros2_session(
                    ros2_conn, cfg.robot.profile, cfg.robot.site, cfg.agent.name
                )
            else:
                from loopact.robot.session import open_robot

                session = await open_robot(
                    cfg.robot.kind, cfg.robot.profile, cfg.robot.site, speed=cfg.robot.sim_speed
                )
            stack.push_async_callback(session.close)
            for tool in session.tools:
                registry.add(tool)
            stop_hooks.append(session.stop)
            state_provider = session.state
            robot_label = f"{cfg.robot.kind} ({session.profile.name})"
            robot_info = {
                "profile": session.profile.name,
                "waypoints": sorted(session.site.waypoints),
                "max_linear_mps": session.profile.limits.max_linear_mps,
                "max_angular_dps": session.profile.limits.max_angular_dps,
            }

        rules, skills_text, recorder = await _open_memory(cfg, registry, stack)
        context = None
        if cfg.agent.context_limit is not None:
            context = ContextManager(
                cfg.agent.context_limit,
                checkpoint=recorder.checkpoint if recorder is not None else None,
            )
        bounds = Bounds(**cfg.agent.bounds.model_dump())
        if local_url is not None:
            # A CPU model reads a long prompt slowly (minutes on a busy 2-core machine): give
            # the first token and the stream more time than a hosted endpoint needs.
            bounds = dataclasses.replace(
                bounds,
                request_timeout_s=max(bounds.request_timeout_s, LOCAL_REQUEST_TIMEOUT_S),
                stream_idle_timeout_s=max(bounds.stream_idle_timeout_s, LOCAL_IDLE_TIMEOUT_S),
            )
        options = AgentOptions(
            bounds=bounds,
            system_prompt=build_system_prompt(
                robot_info,
                cfg.agent.system_prompt,
                rules=rules,
                skills=skills_text,
                continuous=cfg.agent.mode == "continuous",
            ),
            context=context,
            hourly_rounds=cfg.agent.hourly_rounds,
            hourly_tokens=cfg.agent.hourly_tokens,
            workspace=workspace,
            lang=cfg.agent.lang,
            mode=cfg.agent.mode,
            tool_calling=cfg.agent.tool_calling,
            auto_approve=cfg.confirm.auto_approve,
            allow=frozenset(cfg.confirm.allow),
            interactive=once is None,
            confirm_timeout_s=cfg.confirm.timeout_s,
            stop_hooks=tuple(stop_hooks),
            state_provider=state_provider,
            trace_full=cfg.trace.full,
        )
        model = make_model(cfg, local_base_url=local_url)
        agent = Agent(model, registry, options)
        registry.add(AgentCallTool(agent))
        if cfg.agent.mode == "continuous":
            registry.add(make_send_message_tool(agent))
        stack.push_async_callback(agent.close)
        if recorder is not None:
            recorder.history = lambda: agent.history
            recorder.attach(agent.bus)
            stack.push_async_callback(recorder.close)
        if ros2_conn is not None:
            # Issue 4: hot-pluggable ROS 2 nodes and the ROS 2 text channel (C2-C4, F3).
            from loopact.nodes.attach import attach_nodes

            nodes = await attach_nodes(
                agent, ros2_conn, cfg.agent.name, settle_s=1.5 if once is not None else 0.0
            )
            stack.push_async_callback(nodes.close)
        if cfg.trace.path is not None:
            writer = TraceWriter(
                cfg.trace.path,
                header={
                    "loopact": __version__,
                    "provider": cfg.model.provider,
                    "model": cfg.model.model,
                    "robot": cfg.robot.kind,
                    "config": str(config_source) if config_source else None,
                },
            ).attach(agent.bus)
            stack.callback(writer.close)

        if once is not None:
            printer = ProgressPrinter(
                Console(stderr=True, highlight=False, soft_wrap=True),
                stream_text=False,
                lang=cfg.agent.lang,
            )
            agent.bus.subscribe(printer)
            outcome = await agent.run_task(once)
            if outcome.status == "completed":
                print(outcome.reply)
                return 0
            if outcome.status == "bounded":
                print(outcome.reply)
                return 3
            if not printer.errors_shown:  # an error event was already printed otherwise
                print(f"loopact: {outcome.error or outcome.status}", file=sys.stderr)
            return 1

        from loopact.i18n import t

        welcome = t(
            "term.welcome",
            cfg.agent.lang,
            version=__version__,
            model=cfg.model.model,
            provider=cfg.model.provider,
            base_url=cfg.model.base_url or "(default)",
            robot=robot_label,
        )

        def model_factory(args: list[str], api_key: str | None = None) -> Model:
            """``/provider NAME [MODEL [BASE_URL]]``: the config, env keys of NAME, overrides."""
            from loopact.config import load_config

            model_over: dict[str, Any] = {"provider": args[0]}
            if len(args) > 1:
                model_over["model"] = args[1]
            if len(args) > 2:
                model_over["base_url"] = args[2]
            if api_key:
                model_over["api_key"] = api_key
            new_cfg, _ = load_config(config_source, overrides={"model": model_over})
            return make_model(new_cfg)

        console = Console(highlight=False, soft_wrap=True)
        web_url = await _serve_web(cfg, agent, session, stack, console, model_factory)
        if web_url:
            welcome += "\n" + t("term.console", cfg.agent.lang, url=web_url)
        channel = TerminalChannel(agent, console, welcome=welcome, model_factory=model_factory)
        await channel.run()
        return 0
    return 0


def machine_id() -> str:
    """This machine's id for diary entries: ``/etc/machine-id`` (12 chars) or the hostname."""
    import re
    import socket

    try:
        mid = Path("/etc/machine-id").read_text(encoding="ascii").strip()[:12]
    except OSError:
        mid = ""
    mid = mid or socket.gethostname()
    return re.sub(r"[^A-Za-z0-9_.-]", "-", mid)[:64] or "loopact"


async def _open_memory(
    cfg: Config, registry: ToolRegistry, stack: AsyncExitStack
) -> tuple[str | None, str | None, MemoryRecorder | None]:
    """Open the Git-backed memory and the skills (SPEC E2-E4).

    Adds ``remember``/``recall`` and ``skill`` to ``registry``.

    Returns:
        (rule and preference text for the system prompt, the skills catalogue, the recorder
        that writes diaries and snapshots) — memory parts are None when memory is disabled.

    Raises:
        ConfigError: The memory folder cannot be used.
    """
    from loopact.memory import GitMemory, default_memory_dir, make_memory_tools
    from loopact.memory.recorder import MemoryRecorder
    from loopact.skills.loader import SkillLibrary, builtin_dir
    from loopact.skills.tool import make_skill_tool

    skill_dirs = [builtin_dir()]
    rules: str | None = None
    recorder: MemoryRecorder | None = None
    if cfg.memory.enabled:
        path = (cfg.memory.path or default_memory_dir()).expanduser()
        memory = GitMemory(
            path,
            cfg.memory.machine_id or machine_id(),
            remote=cfg.memory.remote,
            snapshot_retention=cfg.memory.snapshot_retention,
        )
        try:
            await memory.open()
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"memory.path {path} cannot be used: {exc} (set --memory DIR or "
                "memory.enabled: false)",
                key="memory.path",
            ) from None
        if cfg.memory.remote:
            stack.push_async_callback(memory.sync)
        stack.push_async_callback(memory.close)
        parts = [memory.rules_text(), memory.preferences_text()]
        rules = "\n\n".join(p for p in parts if p.strip()) or None
        for tool in make_memory_tools(memory):
            registry.add(tool)
        recorder = MemoryRecorder(memory, list, snapshots=cfg.memory.snapshots)
        skill_dirs.append(path / "skills")
    library = SkillLibrary.load(skill_dirs)
    if library.names:
        registry.add(make_skill_tool(library))
    return rules, library.catalogue_text() or None, recorder


async def _serve_web(
    cfg: Config,
    agent: Agent,
    session: Any,
    stack: AsyncExitStack,
    console: Console,
    model_factory: Any,
) -> str | None:
    """Start the web console (SPEC F2) unless disabled; returns its URL, or None.

    A console that cannot start (port taken, web extra missing) is reported and the agent
    runs on without it; a console bound beyond loopback without a token is a config error.

    Raises:
        ConfigError: ``web.host`` is beyond loopback and ``web.token`` is not set.
    """
    if not cfg.web.enabled:
        return None
    try:
        from loopact.channels.web import serve_console, settings_from_config
    except ImportError as exc:
        console.print(
            f"[yellow]web console not installed ({exc.name}): pip install 'loopact[web]'[/]"
        )
        return None
    token = cfg.web.token.get_secret_value() if cfg.web.token else None

    def apply(new: dict[str, Any]) -> str | None:
        if new.get("robot_profile") and new["robot_profile"] != cfg.robot.profile:
            return (
                f"robot_profile: changing the robot needs a restart: "
                f"loopact run --profile {new['robot_profile']}"
            )
        args = [
            str(new.get("provider") or cfg.model.provider),
            str(new.get("model") or cfg.model.model),
        ]
        if new.get("base_url"):
            args.append(str(new["base_url"]))
        try:
            model = model_factory(args, api_key=new.get("api_key"))
        except (LoopactError, ValueError) as exc:
            return str(exc)
        agent.set_model(model)
        return None

    try:
        web = await serve_console(
            agent,
            session,
            host=cfg.web.host,
            port=cfg.web.port,
            token=token,
            settings=settings_from_config(cfg, on_settings=apply, token=token),
        )
    except ConfigError as exc:
        if exc.key == "web.token":
            raise
        console.print(f"[yellow]web console not started: {exc}[/]")
        return None
    stack.push_async_callback(web.stop)
    if token:
        return f"{web.url} (open {web.url}/?token=<your --web-token> once; it sets a cookie)"
    return str(web.url)
