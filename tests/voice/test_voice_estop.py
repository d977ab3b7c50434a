"""Issue 41: saying "emergency stop" / "紧急停止" to the voice channel latches the robot's
emergency stop (SPEC X3, F4).

The real CLI as a subprocess, ``loopact run --robot sim --audio-in FILE``: the WAV holds a
spoken command to drive, a pause while the robot drives, then the spoken e-stop; the scripted
model server transcribes. Graded by the simulator's pose log (the base came to rest while the
20 s drive was still due) and the trace (the governor latched it from the voice channel, and
nothing released it; the task that drove was stopped with it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.test_cli import cli_env
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.sim.simlog import read_sim_log
from loopact.trace import read_trace
from loopact.voice.audio import wav_bytes

pytestmark = [needs_espeak, pytest.mark.sim]


@pytest.mark.parametrize(("said", "voice"), [("emergency stop", "en-us"), ("紧急停止", "cmn")])
def test_a_spoken_emergency_stop_latches_and_the_base_comes_to_rest(
    said: str, voice: str, scripted_server: Any, tmp_path: Path
) -> None:
    pcm = speak("drive forward slowly") + silence(3.0) + speak(said, voice=voice) + silence(2.0)
    (tmp_path / "in.wav").write_bytes(wav_bytes(pcm))
    (tmp_path / "c.yaml").write_text("voice:\n  stt:\n    engine: openai\n")
    drive = call("drive", {"linear_mps": 0.2, "angular_dps": 0, "duration_s": 20})
    server = scripted_server(
        {
            "turns": [{"tool_calls": [drive]}],
            "lanes": {"transcriptions": [{"text": "drive forward slowly"}, {"text": said}]},
        }
    )
    args = ["run", "--robot", "sim", "--no-web", "--no-memory", "--config", "c.yaml"]
    args += ["--base-url", server.base_url, "--model", "m", "--sim-log", "poses.jsonl"]
    args += ["--workspace", str(tmp_path / "ws"), "--audio-in", "in.wav", "--trace", "t.jsonl"]
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        timeout=180,
    )
    events = list(read_trace(tmp_path / "t.jsonl"))
    latches = [
        e for e in events if e["type"] == "governor" and e.get("decision") == "emergency_stop"
    ]
    assert latches, proc.stderr.decode()
    assert latches[0]["source"] == "voice" and said in latches[0]["detail"], latches[0]
    assert not [e for e in events if e["type"] == "governor" and "reset" in e["decision"]]
    # the task that drove was stopped with it (the voice channel stops it, then latches)
    drove = [e for e in events if e["type"] == "tool_result" and e["name"] == "drive"]
    assert drove and drove[0]["ok"] is False, drove
    ends = [e["status"] for e in events if e["type"] == "task_end"]
    assert ends == ["preempted"], ends
    # ground truth: it drove, then came to rest within the braking distance, well before the
    # 20 s drive was due to end
    poses = list(read_sim_log(tmp_path / "poses.jsonl"))
    latched_at = latches[0]["ts"]
    before = [p for p in poses if p["wall_s"] <= latched_at]
    settled = [p for p in poses if p["wall_s"] >= latched_at + 0.6]
    assert before and before[-1]["x_m"] > 0.1, before[-1:]
    assert settled and settled[-1]["wall_s"] >= latched_at + 1.0, "the log ends too early"
    assert max(p["x_m"] for p in settled) - min(p["x_m"] for p in settled) < 0.005
    assert settled[-1]["x_m"] - before[-1]["x_m"] < 0.1  # zero twist: braked, no drift
