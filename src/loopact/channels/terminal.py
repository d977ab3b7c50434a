"""The terminal channel (SPEC F1): type instructions, see progress, replies and actions.

Interactive mode reads lines on a worker thread (so typing never blocks the agent) and feeds
them to the agent's inbox; typing while a task runs preempts it. Local commands: ``/stop``,
``/reset``, ``/status``, ``/provider NAME [MODEL [BASE_URL]]``, ``/quit``. A pending
confirmation request is answered by the next line (``y`` allows, ``n`` or an empty line denies;
any other line denies and then runs as the next instruction).
Ctrl-C stops the current task; a second Ctrl-C within two seconds (or when idle) quits.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TextIO

from rich.console import Console

from loopact.agent.confirm import NO_WORDS, YES_WORDS
from loopact.agent.runtime import is_stop
from loopact.channels.agent_port import AgentPort
from loopact.channels.panel_text import estop_command
from loopact.channels.progress import ProgressPrinter, shown
from loopact.errors import LoopactError
from loopact.events import Event, EventType
from loopact.events.payloads import ConfirmRequestPayload, ConfirmResponsePayload
from loopact.i18n import t
from loopact.llm.base import Model
from loopact.llm.messages import valid_text

__all__ = ["BUILTIN_COMMANDS", "TTY_LINE_MAX", "ProgressPrinter", "TerminalChannel", "command_list"]

BUILTIN_COMMANDS = ("/stop", "/estop", "/reset", "/status", "/provider", "/quit")
"""The terminal's own slash commands, in the order the welcome line lists them."""


def command_list(extra: Iterable[str] = ()) -> str:
    """The commands the welcome line and an unknown command's answer list: the terminal's
    own, then ``extra`` (the audio commands when there is audio output, issue 16).

    Args:
        extra: More command names, e.g. ``["/play", "/pause"]``.
    """
    return " ".join((*BUILTIN_COMMANDS, *extra))


#: The longest line a terminal in canonical mode hands to a program (Linux's N_TTY buffer is
#: 4,096 bytes, one of them the newline): the kernel drops what is typed or pasted beyond it,
#: so a line this long was most likely cut, and running what is left could do something else
#: than was asked (a 20 kB paste lost its last words, "turn left 10 degrees", and the robot
#: drove forward 0.8 m; found by a newcomer, 2026-12-05).
TTY_LINE_MAX = 4095
_YES = YES_WORDS
_NO = NO_WORDS


class TerminalChannel:
    """Interactive chat on the terminal.

    Args:
        agent: The agent to feed.
        console: Output console (stdout).
        stdin: Input stream (``sys.stdin``).
        welcome: The first lines to print.

        commands: More slash commands, by name (the voice playback commands, issue 16); each
            runs in the background and prints the line it returns.
        finish: Awaited at the end of the input, after the last task and the last command,
            before "Bye." (the voice: until what is playing or queued has been heard to its
            end); ``/quit`` and Ctrl-C do not wait for it.
        panel: The robot's emergency stop for ``/estop`` (issue 41), or None without a robot.

    Attributes:
        end_of_input: The chat ended at the end of its input (after the last task), not by
            ``/quit`` or Ctrl-C.
    """

    def __init__(
        self,
        agent: AgentPort,
        console: Console,
        stdin: TextIO | None = None,
        welcome: str = "",
        model_factory: Callable[[list[str]], Model] | None = None,
        commands: dict[str, Callable[[list[str]], Awaitable[str]]] | None = None,
        finish: Callable[[], Awaitable[None]] | None = None,
        panel: Any = None,
    ) -> None:
        self.agent = agent
        self.finish = finish
        self.panel = panel
        self.commands = dict(commands or {})  # e.g. the voice playback commands (issue 16)
        self._commands_running: set[asyncio.Future[None]] = set()
        self.model_factory = model_factory
        self.console = console
        self.stdin = stdin or sys.stdin
        self.welcome = welcome
        self.lang = agent.options.lang
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._pending_confirm: list[str] = []
        self._last_ctrl_c = 0.0
        self._quit = asyncio.Event()
        self._asked = asyncio.Event()  # a confirmation waits for its answer line
        self.end_of_input = False

    def _on_event(self, ev: Event) -> None:
        if ev.type == EventType.CONFIRM_REQUEST:
            self._pending_confirm.append(str(ev.payload(ConfirmRequestPayload)["id"]))
        elif ev.type == EventType.CONFIRM_RESPONSE:
            rid = str(ev.payload(ConfirmResponsePayload)["id"])
            if rid in self._pending_confirm:
                self._pending_confirm.remove(rid)
        if self._pending_confirm:
            self._asked.set()
        else:
            self._asked.clear()

    def _piped(self) -> bool:
        """Whether lines come from a file or a pipe rather than a person at a terminal."""
        try:
            return not self.stdin.isatty()
        except (OSError, ValueError):
            return True

    async def _wait_turn(self, line: str, quit_task: asyncio.Future[Any]) -> None:
        """Piped input runs as a script: an instruction (or ``/quit``) waits until the task
        before it has ended or asks a confirmation (which that line may answer). A person
        typing replaces the running task instead (SPEC A6); ``/stop`` or a stop word alone
        ("stop", "停", :func:`~loopact.agent.is_stop`) always stops it at once. Continuous mode
        never waits (its agent never idles)."""
        if (
            line.strip().split()[:1] == ["/stop"]
            or is_stop(line)
            or self.agent.options.mode == "continuous"
            or self._pending_confirm
        ):
            return
        idle = asyncio.ensure_future(self.agent.wait_idle())
        asked = asyncio.ensure_future(self._asked.wait())
        await asyncio.wait({idle, asked, quit_task}, return_when=asyncio.FIRST_COMPLETED)
        for fut in (idle, asked):
            fut.cancel()
        await asyncio.gather(idle, asked, return_exceptions=True)

    def _reader(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read stdin lines into the queue (None at the end) until input ends or the loop
        closes; a read error (a closed stdin) counts as the end of input."""
        while True:
            try:
                line: str | None = self.stdin.readline()
            except (OSError, ValueError):  # stdin closed under us
                line = ""
            text = valid_text(line.rstrip("\n")) if line else None
            try:
                loop.call_soon_threadsafe(self._lines.put_nowait, text)
            except RuntimeError:  # the loop closed (/quit) while this thread waited for input
                return
            if text is None:
                return

    def _on_sigint(self) -> None:
        now = time.monotonic()
        if not self.agent.busy or now - self._last_ctrl_c < 2.0:
            self._quit.set()
            return
        self._last_ctrl_c = now
        self.agent.stop("terminal")
        self.console.print(f"\n[yellow]{t('term.ctrl_c', self.lang)}[/]")

    async def run(self) -> None:
        """Chat until ``/quit``, end of input, or a double Ctrl-C."""
        loop = asyncio.get_running_loop()
        printer = ProgressPrinter(self.console, stream_text=True, lang=self.lang)
        unsub_p = self.agent.bus.subscribe(printer)
        unsub_c = self.agent.bus.subscribe(self._on_event)
        threading.Thread(target=self._reader, args=(loop,), daemon=True).start()
        try:
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        except (NotImplementedError, RuntimeError):
            pass
        if self.welcome:
            self.console.print(self.welcome)
        agent_task = asyncio.ensure_future(self.agent.run())
        quit_task = asyncio.ensure_future(self._quit.wait())
        piped = self._piped()
        try:
            while not self._quit.is_set():
                line_task = asyncio.ensure_future(self._lines.get())
                await asyncio.wait({line_task, quit_task}, return_when=asyncio.FIRST_COMPLETED)
                if not line_task.done():
                    line_task.cancel()
                    break
                line = line_task.result()
                if line is None:
                    await self._finish_input(quit_task)
                    break
                if not piped and len(line) >= TTY_LINE_MAX:
                    self.console.print(t("term.line_cut", self.lang, n=TTY_LINE_MAX))
                    continue
                if piped:
                    await self._wait_turn(line, quit_task)
                if self._pending_confirm:
                    if self._answer_confirmation(line.strip()):
                        continue
                    if piped:  # denied; as an instruction it waits for that task's end
                        await self._wait_turn(line, quit_task)
                if not self._handle(line.strip()):
                    break
        finally:
            quit_task.cancel()
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):
                pass
            await self.agent.close()
            agent_task.cancel()
            unsub_p()
            unsub_c()
            self.console.print(t("term.bye", self.lang))

    async def _finish_input(self, quit_task: asyncio.Future[Any]) -> None:
        """End of input: wait for the last task, the commands still running (a ``/play``
        still reading its file) and :attr:`finish`; Ctrl-C (``quit_task``) ends the wait."""

        async def settle() -> None:
            await self.agent.wait_idle()
            while self._commands_running:
                await asyncio.gather(*list(self._commands_running), return_exceptions=True)
            if self.finish is not None:
                await self.finish()

        settling = asyncio.ensure_future(settle())
        await asyncio.wait({settling, quit_task}, return_when=asyncio.FIRST_COMPLETED)
        if not settling.done():
            settling.cancel()
            await asyncio.gather(settling, return_exceptions=True)
            return
        settling.result()
        self.end_of_input = True

    def _switch_provider(self, args: list[str]) -> None:
        """``/provider NAME [MODEL [BASE_URL]]``: switch the model at run time (SPEC B4)."""
        if not 1 <= len(args) <= 3 or self.model_factory is None:
            self.console.print(t("term.provider_usage", self.lang))
            return
        try:
            model = self.model_factory(args)
        except (LoopactError, ValueError) as exc:
            self.console.print(f"[red]{shown(str(exc))}[/]")
            return
        carried = self.agent.set_model(model)
        key = "term.provider_carried" if carried else "term.provider_fresh"
        self.console.print(t(key, self.lang, provider=model.provider, model=model.model))

    async def _print_when(self, said: Awaitable[str]) -> None:
        try:
            text = await said
        except LoopactError as exc:
            text = str(exc)
        self.console.print(f"[bold yellow]{shown(text)}[/]")

    async def _command(self, cmd: str, args: list[str]) -> None:
        try:
            text = await self.commands[cmd](args)
        except LoopactError as exc:
            text = str(exc)
        self.console.print(shown(text))

    def _answer_confirmation(self, line: str) -> bool:
        """Answer the oldest pending confirmation with ``line``; True when the line was the
        answer. ``y`` / ``yes`` / 是 / 好 allow; ``n`` / ``no`` / 否 / 不 and an empty line deny.
        Any other line denies too and is not used up: it is the next instruction (a piped
        script's next line, or a person typing something else), and the terminal says so."""
        rid = self._pending_confirm.pop(0)
        word = line.lower()
        allowed = word in _YES
        self.agent.answer_confirmation(rid, allowed, "terminal")
        if allowed or not line or word in _NO:
            return True
        self.console.print(f"[yellow]  ({t('confirm.not_an_answer', self.lang)})[/]")
        return False

    def _handle(self, line: str) -> bool:
        """Handle one typed line; False means quit."""
        if not line:
            return True
        if line.startswith("/") and line.split()[0] != "/stop":
            cmd = line.split()[0]
            if cmd in ("/quit", "/exit"):
                return False
            if cmd == "/reset":
                self.agent.reset()
                self.console.print(t("term.reset", self.lang))
            elif cmd == "/provider":
                self._switch_provider(line.split()[1:])
            elif cmd == "/status":
                self.console.print_json(json.dumps(self.agent.status(), default=str))
            elif cmd == "/estop":  # issue 41: latched at once, released only with a proof
                who = os.environ.get("USER") or "terminal"
                said = estop_command(self.panel, line.split()[1:], who, self.lang)
                fut = asyncio.ensure_future(self._print_when(said))
                self._commands_running.add(fut)
                fut.add_done_callback(self._commands_running.discard)
            elif cmd in self.commands:
                fut = asyncio.ensure_future(self._command(cmd, line.split()[1:]))
                self._commands_running.add(fut)
                fut.add_done_callback(self._commands_running.discard)
            else:
                listed = command_list(self.commands)
                self.console.print(t("term.unknown_command", self.lang, cmd=cmd, commands=listed))
            return True
        self.agent.submit(line, source="terminal")
        return True
