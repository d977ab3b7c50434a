"""Playback controls as tools and console commands (SPEC F4, issue 16).

Like the seeds' ``wavplay`` / ``wavrecord``: ``play_audio`` plays a WAV file of the workspace
through the robot's speaker (a new playback replaces what was playing), ``pause_audio`` /
``resume_audio`` pause and continue it (or a spoken reply), ``stop_audio`` stops it and drops
what was queued, ``record_audio`` records the microphone for some seconds into a WAV file of the
workspace. The terminal offers the same as ``/play FILE``, ``/pause``, ``/resume``,
``/stopaudio`` and ``/record SECONDS [FILE]``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from loopact._compat import wait_within
from loopact.errors import AudioFormatError, ToolError
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool
from loopact.tools.blocking import BlockingExecutor
from loopact.tools.builtin.files import Workspace, open_regular, write_text
from loopact.voice.audio import duration_s, read_wav, wav_bytes
from loopact.voice.listen import Listener
from loopact.voice.playback import Player

MAX_RECORD_S = 120.0
"""The longest recording, in seconds."""

MAX_PLAY_BYTES = 50 * 1024 * 1024
"""``play_audio`` refuses larger WAV files (50 MiB: about 5 minutes of CD-quality stereo)."""

MAX_PLAY_S = 600.0
"""``play_audio`` refuses longer audio (10 minutes: 19 MB of 16 kHz PCM to hold), from the
file's header before its samples are read (issue 39 item 15: a 48 MB 8-bit 8 kHz file is
100 minutes)."""

LOAD_TIMEOUT_S = 30.0
"""How long ``play_audio`` may take to read and decode its file, in seconds."""


class VoiceControls:
    """The operations behind the tools and commands.

    Args:
        player: The robot's voice, or None (no speaker).
        listener: The microphone, or None.
        workspace: The folder files are read from and written to, or a :class:`Workspace`
            (with the paths that stay out of reach, issue 21).
    """

    def __init__(
        self, player: Player | None, listener: Listener | None, workspace: Path | Workspace
    ) -> None:
        self.player = player
        self.listener = listener
        self.ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self._executor = BlockingExecutor(max_workers=2, name="loopact-audio-file")

    def _need_player(self) -> Player:
        if self.player is None:
            raise ToolError("no speaker: start loopact with --voice or --audio-out")
        return self.player

    async def play(self, filename: str) -> ToolResult:
        """Play a WAV file of the workspace.

        The file (up to 50 MiB and 10 minutes) is read and converted to 16 kHz mono in
        blocks, on a daemon thread, not on the event loop, within :data:`LOAD_TIMEOUT_S`:
        memory holds the 16 kHz output and one block (issue 39 item 15).

        Raises:
            ToolError: No speaker, a path outside the workspace, not a regular file, too
                large, not a WAV it can decode, or reading it took too long.
        """
        player = self._need_player()
        try:
            rel, pcm, notes = await wait_within(
                self._executor.run(self._load, filename), LOAD_TIMEOUT_S
            )
        except asyncio.TimeoutError:
            raise ToolError(f"reading {filename} took more than {LOAD_TIMEOUT_S:g} s") from None
        player.play_pcm(pcm, f"file {rel}")
        return ToolResult.success(
            f"playing {rel} ({duration_s(pcm):.1f} s)",
            path=rel,
            duration_s=round(duration_s(pcm), 2),
            notes=notes,
        )

    def _load(self, filename: str) -> tuple[str, bytes, list[str]]:
        # A regular file of bounded size only: a FIFO would block for good (issue 21 item 11)
        path, stream = open_regular(self.ws, filename, MAX_PLAY_BYTES, "play_audio")
        rel = self.ws.relative(path)
        try:
            pcm, notes = read_wav(stream, name=rel, max_s=MAX_PLAY_S)  # closes the stream
        except AudioFormatError as exc:
            raise ToolError(str(exc)) from None
        return rel, pcm, notes

    def pause(self) -> str:
        """Pause the playback."""
        return "paused" if self._need_player().pause("user") else "nothing is playing"

    def resume(self) -> str:
        """Resume the playback."""
        return "resumed" if self._need_player().resume() else "nothing is paused"

    def stop(self) -> str:
        """Stop the playback and drop the queue."""
        return "stopped" if self._need_player().stop("user") else "nothing was playing"

    async def record(self, seconds: float, filename: str | None = None) -> ToolResult:
        """Record the microphone into a WAV file of the workspace."""
        if self.listener is None:
            raise ToolError("no microphone: start loopact with --voice or --audio-in")
        if not 0 < seconds <= MAX_RECORD_S:
            raise ToolError(f"seconds must be > 0 and <= {MAX_RECORD_S:g}, got {seconds:g}")
        name = filename or time.strftime("recordings/rec-%Y%m%d-%H%M%S.wav")
        if not name.lower().endswith(".wav"):
            raise ToolError(f"filename {name!r} must end in .wav")
        self.ws.resolve(name)  # refuse a path outside the workspace before recording
        pcm = await self.listener.record(seconds)
        result = write_text(self.ws, name, wav_bytes(pcm))
        if not result.ok:
            return result
        return ToolResult.success(
            f"recorded {duration_s(pcm):.1f} s to {result.metadata['path']}",
            path=result.metadata["path"],
            duration_s=round(duration_s(pcm), 2),
        )


def make_voice_tools(controls: VoiceControls) -> list[Tool]:
    """``play_audio``, ``pause_audio``, ``resume_audio``, ``stop_audio``, ``record_audio``."""

    @tool(safety=SafetyClass.IDEMPOTENT)
    async def play_audio(filename: str) -> ToolResult:
        """Play a WAV file from the workspace through the robot's speaker.

        Args:
            filename: A WAV file in the workspace, e.g. 'recordings/hello.wav'.
        """
        return await controls.play(filename)

    @tool(safety=SafetyClass.IDEMPOTENT)
    async def pause_audio() -> str:
        """Pause what the robot is playing or saying (resume_audio continues it)."""
        return controls.pause()

    @tool(safety=SafetyClass.IDEMPOTENT)
    async def resume_audio() -> str:
        """Continue paused playback."""
        return controls.resume()

    @tool(safety=SafetyClass.IDEMPOTENT)
    async def stop_audio() -> str:
        """Stop what the robot is playing or saying and drop what is queued."""
        return controls.stop()

    @tool(safety=SafetyClass.WRITE, timeout_s=MAX_RECORD_S + 10)
    async def record_audio(seconds: float, filename: str | None = None) -> ToolResult:
        """Record the microphone into a WAV file in the workspace.

        Args:
            seconds: How long to record, in seconds (more than 0, at most 120).
            filename: Where to save it (a .wav path in the workspace); default
                recordings/rec-<date>-<time>.wav.
        """
        return await controls.record(seconds, filename)

    return [play_audio, pause_audio, resume_audio, stop_audio, record_audio]


CommandHandler = Callable[[list[str]], Awaitable[str]]


def console_commands(controls: VoiceControls) -> dict[str, CommandHandler]:
    """``/play FILE``, ``/pause``, ``/resume``, ``/stopaudio``, ``/record SECONDS [FILE]``.

    Each handler takes the words after the command and returns the line to print (a
    usage line, the result, or what went wrong, worded for the person at the terminal).

    Raises:
        ToolError: From a handler: what the tool refuses (a path outside the workspace, no
            speaker or microphone); the terminal prints it as the command's line.
    """

    async def play(args: list[str]) -> str:
        if len(args) != 1:
            return "usage: /play FILE.wav"
        # said to the person at the terminal, not the model's hints (file_list)
        target = controls.ws.resolve(args[0])  # outside the workspace: ToolError, printed
        if not target.exists():
            return f"no file {args[0]!r} in the workspace {controls.ws.root}"
        if target.is_dir():
            return f"{args[0]!r} is a folder of the workspace {controls.ws.root}: give a .wav file"
        result = await controls.play(args[0])
        return str(result.data if result.ok else result.error)

    async def record(args: list[str]) -> str:
        try:
            seconds = float(args[0]) if args else 5.0
        except ValueError:
            return "usage: /record SECONDS [FILE.wav]"
        result = await controls.record(seconds, args[1] if len(args) > 1 else None)
        return str(result.data if result.ok else result.error)

    async def simple(fn: Callable[[], str]) -> str:
        await asyncio.sleep(0)
        return fn()

    return {
        "/play": play,
        "/pause": lambda _a: simple(controls.pause),
        "/resume": lambda _a: simple(controls.resume),
        "/stopaudio": lambda _a: simple(controls.stop),
        "/record": record,
    }
