"""The call protocol's replies on the wire, seen by a raw client (issue 17; SPEC C2, C4).

A real broker per test (mosquitto; amqtt when mosquitto is absent), the real node-side
connector, and a bare :class:`MqttLink` in the agent's place that records every reply.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loopact.nodes.mqtt import calls as mqtt_calls
from loopact.nodes.mqtt.connector import MqttConnector
from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.nodes.output import OutputNode
from loopact.testing.mqtt_broker import MqttBroker
from loopact.tools.base import tool

from .helpers import needs_broker, wait_until

pytestmark = needs_broker

TOPIC = "loopact/loopact/output/{}/{}"


async def _serve(broker: MqttBroker, fn: Any) -> tuple[MqttConnector, OutputNode]:
    node = MqttConnector(MqttSettings(broker=broker.url), role="node")
    await node.start()
    out = OutputNode(fn, node)
    await out.start()
    served: Any = out._served
    await wait_until(lambda: served.link_sub.acked.done(), what="the request subscription")
    return node, out


async def _raw(broker: MqttBroker, name: str) -> tuple[MqttLink, list[dict[str, Any]]]:
    replies: list[dict[str, Any]] = []
    raw = MqttLink(MqttSettings(broker=broker.url), "raw-client")
    await raw.start(require=True)
    sub = raw.subscribe(
        TOPIC.format(name, "response"), lambda t, p, r: replies.append(json.loads(p))
    )
    await raw.acked(sub, 5)
    return raw, replies


def _request(name: str, call_id: str, input_json: str) -> tuple[str, bytes]:
    body = {"op": "call", "id": call_id, "input_json": input_json, "timeout_s": 5}
    return TOPIC.format(name, "request"), json.dumps(body).encode()


async def test_a_quick_call_is_answered_by_done_alone(
    mqtt_broker: MqttBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that ends before ``ACCEPT_AFTER_S`` gets one reply, ``done`` (which the caller
    takes as its acceptance too): one message less each way than accepted + done."""
    monkeypatch.setattr(mqtt_calls, "ACCEPT_AFTER_S", 5.0)  # far beyond the tool's time

    @tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    node, out = await _serve(mqtt_broker, echo)
    raw, replies = await _raw(mqtt_broker, "echo")
    try:
        raw.publish(*_request("echo", "q1", '{"text": "hi"}'))
        await wait_until(lambda: replies, what="the reply")
        (done,) = replies
        assert done["state"] == "done" and done["exit_code"] == 0
        assert json.loads(done["output_json"])["data"] == "hi"
        # a duplicate of the finished call: its cached done, the tool does not run again
        raw.publish(*_request("echo", "q1", '{"text": "again"}'))
        await wait_until(lambda: len(replies) == 2, what="the duplicate's reply")
        assert replies[1] == done
    finally:
        await raw.stop()
        await out.stop()
        await node.shutdown()


async def test_a_long_call_is_accepted_before_it_is_done(
    mqtt_broker: MqttBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call still running ``ACCEPT_AFTER_S`` after its request gets ``accepted`` then, and
    ``done`` when it ends; a duplicate meanwhile gets ``accepted`` at once and never runs."""
    monkeypatch.setattr(mqtt_calls, "ACCEPT_AFTER_S", 0.05)
    runs: list[float] = []
    release = asyncio.Event()

    @tool
    async def move(distance_m: float) -> str:
        """Move."""
        runs.append(distance_m)
        await release.wait()
        return f"moved {distance_m}"

    node, out = await _serve(mqtt_broker, move)
    raw, replies = await _raw(mqtt_broker, "move")
    try:
        raw.publish(*_request("move", "m1", '{"distance_m": 1.0}'))
        await wait_until(lambda: replies, what="the accepted reply")
        assert [r["state"] for r in replies] == ["accepted"] and runs == [1.0]
        raw.publish(*_request("move", "m1", '{"distance_m": 1.0}'))  # a QoS 1 redelivery
        await wait_until(lambda: len(replies) == 2, what="the duplicate's accepted")
        release.set()
        await wait_until(lambda: len(replies) == 3, what="the done reply")
        assert [r["state"] for r in replies] == ["accepted", "accepted", "done"]
        assert runs == [1.0] and json.loads(replies[2]["output_json"])["data"] == "moved 1.0"
    finally:
        await raw.stop()
        await out.stop()
        await node.shutdown()
