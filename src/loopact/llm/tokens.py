"""Token estimates of a prompt before it is sent (SPEC E1).

One rule for the agent (when to compress, whether a request fits the context window) and for
providers (what they send: the messages, and the tools as a ``tools`` list or as a text
catalogue in the system message): about 4 characters a token, :data:`IMAGE_TOKENS` per image,
:data:`MESSAGE_OVERHEAD_TOKENS` per message. A provider that sends something else than the
request's messages and tools says how much with ``estimate_prompt_tokens(request)``
(:func:`estimate_prompt_tokens`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

from loopact.llm.base import Model, ModelRequest, ToolSpec
from loopact.llm.messages import NO_VISION_NOTE, AudioPart, Message, TextPart

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "estimate_fixed_tokens",
    "estimate_message_tokens",
    "estimate_prompt_tokens",
    "estimate_tool_tokens",
]

#: Tokens counted for one image before the provider reports usage.
IMAGE_TOKENS = 1000
#: Tokens counted per second of spoken audio (OpenAI bills audio input at about 10 per second).
AUDIO_TOKENS_PER_S = 10
#: Tokens counted for each message's framing (role, separators).
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_message_tokens(messages: Sequence[Message], vision: bool = True) -> int:
    """Rough token count of ``messages``: characters / 4 plus fixed costs.

    Counts text, reasoning, thinking, tool names and arguments at 4 characters per token,
    :data:`IMAGE_TOKENS` per image and :data:`MESSAGE_OVERHEAD_TOKENS` per message.

    Args:
        messages: The messages.
        vision: The model is sent the images; without vision each one is sent as the short
            :data:`~loopact.llm.messages.NO_VISION_NOTE` (observe_surroundings' four images
            counted 4,000 tokens and refused a request of the 8,192-token local brain that
            holds them as four notes; found 2026-12-05).

    Returns:
        The estimate, in tokens.
    """
    total = 0
    for m in messages:
        chars = 0
        for p in m.content:
            if isinstance(p, TextPart):
                chars += len(p.text)
            elif isinstance(p, AudioPart):  # heard, or read as its transcript
                total += math.ceil(p.audio.duration_s * AUDIO_TOKENS_PER_S)
                chars += len(p.audio.transcript)
            elif vision:
                total += IMAGE_TOKENS
            else:
                chars += len(NO_VISION_NOTE) + 1
        chars += len(m.reasoning or "")
        chars += sum(len(t.text) + len(t.redacted_data or "") for t in m.thinking)
        for c in m.tool_calls:
            chars += len(c.name) + len(c.id) + len(c.raw_arguments or c.arguments_json())
        total += MESSAGE_OVERHEAD_TOKENS + math.ceil(chars / 4)
    return total


def estimate_tool_tokens(tools: Sequence[ToolSpec]) -> int:
    """Rough token count of the tools a request offers: their JSON function objects and
    examples at 4 characters per token.

    Every request of a tool round carries them: as the ``tools`` list (native tool calls) or
    as the catalogue in the system message (models that write calls as text). Measured on
    the local brain with the simulated robot (36 tools, 2026-12-05): 4,958 tokens estimated;
    its tokenizer counted 5,245 for the system message with the compact catalogue, of which
    about 290 are the system prompt.

    Args:
        tools: The tools offered (none: 0).

    Returns:
        The estimate, in tokens.
    """
    if not tools:
        return 0
    text = json.dumps([t.openai() for t in tools], ensure_ascii=False)
    examples = json.dumps([t.examples for t in tools if t.examples], ensure_ascii=False)
    return math.ceil((len(text) + len(examples)) / 4)


def estimate_prompt_tokens(model: Model, request: ModelRequest) -> int:
    """About how many tokens the prompt of ``request`` has as ``model`` sends it.

    ``model.estimate_prompt_tokens(request)`` when the model has it (a provider that sends
    only the current task, or adds tools of its own); else the request's messages and tools
    (:func:`estimate_message_tokens` + :func:`estimate_tool_tokens`).
    """
    own = getattr(model, "estimate_prompt_tokens", None)
    if callable(own):
        return int(own(request))
    vision = model.capabilities.vision
    return estimate_message_tokens(request.messages, vision) + estimate_tool_tokens(request.tools)


def estimate_fixed_tokens(model: Model, request: ModelRequest) -> int:
    """About how many tokens of the prompt of ``request`` no compression can shrink: its
    system messages and its tools as ``model`` sends them (:func:`estimate_prompt_tokens` of
    the request without its conversation). The default compression threshold leaves them
    out, and a request that does not fit the window says how much they take (SPEC E1).
    """
    system = tuple(m for m in request.messages if m.role == "system")
    return estimate_prompt_tokens(model, dataclasses.replace(request, messages=system))
