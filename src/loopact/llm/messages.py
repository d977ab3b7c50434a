"""The canonical message model (SPEC B4).

OpenAI-like in shape, typed, and able to hold whatever any provider needs back: reasoning
text, thinking blocks with their signatures (Anthropic), images in user messages and in tool
results, spoken audio in user messages (SPEC B8), provider file ids (Dify uploads).
Providers convert to and from it losslessly; the loop and the tools never see provider
differences.

All types are frozen dataclasses: history is a list of immutable messages, so a provider can
never corrupt the loop's state by editing a message in place.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from loopact.events.payloads import ImageSummary

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Image:
    """An image that has passed the image gate (SPEC G1).

    Attributes:
        data: The encoded bytes (JPEG after the gate; PNG allowed for lossless sources).
        media_type: MIME type of ``data``, e.g. ``"image/jpeg"``.
        width_px: Width in pixels, 0 when unknown.
        height_px: Height in pixels, 0 when unknown.
        file_id: A provider-side id once uploaded (Dify ``upload_file_id``), else None.
    """

    data: bytes
    media_type: str = "image/jpeg"
    width_px: int = 0
    height_px: int = 0
    file_id: str | None = None

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of ``data``: how traces and memory snapshots refer to an image."""
        return hashlib.sha256(self.data).hexdigest()

    def summary(self) -> ImageSummary:
        """A JSON-able stand-in for logs and traces: ``{sha256, bytes, media_type, w, h}``."""
        return {
            "sha256": self.sha256,
            "bytes": len(self.data),
            "media_type": self.media_type,
            "width_px": self.width_px,
            "height_px": self.height_px,
        }


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it encodes as UTF-8.

    Python keeps bytes it could not decode (a non-UTF-8 byte typed on stdin, a file name in
    another encoding) as lone surrogates, and JSON may carry them (``"\\udcff"``); one in the
    history would fail every later request to the model with ``UnicodeEncodeError``.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def valid_value(value: Any, depth: int = 0) -> Any:
    """:func:`valid_text` on every string in a JSON-like value (keys too), to 100 levels
    deep; ``value`` itself when nothing changes."""
    if isinstance(value, str):
        return valid_text(value)
    if depth > 100:
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            k2, v2 = valid_value(k, depth + 1), valid_value(v, depth + 1)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if isinstance(value, list):
        items = [valid_value(v, depth + 1) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


#: What a model without vision reads in place of each image (every provider sends it).
NO_VISION_NOTE = "[image omitted: this model has no vision]"


@dataclass(frozen=True)
class TextPart:
    """A piece of text content (lone surrogates become U+FFFD: :func:`valid_text`)."""

    text: str
    type: Literal["text"] = "text"

    def __post_init__(self) -> None:
        clean = valid_text(self.text)
        if clean is not self.text:
            object.__setattr__(self, "text", clean)


@dataclass(frozen=True)
class ImagePart:
    """An image content part (SPEC B8)."""

    image: Image
    type: Literal["image"] = "image"


@dataclass(frozen=True)
class Audio:
    """A spoken clip for a model that hears audio (SPEC B8; OpenAI-compatible ``input_audio``).

    Attributes:
        data: The encoded clip (a WAV file of 16 kHz mono 16-bit PCM from the voice input).
        format: ``wav`` or ``mp3`` (the formats of OpenAI's ``input_audio``).
        duration_s: Its length in seconds.
        transcript: What speech-to-text heard in it: what a model that cannot hear audio gets
            instead (every provider falls back to it), and what traces and memory show.
        instead_of_text: The clip replaces its transcript in the message (``voice.to_model:
            audio``); False: it goes beside the transcript (``both``).
    """

    data: bytes
    format: Literal["wav", "mp3"] = "wav"
    duration_s: float = 0.0
    transcript: str = ""
    instead_of_text: bool = False

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of ``data``: how traces and memory snapshots refer to a clip."""
        return hashlib.sha256(self.data).hexdigest()

    def summary(self) -> dict[str, Any]:
        """A JSON-able stand-in for logs and traces: hash, size, format, length, transcript."""
        return {
            "sha256": self.sha256,
            "bytes": len(self.data),
            "format": self.format,
            "duration_s": round(self.duration_s, 3),
            "transcript": self.transcript,
        }


@dataclass(frozen=True)
class AudioPart:
    """An audio content part of a user message (SPEC B8)."""

    audio: Audio
    type: Literal["audio"] = "audio"


ContentPart = TextPart | ImagePart | AudioPart


def audio_fallback_text(msg: Message) -> str:
    """What a model that cannot hear audio reads for the clips of ``msg``: their transcripts
    when the message has no text of its own (the clips replaced it), else nothing (its text
    already is the transcript)."""
    if msg.text.strip():
        return ""
    return " ".join(a.transcript for a in msg.audio if a.transcript.strip())


@dataclass(frozen=True)
class ThinkingBlock:
    """A provider's thinking block, passed back unchanged in the next request (SPEC B2).

    Attributes:
        text: The thinking text (empty for a redacted block).
        signature: The provider's signature over the block; must be returned unchanged.
        redacted_data: Opaque data of a redacted thinking block, else None.
    """

    text: str
    signature: str = ""
    redacted_data: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: The provider's ``tool_call_id`` (generated when the provider sent none).
        name: The tool name.
        arguments: The parsed (and repaired, SPEC B7) arguments; ``{}`` when unparseable.
        raw_arguments: The argument text exactly as the model streamed it.
        error: Why the arguments could not be used (not JSON, truncated), else None.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    error: str | None = None

    def __post_init__(self) -> None:  # lone surrogates become U+FFFD (valid_text)
        for key in ("name", "raw_arguments", "arguments"):
            value = getattr(self, key)
            clean = valid_value(value)
            if clean is not value:
                object.__setattr__(self, key, clean)

    def arguments_json(self) -> str:
        """The arguments as canonical JSON text (sorted keys): used for de-duplication (A3)."""
        return json.dumps(self.arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Usage:
    """Token usage as the provider reported it.

    Attributes:
        input_tokens: Prompt tokens.
        output_tokens: Completion tokens (reasoning included).
    """

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True)
class ToolOutcome:
    """How a tool call ended, typed, beside the result text a tool message carries.

    Lets a model adapter react to results (the small-model policy of
    :mod:`loopact.llm.small_model`) without parsing the text the agent wrote.

    Attributes:
        ok: The call succeeded.
        error_kind: The failure's kind (``metadata.error_kind``: ``units``, ``arguments``,
            ``timeout``, ...), None when it succeeded or gave none.
    """

    ok: bool
    error_kind: str | None = None


@dataclass(frozen=True)
class Message:
    """One message of the canonical history.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: Text and image parts, in order.
        tool_calls: For ``assistant``: the calls it made, in call order.
        tool_call_id: For ``tool``: the call this message answers.
        name: For ``tool``: the tool's name.
        reasoning: For ``assistant``: reasoning text kept apart from the answer (SPEC B5).
        thinking: For ``assistant``: thinking blocks with signatures (SPEC B2).
        outcome: For ``tool``: how the call ended, typed (None when unknown).
        provider_data: Provider-specific values that must survive a round trip, keyed by
            provider name (e.g. ``{"dify": {"conversation_id": ...}}``).
    """

    role: Role
    content: tuple[ContentPart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    thinking: tuple[ThinkingBlock, ...] = ()
    provider_data: dict[str, Any] = field(default_factory=dict, compare=False)
    outcome: ToolOutcome | None = None

    @property
    def text(self) -> str:
        """All text parts joined (images left out)."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> list[Image]:
        """The images among the content parts, in order."""
        return [p.image for p in self.content if isinstance(p, ImagePart)]

    @property
    def audio(self) -> list[Audio]:
        """The audio clips among the content parts, in order."""
        return [p.audio for p in self.content if isinstance(p, AudioPart)]

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", content=(TextPart(text),))

    @classmethod
    def user(
        cls,
        text: str,
        images: list[Image] | tuple[Image, ...] = (),
        audio: list[Audio] | tuple[Audio, ...] = (),
    ) -> Message:
        """A user message: text first, then images, then audio clips as content parts
        (SPEC B8); the text is left out when a clip replaces it (``Audio.instead_of_text``)."""
        replaced = any(a.instead_of_text for a in audio)
        parts: list[ContentPart] = [TextPart(text)] if text and not replaced else []
        parts.extend(ImagePart(i) for i in images)
        parts.extend(AudioPart(a) for a in audio)
        return cls(role="user", content=tuple(parts))

    @classmethod
    def assistant(
        cls,
        text: str = "",
        tool_calls: list[ToolCall] | tuple[ToolCall, ...] = (),
        reasoning: str | None = None,
        thinking: list[ThinkingBlock] | tuple[ThinkingBlock, ...] = (),
    ) -> Message:
        """An assistant message."""
        return cls(
            role="assistant",
            content=(TextPart(text),) if text else (),
            tool_calls=tuple(tool_calls),
            reasoning=reasoning or None,
            thinking=tuple(thinking),
        )

    @classmethod
    def tool(
        cls,
        tool_call_id: str,
        name: str,
        text: str,
        images: tuple[Image, ...] = (),
        outcome: ToolOutcome | None = None,
    ) -> Message:
        """A tool result message answering ``tool_call_id``; may carry images (SPEC B8) and
        the call's typed :class:`ToolOutcome`."""
        parts: list[ContentPart] = [TextPart(text)]
        parts.extend(ImagePart(i) for i in images)
        return cls(
            role="tool",
            content=tuple(parts),
            tool_call_id=tool_call_id,
            name=name,
            outcome=outcome,
        )


def history_summary(messages: list[Message] | tuple[Message, ...]) -> list[dict[str, Any]]:
    """A JSON-able copy of ``messages`` with images replaced by their hash and size.

    Used by full traces (H3) and memory snapshots (E2). Returns one dict per message.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role}
        parts: list[dict[str, Any]] = []
        for p in m.content:
            if isinstance(p, TextPart):
                parts.append({"type": "text", "text": p.text})
            elif isinstance(p, AudioPart):
                parts.append({"type": "audio", **p.audio.summary()})
            else:
                parts.append({"type": "image", **p.image.summary()})
        d["content"] = parts
        if m.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
            ]
        if m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
            d["name"] = m.name
        if m.reasoning:
            d["reasoning"] = m.reasoning
        if m.thinking:
            d["thinking"] = [{"text": t.text, "signature": t.signature} for t in m.thinking]
        out.append(d)
    return out


def current_task(messages: tuple[Message, ...] | list[Message]) -> list[Message]:
    """The system message(s) and everything from the last user message on."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=0)
    system = [m for m in messages[:last_user] if m.role == "system"]
    return [*system, *messages[last_user:]]


def refused_for_units(msg: Message) -> bool:
    """A result the runtime refused before running the call, for its units (typed outcome)."""
    return msg.outcome is not None and msg.outcome.error_kind == "units"
