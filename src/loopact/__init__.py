"""loopact: a runtime for multimodal autonomous agents that act in the physical world.

An LLM thinks, plans and calls tools in a bounded, preemptible loop; the tools move a robot,
read its camera and sensors, and talk to people. Nothing happens at import time.

Everything a script needs is exported here and listed in ``__all__`` (docs/python-api.md):
a model (``OpenAIChatModel``, ``AnthropicModel``, ``DifyModel`` or your own ``Model``), tools
(``@tool``, ``ToolRegistry``), a robot (``open_robot``), an ``Agent`` and its ``Event``s. The
providers and the robot are imported on first use, so that ``import loopact`` stays light.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from loopact._version import __version__
from loopact.agent import Agent, AgentOptions, Bounds, TaskOutcome
from loopact.agent.context import ContextManager
from loopact.errors import (
    ConfigError,
    EmergencyStopError,
    LoopactError,
    ModelError,
    ModelFatalError,
    ModelRefused,
    ModelRetryableError,
    RobotError,
    SafetyError,
    ToolArgumentError,
    ToolError,
)
from loopact.events import Event, EventBus
from loopact.llm.base import (
    Capabilities,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamProgress,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolSpec,
)
from loopact.llm.messages import Image, Message, ToolCall, Usage
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.tools.registry import ToolRegistry

if _TYPE_CHECKING:
    from loopact.app.robot import open_robot
    from loopact.llm.anthropic import AnthropicModel
    from loopact.llm.dify import DifyModel
    from loopact.llm.openai_chat import OpenAIChatModel
    from loopact.llm.small_model import SmallModelPolicy
    from loopact.robot.session import RobotSession

_LAZY = {
    "AnthropicModel": "loopact.llm.anthropic",
    "DifyModel": "loopact.llm.dify",
    "OpenAIChatModel": "loopact.llm.openai_chat",
    "RobotSession": "loopact.robot.session",
    "SmallModelPolicy": "loopact.llm.small_model",
    "open_robot": "loopact.app.robot",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopact' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Agent",
    "AgentOptions",
    "AnthropicModel",
    "Bounds",
    "Capabilities",
    "ConfigError",
    "ContextManager",
    "DifyModel",
    "EmergencyStopError",
    "Event",
    "EventBus",
    "Image",
    "LoopactError",
    "Message",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelFatalError",
    "ModelRefused",
    "ModelRequest",
    "ModelRetryableError",
    "OpenAIChatModel",
    "ReasoningDelta",
    "ResponseDone",
    "RobotError",
    "RobotSession",
    "SafetyClass",
    "SafetyError",
    "SmallModelPolicy",
    "StreamProgress",
    "TaskOutcome",
    "TextDelta",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "__version__",
    "open_robot",
    "tool",
]
