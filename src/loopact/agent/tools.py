"""The agent's own tools: ``agent_call`` (plan and run, SPEC A4) and ``send_message`` (A7)."""

from __future__ import annotations

from typing import Any

from loopact.agent.runtime import Agent
from loopact.errors import TaskFailed, ToolError
from loopact.tools.base import FunctionTool, SafetyClass, Tool, ToolContext, ToolResult


class AgentCallTool(Tool):
    """``agent_call(task)``: plan a complex request as JSON steps and run them (SPEC A4).

    In task mode the model calls it when one request needs several tools in a fixed order
    whose outputs feed each other. Its steps go through the same guards, confirmations and
    safety as direct calls. It counts as state-changing (its steps may move or write).

    Args:
        agent: The agent whose current task runs the plan.
    """

    name = "agent_call"
    description = (
        "Plan and run a multi-step task: give the whole task in words; it is split into "
        "tool steps that pass data to each other, run in order, and summarised."
    )
    parameters = {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "The whole task, in words."}},
        "required": ["task"],
        "additionalProperties": False,
    }
    safety = SafetyClass.MOTION

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.timeout_s = agent.options.bounds.task_timeout_s

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Plan and run ``arguments["task"]``; the result's data is the plan's summary."""
        run = self.agent.current_run
        if run is None:
            return ToolResult.failure("agent_call only works inside a task")
        specs = tuple(s for s in self.agent.tool_specs() if s.name != self.name)
        try:
            outcome = await run.run_plan_for(str(arguments["task"]), specs)
        except TaskFailed as exc:
            return ToolResult.failure(str(exc))
        return ToolResult(
            ok=outcome.ok,
            data=outcome.summary(),
            metadata={"files": list(outcome.files)},
            error=None if outcome.ok else outcome.summary(),
        )


def make_send_message_tool(agent: Agent) -> Tool:
    """``send_message(text)``: how the agent talks to people in continuous mode (A7, C6).

    Emits a ``message {text, source: "agent"}`` event that every channel shows (terminal,
    web, ROS 2 text output) and the trace records.
    """

    async def send_message(text: str, ctx: ToolContext) -> str:
        """Send a message to the people you work with (acknowledge, ask, report).

        Args:
            text: The message, short and plain.
        """
        if not text.strip():
            raise ToolError("send_message needs some text")
        agent.bus.emit("message", ctx.task_id, text=text, source="agent")
        return "delivered"

    return FunctionTool(send_message, safety=SafetyClass.IDEMPOTENT, reentrant=True)
