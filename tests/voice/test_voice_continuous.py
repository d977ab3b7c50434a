"""Issue 41, acceptance 5: ``loopact run --mode continuous`` with voice from a WAV file speaks
what the agent says with ``send_message`` (and with its alias ``say``).

The real CLI as a subprocess; spoken input made with espeak-ng, transcribed by the scripted
model server's transcription endpoint; the agent's words spoken by the offline TTS into a WAV
file. Graded by the trace (``speech_out`` playing the message's sentences) and the WAV's
length. Before issue 41 the voice channel ignored ``message`` events: nothing was spoken.
"""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

from tests.agent.helpers import call
from tests.test_cli import cli_env
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.trace import read_trace
from loopact.voice.audio import wav_bytes

pytestmark = needs_espeak


def test_continuous_mode_speaks_send_message_and_say(scripted_server: Any, tmp_path: Path) -> None:
    (tmp_path / "in.wav").write_bytes(wav_bytes(speak("good morning") + silence(0.8)))
    (tmp_path / "c.yaml").write_text("voice:\n  stt:\n    engine: openai\n")
    server = scripted_server(
        {
            "turns": [
                {
                    "tool_calls": [call("send_message", {"text": "Good morning. I am awake."})],
                    "expect": {"last_user_contains": "good morning"},
                },
                {"tool_calls": [call("say", {"text": "The battery is full."})]},
                {"text": ""},
            ],
            "lanes": {"transcriptions": [{"text": "good morning"}]},
        }
    )
    args = ["run", "--robot", "none", "--no-web", "--no-memory", "--config", "c.yaml"]
    args += ["--mode", "continuous", "--base-url", server.base_url, "--model", "m"]
    args += ["--workspace", str(tmp_path / "ws"), "--audio-in", "in.wav"]
    args += ["--audio-out", "out.wav", "--trace", "t.jsonl"]
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    events = list(read_trace(tmp_path / "t.jsonl"))
    playing = [e["text"] for e in events if e["type"] == "speech_out" and e["state"] == "playing"]
    assert playing == ["Good morning.", "I am awake.", "The battery is full."], playing
    with wave.open(str(tmp_path / "out.wav")) as wav:
        seconds = wav.getnframes() / wav.getframerate()
    assert seconds >= 0.25 * 8, seconds  # eight words spoken
