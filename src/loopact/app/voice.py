"""Voice for ``loopact run`` (SPEC F4, G3, issue 16): ``--voice``, ``--audio-in``, ``--audio-out``.

:func:`open_voice` builds, from ``cfg.voice``, the engines (speech to text, text to speech),
the audio ends (a sound card, a WAV file, a raw PCM pipe) and the voice channel, and registers
their shutdown on the run's exit stack. :func:`run_voice_file` runs an input recording to its
end: every utterance handled, every reply spoken, then the ``--once`` exit code.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from loopact._compat import wait_within
from loopact.agent import Agent
from loopact.channels.voice import VoiceChannel
from loopact.channels.voice_tools import (
    CommandHandler,
    VoiceControls,
    console_commands,
    make_voice_tools,
)
from loopact.config import Config
from loopact.errors import AudioFormatError, ConfigError, VoiceError
from loopact.tools.builtin.files import Workspace
from loopact.voice.audio import AudioSink, AudioSource
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import OpenAISTT, SpeechToText, WhisperSTT
from loopact.voice.tts import EspeakTTS, OpenAITTS, TextToSpeech
from loopact.voice.vad import Endpointer, Vad


@dataclass
class VoiceRun:
    """The voice parts of a run.

    Attributes:
        channel: The agent side.
        listener: Microphone -> transcripts (None without an input).
        player: The robot's voice (None without an output).
        source: Where speech comes from, or None.
        from_file: The input is a recording or pipe that ends (``--audio-in``).
        controls: Play, pause, resume, stop, record (tools and console commands).
    """

    channel: VoiceChannel
    listener: Listener | None
    player: Player | None
    source: AudioSource | None
    from_file: bool
    controls: VoiceControls


def voice_requested(cfg: Config) -> bool:
    """True when the run uses voice (``voice.enabled``, ``--audio-in`` or ``--audio-out``)."""
    v = cfg.voice
    return v.enabled or v.ros2_topics or v.audio_in is not None or v.audio_out is not None


def voice_refusal(modality: str) -> str | None:
    """G3: why ``agent.modality`` refuses spoken requests (with the fix), or None when it
    allows them (``any``, ``voice+text``). The one line of the command line's refusal and of
    the web console's microphone.

    Args:
        modality: The ``agent.modality`` value (``text``, ``image+text``, ...).
    """
    if modality in ("any", "voice+text"):
        return None
    return (
        f"agent.modality is {modality!r}: spoken requests are refused; set agent.modality "
        "to voice+text (or any)"
    )


def check_modality(cfg: Config) -> None:
    """G3: voice (``--voice``, ``--audio-in``, ``--audio-out``) needs ``agent.modality``
    ``any`` or ``voice+text``.

    Raises:
        ConfigError: The configured modality refuses voice (:func:`voice_refusal`: names the
            key and the fix).
    """
    refusal = voice_refusal(cfg.agent.modality)
    if voice_requested(cfg) and refusal is not None:
        raise ConfigError(refusal, key="agent.modality")


def _key(value: Any, env_name: str | None, fallback: str | None, setting: str) -> str | None:
    """The key of a speech endpoint: ``api_key``, else the variable ``api_key_env`` names,
    else ``fallback`` (the model's key when the URL is the model's).

    Raises:
        ConfigError: ``api_key_env`` names a variable that is not set or is empty
            (``setting`` is the key named, e.g. ``voice.stt.api_key_env``).
    """
    if value is not None:
        return str(value.get_secret_value())
    if env_name:
        key = os.environ.get(env_name)
        if not key:
            state = "is empty" if key == "" else "is not set"
            raise ConfigError(f"{setting} names {env_name}, which {state}", key=setting)
        return key
    return fallback


def make_stt(cfg: Config) -> SpeechToText:
    """The speech-to-text engine of ``voice.stt``.

    Raises:
        ConfigError: ``engine: openai`` without a base URL (``voice.stt.base_url`` or
            ``model.base_url``), or ``voice.stt.api_key_env`` names an unset variable.
    """
    s = cfg.voice.stt
    if s.engine == "openai":
        base = s.base_url or cfg.model.base_url
        if not base:
            raise ConfigError(
                "voice.stt.engine is openai but no base URL is set: give voice.stt.base_url",
                key="voice.stt.base_url",
            )
        same = base == cfg.model.base_url
        key = _key(s.api_key, s.api_key_env, cfg.api_key if same else None, "voice.stt.api_key_env")
        return OpenAISTT(base, s.model, key, s.timeout_s)
    return WhisperSTT(s.model_path, s.threads, s.timeout_s, s.window_s)


def make_tts(cfg: Config) -> TextToSpeech | None:
    """The text-to-speech engine of ``voice.tts`` (None for ``engine: none``).

    Raises:
        ConfigError: ``engine: openai`` without a base URL, or ``voice.tts.api_key_env``
            names an unset variable.
    """
    s = cfg.voice.tts
    if s.engine == "none":
        return None
    if s.engine == "openai":
        base = s.base_url or cfg.model.base_url
        if not base:
            raise ConfigError(
                "voice.tts.engine is openai but no base URL is set: give voice.tts.base_url",
                key="voice.tts.base_url",
            )
        same = base == cfg.model.base_url
        key = _key(s.api_key, s.api_key_env, cfg.api_key if same else None, "voice.tts.api_key_env")
        return OpenAITTS(base, s.model, s.voice, key, s.timeout_s)
    return EspeakTTS(s.espeak_voices, s.rate_wpm, s.timeout_s)


def _open_ends(
    cfg: Config, connector: Any = None
) -> tuple[AudioSource | None, AudioSink | None, bool]:
    from loopact.voice.files import open_sink, open_source

    v = cfg.voice
    source: AudioSource | None = None
    sink: AudioSink | None = None
    if v.audio_in is not None:
        source = open_source(v.audio_in)
    if v.audio_out is not None:
        sink = open_sink(v.audio_out)
    if v.ros2_topics:
        if connector is None or not hasattr(connector, "subscribe_msg"):
            raise ConfigError(
                "voice.ros2_topics needs the robot on ROS 2 (robot.kind: ros2)",
                key="voice.ros2_topics",
            )
        from loopact.nodes.ros2.audio import TopicAudioSink, TopicAudioSource, audio_topics

        topic_in, topic_out = audio_topics(cfg.agent.name)
        source = source or TopicAudioSource(connector, topic_in)
        sink = sink or TopicAudioSink(connector, topic_out)
    if v.enabled and (source is None or sink is None):
        from loopact.voice.device import DeviceSink, DeviceSource

        if source is None:
            source = DeviceSource(v.input_device)
        if sink is None:
            sink = DeviceSink(v.output_device)
    return source, sink, v.audio_in is not None


def listener_options(cfg: Config) -> dict[str, Any]:
    """The :class:`Listener` settings of ``cfg.voice`` (VAD, end of utterance, barge-in) and
    the agent's language, for every microphone (a device, a file, a pipe, the web console)."""
    v = cfg.voice
    return {
        "vad": Vad(v.vad_aggressiveness),
        "endpointer": Endpointer(
            onset_ms=v.onset_ms, end_silence_ms=v.end_silence_ms, max_utterance_s=v.max_utterance_s
        ),
        "barge_in": v.barge_in,
        "lang": cfg.agent.lang,
    }


async def open_voice(
    cfg: Config,
    agent: Agent,
    stack: AsyncExitStack,
    console: Console,
    connector: Any = None,
    workspace: Workspace | None = None,
    panel: Any = None,
) -> VoiceRun | None:
    """Build the voice parts of a run, or None when voice is not requested.

    A missing speech engine (espeak-ng, the offline model) is said in one line and the run
    goes on in text for that direction. ``connector`` is the ROS 2 connector for
    ``voice.ros2_topics``; ``workspace`` the run's workspace for ``play_audio`` and
    ``record_audio`` (loopact's own state out of reach, issue 21), by default
    ``agent.workspace`` without protected paths; ``panel`` the robot's emergency stop for
    "emergency stop" / "紧急停止" (issue 41).

    Raises:
        ConfigError: The modality refuses voice, an engine is misconfigured, there is no sound
            card for ``--voice``, or an audio file cannot be read or written.
    """
    if not voice_requested(cfg):
        return None
    check_modality(cfg)
    v = cfg.voice
    try:
        source, sink, from_file = _open_ends(cfg, connector)
    except VoiceError as exc:
        key = "--audio-in" if "audio" in str(exc) and v.audio_in else "voice"
        raise ConfigError(str(exc), key=key) from None
    player: Player | None = None
    if sink is not None:
        stack.push_async_callback(sink.close)
        tts = make_tts(cfg)
        if isinstance(tts, EspeakTTS):
            try:
                tts.check()
            except VoiceError as exc:
                console.print(f"[yellow]loopact: {exc}[/]")
                tts = None
        player = Player(sink, tts, agent.bus)
        stack.push_async_callback(player.close)
    channel = VoiceChannel(agent, player, to_model=v.to_model, panel=panel)
    if v.to_model != "transcript" and not agent.model.capabilities.audio_input:
        console.print(
            f"[yellow]loopact: voice.to_model is {v.to_model}, but the model does not take "
            "audio (model.capabilities.audio_input: false): it gets the transcript[/]"
        )
    stack.callback(channel.close)
    listener: Listener | None = None
    if source is not None:
        for note in getattr(source, "notes", []):
            console.print(f"[yellow]loopact: {source.name}: {note}[/]")
        stt = make_stt(cfg)
        stack.push_async_callback(stt.aclose)
        if isinstance(stt, WhisperSTT):
            try:
                await stt.warm_up()
            except VoiceError as exc:
                raise ConfigError(str(exc), key="voice.stt") from None
        listener = Listener(
            source, stt, player, agent.bus, channel.on_transcript, **listener_options(cfg)
        )
        channel.listener = listener
        stack.push_async_callback(source.close)
    controls = VoiceControls(player, listener, workspace or cfg.agent.workspace)
    for tool in make_voice_tools(controls):
        agent.registry.add(tool)
    return VoiceRun(channel, listener, player, source, from_file, controls)


async def run_voice_file(run: VoiceRun, agent: Agent, console: Console) -> int:
    """``--audio-in FILE|-``: handle every utterance, speak every reply, then exit.

    Returns the ``--once`` exit code over the commands (0, 3, 1; 1 too when the input held no
    speech at all, no words, or an utterance whose transcription failed: a command was lost).

    Raises:
        ConfigError: The input cannot be read as it arrives (``--audio-in -`` fed a WAV stream
            of another format than 16 kHz mono 16-bit PCM), naming ``--audio-in``.
    """
    assert run.listener is not None
    agent_task = asyncio.ensure_future(agent.run())
    try:
        try:
            await run.listener.run()
        except AudioFormatError as exc:
            raise ConfigError(str(exc), key="--audio-in") from None
        await run.channel.wait_done()
    finally:
        agent_task.cancel()
        await asyncio.gather(agent_task, return_exceptions=True)
    stats, name = run.listener.stats, run.listener.source.name
    if stats.utterances == 0:
        console.print(f"loopact: no speech heard in {name}", markup=False)
        return 1
    code = run.channel.exit_code()
    if stats.failed:
        console.print(
            f"loopact: {stats.failed} of {stats.utterances} utterances in {name} could not be "
            "transcribed (see the transcript events)",
            markup=False,
        )
        return 1
    if stats.heard == 0:
        console.print(f"loopact: no words recognised in {name}", markup=False)
        return 1
    return code


SPEAK_TO_END_S = 600.0
"""Longest wait, seconds, for the spoken reply of ``--once`` to end (``--audio-out``)."""


async def finish_speaking(run: VoiceRun, console: Console, limit_s: float = SPEAK_TO_END_S) -> None:
    """``--once`` with ``--audio-out``/``--voice``: wait until the reply has been spoken to its
    end (it is queued sentence by sentence while it streams), so the output holds all of it."""
    if run.player is None:
        return
    try:
        await wait_within(run.player.wait_idle(), limit_s)
    except asyncio.TimeoutError:
        console.print(f"loopact: the spoken reply was cut after {limit_s:g} s", markup=False)


def start_listening(
    run: VoiceRun, agent: Agent, stack: AsyncExitStack, console: Console
) -> dict[str, CommandHandler]:
    """``--voice`` beside the terminal chat: listen in the background (a device error is
    printed, the chat goes on); returns the playback console commands."""
    listener = run.listener
    if listener is not None:

        async def listen() -> None:
            try:
                await listener.run()
            except VoiceError as exc:
                console.print(f"[red]loopact: the microphone stopped: {exc}[/]")

        task = asyncio.ensure_future(listen())

        async def stop_listening() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        stack.push_async_callback(stop_listening)
    return console_commands(run.controls)
