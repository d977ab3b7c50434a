"""Agent side of the output-node protocol: tools discovered from heartbeats (SPEC C2, C4).

:class:`ToolDiscovery` watches ``/<agent>/output/*/info``. A valid heartbeat adds a
:class:`RemoteTool` proxy to the agent's live :class:`~loopact.tools.registry.ToolRegistry`;
a node silent for 3 s is dropped (its running calls fail at once), and so is one whose
heartbeat topic carries an empty message (the node left: over MQTT, its cleared retained
heartbeat or its last will, :mod:`loopact.nodes.mqtt.connector`). When a node restarts (a new
``instance`` id after the old one went quiet) the proxy switches to it and the transport's
client for the endpoint is recreated, so a restarted node never stays "not found". Two nodes
beating with one name at the same time are a conflict: the first stays, the conflict is
reported once. Every finding is an event on the bus (``node_added``, ``node_removed``,
``node_restarted``, ``node_conflict``, ``node_error``) and a log line; nothing here raises
into the agent.

A heartbeat is bounded as an MCP server's tools are (:mod:`loopact.tools.limits`; issue 39
item 12): its description is cut, a parameter schema too large for every request is not
offered, nor are a node process's tools past :data:`~loopact.tools.limits.MAX_TOOLS_PER_SOURCE`
or the nodes' tools past :data:`~loopact.tools.limits.MAX_NODE_TOOLS`, each with a
``node_error`` that says why.

A node's heartbeat says which safety class its tool has, but anyone on the graph can start a
node and say anything (issue 21 item 13). The class a remote tool gets is the operator's
(:class:`NodeTrust`, config ``nodes.trust`` / ``nodes.safety``): a class granted for the
node's name; the announced class only for a node the operator trusts; otherwise ``write``,
so every call of an unknown node needs a person's confirmation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from loopact._compat import wait_within
from loopact.errors import NodeError, ProtocolError
from loopact.events import EventBus, EventType
from loopact.llm.messages import Image
from loopact.nodes.connector import CallHandle, Connector, Payload
from loopact.nodes.heartbeat import HeartbeatWatch
from loopact.nodes.protocol import (
    DEFAULT_AGENT_NAME,
    DROP_AFTER_S,
    HEARTBEAT_PERIOD_S,
    OutputInfo,
    decode_result,
    name_from_topic,
    output_endpoint,
)
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, UntrustedSource
from loopact.tools.limits import (
    MAX_NODE_TOOLS,
    MAX_TOOLS_PER_SOURCE,
    bounded_examples,
    schema_refusal,
    short_description,
)
from loopact.tools.registry import ToolRegistry
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)

_CONFLICT_WINDOW_S = 3 * HEARTBEAT_PERIOD_S
"""Two instances both heard within this many seconds are two live nodes (a conflict)."""


@dataclass(frozen=True)
class NodeTrust:
    """The operator's trust in output nodes: which safety class a remote tool gets (C5).

    Attributes:
        trusted: Node (tool) names, ``fnmatch`` patterns allowed (``lab_*``, ``*``), whose
            announced safety class is used.
        grants: Node name (or pattern) -> the class the operator grants it, whatever it
            announces; an exact name beats a pattern.
        default: The class of every other node's tool.
    """

    trusted: tuple[str, ...] = ()
    grants: Mapping[str, SafetyClass] = field(default_factory=dict)
    default: SafetyClass = SafetyClass.WRITE

    def safety_for(self, name: str, announced: SafetyClass) -> SafetyClass:
        """The class the tool ``name`` gets when its node announces ``announced``."""
        if name in self.grants:
            return self.grants[name]
        for pattern, granted in self.grants.items():
            if fnmatchcase(name, pattern):
                return granted
        if any(fnmatchcase(name, pattern) for pattern in self.trusted):
            return announced
        return self.default

    def decides(self, name: str) -> bool:
        """Whether the operator trusts the node ``name`` or grants it a class."""
        return name in self.grants or any(
            fnmatchcase(name, pattern) for pattern in (*self.grants, *self.trusted)
        )


class RemoteTool(Tool):
    """A proxy for a tool served by an output node (SPEC C2).

    Calls go to the node's execute interface; one at a time unless the node says it is
    re-entrant; a call is cancelled on the node at its timeout (``timeout_s`` plus a grace
    period) or when the agent cancels it; a call fails at once if the node disappears.

    Args:
        info: The node's heartbeat.
        connector: The transport.
        endpoint: The node's execute interface.
        safety: The class the operator gives the tool (:class:`NodeTrust`); None: the
            announced one.
        gate: The image gate the images of its results pass (SPEC G1); None: a new one.
    """

    def __init__(
        self,
        info: OutputInfo,
        connector: Connector,
        endpoint: str,
        safety: SafetyClass | None = None,
        gate: ImageGate | None = None,
    ) -> None:
        self.gate = gate or ImageGate()
        self.connector = connector
        self.endpoint = endpoint
        self.info = info
        self.name = info.name
        self.description = info.description
        self.parameters = info.parameters
        self.safety = info.safety if safety is None else safety
        self.reentrant = info.reentrant
        self.timeout_s = info.timeout_s
        self.examples = info.examples
        self.directions = dict(info.directions)
        self._lock = asyncio.Lock()
        self._lost: asyncio.Event = asyncio.Event()
        self._lost_reason = ""
        self.calls = 0

    def mark_lost(self, reason: str) -> None:
        """Fail running calls now (the node stopped beating or restarted)."""
        self._lost_reason = reason
        self._lost.set()

    def _revive(self) -> None:
        self._lost = asyncio.Event()
        self._lost_reason = ""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call the node; see the class docstring. Never raises except on cancellation."""
        if self.reentrant:
            return await self._call(arguments, ctx)
        async with self._lock:
            return await self._call(arguments, ctx)

    async def _start(
        self, arguments: dict[str, Any], ctx: ToolContext, timeout: float, lost: asyncio.Event
    ) -> CallHandle | ToolResult:
        """Send the call and wait for the node to take it, or for the node to be lost.

        A node killed after it received the call but before its ``accepted`` reached the
        agent is reported as gone during the call (its last will or its missed heartbeats
        arrive first), not as "no node serves" after the connect timeout.
        """
        start_task = asyncio.ensure_future(
            self.connector.start_call(
                self.endpoint,
                json.dumps(arguments, ensure_ascii=False),
                timeout,
                ctx.progress,
                instance=self.info.instance,
            )
        )
        lost_task = asyncio.ensure_future(lost.wait())
        try:
            await asyncio.wait({start_task, lost_task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            start_task.cancel()
            lost_task.cancel()
            raise
        lost_task.cancel()
        if not start_task.done():
            start_task.cancel()  # the connector sends the node a cancel on the way out
            with contextlib.suppress(asyncio.CancelledError, NodeError):
                await start_task
            return ToolResult.failure(
                f"node {self.name} stopped responding during the call ({self._lost_reason})"
            )
        try:
            return start_task.result()
        except NodeError as exc:
            return ToolResult.failure(f"node {self.name}: {exc}")

    async def _call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls += 1
        timeout = self.timeout_s or 30.0
        lost = self._lost
        handle = await self._start(arguments, ctx, timeout, lost)
        if isinstance(handle, ToolResult):
            return handle
        result_task = asyncio.ensure_future(handle.result())
        lost_task = asyncio.ensure_future(lost.wait())
        try:
            done, _ = await asyncio.wait(
                {result_task, lost_task},
                timeout=timeout + 1.0,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            await _cancel_quietly(handle, result_task, lost_task)
            raise
        if result_task in done:
            lost_task.cancel()
            try:
                reply = result_task.result()
            except NodeError as exc:
                return ToolResult.failure(f"node {self.name}: {exc}")
            if reply.cancelled:
                return ToolResult.failure(f"node {self.name}: the call was cancelled")
            result = decode_result(reply.output_json, reply.exit_code, node=f"node {self.name}")
            if result.images:  # decoding is blocking work (and bounded by the gate)
                result = await asyncio.to_thread(gated_images, result, self.gate)
            return result
        await _cancel_quietly(handle, result_task, lost_task)
        if lost_task in done:
            return ToolResult.failure(
                f"node {self.name} stopped responding during the call ({self._lost_reason})"
            )
        return ToolResult.failure(
            f"node {self.name} did not answer within {timeout:g} s; the call was cancelled"
        )


async def _cancel_quietly(handle: CallHandle, *tasks: asyncio.Future[Any]) -> None:
    for task in tasks:
        task.cancel()
    with contextlib.suppress(Exception):
        await wait_within(asyncio.shield(handle.cancel()), 1.0)


@dataclass
class _Entry:
    tool: RemoteTool
    instance: str
    last_s: float
    text: str = ""
    contender: str | None = None
    contender_first_s: float = 0.0
    contender_last_s: float = 0.0
    conflict_reported: bool = False


def gated_images(result: ToolResult, gate: ImageGate) -> ToolResult:
    """``result`` with its images through ``gate`` (SPEC G1; issue 21 item 10): a node on the
    graph may send any image, a tiny PNG of 9000x9000 pixels included. A JPEG no larger
    than the gate's output (what a loopact node sends) passes as it is; anything else is
    decoded within the gate's bounds and re-encoded, or dropped with the gate's reason in
    ``metadata.image_errors``."""
    kept: list[Image] = []
    errors: list[str] = []
    for image in result.images:
        side = max(image.width_px, image.height_px)
        if image.media_type == "image/jpeg" and 0 < side <= gate.max_side_px:
            kept.append(image)
            continue
        out = gate.process(image.data)
        if out.image is None:
            errors.append(out.error or "not an image")
        else:
            kept.append(out.image)
    metadata = {**result.metadata, "image_errors": errors} if errors else result.metadata
    return dataclasses.replace(result, images=tuple(kept), metadata=metadata)


class ToolDiscovery(HeartbeatWatch):
    """Discover output nodes and keep the registry in step (SPEC C2).

    Args:
        connector: The transport the nodes use.
        registry: The agent's live tool registry (``agent.registry``).
        agent: The agent name (topic prefix).
        bus: Where to emit ``node_*`` events (None: log only).
        drop_after_s: Heartbeat silence after which a tool is dropped, seconds.
        trust: Which safety class each node's tool gets; None: ``write`` for every node
            (:class:`NodeTrust`, issue 21).
        gate: The image gate of the images in every node's results (SPEC G1); None: one
            with the default limits.
    """

    _kind = "output"
    _logger = logger
    _error_log = "node on %s: %s"
    _check_failed_log = "discovery check failed"
    _reaper_name = "loopact-discovery-reaper"
    _reap_period_s = 0.1

    def __init__(
        self,
        connector: Connector,
        registry: ToolRegistry,
        agent: str = DEFAULT_AGENT_NAME,
        bus: EventBus | None = None,
        drop_after_s: float = DROP_AFTER_S,
        trust: NodeTrust | None = None,
        gate: ImageGate | None = None,
    ) -> None:
        super().__init__(connector, agent, bus, drop_after_s)
        self.registry = registry
        self.trust = trust or NodeTrust()
        # one for every node's results: bounded concurrent decodes (SPEC G1: the run's limits)
        self.gate = gate or ImageGate()
        self.tools: dict[str, _Entry] = {}
        self._rejected: dict[str, str] = {}  # topic -> a heartbeat refused for its content

    def _release(self) -> None:
        """Remove every discovered tool from the registry (on :meth:`stop`)."""
        for name in list(self.tools):
            self._drop(name, "discovery stopped")

    def _on_heartbeat(self, topic: str, payload: Payload) -> None:
        name = name_from_topic(topic, self.prefix, "/info")
        if payload == "":  # an empty heartbeat: the node left (MQTT: its last will)
            self._drop(name, "the node went offline")
            return
        if not isinstance(payload, str):
            self._report_error(topic, "heartbeat is not a string message")
            return
        entry = self.tools.get(name)
        if entry is not None and entry.text == payload:
            entry.last_s = time.monotonic()  # the same heartbeat again (every 0.5 s per node)
            return
        if self._rejected.get(topic) == payload:
            return  # refused already for what it says: not parsed again every 0.5 s
        try:
            info = self._bounded(OutputInfo.parse(payload, expected_name=name))
        except ProtocolError as exc:
            if len(self._rejected) >= 1024:
                self._rejected.clear()
            self._rejected[topic] = payload
            self._report_error(topic, f"invalid heartbeat, tool not offered: {exc}")
            return
        self._rejected.pop(topic, None)
        try:
            self._accept(topic, info)
            accepted = self.tools.get(name)
            if accepted is not None and accepted.instance == info.instance:
                accepted.text = payload
        except Exception as exc:  # never let a heartbeat break the agent
            logger.exception("discovery failed on %s", topic)
            self._report_error(topic, f"could not add the tool: {exc}")

    @staticmethod
    def _bounded(info: OutputInfo) -> OutputInfo:
        """``info`` within :mod:`loopact.tools.limits`: description cut, examples bounded.

        Raises:
            ProtocolError: Its parameter schema is too large to offer.
        """
        why = schema_refusal(info.parameters)
        if why is not None:
            raise ProtocolError(why)
        description = short_description(info.description, info.name.replace("_", " "))
        examples = bounded_examples(info.examples)
        if description != info.description or examples != info.examples:
            logger.info(
                "tool %s: heartbeat cut (%d description characters, %d examples announced)",
                info.name,
                len(info.description),
                len(info.examples),
            )
            info = dataclasses.replace(info, description=description, examples=examples)
        return info

    def _room_for(self, info: OutputInfo) -> str | None:
        """Why a new tool of ``info``'s node is not offered (too many tools), or None."""
        if len(self.tools) >= MAX_NODE_TOOLS:
            return (
                f"nodes already offer {len(self.tools)} tools, the most the agent offers "
                "from nodes (every model request carries every tool)"
            )
        same = sum(1 for e in self.tools.values() if e.instance == info.instance)
        if same >= MAX_TOOLS_PER_SOURCE:
            return (
                f"its node (instance {info.instance!r}) already offers {same} tools, the most "
                "one node may (every model request carries every tool)"
            )
        return None

    def _accept(self, topic: str, info: OutputInfo) -> None:
        now = time.monotonic()
        entry = self.tools.get(info.name)
        if entry is None:
            if info.name in self.registry:
                self._report_error(
                    topic,
                    f"a tool named {info.name!r} already exists in the agent; the node's tool "
                    "is not offered (rename it)",
                )
                return
            full = self._room_for(info)
            if full is not None:
                self._report_error(topic, f"tool {info.name} not offered: {full}")
                return
            tool = self._proxy(info, output_endpoint(self.agent, info.name))
            try:
                self.registry.add(tool)
            except ValueError as exc:
                self._report_error(topic, f"tool not offered: {exc}")
                return
            self._errors.pop(topic, None)
            self.tools[info.name] = _Entry(tool, info.instance, now)
            logger.info("discovered tool %s (%s)", info.name, tool.safety.value)
            self._emit(
                EventType.NODE_ADDED,
                name=info.name,
                kind="output",
                safety=tool.safety.value,
                announced=info.safety.value,
                instance=info.instance,
            )
            return
        if info.instance == entry.instance:
            entry.last_s = now
            if info != entry.tool.info:
                self._update(entry, info)
            return
        # Another instance beats on the same name: a restart or a conflict.
        if entry.contender != info.instance:
            entry.contender = info.instance
            entry.contender_first_s = now
        entry.contender_last_s = now
        if now - entry.last_s > _CONFLICT_WINDOW_S:
            self._switch(entry, info)
        elif now - entry.contender_first_s > _CONFLICT_WINDOW_S and not entry.conflict_reported:
            entry.conflict_reported = True
            message = (
                f"two nodes claim the tool name {info.name!r} (instances {entry.instance} and "
                f"{info.instance}); the first stays, the second is ignored"
            )
            logger.warning("%s", message)
            self._emit(
                EventType.NODE_CONFLICT, name=info.name, kept=entry.instance, ignored=info.instance
            )

    def _update(self, entry: _Entry, info: OutputInfo) -> None:
        """Same node, new schema: re-register so the validator matches."""
        self.registry.remove(info.name)
        tool = self._proxy(info, entry.tool.endpoint)
        try:
            self.registry.add(tool)
        except ValueError as exc:
            self.registry.add(entry.tool)
            self._report_error(output_endpoint(self.agent, info.name), f"update refused: {exc}")
            return
        entry.tool = tool

    def _proxy(self, info: OutputInfo, endpoint: str) -> RemoteTool:
        """The registry's proxy for a node, with the class the operator gives it."""
        safety = self.trust.safety_for(info.name, info.safety)
        if safety is not info.safety:
            logger.info(
                "tool %s announces %s; it gets %s (nodes.trust / nodes.safety)",
                info.name,
                info.safety.value,
                safety.value,
            )
        tool = RemoteTool(info, self.connector, endpoint, safety, self.gate)
        if safety is SafetyClass.WRITE and not self.trust.decides(info.name):
            # write because nobody trusts the node: the refusal says so (issue 21)
            tool.untrusted_source = UntrustedSource("node", info.name, info.name)
        return tool

    def _switch(self, entry: _Entry, info: OutputInfo) -> None:
        """The first node went quiet and a new instance beats: it restarted."""
        old = entry.instance
        entry.tool.mark_lost(f"the node restarted (instance {old} -> {info.instance})")
        self.connector.forget_endpoint(entry.tool.endpoint)
        if info != entry.tool.info:
            self._update(entry, info)
        entry.tool._revive()
        entry.instance = info.instance
        entry.last_s = entry.contender_last_s
        entry.contender = None
        entry.conflict_reported = False
        logger.info("tool %s: node restarted", info.name)
        self._emit(EventType.NODE_RESTARTED, name=info.name, instance=info.instance, previous=old)

    def _drop(self, name: str, reason: str) -> None:
        entry = self.tools.pop(name, None)
        if entry is None:
            return
        entry.tool.mark_lost(reason)
        self.connector.forget_endpoint(entry.tool.endpoint)
        if self.registry.get(name) is entry.tool:
            self.registry.remove(name)
        self._errors.pop(f"{self.prefix}{name}/info", None)
        logger.info("dropped tool %s: %s", name, reason)
        self._emit(EventType.NODE_REMOVED, name=name, kind="output", reason=reason)

    def check(self, now: float | None = None) -> None:
        """Drop tools silent for ``drop_after_s`` (called periodically; public for tests)."""
        now = time.monotonic() if now is None else now
        for name, entry in list(self.tools.items()):
            silent = now - entry.last_s
            if silent > self.drop_after_s:
                self._drop(name, f"no heartbeat for {silent:.1f} s")
