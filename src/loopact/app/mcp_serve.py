"""``loopact mcp``: the agent's tools, robot tools included, served over MCP (issue 18).

:func:`serve_mcp` opens what ``loopact run`` opens — the workspace and the built-in and
general tools, the robot with its safety governor, the memory and skills, the agent — and
serves the agent's tools to MCP clients over stdio (default) or streamable HTTP (``--http
HOST:PORT``, bearer token beyond loopback). Write tools ask on loopact's channels: the web
console (Allow/Deny, on unless ``--no-web``) and, with ``--http`` on a terminal, a y/N
prompt; with neither they are refused unless ``--yes`` or ``confirm.allow`` allows them.
``--agent`` adds ``instruct(text)``, which runs a whole instruction through the agent's own
bounded, preemptible loop. With a robot, the operator's ``emergency_stop`` and
``emergency_stop_state`` are served too (:mod:`loopact.app.mcp_estop`; issue 41).

In stdio mode the process's standard output belongs to the MCP client: file descriptor 1 is
moved to standard error before anything starts (the simulator, ROS 2 or a stray ``print``
cannot corrupt the protocol), and the protocol is written to a duplicate of the original.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pydantic
from rich.console import Console

from loopact.agent import Agent
from loopact.agent.confirm import shown_arguments
from loopact.app.mcp_estop import estop_tools
from loopact.app.model import make_model
from loopact.app.run import open_agent
from loopact.config import Config
from loopact.errors import TaskFailed
from loopact.events import Event, EventBus, EventType
from loopact.events.payloads import ConfirmRequestPayload, ConfirmResponsePayload
from loopact.i18n import t
from loopact.llm.base import Model
from loopact.llm.messages import ToolCall
from loopact.mcp.server import Decision, ToolServer
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult

log = logging.getLogger(__name__)

NOT_SERVED = frozenset({"agent_call", "send_message"})
"""The agent's own tools: they only make sense inside one of its tasks."""


class InstructTool(Tool):
    """``instruct(text)``: hand a whole instruction to loopact's agent loop (``--agent``).

    The loop plans, calls the robot's tools (through the same guards, confirmations and
    safety governor as always), is bounded (rounds, tokens, the task timeout) and preemptible
    (a new instruction, a stop on the web console, or the client cancelling the request stops
    the task and the robot). Returns the agent's reply.

    Args:
        agent: The agent.
    """

    name = "instruct"
    description = (
        "Give the robot's own agent a whole instruction in plain words (e.g. 'go to the "
        "kitchen and tell me what you see'); it plans, acts within its safety limits and "
        "answers. Returns its reply."
    )
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "description": "The instruction."}
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    safety = SafetyClass.MOTION

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.timeout_s = agent.options.bounds.task_timeout_s + 5.0

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the instruction as one task; the reply is ``data.reply``."""
        text = str(arguments["text"]).strip()
        if not text:
            return ToolResult.failure("instruct needs an instruction (got empty text)")
        try:
            outcome = await self.agent.run_task(text, source="mcp")
        except asyncio.CancelledError:
            self.agent.stop(source="mcp")  # halts the robot through the stop hooks
            raise
        except TaskFailed as exc:
            return ToolResult.failure(self.agent.bus.redactor.text(str(exc)))
        mask = self.agent.bus.redactor.text  # secrets never leave in a reply (issue 21 item 5)
        reply = mask(outcome.reply)
        data = {"reply": reply, "status": outcome.status, "rounds": outcome.rounds}
        if outcome.status in ("completed", "bounded"):
            return ToolResult(ok=True, data=data)
        return ToolResult(
            ok=False, data=data, error=mask(outcome.error or f"the task ended {outcome.status}")
        )


class _TerminalConfirmer:
    """y/N answers to confirmation requests on a terminal (``--http`` with a TTY stdin)."""

    def __init__(self, agent: Agent, console: Console, lang: str) -> None:
        self.agent = agent
        self.console = console
        self.lang = lang
        self.pending: list[str] = []
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()

    def start(self, stack: AsyncExitStack) -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), daemon=True).start()
        stack.callback(self.agent.bus.subscribe(self._on_event))
        task = asyncio.ensure_future(self._answer())
        stack.callback(task.cancel)

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(self._lines.put_nowait, line)
        loop.call_soon_threadsafe(self._lines.put_nowait, None)

    def _on_event(self, ev: Event) -> None:
        if ev.type == EventType.CONFIRM_REQUEST:
            asked = ev.payload(ConfirmRequestPayload)
            self.pending.append(str(asked["id"]))
            shown = asked.get("shown") or shown_arguments(asked.get("arguments") or {})
            prompt = t("confirm.prompt", self.lang, name=asked["name"], args=shown)
            self.console.print(prompt, markup=False, end="")
        elif ev.type == EventType.CONFIRM_RESPONSE:
            answered = ev.payload(ConfirmResponsePayload)
            if answered.get("id") in self.pending:
                self.pending.remove(str(answered["id"]))

    async def _answer(self) -> None:
        while True:
            line = await self._lines.get()
            if line is None:
                return
            if self.pending:
                allow = line.strip().lower() in ("y", "yes", "是", "好")
                self.agent.answer_confirmation(self.pending.pop(0), allow, source="terminal")


def _confirm_fn(agent: Agent) -> Any:
    broker = agent.broker

    async def confirm(call_id: str, name: str, arguments: dict[str, Any]) -> Decision:
        if broker.auto_approve or name in broker.allow:
            return Decision(True)
        if not broker.interactive:
            return Decision(
                False,
                f"{name} is a write tool and needs a person's confirmation, and this loopact "
                "mcp has no console to ask on; start it with --yes, list "
                f"{name} in confirm.allow, or keep the web console on to answer Allow/Deny",
            )
        decision = await broker.request("mcp", ToolCall(call_id, name, arguments))
        return Decision(decision.allowed, decision.reason)

    return confirm


async def serve_mcp(
    cfg: Config,
    *,
    http: tuple[str, int] | None,
    token: str | None,
    agent_mode: bool,
    config_source: Path | None,
) -> int:
    """Serve the agent's tools over MCP until the client leaves (stdio) or a signal (HTTP).

    Args:
        cfg: The loaded configuration.
        http: ``(host, port)`` for streamable HTTP, or None for stdio.
        token: Bearer token of the HTTP transport (required beyond loopback).
        agent_mode: Also serve ``instruct(text)`` (``--agent``).
        config_source: The config file, for the trace header.

    Returns:
        The exit code: 0 when the client closed stdio or a signal stopped the server.

    Raises:
        ConfigError: A setting is wrong (no token beyond loopback, a busy port, a robot
            profile ...).
    """
    mcp_out = None
    if http is None:
        mcp_out = os.dup(1)  # the protocol's; everything else printed goes to stderr
        os.dup2(2, 1)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    bus = EventBus()
    async with AsyncExitStack() as stack:
        # The model is needed only by instruct (and the console's chat): the offline brain
        # starts only with --agent. loopact mcp connects no MCP servers of its own.
        cfg, opened = await open_agent(
            cfg,
            stack,
            bus,
            once=None,
            config_source=config_source,
            interactive=False,
            local_brain=agent_mode,
            mcp_servers=False,
        )
        agent, body = opened.agent, opened.body
        agent.broker.interactive = await _channels(
            cfg, agent, body, stack, err, terminal=http is not None
        )
        panel = body.session.panel if body.session is not None else None
        runner = asyncio.ensure_future(agent.run())
        stack.callback(runner.cancel)
        tools = ToolServer(
            agent.registry,
            confirm=_confirm_fn(agent),
            timeout_s=cfg.agent.bounds.tool_timeout_s,
            workspace=opened.workspace,
            # the operator's e-stop (issue 41): served, never in the agent's registry
            extra=[*estop_tools(panel), *([InstructTool(agent)] if agent_mode else [])],
            exclude=NOT_SERVED,
            bus=agent.bus,
            state_provider=body.session.state if body.session is not None else None,
            lang=cfg.agent.lang,
        )
        served = ", ".join(t.name for t in tools.tools())
        if http is None:
            assert mcp_out is not None
            err.print(f"loopact mcp: serving {served} over stdio", markup=False)
            await tools.serve_stdio(os.fdopen(mcp_out, "w", encoding="utf-8", newline="\n"))
            return 0
        from loopact.mcp.http import serve_http

        handle = await serve_http(tools, http[0], http[1], token)
        stack.push_async_callback(handle.stop)
        auth = " (bearer token required)" if token else ""
        err.print(f"loopact mcp: serving {served} at {handle.url}{auth}", markup=False)
        await _until_signal(handle)
        return 0


async def _channels(
    cfg: Config, agent: Agent, body: Any, stack: AsyncExitStack, err: Console, *, terminal: bool
) -> bool:
    """Start the web console (and the terminal prompt); True when someone can answer."""
    from loopact.app.web import serve_web

    def model_factory(
        args: list[str],
        api_key: str | None = None,
        *,
        env_key_elsewhere: bool = True,
        said_by: str = "settings",
    ) -> Model:
        """The web settings' model: the configured one with ``args``; no key is read from
        the environment here (``env_key_elsewhere`` has nothing to hold back), and the values
        were checked by the settings form (``said_by`` is not needed)."""
        over: dict[str, Any] = {"provider": args[0]}
        if len(args) > 1:
            over["model"] = args[1]
        if len(args) > 2:
            over["base_url"] = args[2]
        if api_key:
            over["api_key"] = pydantic.SecretStr(api_key)  # model_copy does not validate
        new = cfg.model_copy(update={"model": cfg.model.model_copy(update=over)})
        return make_model(new)

    url = await serve_web(cfg, agent, body.session, stack, err, model_factory)
    if url:
        err.print(f"loopact mcp: web console at {url} (Allow/Deny, Stop, camera)", markup=False)
    asks_terminal = terminal and sys.stdin is not None and sys.stdin.isatty()
    if asks_terminal:
        _TerminalConfirmer(agent, err, cfg.agent.lang).start(stack)
    return bool(url) or asks_terminal


async def _until_signal(handle: Any) -> None:
    """Wait for SIGINT/SIGTERM (or the HTTP server ending by itself)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(stop.wait())
    served = asyncio.ensure_future(handle.wait())
    try:
        await asyncio.wait({waiter, served}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        served.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
