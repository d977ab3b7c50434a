"""Progress on a terminal (SPEC F1, A8): each event of the agent as one short line.

:class:`ProgressPrinter` subscribes to the agent's events and prints tool calls and results,
bounds, errors, steps, stops, the supervised services' state and what voice heard; with
``stream_text`` also the reply as it streams. The terminal chat uses it on stdout, ``--once`` and
the voice runs on stderr. Each event's fields are read as their type's definition
(:mod:`loopact.events.payloads`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from loopact.agent.confirm import shown_arguments
from loopact.channels.panel_text import panel_line
from loopact.events import Event, EventType
from loopact.events.payloads import (
    BoundPayload,
    ClauseStartPayload,
    ConfirmRequestPayload,
    ContextCompressedPayload,
    DeltaPayload,
    ErrorPayload,
    LocalBrainPayload,
    McpServerPayload,
    MessagePayload,
    ModelRetryPayload,
    SpeechInPayload,
    SpeechOutPayload,
    StopPayload,
    TaskEndPayload,
    TextPayload,
    ToolCallPayload,
    ToolProgressPayload,
    ToolResultPayload,
    TranscriptPayload,
)
from loopact.i18n import Phrase, t
from loopact.redact import printable


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

    def _reply_text(self, typ: EventType, ev: Event) -> None:
        """The streamed reply: its deltas, a failed attempt's retry, the final text."""
        if typ == EventType.TEXT_DELTA:
            if self.stream_text:
                delta = ev.payload(DeltaPayload)["text"]
                self._streamed.setdefault(ev.task_id or "", []).append(delta)
                self.console.file.write(printable(str(delta)))
                self.console.file.flush()
                self._in_text = True
        elif typ == EventType.MODEL_REQUEST:
            # only the last response's text is the reply; earlier rounds were progress
            self._end_text()
            self._streamed.pop(ev.task_id or "", None)
        elif typ == EventType.MODEL_RETRY:
            # the partial text of the failed attempt is not part of the reply
            self._streamed.pop(ev.task_id or "", None)
            self._end_text()
            retry = ev.payload(ModelRetryPayload)
            line = t(
                "term.model_retry",
                self.lang,
                error=shown(str(retry["error"])),
                attempt=retry["attempt"],
                delay=f"{retry['delay_s']:.1f}",
            )
            self.console.print(f"[yellow]  {line}[/]")
        elif typ == EventType.REPLY:
            if self.stream_text:
                streamed = "".join(self._streamed.pop(ev.task_id or "", []))
                self._end_text()
                text = str(ev.payload(TextPayload)["text"]).strip()
                if streamed.strip() and text.startswith(streamed.strip()):
                    text = text[len(streamed.strip()) :].strip()  # only what was not shown
                if text:
                    self.console.print(shown(text))
        elif typ == EventType.TASK_END:
            self._end_text()
            self._streamed.pop(ev.task_id or "", None)
            if ev.payload(TaskEndPayload)["status"] == "preempted":
                self.console.print(f"[yellow]  ({t('task.stopped', self.lang)})[/]")

    def _tool(self, typ: EventType, ev: Event) -> None:
        """A tool call, its progress lines, its result, and a confirmation request for it."""
        name = _shown_name(str(ev.data.get("name", "")))
        if typ == EventType.TOOL_CALL:
            self._end_text()
            args = _args(ev.payload(ToolCallPayload)["arguments"])
            self.console.print(f"[cyan]  → {shown(name)}({shown(args)})[/]")
        elif typ == EventType.TOOL_PROGRESS:
            progress = ev.payload(ToolProgressPayload)
            self.console.print(f"[dim]    … {shown(str(progress['text']))}[/]")
        elif typ == EventType.TOOL_RESULT:
            result = ev.payload(ToolResultPayload)
            said = self._outcome(result.get("outcome"))  # a robot tool's outcome, in our language
            if result["ok"]:
                data = result.get("data")
                body = _args(data, 140) if data is not None else "ok"
                n = result.get("n_images")
                extra = f" [{n} image(s)]" if n else ""
                self.console.print(f"[green]  ✓ {shown(name)}: {shown(said or body)}{extra}[/]")
            else:
                error = said or str(result["error"])
                self.console.print(f"[red]  ✗ {shown(name)}: {shown(error)}[/]")
        elif typ == EventType.CONFIRM_REQUEST:
            self._end_text()
            asked = ev.payload(ConfirmRequestPayload)
            # every argument by name, each value cut on its own: the path is never hidden
            args = asked.get("shown") or shown_arguments(asked["arguments"])
            prompt = t("confirm.prompt", self.lang, name=asked["name"], args=args)
            self.console.print(f"[magenta]{shown(prompt)}[/]", end="")

    def _outcome(self, outcome: Any) -> str | None:
        """A ``tool_result``'s typed outcome (``{id, params}``) in :attr:`lang`, or None."""
        if not outcome:
            return None
        try:
            return Phrase.from_json(outcome).text(self.lang)
        except (ValueError, KeyError, TypeError):  # not one this version knows: say nothing
            return None

    def _notice(self, typ: EventType, ev: Event) -> None:
        """One-line notices of the task: messages, compression, bounds, errors, steps, stops,
        the emergency stop and an operator's takeover, a confirmation answer that did not
        count (issue 41)."""
        if typ in (EventType.GOVERNOR, EventType.CONFIRM_REFUSED):
            panel = panel_line(ev, self.lang)
            if panel is not None:
                self._end_text()
                self.console.print(f"[bold yellow]  {shown(panel)}[/]")
            return
        if typ == EventType.CONTEXT_COMPRESSED:
            c = ev.payload(ContextCompressedPayload)
            if c["method"] == "kept":  # nothing older to summarise or trim: no "N -> N"
                line = f"context at {c['before_tokens']} tokens (limit {c.get('limit')}), "
                line += "nothing older to compress"
            else:
                line = f"context {c['method']}: {c['before_tokens']} -> {c['after_tokens']} tokens"
            self.console.print(f"[dim]  {line}[/]")
            return
        self._end_text()
        if typ == EventType.MESSAGE:
            # continuous mode: the agent's own message was streamed already (text_delta)
            said = ev.payload(MessagePayload)
            streamed = "".join(self._streamed.pop(ev.task_id or "", []))
            if said.get("source") != "agent" or streamed.strip() != str(said["text"]).strip():
                self.console.print(f"[bold]{shown(str(said['text']))}[/]")
        elif typ == EventType.BOUND:
            bound = ev.payload(BoundPayload)
            line = t("term.bound", self.lang, name=shown(str(bound["name"])), limit=bound["limit"])
            self.console.print(f"[yellow]  {line}[/]")
        elif typ == EventType.ERROR:
            self.errors_shown += 1
            message = str(ev.payload(ErrorPayload)["message"])
            self.console.print(f"[red]  error: {shown(message)}[/]")
        elif typ == EventType.CLAUSE_START:
            step = ev.payload(ClauseStartPayload)
            text = shown(str(step["text"]))
            line = t("term.step", self.lang, n=step["n"], of=step["of"], text=text)
            self.console.print(f"[dim]  {line}[/]")
        elif typ == EventType.STOP:
            source = str(ev.payload(StopPayload).get("source", ""))
            self.console.print(f"[yellow]  {t('term.stop', self.lang, source=shown(source))}[/]")

    def _service(self, typ: EventType, ev: Event) -> None:
        """Supervised services: the local model server (issue 13), MCP servers (issue 18)."""
        if typ == EventType.LOCAL_BRAIN:
            # the local server's crash line, its return, or the final error
            brain = ev.payload(LocalBrainPayload)
            state, detail = brain.get("state"), str(brain.get("detail") or "")
            if state in ("crashed", "failed"):
                self._end_text()
                self.console.print(f"[red]  {shown(detail)}[/]")
            elif state == "ready" and brain.get("restarts"):
                self.console.print(f"[yellow]  local model server {shown(detail)}[/]")
        elif typ == EventType.MCP_SERVER:
            # an MCP server that dropped (why, and when it is retried) or came back
            server = ev.payload(McpServerPayload)
            if server.get("state") == "restarting" and int(server.get("restarts") or 0) <= 3:
                self._end_text()
                delay = server.get("delay_s")
                retry = f" (retrying in {delay:g} s)" if delay else ""
                self.console.print(f"[yellow]  {shown(str(server.get('detail', '')))}{retry}[/]")
            elif server.get("state") == "connected" and server.get("restarts"):
                self.console.print(
                    f"[yellow]  MCP server {shown(str(server['name']))} is back: "
                    f"{shown(str(server.get('detail', '')))}[/]"
                )

    def _voice(self, typ: EventType, ev: Event) -> None:
        """Issue 16: what was heard, and what went wrong with audio."""
        if typ == EventType.TRANSCRIPT:
            heard = ev.payload(TranscriptPayload)
            self._end_text()
            if heard.get("text"):
                self.console.print(f"[magenta]  heard: {shown(str(heard['text']))}[/]")
            for problem in (heard.get("error"), heard.get("note")):
                if problem:
                    self.console.print(f"[yellow]  voice: {shown(str(problem))}[/]")
        elif typ == EventType.SPEECH_IN:
            # a note about the whole input comes with every utterance: said once
            notes = ev.payload(SpeechInPayload).get("notes") or []
            fresh = [str(n) for n in notes if str(n) not in self.notes_said]
            if fresh:
                self._end_text()
            for note in fresh:
                self.notes_said.add(note)
                self.console.print(f"[yellow]  voice: {shown(note)}[/]")
        elif typ == EventType.SPEECH_OUT:
            out = ev.payload(SpeechOutPayload)
            if out.get("state") == "failed":
                self._end_text()
                self.console.print(f"[yellow]  voice: {shown(str(out.get('error', '')))}[/]")


_HANDLERS: dict[EventType, Callable[[ProgressPrinter, EventType, Event], None]] = {
    **dict.fromkeys(
        (
            EventType.TEXT_DELTA,
            EventType.MODEL_REQUEST,
            EventType.MODEL_RETRY,
            EventType.REPLY,
            EventType.TASK_END,
        ),
        ProgressPrinter._reply_text,
    ),
    **dict.fromkeys(
        (
            EventType.TOOL_CALL,
            EventType.TOOL_PROGRESS,
            EventType.TOOL_RESULT,
            EventType.CONFIRM_REQUEST,
        ),
        ProgressPrinter._tool,
    ),
    **dict.fromkeys(
        (
            EventType.MESSAGE,
            EventType.CONTEXT_COMPRESSED,
            EventType.BOUND,
            EventType.ERROR,
            EventType.CLAUSE_START,
            EventType.STOP,
            EventType.GOVERNOR,
            EventType.CONFIRM_REFUSED,
        ),
        ProgressPrinter._notice,
    ),
    **dict.fromkeys((EventType.LOCAL_BRAIN, EventType.MCP_SERVER), ProgressPrinter._service),
    **dict.fromkeys(
        (EventType.TRANSCRIPT, EventType.SPEECH_IN, EventType.SPEECH_OUT), ProgressPrinter._voice
    ),
}
"""Event type -> the ProgressPrinter method that prints it."""


def shown(text: str) -> str:
    """``text`` for ``console.print``: no terminal control characters, no Rich markup."""
    return escape(printable(text))


def _shown_name(name: str) -> str:
    """A tool name as printed: one a model sent empty or with odd whitespace is quoted."""
    if not name.strip():
        return "(no tool name)"
    return name if name.isprintable() and name.strip() == name else repr(name)
