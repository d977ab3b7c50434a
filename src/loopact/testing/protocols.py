"""The wire protocols the scripted model server speaks by default (SPEC X2).

To add one, write a :class:`~loopact.testing.protocol.Protocol` in its own module and list it
here (docs/scripted-server-wire.md, "Adding a protocol").
"""

from __future__ import annotations

from loopact.testing.anthropic_protocol import AnthropicMessagesProtocol
from loopact.testing.audio_protocol import SpeechProtocol, TranscriptionsProtocol
from loopact.testing.dify_protocol import DifyProtocol
from loopact.testing.images_protocol import ImagesProtocol
from loopact.testing.openai_protocol import OpenAIChatProtocol
from loopact.testing.protocol import Protocol


def default_protocols() -> list[Protocol]:
    """The protocols a server speaks when none are given: OpenAI chat completions,
    Anthropic Messages, Dify chat-messages (with file uploads), OpenAI image generation and
    OpenAI audio transcription and speech (issue 16)."""
    return [
        OpenAIChatProtocol(),
        AnthropicMessagesProtocol(),
        DifyProtocol(),
        ImagesProtocol(),
        TranscriptionsProtocol(),
        SpeechProtocol(),
    ]
