"""Node faults over a real transport (issue 20 reliability; SPEC C2, C4).

A real MQTT broker, a user's tool served by ``loopact node FILE --transport mqtt`` in its own
process, the agent in this process (real discovery, real provider over HTTP against the
scripted server). The node process is killed (SIGKILL) during a call: the call fails at once
with a clear result and the agent answers; then the node comes back with a different schema:
the agent offers the new schema, a call in the old shape gets an argument error naming the new
parameter, a call in the new shape runs, and the next command still carries the first one.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent
from tests.integration.test_mqtt_cli import Proc
from tests.nodes.mqtt.helpers import needs_broker, wait_until

from loopact.agent import Agent
from loopact.nodes.discovery import NodeTrust, ToolDiscovery
from loopact.nodes.mqtt.connector import MqttConnector
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.testing import ScriptedModelServer
from loopact.testing.mqtt_broker import MqttBroker

pytestmark = needs_broker

NODE_FILES = Path(__file__).parent.parent / "node_files"


def label_offered(server: ScriptedModelServer, index: int) -> bool:
    tools = server.requests[index].body.get("tools") or []
    slow = [t for t in tools if t["function"]["name"] == "slow_step"]
    return bool(slow) and "label" in slow[0]["function"]["parameters"]["properties"]


@asynccontextmanager
async def agent_discovering(
    broker: MqttBroker, turns: list[dict[str, Any]], workspace: Path
) -> AsyncIterator[tuple[Agent, Any, ScriptedModelServer]]:
    """An agent on the scripted server that discovers (and trusts) the broker's nodes."""
    connector = MqttConnector(MqttSettings(broker=broker.url), role="agent")
    await connector.start()
    with ScriptedModelServer({"turns": turns}) as server:
        agent, rec = make_agent(server, workspace)
        discovery = ToolDiscovery(
            connector, agent.registry, bus=agent.bus, trust=NodeTrust(trusted=("*",))
        )
        await discovery.start()
        try:
            yield agent, rec, server
        finally:
            await agent.close()
            await discovery.stop()
            await connector.shutdown()


async def test_node_killed_mid_call_then_restarted_with_another_schema(
    mqtt_broker: MqttBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = tmp_path / "runs.txt"
    monkeypatch.setenv("SLOW_TOOL_COUNT", str(count))  # inherited by the node processes
    node_args = ["--transport", "mqtt", "--broker", mqtt_broker.url]
    turns: list[dict[str, Any]] = [
        {
            "tool_calls": [call("slow_step", {"seconds": 25}, "k1")],
            "expect": {"tools": ["slow_step"]},
        },
        {"text": "The node went away.", "expect": {"contains": "stopped responding"}},
        {"tool_calls": [call("slow_step", {"seconds": 0.01}, "old")]},
        {"tool_calls": [call("slow_step", {"seconds": 0.01, "label": "v2"}, "new")]},
        {"text": "Stepped with v2.", "expect": {"contains": "take a long step"}},
    ]
    procs: list[Proc] = []
    async with agent_discovering(mqtt_broker, turns, tmp_path / "ws") as (agent, rec, server):
        try:
            v1 = Proc(["node", str(NODE_FILES / "slow_tool.py"), *node_args], tmp_path, "v1")
            procs.append(v1)
            await wait_until(lambda: "slow_step" in agent.registry, timeout=60, what="v1 node")
            task = asyncio.ensure_future(agent.run_task("take a long step"))
            await wait_until(lambda: count.exists() and count.read_text(), timeout=30, what="call")
            v1.kill()  # SIGKILL: no goodbye from the node, only the broker's last will
            first = await asyncio.wait_for(task, 20)  # far less than the 25 s step
            assert first.status == "completed" and first.reply == "The node went away.", first
            failed = rec.of("tool_result")[0].data
            assert failed["id"] == "k1" and failed["ok"] is False, failed
            assert "node slow_step stopped responding during the call" in failed["error"], failed
            await wait_until(lambda: "slow_step" not in agent.registry, timeout=10, what="drop")
            assert rec.of("node_removed"), rec.types()

            v2 = Proc(["node", str(NODE_FILES / "slow_tool_v2.py"), *node_args], tmp_path, "v2")
            procs.append(v2)

            def new_schema() -> bool:
                t = agent.registry.get("slow_step")
                return t is not None and "label" in t.spec().parameters.get("properties", {})

            await wait_until(new_schema, timeout=60, what="the node back with its new schema")
            second = await asyncio.wait_for(agent.run_task("step again"), 30)
            assert second.status == "completed" and second.reply == "Stepped with v2.", second
            results = {e.data["id"]: e.data for e in rec.of("tool_result")}
            assert results["old"]["ok"] is False and "label" in results["old"]["error"]
            assert results["new"]["ok"] is True and "v2: stepped" in str(results["new"]["data"])
            assert label_offered(server, 2) and not label_offered(server, 0)
            assert count.read_text() == "run\nv2 v2\n"  # the killed call ran once, not again
        finally:
            for p in reversed(procs):
                p.stop()
        server.assert_consumed()


async def test_node_killed_before_it_accepted_the_call_is_reported_gone(
    mqtt_broker: MqttBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node dies between the request and its ``accepted``: the call fails because the
    node went away (its last will), not with "no node serves" after the connect timeout."""
    count = tmp_path / "runs.txt"
    monkeypatch.setenv("SLOW_TOOL_COUNT", str(count))
    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("slow_step", {"seconds": 5}, "k1")]},
        {"text": "The node went away.", "expect": {"contains": "stopped responding"}},
    ]
    node_args = ["--transport", "mqtt", "--broker", mqtt_broker.url]
    node = Proc(["node", str(NODE_FILES / "slow_tool.py"), *node_args], tmp_path, "node")
    async with agent_discovering(mqtt_broker, turns, tmp_path / "ws") as (agent, rec, _server):
        try:
            await wait_until(lambda: "slow_step" in agent.registry, timeout=60, what="the node")
            os.killpg(node.popen.pid, signal.SIGSTOP)  # frozen: it cannot accept anything
            task = asyncio.ensure_future(agent.run_task("take a long step"))
            await wait_until(lambda: rec.of("tool_call"), timeout=30, what="the call")
            node.kill()  # the broker publishes its last will
            outcome = await asyncio.wait_for(task, 30)
            assert outcome.status == "completed" and outcome.reply == "The node went away."
            failed = rec.of("tool_result")[0].data
            assert failed["id"] == "k1" and failed["ok"] is False, failed
            assert "node slow_step stopped responding during the call" in failed["error"], failed
            assert not count.exists()  # it never ran
        finally:
            node.stop()
