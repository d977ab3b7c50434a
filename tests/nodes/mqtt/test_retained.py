"""Retained MQTT messages are marked with their age and skipped by rules unless configured
(issue 39 item 8; SPEC C7), on a real broker.

Before: a retained reading published hours before the agent started was injected as a live
rule match, and ``mqtt_receive`` stamped it with the delivery time.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.app.mqtt import attach_mqtt_tools
from loopact.config import load_config
from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.rules import payload_time
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.nodes.mqtt.tools import MqttTools, ToolsPolicy
from loopact.testing.mqtt_broker import MqttBroker
from loopact.tools.base import ToolContext

from .helpers import needs_broker, wait_until

pytestmark = needs_broker


async def retain_two_readings(broker: MqttBroker) -> tuple[MqttLink, int]:
    """A device that published two retained readings long ago (one says when, one does not)
    and is about to send a live one; also the Unix time the first one says, two hours before
    now (taken here, not at import: under xdist a file may run long after collection)."""
    two_hours_ago = int(time.time()) - 7200
    device = MqttLink(MqttSettings(broker=broker.url), "device")
    await device.start(require=True)
    for topic, payload in (
        ("lab/bench/temperature", f'{{"temperature": 35, "ts": {two_hours_ago}}}'),
        ("lab/hall/temperature", "36"),
    ):
        info = device.publish(topic, payload.encode(), 1, True)
        assert info is not None
        await asyncio.to_thread(info.wait_for_publish, 5)
    return device, two_hours_ago


@pytest.mark.parametrize("retained", ["skip", "inject"])
async def test_retained_readings_are_marked_and_skipped_by_rules_unless_configured(
    mqtt_broker: MqttBroker, tmp_path: Path, retained: Any
) -> None:
    device, two_hours_ago = await retain_two_readings(mqtt_broker)
    state = MqttTools(
        ToolsPolicy(broker=mqtt_broker.url, retained=retained),
        settings=lambda url: MqttSettings(broker=url or mqtt_broker.url),
    )
    tools = {t.name: t for t in state.tools()}
    c = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    try:
        res = await tools["mqtt_subscribe"].invoke(
            {"topic": "lab/+/temperature", "rules": ["temperature > 30"]}, c
        )
        assert res.ok, res.error
        device.publish("lab/bench/temperature", b'{"temperature": 31}', 1)
        await wait_until(lambda: len(state.history.query()) == 3, what="three messages")
        got = await tools["mqtt_receive"].invoke({"timeout_s": 0, "max_messages": 10}, c)
        by_payload = {m["payload"]: m for m in got.data}
        stamped = by_payload[f'{{"temperature": 35, "ts": {two_hours_ago}}}']
        assert stamped["retained"] is True and stamped["age_s"] == pytest.approx(7200, abs=60)
        assert stamped["time"] == time.strftime("%H:%M:%S", time.localtime(two_hours_ago))
        unknown = by_payload["36"]
        assert unknown["retained"] is True and unknown["age_s"] is None
        assert unknown["time"] is None and "age unknown" in unknown["note"]
        live = by_payload['{"temperature": 31}']
        assert "retained" not in live and live["time"] is not None
        snapshot = state.take_snapshot()
        assert snapshot is not None
        lines = snapshot.text.splitlines()[1:]
        if retained == "skip":  # only the live reading is an event
            assert lines == ['lab/bench/temperature: {"temperature": 31} (rule: temperature > 30)']
        else:
            assert len(lines) == 3
            assert "[retained, published 2.0 h ago]" in lines[0] + lines[1]
            assert "[retained, age unknown]" in lines[0] + lines[1]
            assert lines[2].endswith("(rule: temperature > 30)")
    finally:
        await state.disconnect()
        await device.stop()


async def test_configured_subscriptions_take_mqtt_retained_and_their_own_setting(
    mqtt_broker: MqttBroker, scripted_server: Any, tmp_path: Path
) -> None:
    """``mqtt.retained`` and ``mqtt.subscriptions[].retained`` (docs/mqtt.md) reach the rules."""
    device, two_hours_ago = await retain_two_readings(mqtt_broker)
    cfg, _ = load_config(
        None,
        cwd=tmp_path,
        env={},
        overrides={
            "mqtt": {
                "broker": mqtt_broker.url,
                "retained": "inject",
                "subscriptions": [
                    {"topic": "lab/bench/temperature", "rules": ["temperature > 30"]},
                    {"topic": "lab/hall/#", "mode": "inject", "retained": "skip"},
                ],
            },
        },
    )
    agent, _ = make_agent(scripted_server([]), tmp_path)
    async with AsyncExitStack() as stack:
        await attach_mqtt_tools(cfg, agent, stack)
        history = agent.registry.get("mqtt_history")
        assert history is not None
        c = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
        counts: list[int] = []

        async def seen(n: int) -> None:
            for _ in range(1000):
                res = await history.invoke({}, c)
                counts.append(int(res.metadata["count"]))
                if counts[-1] >= n:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError(f"the history has {counts[-1:]} messages, not {n}")

        await seen(2)  # both retained readings arrived
        device.publish("lab/hall/temperature", b"22", 1)
        await seen(3)
        assert agent.conversation.pull_sources(None) == 1  # as at a round boundary
        lines = agent.history[-1].text.splitlines()
    await agent.close()
    await device.stop()
    assert lines[0] == "[mqtt messages]"
    assert len(lines) == 3, lines
    assert lines[1].startswith('lab/bench/temperature: {"temperature": 35')  # mqtt.retained
    assert lines[1].endswith("(rule: temperature > 30) [retained, published 2.0 h ago]")
    assert lines[2] == "lab/hall/temperature: 22"  # its own retained: skip left out "36"


def test_the_publish_time_is_read_from_common_payload_fields() -> None:
    now = 1_800_000_000.0
    assert payload_time('{"ts": 1799999000}', now) == 1_799_999_000
    assert payload_time('{"timestamp": 1799999000123}', now) == pytest.approx(1_799_999_000.123)
    iso = "2027-01-15T06:00:00+01:00"
    assert payload_time(f'{{"time": "{iso}"}}', now) == datetime.fromisoformat(iso).timestamp()
    for unknown in ('{"time": "2027-01-15T08:00:00"}', '{"ts": 12}', '{"ts": true}', "35", "{"):
        assert payload_time(unknown, now) is None, unknown
    assert payload_time(f'{{"ts": {now + 7 * 86400}}}', now) is None  # from the future
