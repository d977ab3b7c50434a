"""``loopact run`` voice flags that cannot work say so (issue 16): no sound card, a modality
that refuses voice (G3), an input without speech, an unreadable file, --once with --audio-in;
and with --audio-out the whole reply is spoken before the run exits."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import cli_env, run_cli
from tests.voice.helpers import needs_espeak, silence

from loopact.testing.audio_protocol import spoken_wav
from loopact.trace import read_trace
from loopact.voice.audio import wav_bytes


def _args(server: Any, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--robot",
        "none",
        "--no-web",
        "--no-memory",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--workspace",
        str(tmp_path / "ws"),
        *extra,
    ]


def _typed(args: list[str], tmp_path: Path, typed: str) -> subprocess.CompletedProcess[str]:
    """``loopact ARGS`` with ``typed`` as its standard input (the terminal chat, piped)."""
    return subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        input=typed,
        capture_output=True,
        text=True,
        timeout=120,
    )


#: ``loopact run`` with no robot and a model endpoint that is never reached.
NO_MODEL = ["run", "--robot", "none", "--no-web", "--no-memory", "--model", "x"]
NO_MODEL += ["--base-url", "http://127.0.0.1:1/v1", "--workspace", "ws"]


def test_voice_without_a_sound_card_is_a_clear_message(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([])
    proc = run_cli(_args(server, tmp_path, "--voice"), tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "no sound card" in proc.stderr and "--audio-in FILE" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_text_only_modality_refuses_spoken_input(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    (tmp_path / "quiet.wav").write_bytes(wav_bytes(silence(0.5)))
    (tmp_path / "c.yaml").write_text("agent:\n  modality: text\n")
    proc = run_cli(
        _args(server, tmp_path, "--config", "c.yaml", "--audio-in", "quiet.wav"), tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert "agent.modality is 'text': spoken requests are refused" in proc.stderr
    # the web console's microphone under the same config answers the same line (finding 8)
    from contextlib import AsyncExitStack
    from types import SimpleNamespace

    from loopact.app.web import _with_voice
    from loopact.config import load_config
    from loopact.events import EventBus

    cfg, _source = load_config(tmp_path / "c.yaml")

    async def web_answer() -> str | None:
        async with AsyncExitStack() as stack:
            agent = SimpleNamespace(bus=EventBus())
            settings = _with_voice(SimpleNamespace(), cfg, agent, stack)  # type: ignore[arg-type]
            answer: str | None = settings.voice.connect().control({"type": "mic", "state": "start"})
            return answer

    answer = asyncio.run(web_answer())
    assert answer is not None and "set agent.modality to voice+text (or any)" in answer
    assert f"loopact: {answer}" in proc.stderr.splitlines(), (answer, proc.stderr)


def test_an_input_without_speech_exits_1_without_a_model_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([])
    (tmp_path / "quiet.wav").write_bytes(wav_bytes(silence(1.0)))
    proc = run_cli(_args(server, tmp_path, "--audio-in", "quiet.wav"), tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "no speech heard in quiet.wav" in proc.stderr
    assert server.requests == []


def test_an_unreadable_audio_file_and_once_with_audio_in(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([])
    (tmp_path / "bad.wav").write_text("not audio")
    proc = run_cli(_args(server, tmp_path, "--audio-in", "bad.wav"), tmp_path)
    assert proc.returncode == 2 and "bad.wav: not a PCM WAV file" in proc.stderr
    assert 'starts with "not audi", not with a RIFF/WAVE header' in proc.stderr, proc.stderr
    (tmp_path / "cut.wav").write_bytes(wav_bytes(silence(0.5))[:30])  # was "... file ()"
    proc = run_cli(_args(server, tmp_path, "--audio-in", "cut.wav"), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert (
        "cut.wav: not a PCM WAV file (truncated: the file ends inside its header, after 30 bytes)"
        in proc.stderr
    ), proc.stderr
    (tmp_path / "empty.wav").write_bytes(b"")  # said to be empty, not "not a PCM WAV file ()"
    proc = run_cli(_args(server, tmp_path, "--audio-in", "empty.wav"), tmp_path)
    assert proc.returncode == 2 and "empty.wav: the file is empty (0 bytes)" in proc.stderr
    proc = run_cli(_args(server, tmp_path, "--audio-in", "bad.wav", "--once", "hi"), tmp_path)
    assert proc.returncode == 2 and "not both" in proc.stderr
    (tmp_path / "quiet.wav").write_bytes(wav_bytes(silence(0.5)))
    out = str(tmp_path / "missing" / "reply.wav")
    proc = run_cli(_args(server, tmp_path, "--audio-in", "quiet.wav", "--audio-out", out), tmp_path)
    assert proc.returncode == 2 and f"{out}: cannot be written" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr  # (wave's half-built writer printed one at exit)


def test_a_lost_or_wordless_utterance_is_not_a_success(
    scripted_server: Any, tmp_path: Path
) -> None:
    # the --once exit codes: a command whose transcription failed was not handled (exit 1), and
    # an input whose only utterance held no words handled nothing (exit 1); no model request
    (tmp_path / "cmd.wav").write_bytes(spoken_wav("move forward one meter"))
    (tmp_path / "c.yaml").write_text("voice:\n  stt:\n    engine: openai\n")
    cases = [
        ({"error": {"status": 503, "message": "busy"}}, "1 of 1 utterances in cmd.wav could not"),
        ({"text": " . "}, "no words recognised in cmd.wav"),
    ]
    for lane_turn, message in cases:
        server = scripted_server({"turns": [], "lanes": {"transcriptions": [lane_turn]}})
        args = _args(server, tmp_path, "--config", "c.yaml", "--audio-in", "cmd.wav")
        proc = run_cli(args, tmp_path, timeout=120)
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        assert message in proc.stderr, proc.stderr
        assert [r.path for r in server.requests] == ["/v1/audio/transcriptions"]


@needs_espeak
@pytest.mark.parametrize("how", ["once", "piped"])
def test_the_whole_reply_is_spoken_before_the_run_exits(
    scripted_server: Any, tmp_path: Path, how: str
) -> None:
    # --once, or commands piped into the terminal chat: the run used to exit with the first
    # sentence queued (an empty WAV; "Task was destroyed but it is pending!" after --once)
    server = scripted_server([{"text": "Hello there. This reply is spoken into the file."}])
    args = _args(server, tmp_path, "--audio-out", "reply.wav", "--trace", "t.jsonl")
    if how == "once":
        args += ["--once", "say hello"]
    proc = _typed(args, tmp_path, "say hello\n" if how == "piped" else "")
    assert proc.returncode == 0, proc.stderr
    assert "Task was destroyed" not in proc.stderr, proc.stderr
    playing = [
        e
        for e in read_trace(tmp_path / "t.jsonl")
        if e["type"] == "speech_out" and e["state"] == "playing"
    ]
    assert [e["text"] for e in playing] == ["Hello there.", "This reply is spoken into the file."]
    with wave.open(str(tmp_path / "reply.wav")) as wav:
        seconds = wav.getnframes() / wav.getframerate()
    assert abs(seconds - sum(e["duration_s"] for e in playing)) < 0.1, seconds


def test_a_piped_play_is_heard_to_its_end_before_bye(tmp_path: Path) -> None:
    # audit C finding 2: "Bye." came first, then "playing cmd.wav", and the WAV was empty
    import numpy as np

    t = np.arange(int(1.5 * 16000)) / 16000
    tone = (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "cmd.wav").write_bytes(wav_bytes(tone))
    proc = _typed(
        [*NO_MODEL, "--audio-out", "out.wav"], tmp_path, "/play nope.wav\n/play cmd.wav\n"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    missing = f"no file 'nope.wav' in the workspace {(tmp_path / 'ws').resolve()}"
    assert lines[-1] == "Bye.", lines  # the commands run side by side: either comes first
    assert sorted(lines[-3:-1]) == sorted([missing, "playing cmd.wav (1.5 s)"]), lines
    assert "file_list" not in proc.stdout  # a hint for the model, not for the person
    with wave.open(str(tmp_path / "out.wav")) as wav:
        assert wav.getnframes() == len(tone) // 2  # all of it was played before the exit


@pytest.mark.parametrize("audio_out", [True, False])
def test_the_banner_lists_the_audio_commands_with_audio_output(
    tmp_path: Path, audio_out: bool
) -> None:
    # audit C finding 11: the banner left out /play /pause /resume /stopaudio /record
    proc = _typed(
        [*NO_MODEL, *(["--audio-out", "out.wav"] if audio_out else [])], tmp_path, "/nope\n"
    )
    assert proc.returncode == 0, proc.stderr
    listed = "/stop /estop /reset /status /provider /quit"  # /estop: issue 41
    if audio_out:
        listed += " /play /pause /resume /stopaudio /record"
    lines = proc.stdout.splitlines()
    assert f"Type an instruction. Commands: {listed}. Typing while a task runs replaces it." in (
        lines
    ), lines
    assert f"Unknown command /nope. Commands: {listed}" in lines, lines


@pytest.mark.parametrize("part", ["stt", "tts"])
def test_speech_api_key_env_naming_an_unset_variable_is_a_config_error(
    part: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit B finding 5, same pattern: an unset ``api_key_env`` silently meant no key."""
    from loopact.app.voice import make_stt, make_tts
    from loopact.config import Config
    from loopact.errors import ConfigError

    monkeypatch.delenv("NOPE_UNSET_VAR", raising=False)
    section = {"engine": "openai", "base_url": "http://127.0.0.1:1/v1"}
    cfg = Config.model_validate({"voice": {part: {**section, "api_key_env": "NOPE_UNSET_VAR"}}})
    with pytest.raises(ConfigError) as info:
        (make_stt if part == "stt" else make_tts)(cfg)
    assert str(info.value) == f"voice.{part}.api_key_env names NOPE_UNSET_VAR, which is not set"
