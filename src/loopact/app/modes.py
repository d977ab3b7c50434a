"""How ``loopact run`` talks to people once the agent is open (SPEC F1, F2, F4; H2).

- :func:`run_once`: ``--once``, one task, its reply on stdout, exit code 0, 3 or 1;
- :func:`run_audio_file`: ``--audio-in FILE|-``, the spoken commands of a file or a pipe;
- :func:`run_terminal`: the terminal chat with the web console beside it (and the microphone
  with ``--voice``).

:func:`loopact.app.run.build_and_run` opens the agent and picks one.
"""

from __future__ import annotations

import functools
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from loopact._version import __version__
from loopact.agent import Agent
from loopact.app.model import make_model
from loopact.app.robot import Body
from loopact.app.voice import VoiceRun
from loopact.config import Config
from loopact.events import Event, EventType
from loopact.events.payloads import TextPayload
from loopact.i18n import t
from loopact.llm.base import Model
from loopact.redact import masked_url, printable


async def run_audio_file(cfg: Config, agent: Agent, voice: VoiceRun) -> int:
    """``--audio-in FILE|-``: progress on stderr, each reply on stdout (stderr when stdout
    carries the audio), exit once the last reply has been spoken (``--once`` exit codes)."""
    from loopact.app.voice import run_voice_file
    from loopact.channels.terminal import ProgressPrinter

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    printer = ProgressPrinter(err, stream_text=False, lang=cfg.agent.lang)
    printer.notes_said.update(getattr(voice.source, "notes", ()))  # said by open_voice
    agent.bus.subscribe(printer)
    out = sys.stderr if cfg.voice.audio_out == "-" else sys.stdout

    def print_reply(ev: Event) -> None:
        if ev.type == EventType.REPLY:
            print(printable(str(ev.payload(TextPayload).get("text", ""))), file=out, flush=True)

    agent.bus.subscribe(print_reply)
    return await run_voice_file(voice, agent, err)


async def run_once(agent: Agent, text: str, lang: str) -> int:
    """``--once``: run one task, print its reply; exit 0 (reply), 3 (bound) or 1 (error)."""
    from loopact.channels.terminal import ProgressPrinter

    printer = ProgressPrinter(
        Console(stderr=True, highlight=False, soft_wrap=True), stream_text=False, lang=lang
    )
    agent.bus.subscribe(printer)
    outcome = await agent.run_task(text)
    redact = agent.bus.redactor.text  # the reply is printed as it is, not as an event (issue 21)

    def mask(text: str) -> str:
        return printable(redact(text))  # nor escape sequences of the model's or the user's

    if outcome.status == "completed":
        print(mask(outcome.reply), flush=True)
        return 0
    if outcome.status == "bounded":
        print(mask(outcome.reply), flush=True)
        return 3
    # an error event was printed already, and a preempted task's end says "(Stopped.)"
    if not printer.errors_shown and outcome.status != "preempted":
        print(f"loopact: {mask(outcome.error or outcome.status)}", file=sys.stderr)
    return 1


async def run_terminal(
    cfg: Config,
    agent: Agent,
    body: Body,
    stack: AsyncExitStack,
    config_source: Path | None,
    voice: VoiceRun | None = None,
) -> int:
    """The terminal chat, with the web console beside it; returns 0 when the user quits."""
    from loopact.app.web import serve_web
    from loopact.channels.terminal import TerminalChannel, command_list

    def model_factory(
        args: list[str],
        api_key: str | None = None,
        *,
        env_key_elsewhere: bool = True,
        said_by: str = "/provider",
    ) -> Model:
        """``/provider NAME [MODEL [BASE_URL]]``: the config, env keys of NAME, overrides.

        ``env_key_elsewhere=False`` (the web console's settings, issue 21 item 4): without
        ``api_key``, a key from the environment goes only to the provider's own endpoint,
        never to another base URL. ``said_by`` names where the values came from in an error.
        """
        from loopact.config import load_config

        model_over: dict[str, Any] = {"provider": args[0]}
        if len(args) > 1:
            model_over["model"] = args[1]
        if len(args) > 2:
            model_over["base_url"] = args[2]
        if api_key:
            model_over["api_key"] = api_key
        new_cfg, _ = load_config(
            config_source, overrides={"model": model_over}, overrides_from=said_by
        )
        if not api_key and not env_key_elsewhere and new_cfg.model.base_url is not None:
            keyless = new_cfg.model.model_copy(update={"api_key": None})
            new_cfg = new_cfg.model_copy(update={"model": keyless})
        return make_model(new_cfg)

    console = Console(highlight=False, soft_wrap=True)
    web_url = await serve_web(cfg, agent, body.session, stack, console, model_factory)
    commands = None
    finish = None
    if voice is not None:  # issue 16: the microphone beside the keyboard, /play ... /record
        from loopact.app.voice import finish_speaking, start_listening

        commands = start_listening(voice, agent, stack, console)
        # piped commands: their replies and /play heard in full, before "Bye."
        finish = functools.partial(finish_speaking, voice, console)
    welcome = t(
        "term.welcome",
        cfg.agent.lang,
        version=__version__,
        model=cfg.model.model,
        provider=cfg.model.provider,
        base_url=masked_url(cfg.model.base_url) if cfg.model.base_url else "(default)",
        robot=body.label,
        commands=command_list(commands or {}),  # the audio commands too with audio output
    )
    if web_url:
        welcome += "\n" + t("term.console", cfg.agent.lang, url=web_url)
    channel = TerminalChannel(
        agent,
        console,
        welcome=welcome,
        model_factory=model_factory,
        commands=commands,
        finish=finish,
        panel=body.session.panel if body.session is not None else None,  # issue 41: /estop
    )
    await channel.run()
    return 0
