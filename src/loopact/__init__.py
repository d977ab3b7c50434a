"""loopact: a runtime for multimodal autonomous agents that act in the physical world.

An LLM thinks, plans and calls tools in a bounded, preemptible loop; the tools move a robot,
read its camera and sensors, and talk to people. Nothing happens at import time.
"""

from loopact._version import __version__
from loopact.agent import Agent, AgentOptions, Bounds, TaskOutcome
from loopact.errors import (
    ConfigError,
    LoopactError,
    ModelError,
    RobotError,
    SafetyError,
    ToolError,
)
from loopact.events import Event, EventBus
from loopact.llm.messages import Image, Message, ToolCall
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool

__all__ = [
    "Agent",
    "AgentOptions",
    "Bounds",
    "ConfigError",
    "Event",
    "EventBus",
    "Image",
    "LoopactError",
    "Message",
    "ModelError",
    "RobotError",
    "SafetyClass",
    "SafetyError",
    "TaskOutcome",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "__version__",
    "tool",
]
