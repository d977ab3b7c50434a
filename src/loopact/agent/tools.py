"""The agent's own tools: ``agent_call`` (plan and run, SPEC A4), ``send_message`` (A7) and its
alias ``say`` (continuous mode; spoken on a voice channel, issue 41)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopact.agent.runtime import Agent
from loopact.errors import TaskFailed
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult
from loopact.tools.builtin.messages import ConsoleChannel, MessageChannel
from loopact.tools.builtin.messages import make_send_message_tool as build_send_message_tool


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


def make_send_message_tool(agent: Agent, channels: Sequence[MessageChannel] = ()) -> Tool:
    """``send_message(channel, to, text)``: how the agent talks to people (A7, C6).

    The ``console`` channel (the default, so ``send_message(text)`` works as it always has)
    emits a ``message {text, source: "agent"}`` event that every channel shows (terminal,
    web, ROS 2 text output) and the trace records; ``channels`` adds the configured ones
    (email, ROS 2 topic, MQTT; see :mod:`loopact.tools.builtin.messages`).

    Args:
        agent: The agent whose event bus the console channel emits on.
        channels: Further channels, each with its recipient allow-list.

    Raises:
        ValueError: Two channels share a name.
    """
    return build_send_message_tool([ConsoleChannel(agent.bus), *channels])


class SayTool(Tool):
    """``say(text)``: ``send_message(text)`` to the people watching the agent (SPEC A7; issue
    41): a ``message`` event every channel shows and a voice channel speaks (with barge-in).

    Args:
        agent: The agent whose event bus the message goes on.
    """

    name = "say"
    description = "Say something to the people around the robot (spoken when there is a voice)."
    parameters = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to say, short and plain."}},
        "required": ["text"],
        "additionalProperties": False,
    }
    safety = SafetyClass.IDEMPOTENT
    reentrant = True
    timeout_s = 5.0

    def __init__(self, agent: Agent) -> None:
        self.channel = ConsoleChannel(agent.bus)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Emit the message."""
        text = str(arguments.get("text", "")).strip()
        if not text:
            return ToolResult.failure("say needs some text")
        return ToolResult(ok=True, data=await self.channel.deliver(None, text, ctx))
