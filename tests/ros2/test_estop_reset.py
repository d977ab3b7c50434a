"""Who may release a latched emergency stop, over real ROS 2 (issue 21 item 14, issue 41;
SPEC X3, H6).

``loopact sim --ros2`` (simulator + base-side governor) runs in its own process; the test
process is another participant on the graph that stops, tries to reset, and reads the
governor's status topic. Since issue 41 a reset carries a proof of the operator's secret over
the nonce the status publishes, never the secret: a secret sent in clear is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ros2.conftest import Proc, Topic

from loopact.nodes.ros2.connector import Ros2Connector
from loopact.robot.estop import estop_proof

TOKEN = "estop-reset-token-0123456789"
OPERATOR_TOPIC = "/operator/estop_reset"


@pytest.fixture
def governor(ros_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    """``governor(agent, *flags, env={...})``: ``loopact sim --ros2`` for agent ``agent``."""
    procs: list[Proc] = []

    def start(agent: str, *flags: str, env: dict[str, str] | None = None) -> Proc:
        proc = Proc(
            ["-m", "loopact.cli", "sim", "--ros2", "--camera-hz", "2", "--agent-name", agent]
            + list(flags),
            {**ros_env, **(env or {})},
            tmp_path / f"{agent}.log",
        )
        procs.append(proc)
        proc.wait_output("ROS 2 robot up", timeout=60)
        return proc

    yield start
    for p in procs:
        p.stop()


def _status(ros: Ros2Connector, agent: str) -> Topic:
    topic = Topic()
    ros.subscribe(f"/{agent}/base/status", "string", lambda s: topic(json.loads(str(s))), depth=50)
    return topic


async def _send_until(
    ros: Ros2Connector, topic: str, text: str, status: Topic, pred: Callable[[Any], bool]
) -> Any:
    """Publish ``text`` until a new status of the governor shows ``pred`` (matching a new
    subscriber takes a moment, so the first messages may be lost); bounded to 30 s."""
    end = time.monotonic() + 30.0
    seen = len(status.items)
    while True:
        await ros.publish(topic, text)
        resend = time.monotonic() + 0.5
        while time.monotonic() < resend:
            for item in status.items[seen:]:
                if pred(item):
                    return item
            await asyncio.sleep(0.02)
        if time.monotonic() > end:
            raise AssertionError(f"no status after {text!r} on {topic}: {status.items[-3:]}")


async def test_reset_needs_the_token_and_is_logged_with_who(
    governor: Any, ros: Ros2Connector
) -> None:
    agent = f"estop_a{os.getpid()}"
    proc = governor(agent, "--reset-topic", OPERATOR_TOPIC, env={"LOOPACT_ESTOP_TOKEN": TOKEN})
    status = _status(ros, agent)
    estop = f"/{agent}/base/emergency_stop"
    me = f"/{ros.node.get_name()}"

    # Anyone may stop.
    await _send_until(ros, estop, "stop", status, lambda s: s["emergency_stop"] is True)
    # A reset without the token, or with a wrong one, is refused and the stop stays.
    # (sent again until the governor's graph also knows this node's name, not only its
    # publisher: "?" until then)
    refused = await _send_until(
        ros,
        estop,
        "reset",
        status,
        lambda s: (
            s.get("event") == "estop_reset_refused"
            and s["last_reset_refused"].get("publisher") != "?"
        ),
    )
    assert refused["emergency_stop"] is True
    assert refused["last_reset_refused"]["reason"] == "no proof"
    assert refused["last_reset_refused"]["publisher"] == me
    # the secret itself, sent in clear (the reset of before issue 41), is refused and said
    clear = await _send_until(
        ros,
        estop,
        json.dumps({"command": "reset", "token": TOKEN, "by": "bob"}),
        status,
        lambda s: (s.get("last_reset_refused") or {}).get("reason") == "token sent in clear",
    )
    assert clear["emergency_stop"] is True
    assert "sent in clear" in proc.output() and "change it" in proc.output()
    nonce = clear["estop"]["nonce"]
    wrong = await _send_until(
        ros,
        estop,
        f"reset {nonce} {estop_proof('not-the-secret-at-all-0', nonce)}",
        status,
        lambda s: (s.get("last_reset_refused") or {}).get("reason") == "wrong proof",
    )
    assert wrong["emergency_stop"] is True
    assert wrong["estop"]["resets_refused"] >= 3  # each refusal counted
    # With a proof over the current nonce the stop is released, and the release names who.
    proof = estop_proof(TOKEN, wrong["estop"]["nonce"])
    request = json.dumps(
        {"command": "reset", "nonce": wrong["estop"]["nonce"], "proof": proof, "by": "alice"}
    )
    released = await _send_until(
        ros, estop, request, status, lambda s: s.get("event") == "estop_reset"
    )
    assert released["emergency_stop"] is False
    who = released["last_reset"]
    assert (who["by"], who["via"], who["publisher"]) == ("alice", "proof", me)
    # the name is quoted in the log (it comes from the message; audit B finding 10)
    assert "emergency stop released by 'alice' via proof" in proc.output()
    assert proof not in proc.output()

    # A name with a line break cannot forge a log line; a long one is cut.
    latched = await _send_until(ros, estop, "stop", status, lambda s: s["emergency_stop"] is True)
    forged = "alice\nFAKE LOG LINE released by root" + "x" * 500
    nonce = latched["estop"]["nonce"]
    proof = estop_proof(TOKEN, nonce)
    request = json.dumps({"command": "reset", "nonce": nonce, "proof": proof, "by": forged})
    released = await _send_until(
        ros, estop, request, status, lambda s: s.get("event") == "estop_reset"
    )
    assert released["last_reset"]["by"] == forged[:64]  # the status is JSON: no forging
    output = proc.output()
    assert "released by 'alice\\nFAKE LOG LINE released by root" in output
    assert not any(line.startswith("FAKE LOG LINE") for line in output.splitlines())
    assert "x" * 100 not in output

    # The operator's channel releases without a token.
    await _send_until(ros, estop, "stop", status, lambda s: s["emergency_stop"] is True)
    released = await _send_until(
        ros,
        OPERATOR_TOPIC,
        "reset",
        status,
        lambda s: s.get("event") == "estop_reset" and s["last_reset"]["via"] == "operator topic",
    )
    assert released["emergency_stop"] is False
    assert released["last_reset"]["topic"] == OPERATOR_TOPIC


async def test_without_an_authorised_source_nobody_on_the_graph_can_reset(
    governor: Any, ros: Ros2Connector
) -> None:
    agent = f"estop_b{os.getpid()}"
    proc = governor(agent)
    status = _status(ros, agent)
    estop = f"/{agent}/base/emergency_stop"
    latched = await _send_until(ros, estop, "stop", status, lambda s: s["emergency_stop"] is True)
    nonce = latched["estop"]["nonce"]
    for attempt in (
        "reset",
        json.dumps({"command": "reset", "by": "mallory"}),
        f"reset {nonce} {estop_proof('any-secret-at-all-000', nonce)}",
    ):
        refused = await _send_until(
            ros, estop, attempt, status, lambda s: s.get("event") == "estop_reset_refused"
        )
        assert refused["emergency_stop"] is True
        assert refused["last_reset_refused"]["reason"] == "no reset secret configured"
    assert "set robot.estop.reset_token (LOOPACT_ESTOP_TOKEN)" in proc.output()
