"""The model's MQTT tools, rules and the mqtt message channel (issue 17; SPEC C6, C7, A7)."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.agent.tools import make_send_message_tool
from loopact.app.mqtt import attach_mqtt_tools, mqtt_settings
from loopact.config import Config, load_config
from loopact.nodes.mqtt.channel import MqttChannel
from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.rules import MqttMessage, parse_rule
from loopact.nodes.mqtt.settings import MqttSettings
from loopact.nodes.mqtt.tools import MqttTools, ToolsPolicy, check_filter, filter_within
from loopact.testing.mqtt_broker import MqttBroker
from loopact.tools.base import SafetyClass, ToolContext

from .helpers import needs_broker, wait_until


def msg(topic: str, payload: str) -> MqttMessage:
    return MqttMessage.from_payload(topic, payload.encode())


def test_rules_read_fields_numbers_and_keywords() -> None:
    hot = parse_rule("temperature > 30")
    assert hot.matches(msg("home/kitchen", '{"temperature": 31.5}'))
    assert not hot.matches(msg("home/kitchen", '{"temperature": 25}'))
    assert hot.matches(msg("home/kitchen/temperature", "31.5"))  # a bare value on its topic
    assert not hot.matches(msg("home/kitchen/humidity", "31.5"))
    assert not hot.matches(msg("home/kitchen", "not json"))  # unreadable: no match, no error
    assert not hot.matches(msg("home/kitchen", '{"temperature": "warm"}'))
    assert parse_rule("data.level >= 0.8").matches(msg("t", '{"data": {"level": 0.8}}'))
    assert parse_rule("payload < 10").matches(msg("t", " 9.5 "))
    alarm = parse_rule('payload contains "alarm"')
    assert alarm.matches(msg("t", "FIRE ALARM in hall"))
    assert not alarm.matches(msg("t", "all quiet"))
    assert parse_rule("state == 'open'").matches(msg("t", '{"state": "open"}'))
    assert parse_rule("state != open").matches(msg("t", '{"state": "closed"}'))
    assert parse_rule("payload contains 42").matches(msg("t", "answer 42"))
    for bad in ("temperature", "> 30", "temperature >> 30", "level > high", ""):
        with pytest.raises(ValueError, match="rule"):
            parse_rule(bad)


def test_topic_filters_and_allow_lists() -> None:
    assert filter_within("sensors/+/temperature", "sensors/#")
    assert filter_within("sensors/a/temperature", "sensors/+/temperature")
    assert filter_within("sensors", "sensors/#")
    assert not filter_within("sensors/#", "sensors/+")
    assert not filter_within("#", "sensors/#")
    assert not filter_within("other/x", "sensors/#")
    assert check_filter("a/#/b") and check_filter("a/b+") and check_filter("") is not None
    assert check_filter("a/+/b/#") is None


class Device:
    """A device on the broker: publishes readings, records what it receives."""

    def __init__(self, broker: MqttBroker) -> None:
        self.link = MqttLink(MqttSettings(broker=broker.url), "device")
        self.got: list[tuple[str, str]] = []
        self.at: list[float] = []  # time.monotonic() when each message of `got` arrived

    async def start(self, listen: str | None = None) -> Device:
        await self.link.start(require=True)
        if listen:
            sub = self.link.subscribe(listen, self._got, depth=1000)
            await self.link.acked(sub, 5)
        return self

    def _got(self, topic: str, payload: bytes, _retained: Any) -> None:
        self.at.append(time.monotonic())
        self.got.append((topic, payload.decode()))

    def send(self, topic: str, payload: str) -> None:
        self.link.publish(topic, payload.encode(), 1)


def tools_for(broker: MqttBroker, **policy: Any) -> MqttTools:
    return MqttTools(
        ToolsPolicy(broker=broker.url, **policy),
        settings=lambda url: MqttSettings(broker=url or broker.url),
    )


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="t", call_id="c", workspace=tmp_path)


@needs_broker
async def test_tools_subscribe_filter_receive_history_and_publish(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    woken: list[int] = []
    state = tools_for(mqtt_broker, allow_publish=("home/+/set",))
    state.on_inject = lambda: woken.append(1)
    tools = {t.name: t for t in state.tools()}
    assert set(tools) == {
        "mqtt_connect",
        "mqtt_disconnect",
        "mqtt_publish",
        "mqtt_subscribe",
        "mqtt_receive",
        "mqtt_history",
    }
    assert tools["mqtt_publish"].safety is SafetyClass.WRITE
    c = ctx(tmp_path)
    res = await tools["mqtt_connect"].invoke({}, c)
    assert res.ok, res.error
    res = await tools["mqtt_subscribe"].invoke(
        {"topic": "home/+/temperature", "rules": ["temperature > 30"]}, c
    )
    assert res.ok and res.metadata["rules"] == ["temperature > 30"]
    device = await Device(mqtt_broker).start(listen="home/+/set")
    device.send("home/kitchen/temperature", "25.0")
    device.send("home/kitchen/temperature", '{"temperature": 31.5}')
    got = await tools["mqtt_receive"].invoke({"timeout_s": 5}, c)
    await wait_until(lambda: len(state.history.query()) == 2, what="two messages")
    assert got.ok and got.data[0]["payload"] == "25.0"
    # only the reading above the threshold reaches the agent; both are in the history
    snap = state.take_snapshot()
    assert snap is not None and "31.5" in snap.text and "25.0" not in snap.text
    assert "(rule: temperature > 30)" in snap.text and woken == [1]
    assert state.take_snapshot() is None  # each message injected once
    hist = await tools["mqtt_history"].invoke({"topic": "home/#"}, c)
    assert [m["payload"] for m in hist.data] == ["25.0", '{"temperature": 31.5}']
    # publish: allowed topic, two in a row on one topic wait their turn (>= 100 ms apart)
    first = await tools["mqtt_publish"].invoke({"topic": "home/lamp/set", "payload": "on"}, c)
    second = await tools["mqtt_publish"].invoke({"topic": "home/lamp/set", "payload": "off"}, c)
    assert first.ok and first.metadata["acknowledged"] and first.metadata["waited_ms"] == 0
    assert second.ok and second.metadata["since_previous_ms"] >= 100
    await wait_until(lambda: len(device.got) == 2, what="the device to get both")
    assert device.got == [("home/lamp/set", "on"), ("home/lamp/set", "off")]
    # refusals: outside the allow-list, the node protocol's topics, too big, wildcards
    for args, why in (
        ({"topic": "home/door/open", "payload": "1"}, "outside mqtt.allow_publish"),
        ({"topic": "loopact/loopact/output/move_forward/request", "payload": "{}"}, "protocol"),
        ({"topic": "home/lamp/set", "payload": "x" * 70_000}, "over the limit"),
        ({"topic": "home/+/set", "payload": "1"}, "no wildcards"),
    ):
        res = await tools["mqtt_publish"].invoke(args, c)
        assert not res.ok and why in (res.error or ""), res.error
    res = await tools["mqtt_subscribe"].invoke({"topic": "loopact/#"}, c)
    assert not res.ok and "node protocol" in (res.error or "")
    res = await tools["mqtt_subscribe"].invoke({"topic": "a", "rules": ["level > high"]}, c)
    assert not res.ok and "needs a number" in (res.error or "")
    res = await tools["mqtt_connect"].invoke({"broker": "mqtt://10.0.0.1:1883"}, c)
    assert not res.ok and "not allowed" in (res.error or "")
    res = await tools["mqtt_disconnect"].invoke({}, c)
    assert res.ok and state.link is None
    await device.link.stop()


@needs_broker
async def test_publishes_on_one_topic_go_out_at_least_100_ms_apart(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    """``mqtt_publish`` (SPEC C7, issue 17): the next publish on a topic leaves no sooner than
    100 ms after the previous one, also for calls made at once; other topics do not wait.

    Two measures: the tool's own clock (taken right before each message is handed to the
    client), and a real subscriber's receipt times, which no message can beat: the second
    message cannot arrive before 100 ms after the first call began, the third 200 ms. (How
    long a call waited is no measure: under load its turn may come late anyway.)"""
    state = tools_for(mqtt_broker, allow_publish=("home/+/set",))
    publish = {t.name: t for t in state.tools()}["mqtt_publish"]
    c = ctx(tmp_path)
    device = await Device(mqtt_broker).start(listen="home/+/set")
    try:
        assert (await publish.invoke({"topic": "home/hall/set", "payload": "0"}, c)).ok  # connect
        began = time.monotonic()
        first, second, third, other = await asyncio.gather(
            publish.invoke({"topic": "home/lamp/set", "payload": "1"}, c),
            publish.invoke({"topic": "home/lamp/set", "payload": "2"}, c),
            publish.invoke({"topic": "home/lamp/set", "payload": "3"}, c),
            publish.invoke({"topic": "home/fan/set", "payload": "4"}, c),
        )
        assert all(r.ok and r.metadata["acknowledged"] for r in (first, second, third, other))
        assert first.metadata["since_previous_ms"] is None and first.metadata["waited_ms"] == 0
        assert second.metadata["since_previous_ms"] >= 100
        assert third.metadata["since_previous_ms"] >= 100
        assert other.metadata["since_previous_ms"] is None and other.metadata["waited_ms"] == 0
        await wait_until(lambda: len(device.got) == 5, what="the device to get all five")
        # in the order of the calls on one topic; the other topic's did not wait for them
        assert [p for _, p in device.got] == ["0", "1", "4", "2", "3"]
        assert device.at[3] - began >= 0.1 and device.at[4] - began >= 0.2
    finally:
        await state.disconnect()
        await device.link.stop()


@needs_broker
async def test_tools_limit_subscriptions_to_the_allow_list_and_survive_a_flood(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    state = tools_for(mqtt_broker, allow_subscribe=("sensors/#",))
    c = ctx(tmp_path)
    tools = {t.name: t for t in state.tools()}
    res = await tools["mqtt_subscribe"].invoke({"topic": "#"}, c)
    assert not res.ok and "outside mqtt.allow_subscribe" in (res.error or "")
    res = await tools["mqtt_subscribe"].invoke({"topic": "sensors/#", "mode": "inject"}, c)
    assert res.ok
    device = await Device(mqtt_broker).start()
    for i in range(300):
        device.send("sensors/a", f"m{i}")
    await wait_until(lambda: state.history.total >= 300, timeout=20, what="the flood")
    snap = state.take_snapshot()
    assert snap is not None and "older messages dropped" in snap.text and "m299" in snap.text
    assert snap.text.count("\n") <= 102  # at most 100 injected lines per snapshot
    await state.close()
    await device.link.stop()


@needs_broker
async def test_the_mqtt_message_channel_publishes_only_to_allowed_topics(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    device = await Device(mqtt_broker).start(listen="alerts/#")
    channel = MqttChannel(lambda: MqttSettings(broker=mqtt_broker.url), ["alerts/#"])
    assert channel.check_recipient("alerts/robot1") == "alerts/robot1"
    for bad in ("ops/chat", "loopact/loopact/text_input", "alerts/#"):
        with pytest.raises(Exception, match="not allowed"):
            channel.check_recipient(bad)
    receipt = await channel.deliver("alerts/robot1", "too hot in the lab", ctx(tmp_path))
    assert receipt == "published on alerts/robot1"
    await wait_until(lambda: device.got == [("alerts/robot1", "too hot in the lab")])
    await channel.close()
    await device.link.stop()


@needs_broker
async def test_send_message_takes_the_topic_as_topic_or_to(
    mqtt_broker: MqttBroker, tmp_path: Path
) -> None:
    """Issue 17 writes ``send_message(channel="mqtt", topic=...)``, issue 19 ``to``: both."""
    from loopact.events import EventBus
    from loopact.tools.builtin.messages import ConsoleChannel
    from loopact.tools.builtin.messages import make_send_message_tool as build

    device = await Device(mqtt_broker).start(listen="alerts/#")
    channel = MqttChannel(lambda: MqttSettings(broker=mqtt_broker.url), ["alerts/#"])
    tool = build([ConsoleChannel(EventBus()), channel])
    assert "topic" in tool.parameters["properties"]
    assert "topic" not in build([ConsoleChannel(EventBus())]).parameters["properties"]
    c = ctx(tmp_path)
    # through the registry, so the arguments are checked against the tool's schema
    from loopact.llm.messages import ToolCall
    from loopact.tools.registry import ToolRegistry

    args = {"channel": "mqtt", "topic": "alerts/a", "text": "one"}
    sent = await ToolRegistry([tool]).execute(ToolCall("m1", "send_message", args), c, 10)
    assert sent.ok and sent.metadata["to"] == "alerts/a", sent.error
    both = {"channel": "mqtt", "topic": "alerts/b", "to": "alerts/b", "text": "two"}
    assert (await tool.invoke(both, c)).ok
    await wait_until(lambda: len(device.got) == 2, what="both messages")
    assert device.got == [("alerts/a", "one"), ("alerts/b", "two")]
    for args, why in (
        ({"channel": "mqtt", "topic": "ops/x", "text": "x"}, "not allowed"),
        ({"channel": "mqtt", "topic": "alerts/a", "to": "alerts/c", "text": "x"}, "differ"),
        ({"channel": "console", "topic": "alerts/a", "text": "x"}, "topic channels"),
    ):
        with pytest.raises(Exception, match=why):
            await tool.invoke(args, c)
    assert len(device.got) == 2  # nothing more was sent
    await channel.close()
    await device.link.stop()


def mqtt_config(broker: MqttBroker, tmp_path: Path) -> Config:
    cfg, _ = load_config(
        None,
        cwd=tmp_path,
        env={},
        overrides={
            "mqtt": {
                "broker": broker.url,
                "subscriptions": [
                    {"topic": "lab/+/temperature", "mode": "filter", "rules": ["temperature > 30"]}
                ],
            },
            "messages": {"mqtt": {"allow_to": ["alerts/#"]}},
        },
    )
    return cfg


@needs_broker
async def test_a_rule_wakes_a_continuous_agent_that_reacts_with_send_message(
    mqtt_broker: MqttBroker, scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 3: a reading above the threshold wakes the continuous-mode agent, which
    answers with ``send_message`` on the mqtt channel; one below it is only in the history."""
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call(
                        "send_message",
                        {"channel": "mqtt", "to": "alerts/lab", "text": "Lab is at 31.5 C."},
                        "a1",
                    )
                ],
                "expect": {"contains": "31.5"},
            },
            {"text": ""},
        ]
    )
    cfg = mqtt_config(mqtt_broker, tmp_path)
    agent, rec = make_agent(server, tmp_path, mode="continuous")
    channel = MqttChannel(lambda: mqtt_settings(cfg), ["alerts/#"])
    agent.registry.add(make_send_message_tool(agent, [channel]))
    device = await Device(mqtt_broker).start(listen="alerts/#")
    async with AsyncExitStack() as stack:
        names = await attach_mqtt_tools(cfg, agent, stack)
        assert "mqtt_history" in names
        runner = asyncio.ensure_future(agent.run())
        device.send("lab/bench/temperature", "24.0")  # routine: history only
        history = agent.registry.get("mqtt_history")
        assert history is not None
        c = ctx(tmp_path)
        await wait_until_history(history, c, 1)
        assert not server.requests and not rec.of("task_start")  # the agent stayed asleep
        device.send("lab/bench/temperature", "31.5")
        await rec.wait_for(lambda e: e.type == "model_request", timeout=5)
        await wait_until(lambda: device.got, timeout=10, what="the alert on alerts/lab")
        await rec.wait_for(lambda e: e.type == "task_end")
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    await channel.close()
    await agent.close()
    await device.link.stop()
    assert device.got == [("alerts/lab", "Lab is at 31.5 C.")]
    sent = json.dumps(server.requests[0].body["messages"])
    assert "31.5" in sent and "24.0" not in sent
    result = next(e for e in rec.of("tool_result") if e.data["name"] == "send_message")
    assert result.data["ok"] is True


async def wait_until_history(history: Any, c: ToolContext, n: int) -> None:
    for _ in range(500):
        res = await history.invoke({}, c)
        if res.ok and res.metadata["count"] >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the history never got the routine reading")
