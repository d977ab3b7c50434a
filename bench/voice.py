"""Voice figures (issue 16): barge-in latency, self-interruptions, first audio, STT speed and WER.

Everything runs through the real pipeline (WebRTC VAD, echo canceller, player with a real-time
sink clock, espeak-ng, faster-whisper tiny.en, the real agent and OpenAI provider against the
scripted model server) in a simulated room (:mod:`loopact.voice.room`): the robot's speaker
is heard by its microphone (gain 0.9, 40 ms), the person's speech is recorded espeak-ng audio
placed on the microphone track at known times.

- barge-in: the robot speaks; a person starts talking 0.8-2.0 s into it; time from the first
  sample of the person's speech to the robot's audio going silent (the player's pause).
  Baseline in the same run: the VAD's own onset delay on the same audio (no pipeline).
- self-interruptions: 50 spoken replies heard by the robot's own microphone, no person: every
  pause counts.
- first audio: end of the person's speech -> first sample of the reply played, with the
  scripted model answering at once; with offline Whisper and with the scripted transcription
  endpoint (the floor without STT time).
- first motion: end of "move forward one meter" -> the ``move_forward`` call starting, on the
  MuJoCo robot (offline Whisper).
- STT: real-time factor and word error rate of offline Whisper with its default encoder window
  and with Whisper's fixed 30 s window (the baseline), and of PocketSphinx when it is
  installed (``pip install pocketsphinx``), on a test set spoken by espeak-ng (2 voices x 2
  rates x 15 commands).

Targets (issue 16): barge-in p95 <= 150 ms, 0 self-interruptions in 50 replies, first audio
<= 1.2 s, first motion <= 1.5 s, STT RTF <= 0.3 on 2 cores.

Usage: .venv/bin/python bench/voice.py [--quick] [--first-audio-trials 20]
       [--first-motion-trials 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.channels.voice import VoiceChannel
from loopact.events import Event, EventBus
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry
from loopact.voice.audio import AudioFrame, read_wav
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.room import Room
from loopact.voice.stt import WINDOW_S, OpenAISTT, SpeechToText, WhisperSTT
from loopact.voice.tts import EspeakTTS
from loopact.voice.vad import Endpointer, Onset, Vad

COMMANDS = [
    "move forward one meter",
    "turn left ninety degrees",
    "turn right forty five degrees",
    "go to the kitchen",
    "what do you see",
    "stop",
    "move backward half a meter",
    "look at the red box",
    "follow the line",
    "go back to the charging station",
    "find the green ball",
    "drive forward two meters and stop",
    "turn around",
    "take a picture of the door",
    "how far is the wall",
]
VOICES = [("en-us", 150), ("en-us", 190), ("en", 150), ("en", 190)]
REPLY = (
    "I am looking around the room now. There is a red box on my right and a green ball "
    "further ahead. The floor between us is clear."
)


def speak(text: str, voice: str = "en-us", rate: int = 160) -> bytes:
    """16 kHz PCM of espeak-ng saying ``text``, without espeak's leading and trailing silence
    (so that "end of speech" is the last voiced sample)."""
    out = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(rate), "--stdout", text],
        capture_output=True,
        check=True,
    ).stdout
    x = np.frombuffer(read_wav(out)[0], dtype="<i2")
    voiced = np.flatnonzero(np.abs(x) > 300)
    return x[voiced[0] : voiced[-1] + 1].tobytes() if voiced.size else x.tobytes()


def words(text: str) -> list[str]:
    """Lower-case words without punctuation; numbers spelled as digits count as they are."""
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


_NUMBERS = {
    "1": "one", "2": "two", "45": "forty five", "90": "ninety", "0.5": "half a",
    "one-half": "half a",
}  # fmt: skip


def normalise(text: str) -> list[str]:
    """Words of a transcript with the digit forms Whisper writes spelled out."""
    t = text.lower()
    for digits, spelled in _NUMBERS.items():
        t = re.sub(rf"\b{re.escape(digits)}\b", spelled, t)
    t = t.replace("°", " degrees").replace("meters", "meters")
    return words(t)


def edit_distance(a: list[str], b: list[str]) -> int:
    """Word-level Levenshtein distance."""
    prev = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        cur = [i]
        for j, wb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (wa != wb)))
        prev = cur
    return prev[-1]


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0..100)."""
    return float(np.percentile(values, q)) if values else float("nan")


# ---------------------------------------------------------------------------------- STT
async def bench_stt(quick: bool) -> dict[str, Any]:
    """WER and RTF of offline Whisper (and PocketSphinx if installed)."""
    voices = VOICES[:2] if quick else VOICES
    test_set = [(c, speak(c, v, r)) for v, r in voices for c in COMMANDS]
    audio_s = sum(len(p) / 32000 for _c, p in test_set)
    out: dict[str, Any] = {"utterances": len(test_set), "audio_s": audio_s}
    ref_words = sum(len(words(ref)) for ref, _pcm in test_set)
    # the default window, then Whisper's fixed 30 s window (the baseline, same run)
    for key, window_s in (("whisper", WINDOW_S), ("whisper_30s", 30.0)):
        stt = WhisperSTT(window_s=window_s)
        await stt.warm_up()
        errors = 0
        elapsed = 0.0
        for ref, pcm in test_set:
            t = await stt.transcribe(pcm)
            elapsed += t.elapsed_s
            errors += edit_distance(words(ref), normalise(t.text))
        await stt.aclose()
        out[key] = {"wer": errors / ref_words, "rtf": elapsed / audio_s, "window_s": window_s,
                    "fallbacks": stt.fallbacks}  # fmt: skip
    try:
        from pocketsphinx import Decoder
    except ImportError:
        out["pocketsphinx"] = None
        return out
    dec = Decoder()
    errors = 0
    t0 = time.monotonic()
    for ref, pcm in test_set:
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        hyp = dec.hyp()
        errors += edit_distance(words(ref), normalise(hyp.hypstr if hyp else ""))
    out["pocketsphinx"] = {"wer": errors / ref_words, "rtf": (time.monotonic() - t0) / audio_s}
    return out


# ---------------------------------------------------------------------------------- rig
class _Transcripts:
    """A scripted transcription endpoint that answers every upload with the same text."""

    def __init__(self, text: str, n: int) -> None:
        self.server = ScriptedModelServer(
            {"turns": [], "lanes": {"transcriptions": [{"text": text}] * n}}
        ).start()

    def stt(self) -> SpeechToText:
        return OpenAISTT(self.server.base_url, "w", "k", timeout_s=10)


async def _settle(pred: Any, timeout_s: float) -> None:
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(loop(), timeout_s)


async def bench_barge_in(trials: int) -> dict[str, Any]:
    """User speech onset -> robot audio stopped, over ``trials`` interruptions."""
    user = speak("wait a moment please")
    latencies: list[float] = []
    rng = random.Random(7)
    fake = _Transcripts("wait a moment please", trials)
    for _ in range(trials):
        room = Room(echo_gain=0.9, echo_delay_ms=40, noise_rms=20, seed=rng.randrange(1000))
        bus = EventBus()
        player = Player(room.speaker, EspeakTTS(rate_wpm=190), bus)
        stt = fake.stt()

        async def ignore(_t: Any) -> None:
            return None

        listener = Listener(room.microphone, stt, player, bus, ignore)
        task = asyncio.ensure_future(listener.run())
        player.begin("t")
        player.say(REPLY)
        await _settle(lambda p=player: p.playing, 20)  # type: ignore[misc]
        start, _end = room.say(user, time.monotonic() - room.t0_s + rng.uniform(0.8, 2.0))
        await _settle(lambda p=player: bool(p.stats.stopped_at), 20)  # type: ignore[misc]
        latencies.append(player.stats.stopped_at[0] - start)
        await room.microphone.close()
        await asyncio.gather(task, return_exceptions=True)
        await player.close()
        await stt.aclose()
        await room.speaker.close()
    fake.server.stop()
    # baseline: the VAD's own onset delay on the same speech, no pipeline
    vad, ep = Vad(), Endpointer()
    pcm = b"\0\0" * 8000 + user + b"\0\0" * 16000
    base = float("nan")
    for i in range(0, len(pcm), 640):
        frame = AudioFrame(pcm[i : i + 640], i / 32000)
        for ev in ep.push(frame, vad.is_speech(frame.samples)):
            if isinstance(ev, Onset):
                base = ev.detected_s - 0.5
    return {
        "p50_ms": pct(latencies, 50) * 1000,
        "p95_ms": pct(latencies, 95) * 1000,
        "max_ms": max(latencies) * 1000,
        "vad_onset_ms": base * 1000,
        "n": len(latencies),
    }


async def bench_self_interruptions(replies: int) -> dict[str, Any]:
    """Replies heard by the robot's own microphone, no person: pauses counted."""
    room = Room(echo_gain=0.9, echo_delay_ms=40, noise_rms=20)
    bus = EventBus()
    player = Player(room.speaker, EspeakTTS(rate_wpm=190), bus)
    fake = _Transcripts("", 1000)
    stt = fake.stt()

    async def ignore(_t: Any) -> None:
        return None

    listener = Listener(room.microphone, stt, player, bus, ignore)
    task = asyncio.ensure_future(listener.run())
    sentences = [s.strip() + "." for s in REPLY.split(".") if s.strip()]
    played_s = 0.0
    for n in range(replies):
        player.begin(f"r{n}")
        player.say(sentences[n % len(sentences)])
        await asyncio.wait_for(player.wait_idle(), 30)
    played_s = room.speaker.played_samples / 16000
    barge_ins = player.stats.barge_ins
    onsets = len(listener.stats.onsets)
    await room.microphone.close()
    await asyncio.gather(task, return_exceptions=True)
    await player.close()
    await stt.aclose()
    await room.speaker.close()
    fake.server.stop()
    return {"replies": replies, "self_interruptions": barge_ins, "onsets": onsets,
            "played_s": played_s}  # fmt: skip


async def _first_audio_once(stt: SpeechToText, tmp: Path) -> float:
    server = ScriptedModelServer([{"text": "Sure. I will do that."}]).start()
    model = OpenAIChatModel("scripted", server.base_url, "k")
    agent = Agent(
        model,
        ToolRegistry(make_builtin_tools(tmp)),
        AgentOptions(bounds=Bounds(), system_prompt="Robot.", workspace=tmp),
    )
    room = Room(echo_gain=0.5, echo_delay_ms=40, noise_rms=20)
    played: list[float] = []
    room.speaker.add_listener(lambda _pcm, t: played.append(t))
    player = Player(room.speaker, EspeakTTS(), agent.bus)
    channel = VoiceChannel(agent, player)
    listener = Listener(room.microphone, stt, player, agent.bus, channel.on_transcript)
    runner = asyncio.ensure_future(agent.run())
    task = asyncio.ensure_future(listener.run())
    _start, end = room.say(speak("tell me what you will do"), 0.3)
    await _settle(lambda: bool(played), 60)
    latency = played[0] - end
    await room.microphone.close()
    await asyncio.gather(task, return_exceptions=True)
    await player.close()
    channel.close()
    await agent.close()
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    await room.speaker.close()
    server.stop()
    return latency


async def bench_first_audio(trials: int, tmp: Path) -> dict[str, Any]:
    """End of speech -> first reply audio, offline Whisper and scripted transcription."""
    whisper = WhisperSTT()
    await whisper.warm_up()
    offline = [await _first_audio_once(whisper, tmp) for _ in range(trials)]
    await whisper.aclose()
    fake = _Transcripts("Tell me what you will do.", trials)
    floor = []
    for _ in range(trials):
        stt = fake.stt()
        floor.append(await _first_audio_once(stt, tmp))
        await stt.aclose()
    fake.server.stop()
    return {
        "n": trials,
        "whisper_p50_s": statistics.median(offline),
        "whisper_p95_s": pct(offline, 95),
        "whisper_max_s": max(offline),
        "scripted_stt_p50_s": statistics.median(floor),
        "scripted_stt_p95_s": pct(floor, 95),
    }


async def bench_first_motion(trials: int, tmp: Path) -> dict[str, Any]:
    """End of "move forward one meter" -> the move_forward call starting, on the simulator."""
    from loopact.app.robot import open_robot

    whisper = WhisperSTT()
    await whisper.warm_up()
    out: list[float] = []
    for _ in range(trials):
        session = await open_robot("sim", "sim", "sim_room", speed=4.0)
        server = ScriptedModelServer(
            [
                {"tool_calls": [{"name": "move_forward", "arguments": {"distance_m": 1.0}}]},
                {"text": "Done."},
            ]
        ).start()
        agent = Agent(
            OpenAIChatModel("scripted", server.base_url, "k"),
            ToolRegistry(session.tools),
            AgentOptions(
                bounds=Bounds(), system_prompt="Robot.", workspace=tmp,
                stop_hooks=(session.stop,),
            ),
        )  # fmt: skip
        calls: list[float] = []

        def on(ev: Event, calls: list[float] = calls) -> None:
            if ev.type == "tool_call" and ev.data.get("name") == "move_forward":
                calls.append(time.monotonic())

        agent.bus.subscribe(on)
        room = Room(echo_gain=0.0, noise_rms=20)
        channel = VoiceChannel(agent, None)
        listener = Listener(room.microphone, whisper, None, agent.bus, channel.on_transcript)
        runner = asyncio.ensure_future(agent.run())
        task = asyncio.ensure_future(listener.run())
        _s, end = room.say(speak("move forward one meter"), 0.3)
        await _settle(lambda calls=calls: bool(calls), 60)  # type: ignore[misc]
        out.append(calls[0] - end)
        await room.microphone.close()
        await asyncio.gather(task, return_exceptions=True)
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        channel.close()
        await session.close()
        server.stop()
    await whisper.aclose()
    return {"n": trials, "p50_s": statistics.median(out), "p95_s": pct(out, 95), "max_s": max(out)}


async def main() -> int:
    """Run every figure and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials")
    parser.add_argument(
        "--first-audio-trials", type=int, default=20, help="trials of each first-audio figure"
    )
    parser.add_argument("--first-motion-trials", type=int, default=5)
    args = parser.parse_args()
    quick = args.quick
    load = os.getloadavg()[0]
    print(f"voice bench, {time.strftime('%Y-%m-%d')}, load average {load:.1f}, "
          f"{os.cpu_count()} cores")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        b = await bench_barge_in(8 if quick else 20)
        print(
            f"barge-in (onset -> audio stopped): p50 {b['p50_ms']:.0f} ms, p95 "
            f"{b['p95_ms']:.0f} ms, max {b['max_ms']:.0f} ms over {b['n']} (target p95 <= "
            f"150 ms); baseline VAD onset delay {b['vad_onset_ms']:.0f} ms"
        )
        s = await bench_self_interruptions(10 if quick else 50)
        print(
            f"self-interruptions: {s['self_interruptions']} in {s['replies']} replies "
            f"({s['played_s']:.0f} s of the robot's own voice in its microphone, "
            f"{s['onsets']} onsets; target 0)"
        )
        f = await bench_first_audio(2 if quick else args.first_audio_trials, tmp)
        print(
            f"first audio (end of speech -> reply audio, n={f['n']}): offline Whisper p50 "
            f"{f['whisper_p50_s']:.2f} s, p95 {f['whisper_p95_s']:.2f} s, max "
            f"{f['whisper_max_s']:.2f} s (target 1.2 s); with a scripted transcription "
            f"endpoint p50 {f['scripted_stt_p50_s']:.2f} s, p95 {f['scripted_stt_p95_s']:.2f} s"
        )
        m = await bench_first_motion(1 if quick else args.first_motion_trials, tmp)
        print(
            f"first motion (end of speech -> move_forward starts, n={m['n']}): p50 "
            f"{m['p50_s']:.2f} s, p95 {m['p95_s']:.2f} s, max {m['max_s']:.2f} s (target 1.5 s)"
        )
    st = await bench_stt(quick)
    w = st["whisper"]
    w30 = st["whisper_30s"]
    print(
        f"STT on {st['utterances']} espeak-ng utterances ({st['audio_s']:.0f} s): Whisper "
        f"tiny.en, {w['window_s']:g} s window: WER {w['wer']:.1%}, RTF {w['rtf']:.2f} (target "
        f"<= 0.3; {w['fallbacks']} decoded again in 30 s); Whisper's fixed 30 s window: WER "
        f"{w30['wer']:.1%}, RTF {w30['rtf']:.2f}"
    )
    if st["pocketsphinx"] is not None:
        p = st["pocketsphinx"]
        print(f"  PocketSphinx 5 (en-us model): WER {p['wer']:.1%}, RTF {p['rtf']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
