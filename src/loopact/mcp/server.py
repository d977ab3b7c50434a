"""loopact's tools served over MCP: :class:`ToolServer` (SPEC C8, C5, X3, G1; issue 18).

``loopact mcp`` hands its live :class:`~loopact.tools.registry.ToolRegistry` (built-in, memory
and robot tools) to a :class:`ToolServer`, which builds the official SDK's low-level
``Server`` around it:

- ``tools/list``: each tool's JSON Schema as ``inputSchema``, MCP annotations from its safety
  class (:func:`~loopact.mcp.convert.annotations_of`) and the class itself under
  ``_meta["io.github.loopact/safety"]``;
- ``tools/call``: the same path as the agent's own calls — the arguments are checked by
  loopact (the SDK's low-level server does not validate them): not an object, NaN or
  infinity anywhere, a schema violation are refused with a message that says what was wrong
  (an unknown tool is JSON-RPC error ``-32602``, as the MCP specification asks); a write
  tool (or one that asks by its arguments, like a ``remember`` of a preference) runs only
  after ``confirm`` allows it; the call runs through :meth:`ToolRegistry.execute` with the
  tool's timeout, so motion tools go through the safety governor exactly as the agent's
  calls do (clamped and saying so, deadline, watchdog, emergency stop); a cancelled request
  (``notifications/cancelled``, a client that disconnects) cancels the tool, which stops the
  robot. Results go back as JSON text plus camera images as MCP image content
  (:func:`~loopact.mcp.convert.to_call_result`).

The transports are the SDK's: :meth:`ToolServer.serve_stdio` here, streamable HTTP in
:mod:`loopact.mcp.http`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp.types as mt
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from loopact._compat import wait_within
from loopact._version import __version__
from loopact.errors import ToolError
from loopact.events import EventBus, EventType
from loopact.llm.messages import ToolCall
from loopact.mcp.convert import (
    SAFETY_META_KEY,
    annotations_of,
    error_result,
    to_call_result,
)
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult
from loopact.tools.registry import ToolRegistry
from loopact.tools.report import tool_result_event

log = logging.getLogger(__name__)

TASK_ID = "mcp"
"""The ``task_id`` of the events of served calls."""

INSTRUCTIONS = (
    "loopact serves a robot's tools. Motion tools move a real or simulated robot through its "
    "safety governor: speeds are clamped to the robot's limits (the result says so), every "
    "motion has a deadline, and an emergency stop refuses all motion. Write tools (files) "
    "need a person's confirmation in loopact's console. Distances are metres, angles degrees."
)


@dataclass(frozen=True)
class Decision:
    """Whether a write tool may run, and why not.

    Attributes:
        allowed: True when it may run.
        reason: For the client when refused.
    """

    allowed: bool
    reason: str = ""


ConfirmFn = Callable[[str, str, dict[str, Any]], Awaitable[Decision]]
"""``confirm(call_id, tool_name, arguments)``: ask a person (or the allow-list)."""


def _non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinity in ``value``, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(arguments)"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{path}.{i}" if path else str(i))
            if found:
                return found
    return None


class ToolServer:
    """Serve ``registry``'s tools to MCP clients (issue 18). See the module docstring.

    Args:
        registry: The tools (the live registry: tools added later are listed too).
        confirm: Decides write-class calls (see :data:`ConfirmFn`).
        timeout_s: Default per-call timeout in seconds (a tool may set its own).
        workspace: The folder file tools are confined to.
        extra: Tools served in addition to the registry's (``instruct``), not offered to
            the agent itself.
        exclude: Registry tools not to serve (the agent's own ``agent_call``).
        bus: Where ``tool_call`` / ``tool_result`` events of served calls go (task id
            ``mcp``), so the web console and the trace show them; None: nowhere.
        state_provider: The robot's state (``{x_m, y_m, yaw_rad, frame}``), emitted as a
            ``robot_state`` event after every served motion call, like the agent does at
            the end of a task (traces then show where the robot really is).
        name: The server name clients see.
        lang: The language of the people who read its events (``agent.lang``): a served
            result's typed outcome is rendered in it (``outcome_text``).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        confirm: ConfirmFn,
        timeout_s: float = 30.0,
        workspace: Path | None = None,
        extra: Iterable[Tool] = (),
        exclude: Iterable[str] = (),
        bus: EventBus | None = None,
        state_provider: Callable[[], Awaitable[dict[str, Any]]] | None = None,
        name: str = "loopact",
        lang: str = "en",
    ) -> None:
        self.registry = registry
        self.lang = lang
        self.confirm = confirm
        self.timeout_s = timeout_s
        self.workspace = workspace or Path.cwd()
        self.extra = ToolRegistry(extra)
        self.exclude = frozenset(exclude)
        self.bus = bus
        self._events = bus if bus is not None else EventBus()  # no bus: the events go nowhere
        self.state_provider = state_provider
        self.calls = 0
        self._ids = itertools.count(1)
        self._background: set[asyncio.Future[Any]] = set()
        self.server: Server[Any] = Server(
            name,
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def tools(self) -> list[Tool]:
        """The tools served now, in registry order, the extra ones last."""
        served = [t for t in self.registry if t.name not in self.exclude]
        names = {t.name for t in served}
        return served + [t for t in self.extra if t.name not in names]

    def listing(self) -> list[mt.Tool]:
        """``tools/list`` as MCP tool descriptions."""
        out = []
        for tool in self.tools():
            schema = dict(tool.parameters or {"type": "object", "properties": {}})
            schema.setdefault("type", "object")
            out.append(
                mt.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=schema,
                    annotations=annotations_of(tool.safety),
                    meta={SAFETY_META_KEY: tool.safety.value},
                )
            )
        return out

    async def _list_tools(self, ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=self.listing())

    def _registry_of(self, name: str) -> ToolRegistry | None:
        if name in self.extra:
            return self.extra
        if name in self.registry and name not in self.exclude:
            return self.registry
        return None

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        session = getattr(ctx, "session", None)
        return await self.call(params.name, params.arguments, session=session)

    async def call(self, name: str, arguments: Any, *, session: Any = None) -> mt.CallToolResult:
        """Check and run one call; every refusal and failure is a result with ``isError``,
        except a call of an unknown tool.

        Args:
            name: The tool's name.
            arguments: The client's arguments (None: ``{}``).
            session: The SDK session, for progress notifications (optional).

        Raises:
            MCPError: JSON-RPC ``-32602`` (invalid params) for a tool this server does not
                have, as the MCP specification asks (tools, "Error Handling": unknown tools
                are protocol errors; issue 39 item 10).
            asyncio.CancelledError: The client cancelled; the tool was cancelled too.
        """
        self.calls += 1
        call_id = f"mcp-{next(self._ids)}"
        self._events.emit(EventType.TOOL_CALL, TASK_ID, id=call_id, name=name, arguments=arguments)
        try:
            refusal = await self._check(call_id, name, arguments)
            if refusal is not None:
                result = ToolResult.failure(refusal, error_kind="refused")
            else:
                result = await self._run(call_id, name, arguments or {}, session)
        except asyncio.CancelledError:
            cancelled = ToolResult.failure("cancelled by the MCP client", error_kind="cancelled")
            self._emit_result(call_id, name, cancelled)
            raise
        self._emit_result(call_id, name, result)
        if refusal is not None and self._registry_of(name) is None:
            raise MCPError(mt.INVALID_PARAMS, refusal)
        if refusal is not None:
            return error_result(refusal)
        return to_call_result(result)

    async def _check(self, call_id: str, name: str, arguments: Any) -> str | None:
        """Why the call must not run (bad arguments, unknown tool, not confirmed), or None."""
        registry = self._registry_of(name)
        if registry is None:
            available = ", ".join(t.name for t in self.tools()) or "(none)"
            return f"unknown tool {name!r}; available tools: {available}"
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return (
                f"invalid arguments for {name}: expected a JSON object, got "
                f"{type(arguments).__name__}"
            )
        bad = _non_finite(arguments)
        if bad is not None:
            return (
                f"invalid arguments for {name}: {bad} must be a finite number (got NaN or "
                "infinity): refused"
            )
        try:
            # strict: a program sent these, so "1" for a number is its error (docs/mcp.md)
            registry.validate(ToolCall(call_id, name, arguments), strict=True)
        except ToolError as exc:
            return str(exc)
        tool = registry.get(name)
        # As the agent's dispatcher asks (C5): write tools, and tools that ask by their
        # arguments; what an MCP client sends is never "what the user said".
        if tool is not None and tool.needs_confirmation(arguments, ""):
            decision = await self.confirm(call_id, name, arguments)
            if not decision.allowed:
                log.info("refused %s over MCP: %s", name, decision.reason)
                return decision.reason
        return None

    async def _run(
        self, call_id: str, name: str, arguments: dict[str, Any], session: Any
    ) -> ToolResult:
        registry = self._registry_of(name)
        assert registry is not None  # checked by _check
        tool_ctx = ToolContext(
            task_id=TASK_ID,
            call_id=call_id,
            workspace=self.workspace,
            progress=self._progress_fn(session),
        )
        call = ToolCall(call_id, name, arguments)
        try:
            return await registry.execute(call, tool_ctx, self.timeout_s)
        finally:
            tool = registry.get(name)
            if tool is not None and tool.safety is SafetyClass.MOTION:
                await self._robot_state()

    async def _robot_state(self) -> None:
        if self.state_provider is None or self.bus is None:
            return
        try:
            state = await wait_within(self.state_provider(), 2.0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("could not read the robot state: %r", exc)
            return
        self._events.emit(EventType.ROBOT_STATE, TASK_ID, **state)

    def _emit_result(self, call_id: str, name: str, result: ToolResult) -> None:
        fields = tool_result_event(call_id, name, result, self.lang)
        self._events.emit(EventType.TOOL_RESULT, TASK_ID, **fields)

    def _progress_fn(self, session: Any) -> Callable[[str], None]:
        """Tool progress as ``notifications/progress`` (when the client asked for them)."""
        count = itertools.count(1)
        report = getattr(session, "report_progress", None)

        def progress(text: str) -> None:
            if report is None:
                return
            fut = asyncio.ensure_future(report(float(next(count)), None, text))
            self._background.add(fut)
            fut.add_done_callback(self._progress_sent)

        return progress

    def _progress_sent(self, fut: asyncio.Future[Any]) -> None:
        self._background.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.debug("progress notification failed: %r", fut.exception())

    def initialization_options(self) -> Any:
        """The SDK's initialization options (tools capability)."""
        return self.server.create_initialization_options(NotificationOptions())

    async def serve_stdio(self, stdout: TextIO | None = None) -> None:
        """Serve one client over stdin and ``stdout`` (default: this process's) until it
        closes its side."""
        out = anyio.wrap_file(stdout) if stdout is not None else None
        async with stdio_server(stdout=out) as (read, write):
            await self.server.run(read, write, self.initialization_options())
