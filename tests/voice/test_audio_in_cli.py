"""What ``loopact run --audio-in FILE|-`` says about its input (issue 16, audit C findings 4-6):
every conversion note reaches the ``speech_in`` trace event, a file cut short is said, and a
WAV file on standard input is noticed. The real CLI as a subprocess, espeak-ng speech,
transcripts from the scripted model server's transcription endpoint."""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
from tests.test_cli import cli_env
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.trace import read_trace
from loopact.voice.audio import wav_bytes

pytestmark = needs_espeak


def _run(
    server: Any, tmp_path: Path, audio_in: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "c.yaml").write_text("voice:\n  stt:\n    engine: openai\n")
    args = ["run", "--robot", "none", "--no-web", "--no-memory", "--config", "c.yaml"]
    args += ["--base-url", server.base_url, "--model", "m", "--workspace", str(tmp_path / "ws")]
    args += ["--audio-in", audio_in, "--trace", "t.jsonl"]
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        input=stdin,
        capture_output=True,
        timeout=180,
    )


def _ended(tmp_path: Path) -> list[dict[str, Any]]:
    return [
        e
        for e in read_trace(tmp_path / "t.jsonl")
        if e["type"] == "speech_in" and e["state"] == "ended"
    ]


def _write_wav(path: Path, samples: np.ndarray, rate_hz: int, channels: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(samples.astype("<i2").tobytes())


def test_conversion_notes_of_an_8_khz_stereo_file_reach_every_utterances_trace_event(
    scripted_server: Any, tmp_path: Path
) -> None:
    # two utterances of 8 kHz stereo audio: upsampled and mixed down, each said in the trace
    mono16 = np.frombuffer(
        speak("move forward") + silence(1.5) + speak("turn left") + silence(0.5), dtype="<i2"
    )
    mono8 = mono16[::2]
    _write_wav(tmp_path / "phone.wav", np.stack([mono8, mono8], axis=1).reshape(-1), 8000, 2)
    server = scripted_server(
        {
            "turns": [{"text": "Moving."}, {"text": "Turning."}],
            "lanes": {"transcriptions": [{"text": "move forward"}, {"text": "turn left"}]},
        }
    )
    proc = _run(server, tmp_path, "phone.wav")
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    notes = ["2-channel audio mixed down to mono", "8 kHz audio upsampled to 16 kHz: recognition"]
    ended = _ended(tmp_path)
    assert len(ended) == 2, ended
    for event in ended:
        assert [n[: len(want)] for n, want in zip(event["notes"], notes, strict=True)] == notes
    for note in notes:  # on stderr once, not once per utterance
        assert err.count(note) == 1, err


def test_a_file_cut_short_is_said_on_stderr_and_in_the_trace(
    scripted_server: Any, tmp_path: Path
) -> None:
    whole = wav_bytes(speak("move forward one meter") + silence(1.0))
    frames = (len(whole) - 44) // 2
    (tmp_path / "cut.wav").write_bytes(whole[: len(whole) * 2 // 3])
    present = (len(whole) * 2 // 3 - 44) // 2
    server = scripted_server(
        {"turns": [{"text": "Moving."}], "lanes": {"transcriptions": [{"text": "move forward"}]}}
    )
    proc = _run(server, tmp_path, "cut.wav")
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    note = (
        f"the file is cut short: its header says {frames} frames ({frames / 16000:.2f} s), "
        f"{present} are present ({present / 16000:.2f} s); what is there is used"
    )
    assert f"loopact: cut.wav: {note}" in err
    assert [e["notes"] for e in _ended(tmp_path)] == [[note]]


def test_a_wav_file_of_another_format_on_standard_input_is_refused(
    scripted_server: Any, tmp_path: Path
) -> None:
    # espeak-ng writes 22.05 kHz: read as raw 16 kHz PCM it was heard, header and all
    server = scripted_server({"turns": [], "lanes": {"transcriptions": []}})
    espeak_wav = subprocess.run(
        ["espeak-ng", "--stdout", "move forward one meter"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    proc = _run(server, tmp_path, "-", stdin=espeak_wav)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert (
        "loopact: stdin: a WAV stream of 22050 Hz, 1-channel, 16-bit PCM; --audio-in - takes "
        "16 kHz mono 16-bit PCM (arecord -f S16_LE -r 16000 -c 1): give a WAV file as "
        "--audio-in FILE.wav instead (any rate, mono or stereo, converted)"
    ) in err
    assert "Traceback" not in err and server.requests == []


def test_a_refused_wav_stream_from_a_producer_that_keeps_the_pipe_open_exits_cleanly(
    scripted_server: Any, tmp_path: Path
) -> None:
    # the producer (arecord, a bridge) keeps writing: at exit the reader thread is still
    # blocked reading stdin, which must not abort the process (it held stdin's lock: SIGABRT,
    # "could not acquire lock for <stdin> at interpreter shutdown")
    server = scripted_server({"turns": [], "lanes": {"transcriptions": []}})
    (tmp_path / "c.yaml").write_text("voice:\n  stt:\n    engine: openai\n")
    args = ["run", "--robot", "none", "--no-web", "--no-memory", "--config", "c.yaml"]
    args += ["--base-url", server.base_url, "--model", "m", "--workspace", str(tmp_path / "ws")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopact", *args, "--audio-in", "-"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(_wav_stream_bytes(22050))
        proc.stdin.flush()
        proc.wait(timeout=180)  # stdin stays open until the process has ended
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 2, err.decode()
    assert "--audio-in - takes 16 kHz mono 16-bit PCM" in err.decode()
    assert "Fatal Python error" not in err.decode()


def _wav_stream_bytes(rate_hz: int) -> bytes:
    """A WAV header of ``rate_hz`` mono 16-bit PCM and 0.2 s of silence."""
    import io
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(b"\0\0" * (rate_hz // 5))
    return buf.getvalue()


def test_a_16_khz_mono_wav_stream_on_standard_input_is_heard_without_its_header(
    scripted_server: Any, tmp_path: Path
) -> None:
    # the documented pipe: arecord -f S16_LE -r 16000 -c 1 | loopact run --audio-in -
    server = scripted_server(
        {"turns": [{"text": "Moving."}], "lanes": {"transcriptions": [{"text": "move forward"}]}}
    )
    proc = _run(server, tmp_path, "-", stdin=wav_bytes(speak("move forward") + silence(1.0)))
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "Moving."
    assert [e["notes"] for e in _ended(tmp_path)] == [[]]
