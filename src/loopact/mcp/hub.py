"""MCP servers' tools as hot-pluggable outputs of the agent (SPEC C8, C2, C5, B8; issue 18).

:class:`McpHub` starts one supervised :class:`~loopact.mcp.client.McpServerLink` per entry
of ``mcp.servers`` and keeps the agent's live :class:`~loopact.tools.registry.ToolRegistry`
in step with what each server offers: a tool appears as an :class:`McpTool` next to the
other tools (prefixed with its server's name when its own name is taken), disappears when
its server drops it or is lost, and is re-registered when its schema or safety class
changes. Not offered, with the reason reported once: a tool that can only run as an MCP
task (``execution.taskSupport: "required"``, :data:`TASKS_REQUIRED`); a tool whose schema
is not valid JSON Schema, refers outside itself, is larger than
:data:`~loopact.mcp.convert.MAX_SCHEMA_CHARS` or has a top-level combiner no model API
accepts in any form (:mod:`loopact.mcp.schemas`); a server's tools past the first
:data:`~loopact.mcp.convert.MAX_TOOLS_PER_SERVER`. A tool whose schema has a top-level
``oneOf``/``anyOf``/``allOf`` is offered rewritten
(:func:`~loopact.mcp.schemas.offered_schema`) and its calls checked against the original.
Everything the hub finds becomes an event on the bus:

- ``mcp_server`` (``name``, ``transport``, ``state``, ``detail``, ``restarts``, ``delay_s``,
  ``protocol``) on each state change of a server;
- ``node_added`` / ``node_removed`` (``kind: "mcp"``, ``server``, ``remote_name``,
  ``safety``) per tool;
- ``node_error`` (``topic: "mcp:<server>/<tool>"``, ``message``) for a tool that cannot be
  offered (``topic: "mcp:<server>"`` for the tools past the limit).

Nothing here raises into the agent.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp.types as mt

from loopact.config import McpServerConfig
from loopact.events import Event, EventBus, EventType
from loopact.llm.base import ToolSpec
from loopact.llm.messages import Image
from loopact.mcp.client import McpServerLink
from loopact.mcp.convert import (
    MAX_SCHEMA_CHARS,
    MAX_TOOLS_PER_SERVER,
    granted_class,
    offered_name,
    safety_of,
    short_description,
    to_tool_result,
)
from loopact.mcp.schemas import Unofferable, offered_schema
from loopact.mcp.status import LinkStatus
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, UntrustedSource
from loopact.tools.registry import ToolRegistry
from loopact.vision.gate import ImageGate

log = logging.getLogger(__name__)

TASKS_REQUIRED = (
    "it requires task-augmented execution (execution.taskSupport: required), and the mcp SDK "
    "loopact uses has no client support for MCP tasks (its 2.x defines their types only; "
    "tasks were dropped from the core protocol in 2026-07-28), so every call would fail"
)
"""Why a tool that only runs as an MCP task is not offered (issue 39 item 7). A tool whose
``taskSupport`` is ``optional`` is offered and called without a task, as the protocol
allows."""


class McpTool(Tool):
    """A tool of an MCP server, offered to the model under :attr:`name` (issue 18).

    Args:
        name: The offered name (the server's name, or prefixed on conflict).
        remote: The tool as the server lists it.
        link: The server's link.
        safety: The class loopact gives it (see :func:`loopact.mcp.convert.safety_of`).
        timeout_s: Per-call timeout in seconds (None: the loop's default).
        gate: The image gate for images in its results.
    """

    reentrant = True

    def __init__(
        self,
        name: str,
        remote: mt.Tool,
        link: McpServerLink,
        safety: SafetyClass,
        timeout_s: float | None,
        gate: ImageGate,
    ) -> None:
        self.name = name
        self.remote = remote
        self.remote_name = remote.name
        self.link = link
        self.description = short_description(
            remote.description or remote.title, f"{remote.name} (MCP server {link.name})"
        )
        self.parameters = dict(remote.input_schema or {"type": "object", "properties": {}})
        self.offered = offered_schema(self.parameters)  # calls are checked with the original
        self.safety = safety
        self.allow_entry = f"mcp:{link.name}/{remote.name}"  # confirm.allow (issue 39)
        self.timeout_s = timeout_s
        self.gate = gate
        cfg = link.cfg
        if (
            safety is SafetyClass.WRITE
            and not cfg.trust
            and granted_class(remote.name, cfg.safety) is None
        ):  # write because nobody trusts the server: the refusal says so (issue 21)
            self.untrusted_source = UntrustedSource("mcp", link.name, remote.name)

    def spec(self) -> ToolSpec:
        """The tool as the model sees it: its schema in the form every model API accepts,
        what a top-level ``oneOf``/``anyOf`` said in its description (issue 39 item 3)."""
        description = f"{self.description} {self.offered.note}".strip()
        return ToolSpec(self.name, description, self.offered.schema, self.examples)

    def same_as(self, remote: mt.Tool, safety: SafetyClass) -> bool:
        """Whether ``remote`` (with ``safety``) is what this proxy already offers."""
        return (
            safety is self.safety
            and remote.description == self.remote.description
            and _schema_key(remote.input_schema) == _schema_key(self.remote.input_schema)
        )

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call the server (the registry's timeout cancels it); failures become results.

        Raises:
            loopact.errors.NodeError: The server is not connected, was lost, did not answer
                in time or sent something unreadable (the registry makes it a failed result).
        """
        timeout = self.timeout_s or 30.0
        result, linked = await self.link.call(self.remote_name, arguments, timeout, ctx.progress)
        return await asyncio.to_thread(
            to_tool_result, result, server=self.link.name, gate=self._gate, linked=linked
        )

    def _gate(self, data: bytes) -> Image | str:
        gated = self.gate.process(data)
        if gated.image is None:
            return gated.error or "not an image"
        return gated.image


@dataclass
class _Offered:
    tool: McpTool
    server: str


class McpHub:
    """Connect the configured MCP servers and offer their tools in ``registry`` (issue 18).

    Args:
        servers: ``mcp.servers`` (disabled entries are skipped).
        registry: The agent's live tool registry.
        bus: Where events go (None: log only).
        default_timeout_s: Call timeout for servers without ``timeout_s``, seconds.
        log_dir: Folder for stdio servers' stderr logs (None: inherit loopact's stderr).
        gate: Image gate for images in results (default :class:`ImageGate`).
        link_options: Passed to every :class:`McpServerLink` (ping and back-off timing).
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        registry: ToolRegistry,
        *,
        bus: EventBus | None = None,
        default_timeout_s: float = 30.0,
        log_dir: Path | None = None,
        gate: ImageGate | None = None,
        **link_options: Any,
    ) -> None:
        self.registry = registry
        self.bus = bus
        self.default_timeout_s = default_timeout_s
        self.gate = gate or ImageGate()
        self.links: dict[str, McpServerLink] = {}
        self._offered: dict[str, _Offered] = {}
        self._refused: set[tuple[str, str, str]] = set()
        for name, cfg in servers.items():
            if cfg.disabled:
                continue
            self.links[name] = McpServerLink(
                name,
                cfg,
                on_tools=self._on_tools,
                on_status=self._on_status,
                log_dir=log_dir,
                **link_options,
            )

    # ------------------------------------------------------------------ lifecycle
    async def start(self, wait: bool = True) -> None:
        """Start every server; with ``wait``, return once each has made its first attempt.

        The first attempt of a server is bounded by its ``connect_timeout_s``; a server that
        fails keeps being retried with back-off (its tools appear when it comes up).
        """
        for link in self.links.values():
            link.start()
        if wait and self.links:
            await asyncio.gather(*(link.wait_first_attempt() for link in self.links.values()))

    async def stop(self) -> None:
        """Close every server (each from its own supervisor task) and drop their tools."""
        await asyncio.gather(*(link.stop() for link in self.links.values()))
        for name in list(self._offered):
            self._remove(name, "MCP hub stopped")

    def status(self) -> list[dict[str, Any]]:
        """``{name, transport, state, detail, restarts, tools}`` per server."""
        return [
            {
                "name": link.name,
                "transport": link.transport,
                "state": link.state.value,
                "detail": link.detail,
                "restarts": link.restarts,
                "tools": self.offered(link.name),
            }
            for link in self.links.values()
        ]

    def offered(self, server: str) -> list[str]:
        """The names under which ``server``'s tools are offered now."""
        return [name for name, o in self._offered.items() if o.server == server]

    # ------------------------------------------------------------------ events
    def _emit(self, type_: EventType, **data: Any) -> None:
        if self.bus is not None:
            self.bus.publish(Event(type_, None, data))

    def _on_status(self, status: LinkStatus) -> None:
        self._emit(EventType.MCP_SERVER, **status.as_dict())

    def _on_tools(self, link: McpServerLink, tools: list[mt.Tool]) -> None:
        """Make the registry offer exactly ``tools`` for ``link``'s server."""
        cfg = link.cfg
        wanted: dict[str, tuple[mt.Tool, SafetyClass]] = {}
        for remote in tools:
            if remote.name in wanted:
                continue
            if len(wanted) == MAX_TOOLS_PER_SERVER:
                self._too_many(link, tools)
                break
            wanted[remote.name] = (remote, safety_of(remote, trusted=cfg.trust, grants=cfg.safety))
        mine = {
            o.tool.remote_name: name for name, o in self._offered.items() if o.server == link.name
        }
        for remote_name, offered in mine.items():
            entry = wanted.get(remote_name)
            tool = self._offered[offered].tool
            if entry is None:
                if link.stopping:
                    reason = "its server was stopped"
                elif not link.connected:
                    reason = f"its server was lost: {link.last_loss}"
                else:
                    reason = "its server removed it"
                self._remove(offered, reason)
            elif not tool.same_as(*entry):
                self._remove(offered, "its server changed it")
        for remote_name, (remote, safety) in wanted.items():
            if any(
                o.server == link.name and o.tool.remote_name == remote_name
                for o in self._offered.values()
            ):
                continue
            self._add(link, remote, safety)

    def _add(self, link: McpServerLink, remote: mt.Tool, safety: SafetyClass) -> None:
        schema = _schema_key(remote.input_schema)
        if remote.execution is not None and remote.execution.task_support == "required":
            self._refuse(link, remote.name, schema, TASKS_REQUIRED)
            return
        if len(schema) > MAX_SCHEMA_CHARS:
            why = (
                f"its inputSchema is {len(schema)} characters of JSON, more than "
                f"{MAX_SCHEMA_CHARS} (every model request would carry it)"
            )
            self._refuse(link, remote.name, schema, why)
            return
        name = offered_name(link.name, remote.name, lambda n: n in self.registry)
        timeout = link.cfg.timeout_s or self.default_timeout_s
        try:
            tool = McpTool(name, remote, link, safety, timeout, self.gate)
            self.registry.add(tool)
        except (ValueError, Unofferable) as exc:
            self._refuse(link, remote.name, schema, str(exc))
            return
        self._offered[name] = _Offered(tool, link.name)
        if safety is SafetyClass.WRITE and remote.annotations and remote.annotations.read_only_hint:
            log.info(
                "MCP tool %s of %s announces read-only; it is a write tool because the server "
                "is not trusted (mcp.servers.%s.trust)",
                remote.name,
                link.name,
                link.name,
            )
        log.info(
            "MCP server %s: offering %s as %s (%s)", link.name, remote.name, name, safety.value
        )
        self._emit(
            EventType.NODE_ADDED,
            name=name,
            kind="mcp",
            server=link.name,
            remote_name=remote.name,
            safety=safety.value,
        )

    def _refuse(self, link: McpServerLink, remote_name: str, key: str, why: str) -> None:
        """Say once (per server, tool and schema) why a tool is not offered: ``node_error``."""
        if (link.name, remote_name, key) in self._refused:
            return
        self._refused.add((link.name, remote_name, key))
        message = f"MCP server {link.name}: tool {remote_name} not offered: {why}"
        log.info("%s", message)  # the node_error event shows it (terminal, trace, console)
        self._emit(EventType.NODE_ERROR, topic=f"mcp:{link.name}/{remote_name}", message=message)

    def _too_many(self, link: McpServerLink, tools: list[mt.Tool]) -> None:
        names = list(dict.fromkeys(t.name for t in tools))
        left = names[MAX_TOOLS_PER_SERVER:]
        key = (link.name, "*", str(len(names)))
        if key in self._refused:
            return
        self._refused.add(key)
        shown = ", ".join(left[:10]) + (", ..." if len(left) > 10 else "")
        message = (
            f"MCP server {link.name} lists {len(names)} tools; loopact offers the first "
            f"{MAX_TOOLS_PER_SERVER} (every model request carries every tool), not: {shown}"
        )
        log.info("%s", message)  # the node_error event shows it (terminal, trace, console)
        self._emit(EventType.NODE_ERROR, topic=f"mcp:{link.name}", message=message)

    def _remove(self, name: str, reason: str) -> None:
        offered = self._offered.pop(name, None)
        if offered is None:
            return
        if self.registry.get(name) is offered.tool:
            self.registry.remove(name)
        log.info("MCP tool %s dropped: %s", name, reason)
        self._emit(
            EventType.NODE_REMOVED, name=name, kind="mcp", server=offered.server, reason=reason
        )


def _schema_key(schema: Any) -> str:
    try:
        return json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(schema)
