"""A spoken command goes to the model as audio (issue 46 item 7, SPEC B8, F4): ``voice.to_model``
``audio`` (the clip instead of its transcript), ``both`` or ``transcript`` (today's). The real
CLI as a subprocess, espeak-ng speech, transcripts from the scripted server's transcription
endpoint; what the model got is read from the requests the scripted server received."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import cli_env
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.voice.audio import wav_bytes

pytestmark = needs_espeak


def _run(
    server: Any, tmp_path: Path, to_model: str, hears: bool
) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "c.yaml").write_text(
        "voice:\n  stt:\n    engine: openai\n"
        f"  to_model: {to_model}\n"
        f"model:\n  capabilities:\n    audio_input: {str(hears).lower()}\n"
    )
    (tmp_path / "cmd.wav").write_bytes(wav_bytes(speak("turn left") + silence(1.0)))
    args = ["run", "--robot", "none", "--no-web", "--no-memory", "--config", "c.yaml"]
    args += ["--base-url", server.base_url, "--model", "m", "--workspace", str(tmp_path / "ws")]
    args += ["--audio-in", "cmd.wav"]
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        timeout=180,
    )


def _script(audio: bool) -> dict[str, Any]:
    return {
        "turns": [{"text": "Turning.", "expect": {"audio": audio}}],
        "lanes": {"transcriptions": [{"text": "turn left"}]},
    }


def _last_user(server: Any) -> Any:
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 1
    return chats[0].json()["messages"][-1]["content"]


@pytest.mark.parametrize("to_model", ["audio", "both"])
def test_the_spoken_clip_reaches_a_model_that_hears(
    scripted_server: Any, tmp_path: Path, to_model: str
) -> None:
    server = scripted_server(_script(audio=True))
    proc = _run(server, tmp_path, to_model, hears=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "Turning."
    content = _last_user(server)
    kinds = [p["type"] for p in content]
    assert kinds == (["input_audio"] if to_model == "audio" else ["text", "input_audio"])
    sent = content[-1]["input_audio"]
    assert sent["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(sent["data"]))) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16_000, 1, 2)
        heard_s = wav.getnframes() / 16_000
    said_s = len(speak("turn left")) / 2 / 16_000
    assert said_s - 0.3 < heard_s < said_s + 1.5  # the utterance, not the whole file
    if to_model == "both":
        assert content[0]["text"] == "turn left"


def test_a_model_that_does_not_hear_gets_the_transcript_and_the_user_is_told(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(_script(audio=False))
    proc = _run(server, tmp_path, "audio", hears=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert _last_user(server) == "turn left"
    assert "does not take audio" in proc.stderr.decode()


def test_transcript_is_the_default(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server(_script(audio=False))
    proc = _run(server, tmp_path, "transcript", hears=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert _last_user(server) == "turn left"


async def test_the_web_microphone_gets_the_setting(scripted_server: Any, tmp_path: Path) -> None:
    """The console's microphone builds its voice channel with ``voice.to_model`` too."""
    from contextlib import AsyncExitStack

    from tests.agent.helpers import make_agent

    from loopact.app.web import _with_voice
    from loopact.channels.web import WebSettings
    from loopact.config import load_config

    cfg, _ = load_config(None, overrides={"voice": {"to_model": "both"}}, env={}, cwd=tmp_path)
    agent, _ = make_agent(scripted_server([]), tmp_path)
    async with AsyncExitStack() as stack:
        settings = _with_voice(WebSettings(), cfg, agent, stack)
        assert settings.voice.to_model == "both"
    await agent.close()
