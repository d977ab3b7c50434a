"""OpenAI audio endpoints for the scripted model server (SPEC X2, issue 16).

``POST /v1/audio/transcriptions`` (multipart: ``file``, ``model``, optional ``language`` and
``response_format``) answers with the transcript that the next turn of the script's
``transcriptions`` lane gives as its ``text``: ``{"text": "..."}`` (``response_format`` ``text``:
the plain text). Without that lane the request is refused (HTTP 400 naming the lane). A turn's
``error`` and ``delay_s`` apply (an endpoint that fails or times out).

``POST /v1/audio/speech`` (JSON: ``model``, ``input``, ``voice``, ``response_format``) answers
with a 24 kHz mono 16-bit WAV (``pcm``: the raw samples) of a voice-like sound whose length
follows the text (about 65 ms per character, 0.3 s at least): a harmonic tone with syllable
beats that a VAD hears as speech. It consumes no turn, unless the script has a ``speech`` lane:
then each request takes the lane's next turn, whose ``error`` and ``delay_s`` apply.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import wave
from typing import Any

import numpy as np

from loopact.testing.protocol import Protocol, RecordedRequest, RequestSummary, ResponsePlan
from loopact.testing.script import Turn

__all__ = ["SpeechProtocol", "TranscriptionsProtocol", "spoken_wav"]

SPEECH_RATE_HZ = 24_000
_S_PER_CHAR = 0.065


def multipart_fields(request: RecordedRequest) -> dict[str, bytes]:
    """The parts of a ``multipart/form-data`` body by field name (empty when not multipart)."""
    ctype = request.headers.get("content-type", "")
    if not ctype.startswith("multipart/"):
        return {}
    raw = request.raw_body
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + raw
    )
    out: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            out[str(name)] = payload if isinstance(payload, bytes) else b""
    return out


class TranscriptionsProtocol(Protocol):
    """``/v1/audio/transcriptions``: the script's ``transcriptions`` lane gives the text."""

    name = "transcriptions"
    paths = ("/v1/audio/transcriptions",)
    lane = "transcriptions"

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """The form's model and language as text (for ``expect.contains``)."""
        fields = multipart_fields(request)
        text = " ".join(
            f"{k}={fields[k].decode(errors='replace')}"
            for k in ("model", "language")
            if k in fields
        )
        return RequestSummary(all_text=text)

    def reject(self, request: RecordedRequest) -> str | None:
        """No ``file`` part, or an empty one, is a 400 (as the real endpoint answers)."""
        fields = multipart_fields(request)
        if not fields.get("file"):
            return "file: an audio file is required (multipart field 'file')"
        if not fields.get("model"):
            return "model: required"
        return None

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """``{"text": turn.text}`` (plain text for ``response_format=text``)."""
        fmt = multipart_fields(request).get("response_format", b"json").decode(errors="replace")
        if fmt == "text":
            return ResponsePlan(
                content_type="text/plain; charset=utf-8",
                body=turn.text.encode(),
                delay_s=turn.delay_s,
            )
        return ResponsePlan(body=json.dumps({"text": turn.text}).encode(), delay_s=turn.delay_s)

    def render_static(self, request: RecordedRequest) -> ResponsePlan:
        """No ``transcriptions`` lane in the script: a 400 that says so."""
        return self.render_error(
            400, "scripted model server: the script has no 'transcriptions' lane", request
        )


def spoken_wav(text: str, rate_hz: int = SPEECH_RATE_HZ, raw: bool = False) -> bytes:
    """A voice-like sound for ``text`` (see the module docstring) as WAV bytes (or raw PCM)."""
    seconds = max(0.3, min(60.0, _S_PER_CHAR * len(text.strip())))
    t = np.arange(int(seconds * rate_hz)) / rate_hz
    f0 = 140.0 + 20.0 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate_hz
    voice = sum(np.sin(k * phase) / k for k in range(1, 8))
    beats = 0.55 + 0.45 * np.sin(2 * np.pi * 4.0 * t) ** 2
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.02)
    pcm = (voice * beats * fade * 6000).astype("<i2").tobytes()
    if raw:
        return pcm
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate_hz)
        wav.writeframes(pcm)
    return buf.getvalue()


class SpeechProtocol(Protocol):
    """``/v1/audio/speech``: a WAV whose length follows the text."""

    name = "speech"
    paths = ("/v1/audio/speech",)
    lane = "speech"

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """The input text is the last user text."""
        body = request.body if isinstance(request.body, dict) else {}
        text = str(body.get("input", ""))
        return RequestSummary(last_user_text=text, all_text=text)

    def reject(self, request: RecordedRequest) -> str | None:
        """No input, or a format other than wav/pcm, is a 400."""
        return _speech_problem(request)

    def _answer(self, request: RecordedRequest, delay_s: float = 0.0) -> ResponsePlan:
        body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
        fmt = str(body.get("response_format") or "mp3")
        raw = fmt == "pcm"
        return ResponsePlan(
            content_type="audio/pcm" if raw else "audio/wav",
            body=spoken_wav(str(body.get("input", "")), raw=raw),
            delay_s=delay_s,
        )

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """A lane turn without an error: the sound (after the turn's ``delay_s``)."""
        return self._answer(request, turn.delay_s)

    def render_static(self, request: RecordedRequest) -> ResponsePlan:
        """No ``speech`` lane: the sound, or a 400 for a bad request."""
        problem = _speech_problem(request)
        if problem is not None:
            return self.render_error(400, problem, request)
        return self._answer(request)


def _speech_problem(request: RecordedRequest) -> str | None:
    body = request.body if isinstance(request.body, dict) else None
    if body is None:
        return "body: expected a JSON object"
    if not str(body.get("input") or "").strip():
        return "input: required"
    fmt = str(body.get("response_format") or "mp3")
    if fmt not in ("wav", "pcm"):
        return f"response_format {fmt!r}: the scripted server speaks only wav and pcm"
    return None
