"""Canonical messages as OpenAI chat-completions messages (SPEC B4, B8; issue 6).

The request side of :mod:`loopact.llm.openai_chat`: images as ``image_url`` parts, tool
results as ``tool`` messages, and for endpoints without native tool calls the Hermes layout
(the catalogue in the system message, calls as ``<tool_call>`` blocks, results as
``<tool_response>`` user messages). Pure functions of the history: no I/O.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from loopact.llm.base import ToolSpec
from loopact.llm.messages import (
    NO_VISION_NOTE,
    Audio,
    Image,
    ImagePart,
    Message,
    TextPart,
    audio_fallback_text,
    refused_for_units,
)
from loopact.llm.toolprompt import REFUSAL_INSTRUCTION, RESULT_INSTRUCTION, describe_tools_compact

TOOL_RESULT_AS_TEXT = "<tool_response>\n{text}\n</tool_response>\n" + RESULT_INSTRUCTION
"""A tool result for a model without native tool calls: the Hermes ``<tool_response>`` block
many open models are trained on, and what to do with it. Measured with the 0.5B local brain
(issue 6): with a bare "Result of tool ..." line it re-called the tool and the answer-only
re-ask wrote "Here's the response in plain text: ..." or an unrelated apology; with this it
answers "The robot turned left 90 degrees." in the same round."""


REFUSAL_AS_TEXT = "<tool_response>\n{text}\n</tool_response>\n" + REFUSAL_INSTRUCTION
"""A call the runtime refused before running it for its units, for the same models (its error
names the functions that take the user's quantity). Measured with the 0.5B brain on three
refused calls (issue 6): with the "tell the user" line it chose the right function, but after
that had run it called it again and the answer-only re-ask wrote garbage; with no line it
answered with an apology instead of choosing; with this line it chose right and then answered
"The robot moved forward 0.3 meters and reached the target." (3 of 3)."""


def to_openai_messages(
    messages: tuple[Message, ...] | list[Message],
    vision: bool = True,
    native_tool_calls: bool = True,
    tools: tuple[ToolSpec, ...] = (),
    reasoning_back: bool = True,
    audio: bool = False,
) -> list[dict[str, Any]]:
    """Convert canonical messages to OpenAI chat messages (SPEC B4, B8).

    Images become ``image_url`` content parts with a ``data:`` URL, spoken clips
    ``input_audio`` parts (base64 WAV or MP3) for a model that hears audio. Tool messages
    cannot hold images, so the images of a run of tool messages go in one user message right
    after the run. With ``vision=False`` every image becomes the text note :data:`NO_VISION_NOTE`.
    With ``native_tool_calls=False`` assistant calls are written as ``<tool_call>`` blocks,
    tool results become user messages, and the offered tools are described in the system
    message. The reasoning of an assistant message with native tool calls goes back as its
    ``reasoning_content``: Kimi K2.5 and DeepSeek V4 in thinking mode refuse a history without
    it (HTTP 400 "thinking is enabled but reasoning_content is missing in assistant tool call
    message"); vLLM, llama.cpp and Ollama ignore it.

    Args:
        messages: The canonical history.
        vision: The model accepts images.
        native_tool_calls: The endpoint has a ``tools`` parameter.
        tools: The tools offered (only used when ``native_tool_calls`` is False).
        reasoning_back: Send reasoning back as ``reasoning_content`` (False for
            api.openai.com, whose chat completions have no such field).
        audio: The model hears audio: a user message's clips become ``input_audio`` parts;
            otherwise a message whose clips replaced its text gets their transcripts.

    Returns:
        The ``messages`` list of the request body.
    """
    out: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            out.append({"role": "user", "content": list(pending_images)})
            pending_images.clear()

    system_done = False
    for msg in messages:
        if msg.role != "tool":
            flush_images()
        if msg.role == "system":
            text = msg.text
            if not native_tool_calls and tools and not system_done:
                text = text + "\n\n" + describe_tools_as_text(tools)
            system_done = True
            out.append({"role": "system", "content": text})
        elif msg.role == "user":
            out.append({"role": "user", "content": _user_content(msg, vision, audio)})
        elif msg.role == "assistant":
            out.append(_assistant(msg, native_tool_calls, reasoning_back))
        else:
            out.append(_tool_message(msg, vision, native_tool_calls, pending_images))
    flush_images()
    if not native_tool_calls and tools and not system_done:
        out.insert(0, {"role": "system", "content": describe_tools_as_text(tools)})
    return out


def describe_tools_as_text(tools: tuple[ToolSpec, ...]) -> str:
    """A system-prompt section offering ``tools`` to a model without native tool calls.

    The Hermes layout with one compact JSON object per tool (see
    :func:`loopact.llm.toolprompt.describe_tools_compact`): fewer tokens than raw JSON Schema,
    and small models pick the right tool more often with it (issue 6).
    """
    return describe_tools_compact(tools)


def image_url_part(image: Image) -> dict[str, Any]:
    """An OpenAI ``image_url`` content part holding ``image`` as a base64 ``data:`` URL."""
    data = base64.b64encode(image.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{data}"}}


def input_audio_part(audio: Audio) -> dict[str, Any]:
    """An OpenAI ``input_audio`` content part: the clip as base64 with its format (B8)."""
    data = base64.b64encode(audio.data).decode("ascii")
    return {"type": "input_audio", "input_audio": {"data": data, "format": audio.format}}


def _user_content(msg: Message, vision: bool, audio: bool) -> str | list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    heard = "" if audio else audio_fallback_text(msg)
    for p in msg.content:
        if isinstance(p, TextPart):
            parts.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            parts.append(image_url_part(p.image) if vision else _text(NO_VISION_NOTE))
        elif audio:
            parts.append(input_audio_part(p.audio))
        elif heard:  # a model that cannot hear gets the transcript, once
            parts.append(_text(heard))
            heard = ""
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _assistant(msg: Message, native_tool_calls: bool, reasoning_back: bool) -> dict[str, Any]:
    text = msg.text
    if not native_tool_calls:
        blocks = [
            "<tool_call>"
            + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            + "</tool_call>"
            for c in msg.tool_calls
        ]
        return {"role": "assistant", "content": "\n".join([text, *blocks]).strip()}
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if msg.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in msg.tool_calls
        ]
        if reasoning_back and msg.reasoning:
            out["reasoning_content"] = msg.reasoning
    elif not text:
        out["content"] = ""
    return out


def _tool_message(
    msg: Message, vision: bool, native_tool_calls: bool, pending_images: list[dict[str, Any]]
) -> dict[str, Any]:
    text = msg.text
    images = msg.images
    if images and not vision:
        text = "\n".join([text, *([NO_VISION_NOTE] * len(images))]).strip()
    elif images:
        pending_images.append(
            _text(f"Images from tool {msg.name or 'unknown'} (call {msg.tool_call_id}):")
        )
        pending_images.extend(image_url_part(i) for i in images)
    if native_tool_calls:
        return {"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": text}
    template = REFUSAL_AS_TEXT if refused_for_units(msg) else TOOL_RESULT_AS_TEXT
    return {"role": "user", "content": template.format(text=text)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
