"""Confirmations on every channel (issue 41 item 3, acceptance 2; SPEC C5, F3).

A write tool's confirmation request carries an id and goes to every channel; the ones
``confirm.channels`` lists answer with a short yes/no or a structured answer carrying the id;
other text still preempts as before; the first answer wins and a late one is told; an answer
for a request that no longer exists, or from a channel that may not answer, is refused.

Acceptance 2 over MQTT text runs the agent as ``loopact run`` composes it on a real mosquitto
broker (the ROS 2 text run, in its own process, is in tests/ros2/test_confirm_text.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.nodes.mqtt.helpers import needs_broker, wait_until

from loopact.agent.confirm import ConfirmationBroker, parse_answer
from loopact.events import Event, EventBus
from loopact.llm.messages import ToolCall
from loopact.nodes.mqtt.link import MqttLink
from loopact.nodes.mqtt.settings import MqttSettings


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("y", (None, True)),
        ("Yes.", (None, True)),
        ("是", (None, True)),
        ("好！", (None, True)),
        ("n", (None, False)),
        ("NO", (None, False)),
        ("否", (None, False)),
        ("不", (None, False)),
        ('{"confirm": "confirm-3", "allow": true}', ("confirm-3", True)),
        ('{"id": "confirm-4", "answer": "n"}', ("confirm-4", False)),
        ("yes please go on", None),
        ("turn left", None),
        ('{"confirm": 3, "allow": true}', None),
        ("[1, 2]", None),
    ],
)
def test_short_and_structured_answers(text: str, want: Any) -> None:
    assert parse_answer(text) == want


async def test_the_first_answer_wins_and_the_others_are_told() -> None:
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    broker = ConfirmationBroker(bus, channels={"terminal", "web", "mqtt"}, timeout_s=5)
    asked = asyncio.ensure_future(broker.request("t1", ToolCall("c1", "file_write", {})))
    await wait_until(lambda: broker.pending)
    (rid,) = broker.pending
    request = next(e for e in events if e.type == "confirm_request")
    assert request.data["id"] == rid and request.data["channels"] == ["mqtt", "terminal", "web"]
    assert broker.answer(rid, True, "web")
    assert not broker.answer(rid, False, "mqtt")  # two at once: the first wins
    assert (await asked).allowed
    assert not broker.answer("confirm-99", True, "terminal")  # no such request
    assert not broker.answer(rid, True, "ros2")  # this channel may not answer
    refused = [e.data for e in events if e.type == "confirm_refused"]
    assert refused == [
        {"id": rid, "by": "mqtt", "reason": "answered", "answered_by": "web"},
        {"id": "confirm-99", "by": "terminal", "reason": "unknown"},
        {"id": rid, "by": "ros2", "reason": "channel"},
    ]
    responses = [e.data for e in events if e.type == "confirm_response"]
    assert responses == [{"id": rid, "allowed": True, "by": "web"}]


async def test_a_timeout_denies() -> None:
    broker = ConfirmationBroker(EventBus(), timeout_s=0.05)
    decision = await broker.request("t1", ToolCall("c1", "file_write", {}))
    assert not decision.allowed and "60" not in decision.reason


SCRIPT = [
    {"tool_calls": [call("file_write", {"path": "yes.txt", "content": "allowed"})]},
    {"text": "Written."},
    {"tool_calls": [call("file_write", {"path": "no.txt", "content": "denied"}, id="c2")]},
    {"text": "Not written."},
    {"tool_calls": [call("file_write", {"path": "late.txt", "content": "x"}, id="c3")]},
    {"text": "It is noon."},
]


def check_outcome(workspace: Path, starts: list[tuple[str, str]], ends: list[str]) -> None:
    """Acceptance 2: ``y`` wrote the file, ``n`` denied, the unrelated line preempted."""
    assert (workspace / "yes.txt").read_text() == "allowed"
    assert not (workspace / "no.txt").exists()
    assert not (workspace / "late.txt").exists()
    assert [text for text, _ in starts] == [
        "write yes.txt",
        "write no.txt",
        "write late.txt",
        "what time is it?",
    ]
    assert ends == ["completed", "completed", "preempted", "completed"]


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@needs_broker
async def test_mqtt_text_answers_y_and_n_and_an_unrelated_line_preempts(
    mqtt_broker: Any, scripted_server: Any, tmp_path: Path, stack: AsyncExitStack
) -> None:
    """Acceptance 2 over MQTT text (``mqtt.text_channel`` and ``confirm.channels: [mqtt]``)."""
    from loopact.app.run import open_agent
    from loopact.config import load_config

    server = scripted_server(SCRIPT)
    cfg, _ = load_config(
        None,
        env={},
        cwd=tmp_path,
        overrides={
            "model": {"base_url": server.base_url, "model": "m", "api_key": "sk-test"},
            "robot": {"kind": "none"},
            "nodes": {"transport": "mqtt"},
            "mqtt": {"tools": False, "broker": mqtt_broker.url, "text_channel": True},
            "confirm": {"channels": ["mqtt"]},
            "agent": {"workspace": str(tmp_path / "ws"), "name": "robot_c"},
            "memory": {"enabled": False},
            "web": {"enabled": False},
        },
    )
    bus = EventBus()
    _, opened = await open_agent(
        cfg, stack, bus, once=None, config_source=None, interactive=True, local_brain=False,
        mcp_servers=False,
    )  # fmt: skip
    runner = asyncio.ensure_future(opened.agent.run())
    stack.callback(runner.cancel)
    link = MqttLink(MqttSettings(broker=mqtt_broker.url), "operator")
    await link.start(require=True)
    stack.push_async_callback(link.stop)
    out: list[dict[str, Any]] = []
    sub = link.subscribe(
        "loopact/robot_c/text_output", lambda t, p, r: out.append(json.loads(p)), depth=10_000
    )
    await link.acked(sub, 5)

    def say(text: str) -> None:
        link.publish("loopact/robot_c/text_input", text.encode(), 1)

    async def asked(n: int) -> str:
        seen = await wait_until(
            lambda: [e for e in out if e["type"] == "confirm_request"][n:], 20, "a request"
        )
        return str(seen[0]["id"])

    say("write yes.txt")
    await asked(0)
    say("y")
    await wait_until(lambda: any(e["type"] == "reply" for e in out), 20, "the first reply")
    say("write no.txt")
    rid = await asked(1)
    say("n")
    await wait_until(lambda: [e for e in out if e["type"] == "reply"][1:], 20, "the second reply")
    say("write late.txt")
    await asked(2)
    say("what time is it?")
    await wait_until(lambda: [e for e in out if e["type"] == "reply"][2:], 20, "the third reply")
    # the reply may arrive before its task's end
    await wait_until(lambda: [e for e in out if e["type"] == "task_end"][3:], 20, "the last end")
    # a late answer for the request that was denied is refused and told on text_output
    say(json.dumps({"confirm": rid, "allow": True}))
    told = await wait_until(lambda: [e for e in out if e["type"] == "confirm_refused"], 20)
    assert told[0]["id"] == rid and told[0]["reason"] == "answered"
    starts = [(e["text"], e["source"]) for e in out if e["type"] == "task_start"]
    assert all(source == "mqtt" for _, source in starts)
    ends = [e["status"] for e in out if e["type"] == "task_end"]
    check_outcome(tmp_path / "ws", starts, ends)
    answers = [(e["allowed"], e["by"]) for e in out if e["type"] == "confirm_response"]
    assert answers[:2] == [(True, "mqtt"), (False, "mqtt")]
