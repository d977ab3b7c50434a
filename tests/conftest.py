"""Shared fixtures: the scripted model server factory (SPEC X2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopact.errors import ScriptError
from loopact.testing import Script, ScriptedModelServer
from loopact.testing.mqtt_broker import MqttBroker

pytest_plugins = ["pytester"]

ScriptSource = Script | dict[str, Any] | list[Any] | str | Path


@pytest.fixture
def scripted_server() -> Iterator[Callable[[ScriptSource], ScriptedModelServer]]:
    """Factory: ``scripted_server({"turns": [...]})`` or ``scripted_server([turn, ...])``.

    Each call starts a server on a free port and returns it. At teardown every server is
    stopped and ``assert_consumed()`` is called, so an unconsumed or exhausted script, or a
    failed ``expect``, fails the test.
    """
    servers: list[ScriptedModelServer] = []

    def start(script: ScriptSource) -> ScriptedModelServer:
        server = ScriptedModelServer(script).start()
        servers.append(server)
        return server

    yield start
    problems: list[str] = []
    for server in servers:
        server.stop()
        try:
            server.assert_consumed()
        except ScriptError as exc:
            problems.append(str(exc))
    if problems:
        raise ScriptError("; ".join(problems))


@pytest.fixture
def mqtt_broker(tmp_path: Path) -> Iterator[MqttBroker]:
    """A real MQTT broker on a free 127.0.0.1 port: mosquitto, or amqtt when mosquitto is
    absent (``LOOPACT_TEST_BROKER=amqtt`` forces it); stopped at teardown (issue 17)."""
    broker = MqttBroker(tmp_path / "broker").start()
    yield broker
    broker.stop()
