"""A ROS 2 audio topic pair as a voice source and sink (issue 16).

For robots whose microphone and speaker belong to another process: the agent listens on
``/<agent>/audio/in`` and speaks on ``/<agent>/audio/out``. Both carry ``std_msgs/UInt8MultiArray``
whose ``data`` is 16 kHz mono signed 16-bit little-endian PCM (the layout of
``audio_common_msgs/AudioData``'s ``data``, so a bridge is one copy), any length per message;
the agent publishes 20 ms per message in real time. Reliable QoS, depth 50.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from loopact.nodes.ros2.interfaces import ros_types
from loopact.voice.audio import FRAME_BYTES, AudioFrame, ClockedSink

_DEPTH = 50
_MAX_QUEUED = 500


def audio_topics(agent_name: str) -> tuple[str, str]:
    """``(/<agent>/audio/in, /<agent>/audio/out)``."""
    return f"/{agent_name}/audio/in", f"/{agent_name}/audio/out"


class TopicAudioSource:
    """Microphone frames from a ROS 2 topic (stamped on arrival).

    Args:
        connector: A started ``Ros2Connector``.
        topic: The topic (``/<agent>/audio/in``).
    """

    def __init__(self, connector: Any, topic: str) -> None:
        self.name = f"ROS 2 topic {topic}"
        msg_type = ros_types("std_msgs.msg", "UInt8MultiArray")
        self._queue: asyncio.Queue[AudioFrame | None] = asyncio.Queue(_MAX_QUEUED)
        self._pending = bytearray()
        self._sub = connector.subscribe_msg(
            msg_type,
            topic,
            connector.qos(depth=_DEPTH),
            self._take,
            convert=lambda m: bytes(m.data),
        )

    def _take(self, data: bytes) -> None:
        self._pending.extend(data)
        now = time.monotonic()
        while len(self._pending) >= FRAME_BYTES:
            frame = AudioFrame(bytes(self._pending[:FRAME_BYTES]), now)
            del self._pending[:FRAME_BYTES]
            if self._queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    self._queue.get_nowait()
            self._queue.put_nowait(frame)

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames as they arrive, until :meth:`close`."""
        while True:
            frame = await self._queue.get()
            if frame is None:
                return
            yield frame

    async def close(self) -> None:
        """Unsubscribe and end :meth:`frames`."""
        with contextlib.suppress(Exception):
            self._sub.close()
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)


class TopicAudioSink(ClockedSink):
    """The robot's voice published on a ROS 2 topic, 20 ms per message, in real time.

    Args:
        connector: A started ``Ros2Connector``.
        topic: The topic (``/<agent>/audio/out``).
    """

    def __init__(self, connector: Any, topic: str) -> None:
        super().__init__(f"ROS 2 topic {topic}")
        self._type = ros_types("std_msgs.msg", "UInt8MultiArray")
        self._pub = connector.publisher(self._type, topic, connector.qos(depth=_DEPTH))

    def emit(self, pcm: bytes, t_s: float) -> None:
        """Publish one played chunk."""
        self._pub.publish(self._type(data=array.array("B", pcm)))
