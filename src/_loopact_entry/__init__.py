"""The ``loopact`` command's entry point, beside the ``loopact`` package (the CLI).

A console script runs ``from <module> import main`` before any ``except KeyboardInterrupt``
of ours exists. With ``loopact.cli:main`` that import was the whole CLI, and ``import loopact``
alone (which imports the agent) is about half of the start-up, so a Ctrl-C while starting
printed an import-time traceback. This module imports nothing of loopact's until :func:`main`
is inside its ``try``. It is not a ``loopact.*`` module because importing any of those runs
``loopact/__init__.py`` first.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130
"""``loopact.cli.EXIT_INTERRUPTED``, written out: importing it is what this module avoids."""


def main() -> None:
    """Run the ``loopact`` command; a Ctrl-C at any moment of its start-up exits 130."""
    try:
        from loopact.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
