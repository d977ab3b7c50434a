"""``loopact init``: write a commented config, asking for what it needs (SPEC H1, issue 46).

It asks, in order: the provider (OpenAI-compatible, Anthropic, Dify, or the offline brain), the
base URL, the API key or the name of the environment variable that holds it, the model, the
robot (the simulator, a ROS 2 robot and its hardware profile, or none), the language and the
web console's address. Each answer is checked before the next question (a wrong one is asked
again with the reason); the endpoint is reached and its model list read (OpenAI-compatible and
Anthropic ``GET /v1/models``, Dify ``GET /parameters``) so the model can be picked from it. An
endpoint that cannot be reached is said, not fatal (the config is for later). The starter
config is written with the answers in place and every comment kept
(:func:`loopact.config.starter.starter_config`), then loaded back to prove it valid. Answers
come from standard input, a terminal or a pipe; an empty answer takes the default in brackets,
and the end of input takes the defaults of the questions left. ``--defaults`` writes the
starter config without asking (scripts); so does an input that ends before the first answer.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import typer

from loopact.cli._common import EXIT_USAGE, err
from loopact.errors import ConfigError, LoopactError

PROVIDERS = ("openai", "anthropic", "dify", "local")
DEFAULT_URL = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5", "dify": "dify-app"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "dify": "DIFY_API_KEY"}
PROBE_TIMEOUT_S = 10.0
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class InputEnded(LoopactError):
    """The input ended where no default answer exists."""


class NoAnswers(LoopactError):
    """The input ended before the first answer."""


class Asker:
    """Questions on ``out``, answers from ``answers`` (see the module docstring).

    Args:
        answers: Where the answers are read, one per line.
        out: Where the questions and notes are written.
    """

    def __init__(self, answers: TextIO, out: TextIO) -> None:
        self.answers = answers
        self.out = out
        self.ended = False
        self.answered = 0

    def say(self, text: str) -> None:
        """Write a line for the person answering."""
        self.out.write(text + "\n")
        self.out.flush()

    def ask(
        self,
        question: str,
        default: str | None,
        check: Callable[[str], str | None] | None = None,
        secret: bool = False,
    ) -> str:
        """Ask until an answer passes ``check`` (which returns why not, or None); a
        ``secret`` answer typed at a terminal is not shown.

        Raises:
            NoAnswers: The input ended before any answer.
            InputEnded: The input ended and the question has no default.
        """
        while True:
            prompt = f"{question}" + (f" [{default}]" if default else "") + ": "
            if secret and not self.ended and self.answers.isatty():
                try:
                    line = getpass.getpass(prompt) + "\n"
                except EOFError:
                    line = ""
            else:
                self.out.write(prompt)
                self.out.flush()
                line = "" if self.ended else self.answers.readline()
            if not line:
                self.ended = True
                self.out.write("\n")
                if not self.answered:
                    raise NoAnswers
            else:
                self.answered += 1
            answer = line.strip() or (default or "")
            if not answer:
                if self.ended:
                    raise InputEnded(question)
                self.say("  an answer is needed")
                continue
            problem = check(answer) if check is not None else None
            if problem is None:
                return answer
            self.say(f"  {problem}")
            if self.ended:
                raise InputEnded(question)


def probe(provider: str, base_url: str, key: str | None) -> tuple[list[str] | None, str]:
    """Reach the endpoint and read its model list.

    Args:
        provider: ``openai``, ``anthropic`` or ``dify``.
        base_url: The base URL as the config holds it.
        key: The API key, or None.

    Returns:
        ``(models, note)``: the model names (None when there is no list) and a sentence on
        what happened.
    """
    import httpx2

    headers: dict[str, str] = {}
    root = base_url.rstrip("/")
    if provider == "anthropic":
        url = (root[: -len("/v1")] if root.endswith("/v1") else root) + "/v1/models"
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    else:
        url = root + ("/parameters" if provider == "dify" else "/models")
        if key:
            headers["Authorization"] = f"Bearer {key}"
    try:
        response = httpx2.get(url, headers=headers, timeout=PROBE_TIMEOUT_S)
    except httpx2.HTTPError as exc:
        return None, f"cannot reach {url}: {type(exc).__name__}: {exc}"
    status = response.status_code
    if status in (401, 403):
        return None, f"{url} refused the key (HTTP {status}); check it before loopact run"
    if status == 404 and provider == "openai" and not root.endswith("/v1"):
        return None, f"nothing at {url} (HTTP 404): OpenAI-compatible base URLs end in /v1"
    if status >= 400:
        return None, f"{url} answered HTTP {status}; the endpoint was reached"
    if provider == "dify":
        return None, f"reached the Dify app at {root}"
    try:
        data = response.json().get("data")
        models = sorted(str(m["id"]) for m in data if isinstance(m, dict) and m.get("id"))
    except (ValueError, AttributeError, TypeError, KeyError):
        return None, f"{url} answered, but not with a model list"
    shown = ", ".join(models[:12]) + (f", ... ({len(models)} in all)" if len(models) > 12 else "")
    return models, f"reached {root}: {len(models)} model(s): {shown or 'none listed'}"


def _url_problem(answer: str) -> str | None:
    if not re.match(r"^https?://\S+$", answer):
        return f"{answer!r} is not an http:// or https:// URL"
    return None


def _one_of(options: tuple[str, ...]) -> Callable[[str], str | None]:
    def check(answer: str) -> str | None:
        if answer in options:
            return None
        return f"{answer!r} is not one of {', '.join(options)}"

    return check


def _profile_problem(answer: str) -> str | None:
    from loopact.robot.profile import load_profile

    try:
        load_profile(answer)
    except ConfigError as exc:
        return str(exc)
    return None


def _bind_problem(answer: str) -> str | None:
    host, _, port = answer.rpartition(":") if answer.count(":") == 1 else (answer, "", "")
    if not host or any(c.isspace() for c in host):
        return f"{answer!r}: give a host name or address, optionally :port"
    if port and not (port.isdigit() and 0 <= int(port) <= 65535):
        return f"{answer!r}: the port must be 0-65535"
    return None


def ask_endpoint(asker: Asker, values: dict[str, Any]) -> str:
    """The provider, base URL, key and model questions; fills ``values``; returns the
    provider (``local``: no endpoint, the offline brain)."""
    provider = asker.ask(
        "Model provider: openai (any OpenAI-compatible server), anthropic, dify, or local "
        "(the offline brain, no endpoint)",
        "openai",
        _one_of(PROVIDERS),
    )
    if provider == "local":
        asker.say("  the offline brain needs no endpoint (make local-brain prepares it)")
        return provider
    values["model.provider"] = provider
    base_url = asker.ask("Base URL of the API", DEFAULT_URL.get(provider), _url_problem)
    values["model.base_url"] = base_url
    key_answer = asker.ask(
        "API key, or the name of the environment variable that holds it (none: no key)",
        KEY_ENV[provider],
        secret=True,
    )
    key: str | None = None
    if key_answer.lower() in ("none", "-"):
        pass
    elif _ENV_NAME.match(key_answer):
        key = os.environ.get(key_answer) or None
        if key_answer not in (KEY_ENV[provider], "LOOPACT_API_KEY"):
            values["model.api_key_env"] = key_answer
        if key is None:
            asker.say(f"  {key_answer} is not set here: export it before loopact run")
    else:
        key = key_answer
        values["model.api_key"] = key_answer
        asker.say("  the key is written into the config file (readable by you only)")
    models, note = probe(provider, base_url, key)
    asker.say(f"  {note}")
    default = DEFAULT_MODEL[provider]
    if models and default not in models:
        default = models[0]
    model = asker.ask("Model", default)
    if models and model not in models:
        asker.say(f"  note: {model} is not among the models the endpoint lists")
    values["model.model"] = model
    return provider


def ask_rest(asker: Asker, values: dict[str, Any]) -> None:
    """The robot, language and web console questions; fills ``values``."""
    robot = asker.ask(
        "Robot: sim (the built-in simulator), ros2 (a robot on ROS 2) or none",
        "sim",
        _one_of(("sim", "ros2", "none")),
    )
    values["robot.kind"] = robot
    if robot == "ros2":
        from loopact.channels.web.settings import packaged_profiles

        names = ", ".join(p for p in packaged_profiles() if p != "sim")
        values["robot.profile"] = asker.ask(
            f"ROS 2 hardware profile: {names}, or the path of your own YAML profile",
            "turtlebot4",
            _profile_problem,
        )
    values["agent.lang"] = asker.ask(
        "Language of messages for people: en or zh", "en", _one_of(("en", "zh"))
    )
    bind = asker.ask(
        "Web console address, host or host:port (beyond this machine it needs a token)",
        "127.0.0.1:8080",
        _bind_problem,
    )
    host, _, port = bind.rpartition(":") if bind.count(":") == 1 else (bind, "", "")
    values["web.host"] = host
    if port:
        values["web.port"] = int(port)
    if host not in _LOOPBACK and not host.startswith("127."):
        token = secrets.token_urlsafe(24)
        values["web.token"] = token
        asker.say(f"  the console asks for this token (written as web.token): {token}")


def interactive_config(asker: Asker) -> str | None:
    """Ask the questions; the config text, or None when the input ended before the first
    answer (then the starter config is written as it is).

    Raises:
        InputEnded: The input ended where an answer is needed.
    """
    from loopact.config.starter import starter_config

    values: dict[str, Any] = {}
    try:
        ask_endpoint(asker, values)
    except NoAnswers:
        return None
    ask_rest(asker, values)
    return starter_config(values)


def _check_written(path: Path, text: str) -> None:
    """Load the written config back (its key variable given a placeholder if unset).

    Raises:
        ConfigError: It does not load (a bug: say it).
    """
    from loopact.config import load_config

    env = dict(os.environ)
    named = re.search(r"^  api_key_env: (\S+)", text, flags=re.M)
    if named and named.group(1) != "null":
        env.setdefault(named.group(1), "placeholder")
    load_config(path, env=env)


def init(
    path: Path = typer.Option(Path("loopact.yaml"), "--path", help="Where to write the config."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    defaults: bool = typer.Option(
        False, "--defaults", help="Write the starter config without asking (for scripts)."
    ),
) -> None:
    """Write a commented config (./loopact.yaml), asking for the endpoint, robot and console."""
    from loopact.config import STARTER_CONFIG

    if path.is_dir():  # --force cannot help: a config is a file
        err.print(
            f"loopact: --path {path} is a folder; give the config file's name "
            f"(e.g. --path {path / 'loopact.yaml'})",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    if path.exists() and not force:
        err.print(f"loopact: {path} exists; use --force to overwrite it", markup=False)
        raise typer.Exit(EXIT_USAGE)
    text: str | None = None
    if not defaults:
        asker = Asker(sys.stdin, sys.stdout)
        try:
            text = interactive_config(asker)
        except InputEnded as exc:
            err.print(
                f"loopact: the input ended at '{exc}', which has no default; answer it, or "
                "use --defaults",
                markup=False,
            )
            raise typer.Exit(EXIT_USAGE) from None
        if text is None:
            err.print(
                "loopact: no answers on standard input: wrote the starter config (--defaults "
                "does this without asking)",
                markup=False,
            )
    secret = text is not None and re.search(r"^  (api_key|token): (?!null)", text, flags=re.M)
    try:
        path.write_text(text or STARTER_CONFIG, encoding="utf-8")
        if secret:
            path.chmod(0o600)  # a key or token in it: readable by its owner only
    except OSError as exc:
        err.print(f"loopact: cannot write {path}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if text is None:
        typer.echo(f"wrote {path}; edit model.base_url / model.model, then: loopact run")
        return
    try:
        _check_written(path, text)
    except ConfigError as exc:
        err.print(f"loopact: the config written to {path} does not load: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    typer.echo(f"wrote {path}; start the agent with: loopact run")
