"""Shared helpers of the MQTT tests: a real broker per test and bounded waits (issue 17)."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import pytest

from loopact.testing.mqtt_broker import default_kind, mosquitto_path


def broker_available(kind: str | None = None) -> bool:
    """Whether the broker ``kind`` (default: the default kind) can run here."""
    kind = kind or default_kind()
    if kind == "mosquitto":
        return mosquitto_path() is not None
    return importlib.util.find_spec("amqtt") is not None


needs_broker = pytest.mark.skipif(
    not broker_available(),
    reason="no MQTT broker: install mosquitto (scripts/system-deps.sh) or amqtt (dev extra)",
)


async def wait_until(pred: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """Poll ``pred`` until it is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or pred}")
        await asyncio.sleep(0.005)


async def subscribed(sub: Any, timeout: float = 10.0) -> None:
    """Wait for the broker's SUBACK of an :class:`MqttConnector` subscription.

    MQTT cannot tell a publisher whether anyone subscribed (docs/mqtt.md, Limits): a message
    published before the broker registered the subscription is not delivered to it.
    """
    link_sub = sub.link_sub
    await wait_until(lambda: link_sub.acked is None or link_sub.acked.done(), timeout, "SUBACK")
