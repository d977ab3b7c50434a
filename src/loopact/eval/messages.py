"""Messages a person would have received: an MQTT subscriber on the task's topics (issue 20).

The ``messages`` tasks let the agent publish with ``send_message`` (channel ``mqtt``) through
a real broker; :class:`TopicRecorder` is an independent client subscribed to the same topics,
so the grader sees what was delivered, not what the tool said it sent.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

SUBSCRIBE_TIMEOUT_S = 10.0


class TopicRecorder:
    """Subscribes to ``topics`` on ``broker_url`` (``mqtt://host:port``) and keeps every
    message as ``{"topic", "text"}``.

    Raises:
        OSError: The broker cannot be reached (from :meth:`start`).
        TimeoutError: It did not acknowledge the subscription in time.
    """

    def __init__(self, broker_url: str, topics: Sequence[str]) -> None:
        self.url = urlparse(broker_url)
        self.topics = list(topics)
        self.messages: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._client: Any = None

    async def start(self) -> None:
        """Connect and subscribe; returns once the broker acknowledged the subscription."""
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        subscribed = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="", clean_session=True)

        def on_connect(c: Any, _u: Any, _f: Any, _rc: Any, _p: Any = None) -> None:
            c.subscribe([(t, 1) for t in self.topics])

        def on_subscribe(*_a: Any) -> None:
            subscribed.set()

        def on_message(_c: Any, _u: Any, msg: Any) -> None:
            with self._lock:
                self.messages.append(
                    {"topic": msg.topic, "text": msg.payload.decode("utf-8", "replace")}
                )

        client.on_connect = on_connect
        client.on_subscribe = on_subscribe
        client.on_message = on_message
        await asyncio.to_thread(
            client.connect, self.url.hostname or "127.0.0.1", self.url.port or 1883
        )
        client.loop_start()
        self._client = client
        if not await asyncio.to_thread(subscribed.wait, SUBSCRIBE_TIMEOUT_S):
            await self.stop()
            raise TimeoutError(
                f"the broker at {self.url.geturl()} did not confirm the subscription"
            )

    async def stop(self) -> list[dict[str, str]]:
        """Disconnect; returns the messages received."""
        client, self._client = self._client, None
        if client is not None:
            client.disconnect()
            await asyncio.to_thread(client.loop_stop)
        with self._lock:
            return list(self.messages)
