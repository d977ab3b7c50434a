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
from rich.markup import escape

from loopact.agent.confirm import NO_WORDS, YES_WORDS, shown_arguments
from loopact.agent.runtime import Agent, is_stop
from loopact.channels.panel_text import estop_command, panel_line
from loopact.errors import LoopactError
from loopact.events import Event
from loopact.i18n import Phrase, t
from loopact.llm.base import Model
from loopact.llm.messages import valid_text
from loopact.redact import printable

BUILTIN_COMMANDS = ("/stop", "/estop", "/reset", "/status", "/provider", "/quit")
"""The terminal's own slash commands, in the order the welcome line lists them."""


def command_list(extra: Iterable[str] = ()) -> str:
    """The commands the welcome line and an unknown command's answer list: the terminal's
    own, then ``extra`` (the audio commands when there is audio output, issue 16).

    Args:
        extra: More command names, e.g. ``["/play", "/pause"]``.
    """
    return " ".join((*BUILTIN_COMMANDS, *extra))


def _args(arguments: Any, limit: int = 120) -> str:
    if isinstance(arguments, dict):
        text = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in arguments.items()
        )
    else:
        text = json.dumps(arguments, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ProgressPrinter:
    """Prints events compactly: tool calls, results, bounds, errors, and optionally the reply.

    Args:
        console: Where to print (stderr for ``--once``; stdout interactively).
        stream_text: Print the reply text as it streams (interactive) rather than not at all.
        lang: Language of the labels.

    Attributes:
        notes_said: The ``speech_in`` notes printed so far (each is printed once; a caller
            that said some already, e.g. an input file's conversion, adds them).
    """

    def __init__(self, console: Console, stream_text: bool, lang: str = "en") -> None:
        self.console = console
        self.stream_text = stream_text
        self.lang = lang
        self.notes_said: set[str] = set()
        self._streamed: dict[str, list[str]] = {}
        self._in_text = False
        self.errors_shown = 0

    def _end_text(self) -> None:
        if self._in_text:
            self.console.file.write("\n")
            self.console.file.flush()
            self._in_text = False

    def __call__(self, ev: Event) -> None:
        """Print one event; types without a line of their own (e.g. ``usage``) print nothing."""
        handler = _HANDLERS.get(ev.type)
        if handler is not None:
            handler(self, ev.type, ev)

    def _reply_text(self, typ: str, ev: Event) -> None:
        """The streamed reply: its deltas, a failed attempt's retry, the final text."""
        d = ev.data
        if typ == "text_delta":
            if self.stream_text:
                self._streamed.setdefault(ev.task_id or "", []).append(d["text"])
                self.console.file.write(printable(str(d["text"])))
                self.console.file.flush()
                self._in_text = True
        elif typ == "model_request":
            # only the last response's text is the reply; earlier rounds were progress
            self._end_text()
            self._streamed.pop(ev.task_id or "", None)
        elif typ == "model_retry":
            # the partial text of the failed attempt is not part of the reply
            self._streamed.pop(ev.task_id or "", None)
            self._end_text()
            line = t(
                "term.model_retry",
                self.lang,
                error=_shown(str(d["error"])),
                attempt=d["attempt"],
                delay=f"{d['delay_s']:.1f}",
            )
            self.console.print(f"[yellow]  {line}[/]")
        elif typ == "reply":
            if self.stream_text:
                streamed = "".join(self._streamed.pop(ev.task_id or "", []))
                self._end_text()
                text = str(d["text"]).strip()
                if streamed.strip() and text.startswith(streamed.strip()):
                    text = text[len(streamed.strip()) :].strip()  # only what was not shown
                if text:
                    self.console.print(_shown(text))
        elif typ == "task_end":
            self._end_text()
            self._streamed.pop(ev.task_id or "", None)
            if d["status"] == "preempted":
                self.console.print(f"[yellow]  ({t('task.stopped', self.lang)})[/]")

    def _tool(self, typ: str, ev: Event) -> None:
        """A tool call, its progress lines, its result, and a confirmation request for it."""
        d = ev.data
        name = _shown_name(str(d.get("name", "")))
        if typ == "tool_call":
            self._end_text()
            self.console.print(f"[cyan]  → {_shown(name)}({_shown(_args(d['arguments']))})[/]")
        elif typ == "tool_progress":
            self.console.print(f"[dim]    … {_shown(str(d['text']))}[/]")
        elif typ == "tool_result":
            said = self._outcome(d.get("outcome"))  # a robot tool's outcome, in our language
            if d["ok"]:
                body = _args(d.get("data"), 140) if d.get("data") is not None else "ok"
                extra = f" [{d['n_images']} image(s)]" if d.get("n_images") else ""
                self.console.print(f"[green]  ✓ {_shown(name)}: {_shown(said or body)}{extra}[/]")
            else:
                error = said or str(d["error"])
                self.console.print(f"[red]  ✗ {_shown(name)}: {_shown(error)}[/]")
        elif typ == "confirm_request":
            self._end_text()
            # every argument by name, each value cut on its own: the path is never hidden
            shown = d.get("shown") or shown_arguments(d["arguments"])
            prompt = t("confirm.prompt", self.lang, name=d["name"], args=shown)
            self.console.print(f"[magenta]{_shown(prompt)}[/]", end="")

    def _outcome(self, outcome: Any) -> str | None:
        """A ``tool_result``'s typed outcome (``{id, params}``) in :attr:`lang`, or None."""
        if not outcome:
            return None
        try:
            return Phrase.from_json(outcome).text(self.lang)
        except (ValueError, KeyError, TypeError):  # not one this version knows: say nothing
            return None

    def _notice(self, typ: str, ev: Event) -> None:
        """One-line notices of the task: messages, compression, bounds, errors, steps, stops,
        the emergency stop and an operator's takeover, a confirmation answer that did not
        count (issue 41)."""
        d = ev.data
        if typ in ("governor", "confirm_refused"):
            said = panel_line(ev, self.lang)
            if said is not None:
                self._end_text()
                self.console.print(f"[bold yellow]  {_shown(said)}[/]")
            return
        if typ == "context_compressed":
            if d["method"] == "kept":  # nothing older to summarise or trim: no "N -> N"
                line = f"context at {d['before_tokens']} tokens (limit {d.get('limit')}), "
                line += "nothing older to compress"
            else:
                line = f"context {d['method']}: {d['before_tokens']} -> {d['after_tokens']} tokens"
            self.console.print(f"[dim]  {line}[/]")
            return
        self._end_text()
        if typ == "message":
            # continuous mode: the agent's own message was streamed already (text_delta)
            streamed = "".join(self._streamed.pop(ev.task_id or "", []))
            if d.get("source") != "agent" or streamed.strip() != str(d["text"]).strip():
                self.console.print(f"[bold]{_shown(str(d['text']))}[/]")
        elif typ == "bound":
            line = t("term.bound", self.lang, name=_shown(str(d["name"])), limit=d["limit"])
            self.console.print(f"[yellow]  {line}[/]")
        elif typ == "error":
            self.errors_shown += 1
            self.console.print(f"[red]  error: {_shown(str(d['message']))}[/]")
        elif typ == "clause_start":
            line = t("term.step", self.lang, n=d["n"], of=d["of"], text=_shown(str(d["text"])))
            self.console.print(f"[dim]  {line}[/]")
        elif typ == "stop":
            line = t("term.stop", self.lang, source=_shown(str(d.get("source", ""))))
            self.console.print(f"[yellow]  {line}[/]")

    def _service(self, typ: str, ev: Event) -> None:
        """Supervised services: the local model server (issue 13), MCP servers (issue 18)."""
        d = ev.data
        if typ == "local_brain":
            # the local server's crash line, its return, or the final error
            state, detail = d.get("state"), str(d.get("detail") or "")
            if state in ("crashed", "failed"):
                self._end_text()
                self.console.print(f"[red]  {_shown(detail)}[/]")
            elif state == "ready" and d.get("restarts"):
                self.console.print(f"[yellow]  local model server {_shown(detail)}[/]")
        elif typ == "mcp_server":
            # an MCP server that dropped (why, and when it is retried) or came back
            if d.get("state") == "restarting" and int(d.get("restarts") or 0) <= 3:
                self._end_text()
                retry = f" (retrying in {d['delay_s']:g} s)" if d.get("delay_s") else ""
                self.console.print(f"[yellow]  {_shown(str(d.get('detail', '')))}{retry}[/]")
            elif d.get("state") == "connected" and d.get("restarts"):
                self.console.print(
                    f"[yellow]  MCP server {_shown(str(d['name']))} is back: "
                    f"{_shown(str(d.get('detail', '')))}[/]"
                )

    def _voice(self, typ: str, ev: Event) -> None:
        """Issue 16: what was heard, and what went wrong with audio."""
        d = ev.data
        if typ == "transcript":
            self._end_text()
            if d.get("text"):
                self.console.print(f"[magenta]  heard: {_shown(str(d['text']))}[/]")
            for key in ("error", "note"):
                if d.get(key):
                    self.console.print(f"[yellow]  voice: {_shown(str(d[key]))}[/]")
        elif typ == "speech_in" and d.get("notes"):
            # a note about the whole input comes with every utterance: said once
            fresh = [str(n) for n in d["notes"] if str(n) not in self.notes_said]
            if fresh:
                self._end_text()
            for note in fresh:
                self.notes_said.add(note)
                self.console.print(f"[yellow]  voice: {_shown(note)}[/]")
        elif typ == "speech_out" and d.get("state") == "failed":
            self._end_text()
            self.console.print(f"[yellow]  voice: {_shown(str(d.get('error', '')))}[/]")


_HANDLERS: dict[str, Callable[[ProgressPrinter, str, Event], None]] = {
    **dict.fromkeys(
        ("text_delta", "model_request", "model_retry", "reply", "task_end"),
        ProgressPrinter._reply_text,
    ),
    **dict.fromkeys(
        ("tool_call", "tool_progress", "tool_result", "confirm_request"), ProgressPrinter._tool
    ),
    **dict.fromkeys(
        (
            "message",
            "context_compressed",
            "bound",
            "error",
            "clause_start",
            "stop",
            "governor",
            "confirm_refused",
        ),
        ProgressPrinter._notice,
    ),
    **dict.fromkeys(("local_brain", "mcp_server"), ProgressPrinter._service),
    **dict.fromkeys(("transcript", "speech_in", "speech_out"), ProgressPrinter._voice),
}
"""Event type -> the ProgressPrinter method that prints it."""


def _shown(text: str) -> str:
    """``text`` for ``console.print``: no terminal control characters, no Rich markup."""
    return escape(printable(text))


def _shown_name(name: str) -> str:
    """A tool name as printed: one a model sent empty or with odd whitespace is quoted."""
    if not name.strip():
        return "(no tool name)"
    return name if name.isprintable() and name.strip() == name else repr(name)


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
        agent: Agent,
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
        if ev.type == "confirm_request":
            self._pending_confirm.append(str(ev.data["id"]))
        elif ev.type == "confirm_response":
            rid = str(ev.data["id"])
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
            self.console.print(f"[red]{_shown(str(exc))}[/]")
            return
        carried = self.agent.set_model(model)
        key = "term.provider_carried" if carried else "term.provider_fresh"
        self.console.print(t(key, self.lang, provider=model.provider, model=model.model))

    async def _print_when(self, said: Awaitable[str]) -> None:
        try:
            text = await said
        except LoopactError as exc:
            text = str(exc)
        self.console.print(f"[bold yellow]{_shown(text)}[/]")

    async def _command(self, cmd: str, args: list[str]) -> None:
        try:
            text = await self.commands[cmd](args)
        except LoopactError as exc:
            text = str(exc)
        self.console.print(_shown(text))

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
