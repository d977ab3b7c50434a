"""The ``loopact`` command (typer).

``loopact run`` starts the agent (interactive terminal chat, or ``--once TEXT``);
``loopact init`` writes a starter config; ``loopact doctor`` checks the machine for each
feature; ``loopact trace`` reads a trace (or writes it as MCAP);
``loopact scripted-server`` replays a script over the OpenAI, Anthropic and Dify protocols;
``loopact sim`` works with the simulator; ``loopact node`` serves a file's tools as nodes;
``loopact base`` runs the safety governor next to the base; ``loopact estop`` stops a robot or
the fleet and resets it with the operator's proof; ``loopact mcp`` serves the agent's
tools over MCP; ``loopact eval`` runs the graded task suite.
Exit codes of ``run --once``: 0 the task ended
with a reply, 3 it ended on a bound (the fallback text is printed), 1 an error (message on
stderr), 2 a usage or configuration error, 130 Ctrl-C.

The commands live beside this file: :mod:`loopact.cli.agent` (run, trace,
scripted-server), :mod:`loopact.cli.init` (init), :mod:`loopact.cli.services` (sim, node,
base, mcp), :mod:`loopact.cli.estop` (estop) and :mod:`loopact.eval.cli` (eval);
:mod:`loopact.cli._common` holds the exit codes and runners.
"""

from __future__ import annotations

import sys

import typer

from loopact._version import __version__
from loopact.cli._common import (
    EXIT_BOUNDED,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Group,
)
from loopact.cli.agent import run, scripted_server, trace_cmd
from loopact.cli.doctor import doctor
from loopact.cli.estop import estop_app
from loopact.cli.init import init
from loopact.cli.services import base, mcp_cmd, node, sim
from loopact.eval.cli import eval_command

__all__ = [
    "EXIT_BOUNDED",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "app",
    "main",
]

app = typer.Typer(
    name="loopact",
    cls=Group,
    help="A runtime for multimodal autonomous agents that act in the physical world.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(f"loopact {__version__}")
        raise typer.Exit(EXIT_OK)


# The order here is the order ``loopact --help`` lists the commands in. A command's docstring
# is its help: people read it, so it names no spec labels (those go in comments).
app.command(cls=Command)(run)
app.command(cls=Command)(init)
app.command(cls=Command)(doctor)  # issue 44: what this machine has, the fix for what is not
app.command("trace", cls=Command)(trace_cmd)
app.command("scripted-server", cls=Command)(scripted_server)
# a command, not a group: sim has options only (SPEC D6)
app.command("sim", cls=Command, no_args_is_help=True)(sim)
app.command("eval", cls=Command)(eval_command)  # issue 20: the graded task suite
app.command(cls=Command)(node)  # SPEC C2-C4
app.command(cls=Command)(base)  # SPEC X3
app.add_typer(estop_app, name="estop", cls=Group)  # SPEC X3, H6; issue 41: the reset proof
app.command("mcp", cls=Command)(mcp_cmd)  # SPEC C8


def main() -> None:
    """Entry point of the ``loopact`` command (the installed script reaches it through
    :mod:`_loopact_entry`, so that a Ctrl-C while this module imports exits 130 too)."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
