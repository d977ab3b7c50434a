"""What every ``loopact`` command shares: exit codes, the stderr console, logging, the runners.

Exit codes (every command): 0 done, 1 an error (message on stderr), 2 a usage or configuration
error, 3 ``run --once`` ended on a bound (SPEC A2), 130 Ctrl-C.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import typer
import typer.core
from rich.console import Console
from rich.logging import RichHandler

from loopact.errors import ConfigError, LoopactError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BOUNDED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
"""128 + SIGTERM: ``docker stop``, systemd or ``kill`` asked ``loopact run`` to stop."""

err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Where every command's messages for people go (stderr; stdout carries results)."""


def _flags_without_type(params: list[Any]) -> list[Any]:
    """``params`` with every flag's metavar set to "": typer 0.29 (not 0.27) prints
    ``<bool>`` beside options that take no value (``--yes``, ``--help``); an explicit
    metavar is kept."""
    for param in params:
        if isinstance(param, typer.core.TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


class Command(typer.core.TyperCommand):
    """A ``loopact`` command: its help lists flags without a ``<bool>`` type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_type(super().get_params(ctx))


class Group(typer.core.TyperGroup):
    """The ``loopact`` command group: its help lists flags without a ``<bool>`` type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_type(super().get_params(ctx))


def setup_logging(verbose: bool) -> None:
    """Log records on stderr: debug and up with ``verbose`` (``-v``), else warnings and up."""
    # A terminal gets rich's layout; logs, pipes and CI get one plain line per record, never
    # wrapped at 80 columns (issue 22: wrapped messages break every grep and test).
    handler: logging.Handler
    if err.is_terminal:
        handler = RichHandler(console=err, show_time=False, show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        handlers=[handler],
    )
    # The MCP SDK logs a traceback per line a server prints that is not JSON-RPC; loopact
    # reports such servers itself in one line (issue 18), so its records show only with -v.
    logging.getLogger("mcp").setLevel(logging.DEBUG if verbose else logging.CRITICAL)


def run_async(coro: Any) -> int:
    """Run the main coroutine until it ends or a signal stops it.

    Ctrl-C (SIGINT; outside the terminal chat, which handles it itself) exits 130; SIGTERM
    (``docker stop``, systemd, ``kill``) exits 143. Both cancel the main coroutine, so a
    running task is preempted the way Stop preempts it (the motion ends, SPEC A6), its
    ``task_end`` reaches the trace, and the robot, servers and nodes are closed in order.
    """
    loop = asyncio.new_event_loop()
    main = loop.create_task(coro)
    stopped_by: list[tuple[int, str]] = []

    def on_signal(code: int, word: str) -> None:
        if not stopped_by:
            stopped_by.append((code, word))
        main.cancel()

    for sig, code, word in (
        (signal.SIGINT, EXIT_INTERRUPTED, "interrupted"),
        (signal.SIGTERM, EXIT_TERMINATED, "terminated (SIGTERM)"),
    ):
        try:
            loop.add_signal_handler(sig, on_signal, code, word)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        code = int(loop.run_until_complete(main))
    except asyncio.CancelledError:
        code = stopped_by[0][0] if stopped_by else EXIT_ERROR
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
    if stopped_by:
        err.print(stopped_by[0][1])
        return stopped_by[0][0]
    return code


def run_service(coro: Any) -> None:
    """Run a ROS 2 service command; map errors to exit codes (it stops on SIGINT/SIGTERM)."""
    try:
        code = asyncio.run(coro)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None
    raise typer.Exit(code)


def check_agent_name(name: str) -> None:
    """A bad ``--agent-name`` is a usage error (exit 2), as every other bad flag is."""
    from loopact.errors import ProtocolError
    from loopact.nodes.protocol import check_name

    try:
        check_name(name, "--agent-name")
    except ProtocolError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


def estop_reset(config: Path | None, reset_topic: str | None) -> Any:
    """Who may release the base governor's emergency stop: ``robot.estop`` of the config
    (``LOOPACT_ESTOP_TOKEN``), ``--reset-topic`` over it (issue 21)."""
    from loopact.config import load_config
    from loopact.robot.base_node import EstopReset

    try:
        cfg, _source = load_config(
            config,
            overrides={"robot": {"estop": {"reset_topic": reset_topic}}},
            flag_names={"robot.estop": "--reset-topic"},
        )
        return EstopReset.from_config(cfg.robot.estop)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
