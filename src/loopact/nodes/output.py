"""An output node: one tool served over a connector (SPEC C2, C4, X4).

Written once, it runs in-process (:class:`~loopact.nodes.local.LocalConnector`) or as a ROS 2
node (:class:`~loopact.nodes.ros2.Ros2Connector`)::

    node = OutputNode(my_tool, connector, agent="loopact")
    await node.start()      # heartbeat every 0.5 s, serves /loopact/output/my_tool
    ...
    await node.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from pathlib import Path

from loopact._compat import wait_within
from loopact.nodes.connector import CallReply, Connector, ProgressFn, Subscription
from loopact.nodes.protocol import (
    DEFAULT_AGENT_NAME,
    HEARTBEAT_PERIOD_S,
    OutputInfo,
    check_agent_name,
    check_name,
    encode_result,
    output_endpoint,
    output_info_topic,
)
from loopact.tools.base import Tool, ToolContext, ToolResult

logger = logging.getLogger(__name__)


def new_instance_id() -> str:
    """A fresh id for one run of a node (changes on restart)."""
    return uuid.uuid4().hex[:12]


class OutputNode:
    """Serve ``tool`` as an output node.

    Args:
        tool: The tool (e.g. a ``@loopact.tool`` function).
        connector: The transport.
        agent: The agent name (topic prefix).
        workspace: Folder given to tools that take a :class:`ToolContext`.
        heartbeat_period_s: Seconds between heartbeats.
        default_timeout_s: Announced timeout for a tool without its own, seconds.

    Raises:
        ProtocolError: The tool or agent name is not a valid topic segment.
    """

    def __init__(
        self,
        tool: Tool,
        connector: Connector,
        agent: str = DEFAULT_AGENT_NAME,
        workspace: Path | None = None,
        heartbeat_period_s: float = HEARTBEAT_PERIOD_S,
        default_timeout_s: float = 30.0,
    ) -> None:
        check_name(tool.name, "tool name")
        check_agent_name(agent)
        self.tool = tool
        self.connector = connector
        self.agent = agent
        self.workspace = workspace or Path.cwd()
        self.period_s = heartbeat_period_s
        self.instance = new_instance_id()
        self.info = OutputInfo.from_tool(tool, self.instance, default_timeout_s)
        self.calls = 0
        self._heartbeat: asyncio.Task[None] | None = None
        self._served: Subscription | None = None

    @property
    def info_topic(self) -> str:
        """``/<agent>/output/<name>/info``."""
        return output_info_topic(self.agent, self.tool.name)

    @property
    def endpoint(self) -> str:
        """``/<agent>/output/<name>``."""
        return output_endpoint(self.agent, self.tool.name)

    async def start(self) -> None:
        """Serve the execute interface, then start the heartbeat."""
        await self.connector.start()
        self._served = self.connector.serve(self.endpoint, self._handle, instance=self.instance)
        self._heartbeat = asyncio.get_running_loop().create_task(
            self._beat(), name=f"loopact-heartbeat-{self.tool.name}"
        )

    async def stop(self) -> None:
        """Stop the heartbeat and the server (the agent drops the tool after 3 s)."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None
        if self._served is not None:
            self._served.close()
            self._served = None

    async def _beat(self) -> None:
        text = self.info.to_json()
        while True:
            try:
                await self.connector.publish(self.info_topic, text, latched=True)
            except Exception as exc:  # the transport hiccupped; keep beating
                logger.warning("heartbeat of %s failed: %s", self.tool.name, exc)
            await asyncio.sleep(self.period_s)

    async def _handle(self, input_json: str, timeout_s: float, progress: ProgressFn) -> CallReply:
        """Run one call; never raises except on cancellation."""
        self.calls += 1
        result = await self.execute(input_json, timeout_s, progress)
        output_json, code = encode_result(result)
        return CallReply(output_json, code)

    async def execute(self, input_json: str, timeout_s: float, progress: ProgressFn) -> ToolResult:
        """Parse, validate and run one call within its timeout (seconds; <= 0: the tool's)."""
        try:
            args = json.loads(input_json) if input_json.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolResult.failure(f"input_json is not JSON: {exc}")
        if not isinstance(args, dict):
            return ToolResult.failure("input_json must be a JSON object of arguments")
        limit = timeout_s if timeout_s > 0 else self.info.timeout_s
        ctx = ToolContext(
            task_id="remote",
            call_id=f"{self.tool.name}-{self.calls}",
            workspace=self.workspace,
            progress=progress,
        )
        try:
            return await wait_within(self.tool.invoke(args, ctx), limit)
        except asyncio.TimeoutError:
            return ToolResult.failure(f"{self.tool.name} timed out after {limit:g} s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.info("tool %s failed: %r", self.tool.name, exc)
            return ToolResult.failure(f"{type(exc).__name__}: {exc}")
