"""The agent loop: inbox, tasks, bounds, preemption (SPEC A1-A3, A6, A8)."""

from loopact.agent.options import AgentOptions, Bounds
from loopact.agent.runtime import Agent, is_stop
from loopact.agent.task import TaskOutcome

__all__ = ["Agent", "AgentOptions", "Bounds", "TaskOutcome", "is_stop"]
