"""``loopact run --audio-in`` end to end (issue 16 acceptance 1 and 2): espeak-ng speech in,
offline transcription, the real provider against the scripted model server, the MuJoCo robot,
the reply spoken by espeak-ng into a WAV; graded by the simulator's ground truth."""

from __future__ import annotations

import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.test_cli import run_cli
from tests.voice.helpers import needs_espeak

from loopact.sim.simlog import read_sim_log
from loopact.trace import read_trace

pytestmark = [pytest.mark.sim, needs_espeak]


def _voice_run(server: Any, tmp_path: Path, audio_in: Path, *extra: str) -> Any:
    return run_cli(
        [
            "run",
            "--robot",
            "sim",
            "--audio-in",
            str(audio_in),
            "--audio-out",
            str(tmp_path / "reply.wav"),
            "--trace",
            str(tmp_path / "t.jsonl"),
            "--sim-log",
            str(tmp_path / "poses.jsonl"),
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--workspace",
            str(tmp_path / "ws"),
            "--no-memory",
            "--sim-speed",
            "2",
            *extra,
        ],
        tmp_path,
        timeout=240,
    )


def test_spoken_command_moves_the_robot_and_the_reply_is_spoken(
    scripted_server: Any, spoken: Callable[..., Path], tmp_path: Path
) -> None:
    reply = "I moved forward one meter. The way ahead is clear. What next?"
    server = scripted_server(
        [
            {
                "tool_calls": [call("move_forward", {"distance_m": 1.0})],
                "expect": {"last_user_contains": "forward"},
            },
            {"text": reply, "chunk_size": 6, "chunk_delay_s": 0.15},
        ]
    )
    audio = spoken([0.5, "move forward one meter", 0.2], "forward")
    proc = _voice_run(server, tmp_path, audio)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == reply
    events = list(read_trace(tmp_path / "t.jsonl"))
    types = [e["type"] for e in events]
    transcript = next(e for e in events if e["type"] == "transcript")
    assert transcript["engine"] == "whisper"
    assert "forward" in transcript["text"].lower() and "meter" in transcript["text"].lower()
    assert types.index("speech_in") < types.index("transcript") < types.index("task_start")
    start = next(e for e in events if e["type"] == "task_start")
    assert start["source"] == "voice"
    # ground truth: the simulator's own pose log
    last = list(read_sim_log(tmp_path / "poses.jsonl"))[-1]
    assert abs(last["x_m"] - 1.0) <= 0.05, last
    # one speech_out per sentence, the first before the reply's end
    playing = [e for e in events if e["type"] == "speech_out" and e["state"] == "playing"]
    assert [e["text"] for e in playing] == [
        "I moved forward one meter.",
        "The way ahead is clear.",
        "What next?",
    ]
    reply_ev = next(e for e in events if e["type"] == "reply")
    assert playing[0]["ts"] < reply_ev["ts"]
    last_response = [e for e in events if e["type"] == "model_response"][-1]
    assert playing[0]["ts"] < last_response["ts"]  # spoken while the text still streamed
    with wave.open(str(tmp_path / "reply.wav")) as wav:
        assert (wav.getframerate(), wav.getnchannels()) == (16000, 1)
        seconds = wav.getnframes() / wav.getframerate()
    words = len(reply.split())
    # espeak-ng at 165 words per minute plus its pauses: 0.25 .. 0.7 s per word
    assert 0.25 * words <= seconds <= 0.7 * words, seconds
    assert abs(seconds - sum(e["duration_s"] for e in playing)) < 0.1


def test_spoken_stop_during_a_long_reply_stops_playback_and_the_base(
    scripted_server: Any, spoken: Callable[..., Path], tmp_path: Path
) -> None:
    long_reply = " ".join(
        f"I am driving forward three meters now, this is sentence {n} of my long answer."
        for n in range(1, 9)
    )
    server = scripted_server(
        [
            {
                "text": long_reply,
                "tool_calls": [call("move_forward", {"distance_m": 3.0})],
                "chunk_size": 40,
            },
            {"text": "I see a red box.", "expect": {"last_user_contains": "see"}},
        ]
    )
    audio = spoken(
        # "stop" 5 s after the command: the base is then mid-way (about 1 m of 3 on a quiet
        # machine; with 7 s it had reached 2.71 m under load, next to the 3 m target)
        [0.5, "move forward three meters", 5.0, "stop", 2.5, "what do you see", 0.2],
        "stop",
    )
    proc = _voice_run(server, tmp_path, audio, "--yes")
    assert proc.returncode == 0, proc.stderr
    events = list(read_trace(tmp_path / "t.jsonl"))
    texts = [e["text"].lower() for e in events if e["type"] == "transcript"]
    assert len(texts) == 3 and "stop" in texts[1], texts
    stop = next(e for e in events if e["type"] == "stop")
    assert stop["source"] == "voice"
    outs = [e for e in events if e["type"] == "speech_out"]
    paused = next(e for e in outs if e["state"] == "paused")
    stopped = next(e for e in outs if e["state"] == "stopped")
    assert paused["reason"] == "barge-in" and paused["ts"] <= stop["ts"]
    # the playback stopped before the next model request (and that request was the third
    # utterance's, not the stopped task's)
    requests = [e for e in events if e["type"] == "model_request"]
    assert len(requests) == 2
    assert stopped["ts"] < requests[1]["ts"]
    first_end = next(e for e in events if e["type"] == "task_end")
    assert first_end["status"] == "preempted"
    # the base stopped: where it was when the task was preempted is where it stayed
    state = next(e for e in events if e["type"] == "robot_state")
    last = list(read_sim_log(tmp_path / "poses.jsonl"))[-1]
    assert 0.05 < last["x_m"] < 2.7, last
    assert abs(last["x_m"] - state["x_m"]) < 0.1, (last, state)
    # the reply was cut: far less audio than the whole long answer
    played = [e for e in outs if e["state"] == "playing" and e["task_id"] == first_end["task_id"]]
    assert len(played) < 8
    assert proc.stdout.strip().splitlines()[-1] == "I see a red box."


def test_a_spoken_command_preempts_the_running_motion_like_a_typed_one(
    scripted_server: Any, spoken: Callable[..., Path], tmp_path: Path
) -> None:
    """SPEC A6 for voice (issue 16): "turn left ninety degrees" spoken while a 3 m
    move_forward runs ends that task preempted and runs the turn; graded by the simulator's
    pose log and the trace."""
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 3.0}, "fwd")]},
            {
                "tool_calls": [call("turn_left", {"angle_deg": 90}, "left")],
                "expect": {"last_user_contains": "left"},
            },
            {"text": "I turned left."},
        ]
    )
    audio = spoken(
        [0.5, "move forward three meters", 5.0, "turn left ninety degrees", 0.2], "preempt"
    )
    proc = _voice_run(server, tmp_path, audio)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "I turned left."
    events = list(read_trace(tmp_path / "t.jsonl"))
    texts = [e["text"].lower() for e in events if e["type"] == "transcript"]
    assert len(texts) == 2 and "left" in texts[1], texts
    starts = [e for e in events if e["type"] == "task_start"]
    assert [e["source"] for e in starts] == ["voice", "voice"]
    ends = {e["task_id"]: e["status"] for e in events if e["type"] == "task_end"}
    assert [ends[s["task_id"]] for s in starts] == ["preempted", "completed"]
    assert not any(e["type"] == "stop" for e in events)  # a command, not the stop path
    results = {e["id"]: e for e in events if e["type"] == "tool_result"}
    assert not results["fwd"]["ok"] and results["left"]["ok"], results
    # the second utterance's transcript came before the first task ended, and the turn's
    # model request only after it
    second = [e for e in events if e["type"] == "transcript"][1]
    first_end = next(e for e in events if e["type"] == "task_end")
    turn_request = next(
        e for e in events if e["type"] == "model_request" and e["task_id"] == starts[1]["task_id"]
    )
    assert second["ts"] <= first_end["ts"] <= turn_request["ts"]
    # ground truth: the 3 m motion ended early and the robot then turned left 90 degrees
    # in place
    poses = list(read_sim_log(tmp_path / "poses.jsonl"))
    last = poses[-1]
    assert 0.05 < last["x_m"] < 2.7 and abs(last["y_m"]) < 0.05, last
    assert abs(last["yaw_deg"] - 90.0) < 5.0, last
    turning = next(p for p in poses if p["yaw_deg"] > 2.0)
    assert abs(last["x_m"] - turning["x_m"]) < 0.1, (turning, last)  # no more driving
