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
from rich.console import Console
from rich.logging import RichHandler

from loopact.errors import ConfigError, LoopactError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BOUNDED = 3
EXIT_INTERRUPTED = 130

err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Where every command's messages for people go (stderr; stdout carries results)."""


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
    """Run the main coroutine; Ctrl-C outside the terminal chat exits 130."""
    loop = asyncio.new_event_loop()
    main = loop.create_task(coro)
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        main.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):
        pass
    try:
        code = int(loop.run_until_complete(main))
    except asyncio.CancelledError:
        code = EXIT_INTERRUPTED if interrupted else EXIT_ERROR
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
    if interrupted:
        err.print("interrupted")
        return EXIT_INTERRUPTED
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
            config, overrides={"robot": {"estop": {"reset_topic": reset_topic}}}
        )
        return EstopReset.from_config(cfg.robot.estop)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
