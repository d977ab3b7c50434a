"""The channels are typed against what they need from the agent: AgentPort (issue 38 item 4).

Every ``agent`` parameter in src/loopact/channels is an ``AgentPort`` (not ``Any``, not the
concrete ``Agent``), and the real agent has every member of the protocol with the same
parameters (mypy checks the same where the app hands its agent to a channel).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Protocol

import pytest

from loopact.agent import Agent, AgentOptions
from loopact.agent.confirm import ConfirmationBroker
from loopact.channels.agent_port import AgentPort, AgentSettings, ConfirmPort, EventSource
from loopact.events import EventBus

CHANNELS = Path(__file__).resolve().parents[2] / "src" / "loopact" / "channels"


def _members(protocol: type) -> list[str]:
    return [
        name
        for name in vars(protocol)
        if not name.startswith("_") and name not in vars(Protocol) and name != "_is_protocol"
    ]


def test_every_agent_parameter_of_a_channel_is_an_agent_port() -> None:
    found = {}
    for path in sorted(CHANNELS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    if arg.arg == "agent":
                        where = f"{path.relative_to(CHANNELS)}:{node.name}"
                        found[where] = ast.unparse(arg.annotation) if arg.annotation else None
    assert len(found) >= 6, found  # terminal, voice, ROS 2 text, web app/state/server/voice
    # (an ``agent: str`` is an agent's name: the ROS 2 topic prefix)
    assert {w: kind for w, kind in found.items() if kind not in ("AgentPort", "str")} == {}


@pytest.mark.parametrize(
    ("protocol", "real"),
    [
        (AgentPort, Agent),
        (AgentSettings, AgentOptions),
        (EventSource, EventBus),
        (ConfirmPort, ConfirmationBroker),  # issue 41: confirmations on every channel
    ],
)
def test_the_real_agent_has_every_member_with_the_same_parameters(
    protocol: type, real: type
) -> None:
    members = _members(protocol)
    assert members, protocol
    fields = getattr(real, "__dataclass_fields__", {})
    for name in members:
        wanted = vars(protocol)[name]
        if isinstance(wanted, property):  # an attribute of the instance, or a property
            attrs = ("bus", "options", "broker")  # set in __init__
            assert name in fields or hasattr(real, name) or name in attrs, name
            continue
        have = getattr(real, name)
        assert list(inspect.signature(have).parameters) == list(
            inspect.signature(wanted).parameters
        ), name
        assert inspect.iscoroutinefunction(have) == inspect.iscoroutinefunction(wanted), name
