"""Issue 41: ``loopact mcp`` serves the emergency stop to the operator's MCP client, end to end
(SPEC X3, C8).

``loopact mcp`` (the simulated robot and its governor) runs as its own process over stdio;
the client is the official MCP SDK's. A served ``move_forward`` runs while the client latches
the stop with ``emergency_stop``; the motion ends at once on the e-stop, every motion after it
is refused, and no tool resets it. Graded by the simulator's pose the server records as
``robot_state`` in its trace after every motion call, never by what a tool result claims.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from tests.mcp.helpers import until
from tests.test_cli import cli_env

from loopact.trace import read_trace

pytestmark = [pytest.mark.sim, pytest.mark.timeout(240)]


def _body(result: mt.CallToolResult) -> dict[str, Any]:
    text = "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
    return json.loads(text)  # type: ignore[no-any-return]


def _states(trace: Path) -> list[dict[str, Any]]:
    if not trace.exists():
        return []
    return [e for e in read_trace(trace) if e["type"] == "robot_state"]


async def test_the_operators_mcp_client_latches_the_estop_of_a_served_robot(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    env = cli_env(tmp_path)
    env.pop("LOOPACT_MCP_TOKEN", None)
    env["LOOPACT_ESTOP_TOKEN"] = "operator-secret-0123456789"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "loopact", "mcp", "--no-web", "--no-memory", "--trace", str(trace),
              "--workspace", str(tmp_path / "ws")],
        env=env,
        cwd=str(tmp_path),
    )  # fmt: skip
    async with Client(params, cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"emergency_stop", "emergency_stop_state", "move_forward"} <= set(tools)
        assert not any("reset" in name for name in tools)  # no release over MCP
        state = _body(await client.call_tool("emergency_stop_state", {}))["data"]
        assert state["latched"] is False and len(state["nonce"]) >= 16

        motion = asyncio.ensure_future(client.call_tool("move_forward", {"distance_m": 3.0}))

        deadline = time.monotonic() + 60
        while _body(await client.call_tool("get_current_pose", {}))["data"]["x_m"] <= 0.1:
            assert time.monotonic() < deadline, "the served motion never got under way"
        latched = await client.call_tool("emergency_stop", {"reason": "a person in the way"})
        assert not latched.is_error
        said = _body(latched)["data"]
        assert said["latched"] is True and said["source"] == "mcp", said
        assert "a person in the way" in said["reason"]
        halted = _body(await asyncio.wait_for(motion, 10))
        assert halted["metadata"]["achieved"]["stopped_by"] == "emergency_stop", halted
        stopped = await until(lambda: _states(trace), what="robot_state after the motion")
        x = stopped[-1]["x_m"]
        assert 0.1 < x < 2.0, x  # it drove, and the 3 m were cut short

        refused = await client.call_tool("move_forward", {"distance_m": 0.5})
        assert refused.is_error and "emergency stop" in str(refused.content), refused.content
        after = await until(lambda: len(_states(trace)) >= 2 and _states(trace))
        assert abs(after[-1]["x_m"] - x) < 0.02, (x, after[-1])  # at rest, still latched
        shown = _body(await client.call_tool("emergency_stop_state", {}))["data"]
        assert shown["latched"] is True and shown["source"] == "mcp"
        assert shown["nonce"] == said["nonce"]  # nothing released it
