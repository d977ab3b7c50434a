"""The ROS 2 audio topic pair (issue 16): the robot's voice published on /<agent>/audio/out as
std_msgs/UInt8MultiArray of 16 kHz s16le PCM, and a microphone topic read back as frames."""

from __future__ import annotations

import asyncio
from typing import Any

from loopact.nodes.ros2.audio import TopicAudioSink, TopicAudioSource, audio_topics
from loopact.testing.audio_protocol import spoken_wav
from loopact.voice.audio import read_wav


async def test_speech_published_on_one_topic_arrives_as_frames_on_the_other(ros: Any) -> None:
    topic_in, topic_out = audio_topics("robo")
    assert (topic_in, topic_out) == ("/robo/audio/in", "/robo/audio/out")
    source = TopicAudioSource(ros, topic_out)  # a listener of the robot's voice
    sink = TopicAudioSink(ros, topic_out)
    pcm = read_wav(spoken_wav("hello from the robot"))[0]
    got = bytearray()

    async def collect() -> None:
        async for frame in source.frames():
            got.extend(frame.pcm)
            if len(got) >= len(pcm):
                return

    collector = asyncio.ensure_future(collect())

    async def matched() -> None:  # DDS discovery between the publisher and the subscriber
        while sink._pub.get_subscription_count() < 1:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(matched(), 20)
    await sink.write(pcm)
    await sink.drain()
    await asyncio.wait_for(collector, 20)
    assert bytes(got[: len(pcm)]) == pcm
    await source.close()
    await sink.close()
