"""The emergency stop for the operator's MCP client (``loopact mcp``; issue 41, SPEC X3).

``loopact mcp`` serves two tools next to the agent's when it has a robot:

- ``emergency_stop(reason?)`` latches the robot's emergency stop (source ``mcp``): every
  motion ends at once and is refused until an operator resets it;
- ``emergency_stop_state()`` says whether it is latched, by whom, and the nonce a reset
  must prove against.

Neither is ever in the agent's own registry (the model that drives the robot cannot call
them), and no reset is served over MCP: releasing the stop needs the operator's proof of the
reset secret, given on the terminal (``/estop reset PROOF``), the web console
(``POST /api/estop/reset``) or ``loopact estop reset`` (docs/operator.md).
"""

from __future__ import annotations

from typing import Any

from loopact.robot.panel import OperatorPanel
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult

MAX_REASON_CHARS = 200


class EmergencyStopTool(Tool):
    """``emergency_stop(reason?)``: latch the robot's emergency stop from the MCP client."""

    name = "emergency_stop"
    description = (
        "Latch the robot's emergency stop: the base and head stop at once and every motion is "
        "refused until a human operator resets it with their secret (not possible over MCP)."
    )
    parameters = {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why, for the operator's log."}},
        "additionalProperties": False,
    }
    safety = SafetyClass.IDEMPOTENT
    reentrant = True
    timeout_s = 5.0

    def __init__(self, panel: OperatorPanel) -> None:
        self.panel = panel

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Latch; the state afterwards is ``data``."""
        reason = str(arguments.get("reason") or "")[:MAX_REASON_CHARS]
        state = await self.panel.latch("mcp", reason)
        return ToolResult(ok=bool(state.get("latched")), data=state)


class EmergencyStopStateTool(Tool):
    """``emergency_stop_state()``: the latch, for the MCP client."""

    name = "emergency_stop_state"
    description = (
        "Whether the robot's emergency stop is latched, who latched it and why, and the nonce "
        "an operator's reset proof must be computed over."
    )
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    safety = SafetyClass.READ_ONLY
    reentrant = True
    timeout_s = 5.0

    def __init__(self, panel: OperatorPanel) -> None:
        self.panel = panel

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The panel's state."""
        return ToolResult(ok=True, data=self.panel.state())


def estop_tools(panel: OperatorPanel | None) -> list[Tool]:
    """The MCP-only e-stop tools for ``panel`` (none without a robot)."""
    if panel is None:
        return []
    return [EmergencyStopTool(panel), EmergencyStopStateTool(panel)]
