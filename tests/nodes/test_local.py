"""Nodes in-process: discovery, calls, timeouts, drops, conflicts, inputs (SPEC C2-C4, X4).

The same OutputNode / InputNode / ToolDiscovery / InputHub run over ROS 2 in tests/ros2.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage
from tests.agent.helpers import call, make_agent

from loopact.app.nodes import attach_nodes, node_trust
from loopact.channels.ros2_text import Ros2TextChannel, text_input_topic, text_output_topic
from loopact.config import Config
from loopact.events import Event, EventBus
from loopact.nodes.connector import Payload
from loopact.nodes.discovery import ToolDiscovery
from loopact.nodes.input import InputNode
from loopact.nodes.inputs import InputHub
from loopact.nodes.local import LocalBus, LocalConnector
from loopact.nodes.output import OutputNode
from loopact.tools.base import ToolContext, ToolResult, tool
from loopact.tools.registry import ToolRegistry

CTX = ToolContext(task_id="t", call_id="c", workspace=Path("."))


async def until(pred: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (bounded) until ``pred()`` holds; yields to the loop between checks."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


class Events:
    def __init__(self, bus: EventBus) -> None:
        self.items: list[Event] = []
        bus.subscribe(self.items.append)

    def of(self, typ: str) -> list[Event]:
        return [e for e in self.items if e.type == typ]


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def setup(
    *tools: Any, period_s: float = 0.05
) -> tuple[LocalBus, ToolRegistry, ToolDiscovery, Events, list[OutputNode]]:
    bus = LocalBus()
    registry = ToolRegistry()
    events_bus = EventBus()
    events = Events(events_bus)
    discovery = ToolDiscovery(LocalConnector(bus), registry, bus=events_bus)
    await discovery.start()
    nodes = []
    for t in tools:
        node = OutputNode(t, LocalConnector(bus), heartbeat_period_s=period_s)
        await node.start()
        nodes.append(node)
    return bus, registry, discovery, events, nodes


async def test_tool_is_discovered_called_and_dropped_when_silent() -> None:
    _bus, registry, discovery, events, (node,) = await setup(add)
    await until(lambda: "add" in registry)
    tool_ = registry.get("add")
    assert tool_ is not None and tool_.parameters["required"] == ["a", "b"]
    result = await tool_.invoke({"a": 2, "b": 40}, CTX)
    assert result.ok and result.data == 42
    assert node.calls == 1
    await node.stop()
    discovery.check(now=time.monotonic() + 1.0)
    assert "add" in registry  # 1 s of silence is not enough
    discovery.check(now=time.monotonic() + 3.5)
    assert "add" not in registry
    assert [e.data["name"] for e in events.of("node_removed")] == ["add"]
    await discovery.stop()


async def test_calls_queue_unless_reentrant() -> None:
    active = {"serial": 0, "reentrant": 0}
    peak = {"serial": 0, "reentrant": 0}

    async def busy(kind: str) -> str:
        active[kind] += 1
        peak[kind] = max(peak[kind], active[kind])
        await asyncio.sleep(0.05)
        active[kind] -= 1
        return kind

    @tool(name="serial")
    async def serial() -> str:
        """One at a time."""
        return await busy("serial")

    @tool(name="reentrant", reentrant=True)
    async def reentrant() -> str:
        """Overlapping calls allowed."""
        return await busy("reentrant")

    _bus, registry, discovery, _ev, _nodes = await setup(serial, reentrant)
    await until(lambda: "serial" in registry and "reentrant" in registry)
    for name in ("serial", "reentrant"):
        t = registry.get(name)
        assert t is not None
        results = await asyncio.gather(*(t.invoke({}, CTX) for _ in range(3)))
        assert all(r.ok for r in results)
    assert peak["serial"] == 1
    assert peak["reentrant"] == 3
    await discovery.stop()


async def test_a_call_is_cancelled_on_the_node_at_its_timeout() -> None:
    cancelled = asyncio.Event()

    @tool(timeout_s=0.2)
    async def hang() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()
        return "never"

    _bus, registry, discovery, _ev, _nodes = await setup(hang)
    await until(lambda: "hang" in registry)
    t = registry.get("hang")
    assert t is not None
    result = await asyncio.wait_for(t.invoke({}, CTX), 5)
    assert not result.ok
    assert "timed out after 0.2 s" in (result.error or "")
    await asyncio.wait_for(cancelled.wait(), 2)
    await discovery.stop()


async def test_agent_cancelling_a_call_cancels_it_on_the_node() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()
        return "never"

    _bus, registry, discovery, _ev, _nodes = await setup(slow)
    await until(lambda: "slow" in registry)
    t = registry.get("slow")
    assert t is not None
    call = asyncio.ensure_future(t.invoke({}, CTX))
    await asyncio.wait_for(started.wait(), 2)
    call.cancel()
    await asyncio.wait_for(cancelled.wait(), 2)
    await discovery.stop()


async def test_a_node_that_dies_mid_call_fails_the_call_at_once() -> None:
    started = asyncio.Event()

    @tool(timeout_s=60)
    async def dig() -> str:
        """Long."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    _bus, registry, discovery, events, (node,) = await setup(dig)
    await until(lambda: "dig" in registry)
    t = registry.get("dig")
    assert t is not None
    call = asyncio.ensure_future(t.invoke({}, CTX))
    await asyncio.wait_for(started.wait(), 2)
    await node.stop()
    discovery.check(now=time.monotonic() + 10)  # heartbeat lost
    result = await asyncio.wait_for(call, 2)
    assert not result.ok
    assert "stopped responding during the call" in (result.error or "")
    assert events.of("node_removed")
    await discovery.stop()


async def test_two_nodes_with_one_name_conflict_and_the_first_stays() -> None:
    @tool(name="add")
    async def other_add(a: int, b: int) -> int:
        """A different adder."""
        return a - b

    bus, registry, discovery, events, (first,) = await setup(add)
    await until(lambda: "add" in registry)
    second = OutputNode(other_add, LocalConnector(bus), heartbeat_period_s=0.05)
    await second.start()
    await until(lambda: bool(events.of("node_conflict")), timeout=5)
    conflict = events.of("node_conflict")[0].data
    assert conflict == {"name": "add", "kept": first.instance, "ignored": second.instance}
    t = registry.get("add")
    assert t is not None
    assert (await t.invoke({"a": 2, "b": 3}, CTX)).data == 5
    await asyncio.sleep(0.3)
    assert len(events.of("node_conflict")) == 1  # reported once
    await second.stop()
    await discovery.stop()


async def test_a_restarted_node_replaces_the_old_one() -> None:
    bus, registry, discovery, events, (first,) = await setup(add)
    await until(lambda: "add" in registry)
    await first.stop()
    discovery.tools["add"].last_s -= 2.0  # the old instance has been quiet for 2 s
    again = OutputNode(add, LocalConnector(bus), heartbeat_period_s=0.05)
    await again.start()
    await until(lambda: bool(events.of("node_restarted")))
    assert discovery.tools["add"].instance == again.instance
    t = registry.get("add")
    assert t is not None
    assert (await t.invoke({"a": 1, "b": 1}, CTX)).data == 2
    assert again.calls == 1
    assert not events.of("node_removed")
    await again.stop()
    await discovery.stop()


async def test_invalid_heartbeats_are_reported_once_and_nothing_is_added() -> None:
    bus, registry, discovery, events, _ = await setup()
    registry.add(add)
    pub = LocalConnector(bus)
    for _ in range(5):
        await pub.publish("/loopact/output/broken/info", "{nope", latched=True)
        await pub.publish(
            "/loopact/output/add/info",
            json.dumps({"type": "function", "function": {"name": "add"}}),
            latched=True,
        )
        bad_schema = {"type": "object", "properties": {"x": {"type": "integr"}}}
        await pub.publish(
            "/loopact/output/typo/info",
            json.dumps(
                {"type": "function", "function": {"name": "typo", "parameters": bad_schema}}
            ),
            latched=True,
        )
        await asyncio.sleep(0.01)
    await until(lambda: len(events.of("node_error")) >= 3)
    await asyncio.sleep(0.05)
    errors = {e.data["topic"]: e.data["message"] for e in events.of("node_error")}
    assert len(events.of("node_error")) == 3  # each reported once, not per heartbeat
    assert "not JSON" in errors["/loopact/output/broken/info"]
    assert "already exists" in errors["/loopact/output/add/info"]
    assert "invalid parameter schema" in errors["/loopact/output/typo/info"]
    assert registry.names == ["add"] and registry.get("add") is add
    await discovery.stop()


async def test_accumulate_and_latest_inputs_with_flood_bounded() -> None:
    bus = LocalBus()
    hub = InputHub(LocalConnector(bus), max_accumulate=20)
    await hub.start()
    chat = InputNode(
        "chat", LocalConnector(bus), mode="accumulate", kind="text", heartbeat_period_s=0.05
    )
    imu = InputNode("imu", LocalConnector(bus), mode="latest", kind="json", heartbeat_period_s=0.05)
    await chat.start()
    await imu.start()
    await until(lambda: "chat" in hub.inputs and "imu" in hub.inputs)
    for i in range(3):
        await chat.publish(f"hello {i}")
    await imu.publish({"yaw": 0.1})
    await imu.publish({"yaw": 0.2})
    await until(lambda: hub.inputs["chat"].received == 3 and hub.inputs["imu"].received == 2)
    snap = hub.take_snapshot()
    assert snap is not None
    assert [snap.text.count(f"chat: hello {i}") for i in range(3)] == [1, 1, 1]
    assert "imu (json, latest" in snap.text  # latest mode: a one-line status only
    assert '"yaw"' not in snap.text
    assert hub.take_snapshot() is None  # nothing new: nothing injected twice
    latest = hub.latest("imu")
    assert latest is not None and latest[0] == {"yaw": 0.2}
    # A flood of 1000 messages keeps at most max_accumulate of them.
    for i in range(1000):
        await chat.publish(f"flood {i}")
    await until(lambda: hub.inputs["chat"].received >= 40)
    await asyncio.sleep(0.05)
    assert len(hub.inputs["chat"].items) <= 20
    snap = hub.take_snapshot()
    assert snap is not None and "dropped" in snap.text
    assert "flood 999" in snap.text
    await chat.stop()
    await imu.stop()
    await hub.stop()


def _frame(value: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    rng = np.random.default_rng(value)
    img = rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)  # sharp: passes the blur gate
    img[:40, :40] = (value, 255 - value, 7)
    return img


async def test_agent_sees_newest_frame_and_each_text_once(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 4 acceptance 3, in-process: latest camera at 30 Hz, accumulate text, injected once."""
    server = scripted_server(
        [
            {"tool_calls": [{"name": "seewhat", "arguments": {}}]},
            {"tool_calls": [{"name": "wait", "arguments": {"seconds": 0.05}}]},
            {"text": "I see it."},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    bus = LocalBus()
    nodes = await attach_nodes(agent, LocalConnector(bus), text_channel=False)
    assert "seewhat" in agent.registry and "read_input" in agent.registry
    cam = InputNode(
        "camera", LocalConnector(bus), mode="latest", kind="image", heartbeat_period_s=0.05
    )
    chat = InputNode(
        "chat", LocalConnector(bus), mode="accumulate", kind="text", heartbeat_period_s=0.05
    )
    await cam.start()
    await chat.start()
    await until(lambda: {"camera", "chat"} <= set(nodes.hub.inputs))
    sent: list[tuple[float, int]] = []  # (stamp_s, marker value) of every published frame

    async def stream() -> None:
        n = 0
        while True:
            n += 1
            stamp = time.time()
            sent.append((stamp, n % 200))
            await cam.publish(_frame(n % 200), stamp_s=stamp)
            await asyncio.sleep(1 / 30)

    streamer = asyncio.ensure_future(stream())
    await chat.publish("the ball is red")
    await chat.publish("and the box is blue")
    await until(lambda: nodes.hub.inputs["chat"].received == 2 and len(sent) > 5)
    outcome = await asyncio.wait_for(agent.run_task("what do you see?"), 20)
    streamer.cancel()
    assert outcome.status == "completed"
    # Every text message is injected exactly once, before the first model request.
    assert "the ball is red" in json.dumps(server.requests[0].body["messages"])
    users = json.dumps([m for m in server.requests[-1].body["messages"] if m["role"] == "user"])
    assert users.count("the ball is red") == 1 and users.count("and the box is blue") == 1
    # seewhat returned the newest frame at call time (30 Hz stream running).
    call_ts = next(e.ts for e in rec.of("tool_call") if e.data.get("name") == "seewhat")
    result = next(e for e in rec.of("tool_result") if e.data.get("name") == "seewhat")
    assert result.data["ok"] is True
    stamp = result.data["metadata"]["stamp_s"]
    newest_before_call = max(s for s, _ in sent if s <= call_ts)
    assert stamp >= newest_before_call
    value = dict(sent)[stamp]
    image_parts = [
        p
        for m in server.requests[1].body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    assert image_parts, "the frame reached the model"
    data = base64.b64decode(image_parts[-1]["image_url"]["url"].split(",", 1)[1])
    marker = np.asarray(PILImage.open(io.BytesIO(data)).convert("RGB"))[5, 5]
    assert abs(int(marker[0]) - value) <= 12  # JPEG-level tolerance
    await cam.stop()
    await chat.stop()
    await nodes.close()
    await agent.close()


async def test_text_channel_submits_stops_and_publishes_events(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"text": "hello there"}])
    agent, rec = make_agent(server, tmp_path)
    bus = LocalBus()
    channel = Ros2TextChannel(agent, LocalConnector(bus))
    await channel.start()
    runner = asyncio.ensure_future(agent.run())
    out: list[dict[str, Any]] = []
    peer = LocalConnector(bus)

    def on_out(p: Payload) -> None:
        assert isinstance(p, str)
        out.append(json.loads(p))

    peer.subscribe(text_output_topic("loopact"), "string", on_out, depth=100)
    await peer.publish(text_input_topic("loopact"), "say hello")
    await until(lambda: any(e["type"] == "task_end" for e in out))
    assert any(e["type"] == "reply" and e["text"] == "hello there" for e in out)
    assert all("ts" in e and "task_id" in e for e in out)
    await peer.publish(text_input_topic("loopact"), "/stop")
    await until(lambda: any(e["type"] == "stop" for e in out))
    assert rec.of("stop")[0].data["source"] == "ros2"
    runner.cancel()
    await channel.stop()
    await agent.close()


async def test_node_tool_failure_reaches_the_agent_as_failed_result() -> None:
    @tool
    async def explode() -> ToolResult:
        """Always fails."""
        raise RuntimeError("boom")

    _bus, registry, discovery, _ev, _nodes = await setup(explode)
    await until(lambda: "explode" in registry)
    t = registry.get("explode")
    assert t is not None
    res = await t.invoke({}, CTX)
    assert not res.ok and "RuntimeError: boom" in (res.error or "")
    assert res.metadata["exit_code"] == 1
    await discovery.stop()


async def test_builtin_inputs_messages_and_system_status(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Any node may publish text on /<agent>/input/messages; system_status is a latest input."""
    server = scripted_server([{"text": "noted"}])
    agent, _rec = make_agent(server, tmp_path)
    bus = LocalBus()
    nodes = await attach_nodes(agent, LocalConnector(bus), text_channel=False)
    await until(lambda: {"messages", "system_status"} <= set(nodes.hub.inputs))
    await until(lambda: nodes.hub.latest("system_status") is not None)
    status = nodes.hub.latest("system_status")
    assert status is not None and "cpu" in json.dumps(status[0]).lower()
    await LocalConnector(bus).publish("/loopact/input/messages", "the door is open")
    await until(lambda: nodes.hub.inputs["messages"].received == 1)
    outcome = await asyncio.wait_for(agent.run_task("anything new?"), 10)
    assert outcome.status == "completed"
    sent = json.dumps(server.requests[0].body["messages"])
    assert sent.count("messages: the door is open") == 1
    assert "system_status (json, latest" in sent
    await nodes.close()
    await agent.close()


async def test_an_untrusted_nodes_tool_is_refused_in_once_mode_saying_why(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Audit A finding 3: a remote node's read-only ``add`` was refused under --once with
    "add changes files"; it needs a yes because the node is not trusted, and the refusal
    says so and names nodes.trust / nodes.safety. A trusted node's tool is not refused."""
    bus = LocalBus()
    node = OutputNode(add, LocalConnector(bus), heartbeat_period_s=0.05)
    await node.start()
    texts: dict[bool, str] = {}
    for trusted in (False, True):
        server = scripted_server(
            [{"tool_calls": [call("add", {"a": 2, "b": 40}, "a1")]}, {"text": "Done."}]
        )
        agent, _rec = make_agent(server, tmp_path, interactive=False)
        cfg = Config.model_validate({"nodes": {"trust": ["add"] if trusted else []}})
        nodes = await attach_nodes(
            agent, LocalConnector(bus), text_channel=False, trust=node_trust(cfg)
        )
        try:
            await until(lambda agent=agent: "add" in agent.registry)
            outcome = await agent.run_task("add 2 and 40")
            assert outcome.status == "completed"
            (texts[trusted],) = [
                str(m["content"])
                for m in server.requests[1].body["messages"]
                if m["role"] == "tool"
            ]
        finally:
            await nodes.close()
            await agent.close()
    await node.stop()
    refusal = json.loads(texts[False])["error"]
    assert refusal.startswith("add comes from a remote node that is not trusted"), refusal
    assert "changes files" not in refusal
    assert "--yes" in refusal and "add add to confirm.allow" in refusal
    assert "list add in nodes.trust" in refusal and "nodes.safety" in refusal
    assert node.calls == 1 and "42" in texts[True]  # trusted: it ran, once, without asking
