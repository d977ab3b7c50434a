"""Text to speech (SPEC F4, F5, issue 16): offline espeak-ng and any OpenAI-compatible
``/audio/speech`` endpoint, behind one small interface that returns 16 kHz mono PCM.

espeak-ng (Debian package, GPL-3) runs as a separate process (``espeak-ng --stdout``), never
linked, and speaks English (``en-us``) and Mandarin (``cmn``); ``scripts/system-deps.sh``
installs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from dataclasses import dataclass
from typing import Any, Protocol

from loopact._compat import wait_within
from loopact.errors import AudioFormatError, SpeechEngineError
from loopact.llm.httperrors import error_message
from loopact.voice.audio import duration_s, read_wav

_MAX_CHARS = 2000


@dataclass(frozen=True)
class Speech:
    """Synthesised speech.

    Attributes:
        pcm: 16 kHz mono PCM.
        text: What it says.
        lang: ``en`` or ``zh``.
        engine: ``espeak`` or ``openai``.
        elapsed_s: Synthesis time (s).
    """

    pcm: bytes
    text: str
    lang: str
    engine: str
    elapsed_s: float

    @property
    def duration_s(self) -> float:
        """Duration of the audio (s)."""
        return duration_s(self.pcm)


class TextToSpeech(Protocol):
    """Speaks one sentence."""

    name: str

    async def synthesize(self, text: str, lang: str) -> Speech:
        """The sentence as 16 kHz mono PCM.

        Raises:
            SpeechEngineError: The engine is missing, failed or timed out (names it).
        """
        ...

    async def aclose(self) -> None:
        """Release the engine."""
        ...


class EspeakTTS:
    """espeak-ng as a subprocess.

    Args:
        voices: espeak-ng voice per language (``{"en": "en-us", "zh": "cmn"}``).
        rate_wpm: Speaking rate, words per minute.
        timeout_s: Longest synthesis of one sentence.
        binary: The program (found on ``PATH``).
    """

    name = "espeak"

    def __init__(
        self,
        voices: dict[str, str] | None = None,
        rate_wpm: int = 165,
        timeout_s: float = 10.0,
        binary: str = "espeak-ng",
    ) -> None:
        self.voices = {"en": "en-us", "zh": "cmn", **(voices or {})}
        self.rate_wpm = rate_wpm
        self._timeout_s = timeout_s
        self._binary = binary

    def check(self) -> None:
        """Raise now when the program is missing.

        Raises:
            SpeechEngineError: espeak-ng is not installed (says how to install it).
        """
        if shutil.which(self._binary) is None:
            raise SpeechEngineError(
                f"{self._binary} is not installed: apt-get install espeak-ng (or run "
                "scripts/system-deps.sh); replies stay text"
            )

    async def synthesize(self, text: str, lang: str) -> Speech:
        """Run ``espeak-ng -v VOICE -s RATE --stdout TEXT`` and read its WAV."""
        self.check()
        t0 = time.monotonic()
        voice = self.voices.get(lang, self.voices["en"])
        proc = await asyncio.create_subprocess_exec(
            self._binary,
            "-v",
            voice,
            "-s",
            str(self.rate_wpm),
            "--stdout",
            "--",
            text[:_MAX_CHARS],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await wait_within(proc.communicate(), self._timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0:
            raise SpeechEngineError(
                f"espeak-ng failed (exit {proc.returncode}): {err.decode(errors='replace')[:200]}"
            )
        try:
            pcm, _notes = read_wav(out)
        except AudioFormatError as exc:
            raise SpeechEngineError(f"espeak-ng wrote no usable audio: {exc}") from None
        return Speech(pcm, text, lang, self.name, time.monotonic() - t0)

    async def aclose(self) -> None:
        """Nothing to release."""


class OpenAITTS:
    """An OpenAI-compatible ``POST {base_url}/audio/speech`` (WAV response), official SDK.

    Args:
        base_url: The API root.
        model: The speech model (``gpt-4o-mini-tts``, ``tts-1``, ...).
        voice: The voice name (``alloy``).
        api_key: The key (``"none"`` when the server needs none).
        timeout_s: Longest request.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str = "tts-1",
        voice: str = "alloy",
        api_key: str | None = None,
        timeout_s: float = 20.0,
    ) -> None:
        import openai

        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout_s, max_retries=0
        )
        self._model = model
        self._voice = voice
        self._timeout_s = timeout_s
        self._base_url = base_url

    async def synthesize(self, text: str, lang: str) -> Speech:
        """Ask for a WAV of ``text`` and convert it to 16 kHz mono."""
        import openai

        t0 = time.monotonic()
        args: dict[str, Any] = {
            "model": self._model,
            "voice": self._voice,
            "input": text[:_MAX_CHARS],
            "response_format": "wav",
        }
        try:
            response = await wait_within(
                self._client.audio.speech.create(**args), self._timeout_s + 1
            )
            data = response.content
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise SpeechEngineError(
                f"the speech endpoint {self._base_url} did not answer within {self._timeout_s:g} s"
            ) from None
        except openai.APIStatusError as exc:
            raise SpeechEngineError(
                f"the speech endpoint {self._base_url} answered HTTP {exc.status_code}: "
                f"{_said(exc)}"
            ) from None
        except openai.APIError as exc:
            raise SpeechEngineError(f"the speech endpoint {self._base_url} failed: {exc}") from None
        try:
            pcm, _notes = read_wav(data)
        except AudioFormatError as exc:
            raise SpeechEngineError(
                f"the speech endpoint {self._base_url} sent no usable WAV: {exc}"
            ) from None
        return Speech(pcm, text, lang, self.name, time.monotonic() - t0)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _said(exc: Any) -> str:
    """What an ``openai.APIStatusError`` says: the server's message, an HTML page by its
    title (issue 22)."""
    return error_message(exc.body, exc.response.headers.get("content-type"), exc.message)
