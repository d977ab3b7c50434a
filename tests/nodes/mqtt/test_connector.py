"""The MQTT connector against a real broker (issue 17; SPEC C2, C3, C4, X4).

Each test gets its own broker process (mosquitto; amqtt when mosquitto is absent); the
connectors are the real ones, talking over loopback TCP.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage
from tests.image_bombs import png_bomb

from loopact.app.mqtt import mqtt_settings
from loopact.config import load_config
from loopact.errors import ConfigError, NodeError
from loopact.events import Event, EventBus
from loopact.llm.messages import Image
from loopact.nodes.connector import ImageData
from loopact.nodes.discovery import NodeTrust, ToolDiscovery
from loopact.nodes.input import InputNode
from loopact.nodes.inputs import InputHub
from loopact.nodes.mqtt.connector import MqttConnector, check_prefix
from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.settings import MqttSettings, parse_broker
from loopact.nodes.output import OutputNode
from loopact.testing.mqtt_broker import MqttBroker, free_port
from loopact.tools.base import SafetyClass, ToolContext, ToolResult, tool
from loopact.tools.registry import ToolRegistry

from .helpers import broker_available, needs_broker, subscribed, wait_until

pytestmark = needs_broker


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="t", call_id="c", workspace=tmp_path)


@pytest.fixture
async def pair(mqtt_broker: MqttBroker) -> Any:
    """A node-side and an agent-side connector on one broker."""
    settings = MqttSettings(broker=mqtt_broker.url)
    node = MqttConnector(settings, role="node")
    agent = MqttConnector(settings, role="agent")
    await node.start()
    await agent.start()
    yield node, agent
    await node.shutdown()
    await agent.shutdown()


class Events:
    def __init__(self, bus: EventBus) -> None:
        self.items: list[Event] = []
        bus.subscribe(self.items.append)

    def of(self, type_: str) -> list[Event]:
        return [e for e in self.items if e.type == type_]


async def discover(agent: MqttConnector, names: list[str]) -> tuple[ToolDiscovery, Events]:
    bus = EventBus()
    events = Events(bus)
    # The operator trusts these nodes: their announced classes are used (issue 21).
    disc = ToolDiscovery(agent, ToolRegistry([]), bus=bus, trust=NodeTrust(trusted=("*",)))
    await disc.start()
    await wait_until(lambda: all(n in disc.registry for n in names), what=f"discovery of {names}")
    return disc, events


# ------------------------------------------------------------------------ topics and payloads


def test_broker_urls_and_prefixes() -> None:
    assert str(parse_broker("mqtt://h:1884")) == "mqtt://h:1884"
    assert str(parse_broker("h")) == "mqtt://h:1883"
    assert str(parse_broker("mqtts://h")) == "mqtts://h:8883"
    # credentials in a URL never reach an error message
    with pytest.raises(ConfigError, match="scheme") as exc:
        parse_broker("http://user:s3cret@h:1883")
    assert "s3cret" not in str(exc.value)
    with pytest.raises(ConfigError, match="mqtt.broker"):
        parse_broker("mqtt://h:1883/path")
    assert check_prefix("site1/loopact") == "site1/loopact"
    for bad in ("a/+", "/a", "a/", "a//b", "$SYS"):
        with pytest.raises(ConfigError, match="mqtt.prefix"):
            check_prefix(bad)
    settings = MqttSettings(password="s3cret")
    assert "s3cret" not in repr(settings)


async def test_publish_subscribe_latched_pattern_and_images(pair: Any) -> None:
    node, agent = pair
    got: list[Any] = []
    late: list[Any] = []
    pattern: list[tuple[str, Any]] = []
    agent.subscribe("/robot1/status", "string", got.append)
    await node.publish("/robot1/config", "v1", latched=True)
    await node.publish("/robot1/other/info", "x", latched=True)
    agent.subscribe("/robot1/config", "string", late.append, latched=True)
    agent.subscribe_pattern(
        "/robot1/", "/info", "string", lambda t, p: pattern.append((t, p)), latched=True
    )
    await wait_until(lambda: late == ["v1"], what="the retained message")
    await wait_until(lambda: pattern, what="the pattern")
    assert pattern == [("/robot1/other/info", "x")]
    await node.publish("/robot1/status", "moving")
    await wait_until(lambda: got == ["moving"], what="a live message")
    # a non-latched subscriber ignores retained copies
    plain: list[Any] = []
    await subscribed(agent.subscribe("/robot1/config", "string", plain.append))
    await node.publish("/robot1/status", "stopped")
    await wait_until(lambda: got[-1:] == ["stopped"])
    assert plain == []
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[:, 32:] = (200, 30, 30)
    frames: list[ImageData] = []
    await subscribed(agent.subscribe("/robot1/input/cam", "image", frames.append))
    await node.publish("/robot1/input/cam", ImageData(rgb, 12.5, "cam"))
    await wait_until(lambda: frames, what="an image")
    assert frames[0].rgb.shape == (48, 64, 3) and frames[0].stamp_s == 12.5
    assert abs(int(frames[0].rgb[10, 50, 0]) - 200) < 12  # JPEG inside: close, not exact


async def test_an_image_bomb_on_a_camera_topic_is_refused_before_decoding(
    pair: Any, mqtt_broker: MqttBroker, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 21 item 10 beyond the console: anyone on the broker can publish camera frames; a
    10 KB PNG of 9000x9000 pixels was decoded into a 243 MB array (six at once: gigabytes)."""
    node, agent = pair
    bomb = png_bomb(9000, 9000)
    assert len(bomb) < 200_000
    frames: list[ImageData] = []
    await subscribed(agent.subscribe("/robot1/input/cam", "image", frames.append))
    raw = MqttLink(MqttSettings(broker=mqtt_broker.url), "hostile-camera")
    await raw.start(require=True)
    message = {"encoding": "png", "data": base64.b64encode(bomb).decode("ascii")}
    with caplog.at_level(logging.WARNING, logger="loopact.nodes.mqtt.connector"):
        raw.publish("loopact/robot1/input/cam", json.dumps(message).encode())
        await wait_until(lambda: "9000x9000" in caplog.text, what="the refusal")
    await raw.stop()
    assert "would need 324 MB to decode; the limit is 100 MB" in caplog.text
    await node.publish("/robot1/input/cam", ImageData(np.zeros((48, 64, 3), np.uint8), 1.0, "c"))
    await wait_until(lambda: frames, what="the next, ordinary frame")
    assert [f.rgb.shape for f in frames] == [(48, 64, 3)]


# ------------------------------------------------------------------------ output nodes


async def test_tool_offered_called_and_dropped_at_once_on_a_clean_stop(
    pair: Any, tmp_path: Path
) -> None:
    node, agent = pair
    out = OutputNode(add, node)
    await out.start()
    disc, events = await discover(agent, ["add"])
    remote = disc.registry.get("add")
    assert remote is not None and remote.safety is SafetyClass.READ_ONLY
    result = await remote.invoke({"a": 2, "b": 40}, ctx(tmp_path))
    assert result.ok and result.data == 42
    # the heartbeat is retained: a late agent sees the node at once
    late = MqttConnector(MqttSettings(broker=node.settings.broker), role="late")
    await late.start()
    disc2, _ = await discover(late, ["add"])
    await node.shutdown()  # a clean exit clears the retained heartbeat: dropped at once
    await wait_until(lambda: "add" not in disc.registry, timeout=1.0, what="the drop")
    assert events.of("node_removed")[0].data["reason"] == "the node went offline"
    await wait_until(lambda: "add" not in disc2.registry, timeout=1.0)
    await disc.stop()
    await disc2.stop()
    await late.shutdown()


async def test_images_of_a_nodes_result_pass_the_image_gate(pair: Any, tmp_path: Path) -> None:
    """SPEC G1 for remote tools: a node's images went to the model as the node sent them (a
    2048 px photo, or a tiny PNG of 9000x9000 pixels for the local vision brain to decode);
    they pass the image gate like every other image (issue 21 item 10)."""
    node, agent = pair
    big = PILImage.new("RGB", (2048, 1536), (200, 30, 30))
    buf = io.BytesIO()
    big.save(buf, format="PNG")

    @tool(safety=SafetyClass.READ_ONLY)
    def snapshot() -> ToolResult:
        """A photo."""
        return ToolResult.success("a photo", images=(Image(buf.getvalue(), "image/png"),))

    out = OutputNode(snapshot, node)
    await out.start()
    disc, _ = await discover(agent, ["snapshot"])
    remote = disc.registry.get("snapshot")
    assert remote is not None
    result = await remote.invoke({}, ctx(tmp_path))
    assert result.ok, result
    (image,) = result.images
    assert (image.media_type, image.width_px, image.height_px) == ("image/jpeg", 1024, 768)
    with PILImage.open(io.BytesIO(image.data)) as decoded:
        assert decoded.size == (1024, 768)
    await disc.stop()


async def test_a_duplicate_request_never_runs_twice_and_cancel_stops_a_call(
    pair: Any, mqtt_broker: MqttBroker
) -> None:
    node, agent = pair
    runs: list[float] = []
    release = asyncio.Event()

    @tool(safety=SafetyClass.MOTION, timeout_s=10)
    async def move(distance_m: float) -> str:
        """Move."""
        runs.append(distance_m)
        await release.wait()
        return f"moved {distance_m}"

    out = OutputNode(move, node)
    await out.start()
    # the raw client skips discovery (an agent calls only after the node's heartbeat): wait
    # for the broker to confirm the node's request subscription, or the requests are dropped
    served: Any = out._served
    await wait_until(lambda: served.link_sub.acked.done(), what="the request subscription")
    replies: list[dict[str, Any]] = []
    raw = MqttLink(MqttSettings(broker=mqtt_broker.url), "raw-client")
    await raw.start(require=True)
    sub = raw.subscribe(
        "loopact/loopact/output/move/response", lambda t, p, r: replies.append(json.loads(p))
    )
    await raw.acked(sub, 2)
    request = json.dumps(
        {"op": "call", "id": "c1", "input_json": '{"distance_m": 1.0}', "timeout_s": 5}
    ).encode()
    raw.publish("loopact/loopact/output/move/request", request)
    raw.publish("loopact/loopact/output/move/request", request)  # a QoS 1 redelivery
    await wait_until(lambda: len([r for r in replies if r["state"] == "accepted"]) == 2)
    release.set()
    await wait_until(lambda: any(r["state"] == "done" for r in replies))
    raw.publish("loopact/loopact/output/move/request", request)  # late duplicate: cached reply
    await wait_until(lambda: len([r for r in replies if r["state"] == "done"]) == 2)
    assert runs == [1.0]
    done = [r for r in replies if r["state"] == "done"]
    assert done[0] == done[1] and done[0]["exit_code"] == 0
    assert json.loads(done[0]["output_json"])["data"] == "moved 1.0"
    # a cancel that arrives before its call: the call never starts
    raw.publish(
        "loopact/loopact/output/move/request", json.dumps({"op": "cancel", "id": "c2"}).encode()
    )
    raw.publish("loopact/loopact/output/move/request", request.replace(b"c1", b"c2"))
    await wait_until(lambda: any(r["id"] == "c2" and r["state"] == "done" for r in replies))
    assert runs == [1.0]
    c2 = next(r for r in replies if r["id"] == "c2" and r["state"] == "done")
    assert c2["cancelled"] is True and c2["exit_code"] == 1
    # arguments sent as an object, not as the JSON string the protocol asks for: named so
    bad = {"op": "call", "id": "c3", "input_json": {"distance_m": 1.0}, "timeout_s": 5}
    raw.publish("loopact/loopact/output/move/request", json.dumps(bad).encode())
    await wait_until(lambda: any(r["id"] == "c3" and r["state"] == "done" for r in replies))
    c3 = next(r for r in replies if r["id"] == "c3" and r["state"] == "done")
    assert c3["exit_code"] == 1 and runs == [1.0]
    assert (
        "input_json must be a string" in c3["output_json"]
        and "not a JSON object" in c3["output_json"]
    )
    # an agent-side call cancelled by the agent is cancelled on the node
    release.clear()
    handle = await agent.start_call("/loopact/output/move", '{"distance_m": 2.0}', 5.0)
    await wait_until(lambda: runs == [1.0, 2.0], what="the call to start")
    await handle.cancel()
    reply = await asyncio.wait_for(handle.result(), 5)
    assert reply.cancelled and reply.exit_code == 1
    # status of an id the node never saw: it says so
    raw.publish(
        "loopact/loopact/output/move/request", json.dumps({"op": "status", "id": "zz"}).encode()
    )
    await wait_until(lambda: any(r["id"] == "zz" and r["state"] == "unknown" for r in replies))
    await raw.stop()


async def test_two_nodes_with_one_tool_name_only_the_first_runs_calls(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    settings = MqttSettings(broker=mqtt_broker.url)
    conns = [MqttConnector(settings, role=r) for r in ("first", "second", "agent")]
    for c in conns:
        await c.start()
    calls = {"first": 0, "second": 0}

    def make(who: str) -> Any:
        @tool(name="beep")
        def beep() -> str:
            """Beep once."""
            calls[who] += 1
            return who

        return beep

    first = OutputNode(make("first"), conns[0])
    await first.start()
    disc, events = await discover(conns[2], ["beep"])
    second = OutputNode(make("second"), conns[1])
    await second.start()
    await wait_until(lambda: events.of("node_conflict"), timeout=5.0, what="the conflict")
    for _ in range(3):
        result = await disc.registry.get("beep").invoke({}, ctx(tmp_path))  # type: ignore[union-attr]
        assert result.ok and result.data == "first"
    assert calls == {"first": 3, "second": 0}
    await disc.stop()
    for c in conns:
        await c.shutdown()


async def test_broker_restart_mid_call_the_result_arrives_once(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    states: list[str] = []
    settings = MqttSettings(broker=mqtt_broker.url)
    node = MqttConnector(settings, role="node")
    agent = MqttConnector(settings, role="agent", on_link=lambda s, d: states.append(s))
    await node.start()
    await agent.start()
    runs: list[int] = []
    release = asyncio.Event()

    @tool(safety=SafetyClass.MOTION, timeout_s=20)
    async def slow() -> str:
        """A long motion."""
        runs.append(1)
        await release.wait()
        return "done"

    out = OutputNode(slow, node)
    await out.start()
    disc, _ = await discover(agent, ["slow"])
    call = asyncio.ensure_future(disc.registry.get("slow").invoke({}, ctx(tmp_path)))  # type: ignore[union-attr]
    await wait_until(lambda: runs, what="the call to start")
    await asyncio.to_thread(mqtt_broker.stop)
    await wait_until(lambda: "down" in states, what="the link to go down")
    release.set()  # the result is published while the broker is down
    await asyncio.sleep(0)
    await asyncio.to_thread(mqtt_broker.start)
    await wait_until(lambda: states[-1:] == ["up"], timeout=5.0, what="the reconnect")
    result = await asyncio.wait_for(call, 15)
    assert result.ok and result.data == "done", result.error
    assert runs == [1]
    assert states[:2] == ["up", "down"]
    await disc.stop()
    await node.shutdown()
    await agent.shutdown()


async def test_a_broker_shutdown_is_named_in_the_log_and_the_trace(
    mqtt_broker: MqttBroker, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 39 item 10: a broker that shut down was logged as "Unspecified error" (paho's
    name for a closed socket under MQTT 3.1.1)."""
    caplog.set_level(logging.WARNING)
    states: list[tuple[str, str]] = []
    link = MqttLink(
        MqttSettings(broker=mqtt_broker.url), "watch", on_state=lambda s, d: states.append((s, d))
    )
    await link.start(require=True)
    try:
        await asyncio.to_thread(mqtt_broker.stop)
        await wait_until(lambda: [d for s, d in states if s == "down"], what="the link down")
    finally:
        await link.stop()
    (down,) = [d for s, d in states if s == "down"]
    assert (
        down == "the connection was lost: the broker shut down or restarted, or the network dropped"
    )
    assert f"MQTT link to {link.address} lost ({down}); reconnecting" in caplog.text
    assert "Unspecified error" not in caplog.text


# ------------------------------------------------------------------------ input nodes


async def test_input_node_accumulates_and_a_flood_is_bounded(pair: Any) -> None:
    node, agent = pair
    hub = InputHub(agent, max_accumulate=50)
    await hub.start()
    sensor = InputNode("door", node, mode="accumulate", kind="text")
    await sensor.start()
    await wait_until(lambda: "door" in hub.inputs, what="the input")
    # MQTT cannot tell a publisher whether anyone subscribed (docs/mqtt.md, Limits): wait for
    # the broker to confirm the agent's subscription to the data topic before publishing
    data_sub: Any = hub.inputs["door"].sub
    await wait_until(lambda: data_sub.link_sub.acked.done(), what="the data subscription")
    await sensor.publish("door opened")
    await wait_until(hub.has_new)
    snap = hub.take_snapshot()
    assert snap is not None and "door: door opened" in snap.text
    # 1 kHz for 0.5 s: the agent keeps at most 50 and says how many it dropped
    for i in range(500):
        await sensor.publish(f"m{i}")
        if i % 10 == 0:
            await asyncio.sleep(0.01)
    await wait_until(lambda: hub.inputs["door"].received >= 501, timeout=10, what="the flood")
    snap = hub.take_snapshot()
    assert snap is not None and "older messages dropped (flood)" in snap.text
    assert "door: m499" in snap.text
    await sensor.stop()
    await hub.stop()


# ------------------------------------------------------------------------ bad input


async def test_bad_input_is_reported_or_dropped_and_the_agent_keeps_working(
    pair: Any, mqtt_broker: MqttBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    node, agent = pair
    caplog.set_level(logging.WARNING)
    out = OutputNode(add, node)
    await out.start()
    disc, events = await discover(agent, ["add"])
    raw = MqttLink(MqttSettings(broker=mqtt_broker.url), "raw-bad")
    await raw.start(require=True)
    # a malformed heartbeat, a heartbeat with a bad schema, two with a bad name
    raw.publish("loopact/loopact/output/junk/info", b"{not json", 1, True)
    bad_schema = {"type": "function", "function": {"name": "bad", "parameters": {"type": 3}}}
    raw.publish("loopact/loopact/output/bad/info", json.dumps(bad_schema).encode(), 1, True)
    await wait_until(lambda: len(events.of("node_error")) >= 2, what="two node errors")
    messages = " ".join(e.data["message"] for e in events.of("node_error"))
    assert "not JSON" in messages and "bad" not in disc.registry
    # named as on the broker, not as a ROS 2 path (a newcomer audit)
    topics = {e.data["topic"] for e in events.of("node_error")}
    assert "loopact/loopact/output/junk/info" in topics, topics
    assert "node on loopact/loopact/output/junk/info: " in caplog.text
    # a request and a response that are not JSON, and one without an id: dropped, logged
    raw.publish("loopact/loopact/output/add/request", b"\xff\xfe not json")
    raw.publish("loopact/loopact/output/add/response", b"[1, 2]")
    raw.publish("loopact/loopact/output/add/request", b'{"op": "call"}')
    # a 10 MB payload: dropped by the receiving side with a log line
    raw.publish("loopact/loopact/output/add/request", b"x" * 10_000_000)
    await wait_until(lambda: "dropped a message of 10000000 bytes" in caplog.text, timeout=15)
    assert "not JSON" in caplog.text and 'without a string "id"' in caplog.text
    result = await disc.registry.get("add").invoke({"a": 1, "b": 2}, ctx(tmp_path))  # type: ignore[union-attr]
    assert result.ok and result.data == 3
    await raw.stop()
    await disc.stop()


async def test_wrong_password_is_a_config_error_that_never_shows_the_password(
    tmp_path: Path,
) -> None:
    broker = MqttBroker(tmp_path / "auth", users={"robot": "right-one"}).start()
    try:
        good = MqttConnector(
            MqttSettings(broker=broker.url, username="robot", password="right-one"), role="ok"
        )
        await good.start()
        assert good.link.connected
        await good.shutdown()
        bad = MqttConnector(
            MqttSettings(broker=broker.url, username="robot", password="wrong-pass"), role="bad"
        )
        with pytest.raises(ConfigError, match="refused the connection") as exc:
            await bad.start()
        assert "wrong-pass" not in str(exc.value) and "mqtt.password" in str(exc.value)
        await bad.shutdown()
    finally:
        broker.stop()


async def test_a_broker_down_at_start_is_waited_for(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    port = free_port()
    settings = MqttSettings(broker=f"mqtt://127.0.0.1:{port}", connect_timeout_s=0.3)
    strict = MqttConnector(settings, role="strict", require_broker=True)
    with pytest.raises(NodeError, match="not reachable"):
        await strict.start()
    await strict.shutdown()
    agent = MqttConnector(settings, role="patient")
    await agent.start()  # does not raise: retries in the background
    assert not agent.link.connected and "not reachable yet" in caplog.text
    with pytest.raises(NodeError, match="not reachable"):
        await agent.start_call("/loopact/output/add", "{}", 1.0, connect_timeout_s=0.2)
    broker = MqttBroker(tmp_path / "late", port=port).start()
    try:
        await wait_until(lambda: agent.link.connected, timeout=5.0, what="the late broker")
    finally:
        await agent.shutdown()
        broker.stop()


def make_certs(folder: Path) -> dict[str, Path]:
    """A CA, a broker certificate for 127.0.0.1 and a client certificate (openssl)."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    p = {n: folder / n for n in ("ca.key", "ca.crt", "srv.key", "srv.crt", "cl.key", "cl.crt")}

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
    run("req", "-x509", *key, "-nodes", "-days", "2", "-subj", "/CN=test CA",
        "-keyout", str(p["ca.key"]), "-out", str(p["ca.crt"]))  # fmt: skip
    ext = folder / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    for who, cn in (("srv", "127.0.0.1"), ("cl", "robot")):
        csr = folder / f"{who}.csr"
        run("req", *key, "-nodes", "-subj", f"/CN={cn}",
            "-keyout", str(p[f"{who}.key"]), "-out", str(csr))  # fmt: skip
        run("x509", "-req", "-in", str(csr), "-CA", str(p["ca.crt"]), "-CAkey", str(p["ca.key"]),
            "-CAcreateserial", "-days", "2", "-out", str(p[f"{who}.crt"]),
            *(["-extfile", str(ext)] if who == "srv" else []))  # fmt: skip
    return p


@pytest.mark.skipif(
    not (broker_available("mosquitto") and shutil.which("openssl")),
    reason="the TLS test needs mosquitto and openssl",
)
async def test_tls_with_a_client_certificate_and_credentials_from_the_environment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    certs = make_certs(tmp_path / "certs")
    broker = MqttBroker(
        tmp_path / "tls",
        kind="mosquitto",
        users={"robot": "tls-secret"},
        tls=(certs["ca.crt"], certs["srv.crt"], certs["srv.key"]),
    ).start()
    env = {
        "LOOPACT_MQTT_BROKER": broker.url,
        "LOOPACT_MQTT_USERNAME": "robot",
        "LOOPACT_MQTT_PASSWORD": "tls-secret",
        "LOOPACT_MQTT_CA_FILE": str(certs["ca.crt"]),
        "LOOPACT_MQTT_CERT_FILE": str(certs["cl.crt"]),
        "LOOPACT_MQTT_KEY_FILE": str(certs["cl.key"]),
    }
    try:
        cfg, _ = load_config(None, env=env, cwd=tmp_path)
        assert "tls-secret" not in repr(cfg.mqtt)
        settings = mqtt_settings(cfg)
        assert settings.address.tls and settings.ca_file == certs["ca.crt"]
        node = MqttConnector(settings, role="tls-node")
        agent = MqttConnector(settings, role="tls-agent")
        await node.start()
        await agent.start()
        out = OutputNode(add, node)
        await out.start()
        disc, _ = await discover(agent, ["add"])
        result = await disc.registry.get("add").invoke({"a": 20, "b": 22}, ctx(tmp_path))  # type: ignore[union-attr]
        assert result.ok and result.data == 42
        await disc.stop()
        await node.shutdown()
        await agent.shutdown()
        # without the client certificate, or trusting another CA: no connection
        for missing in ("LOOPACT_MQTT_CERT_FILE", "LOOPACT_MQTT_CA_FILE"):
            other = {k: v for k, v in env.items() if k != missing}
            if missing == "LOOPACT_MQTT_CA_FILE":
                other["LOOPACT_MQTT_CA_FILE"] = str(make_certs(tmp_path / "other")["ca.crt"])
            cfg2, _ = load_config(None, env=other, cwd=tmp_path)
            s2 = dataclasses.replace(mqtt_settings(cfg2), connect_timeout_s=1.0)
            refused = MqttConnector(s2, role="tls-refused", require_broker=True)
            with pytest.raises(NodeError, match="not reachable"):
                await refused.start()
            await refused.shutdown()
    finally:
        broker.stop()
    assert "tls-secret" not in caplog.text


async def test_a_configured_prefix_carries_the_whole_protocol(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    settings = MqttSettings(broker=mqtt_broker.url)
    node = MqttConnector(settings, prefix="site1/fleet", role="pnode")
    agent = MqttConnector(settings, prefix="site1/fleet", role="pagent")
    other = MqttConnector(settings, role="default-prefix")
    for c in (node, agent, other):
        await c.start()
    topics: list[str] = []
    spy = MqttLink(settings, "prefix-spy")
    await spy.start(require=True)
    await spy.acked(spy.subscribe("#", lambda t, p, r: topics.append(t), depth=1000), 2)
    out = OutputNode(add, node)
    await out.start()
    disc, _ = await discover(agent, ["add"])
    result = await disc.registry.get("add").invoke({"a": 1, "b": 1}, ctx(tmp_path))  # type: ignore[union-attr]
    assert result.ok and result.data == 2
    elsewhere = ToolDiscovery(other, ToolRegistry([]))  # the default prefix sees nothing
    await elsewhere.start()
    await wait_until(lambda: "site1/fleet/loopact/output/add/response" in topics)
    assert "add" not in elsewhere.registry
    ours = [t for t in topics if not t.startswith(f"loopact/_presence/{other.client_id}")]
    assert ours and all(t.startswith("site1/fleet/") for t in ours), ours
    await elsewhere.stop()
    await disc.stop()
    await spy.stop()
    for c in (node, agent, other):
        await c.shutdown()
