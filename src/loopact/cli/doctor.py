"""``loopact doctor``: what this machine has for each feature, and the fix for what is missing
(issue 44). Exit code 0 when the main job as configured can run, 1 when a piece it needs is
missing, 2 for a usage error."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from rich.console import Console


def doctor(
    config: Path | None = typer.Option(None, "--config", help="Config file (YAML)."),
) -> None:
    """Check this machine for each feature and print the fix for each missing piece."""
    # The docstring is the --help text. Exit 0: the main job (loopact run as configured) can
    # run; 1: a piece it needs is missing (the table names it and its fix).
    from loopact.doctor import diagnose, print_report

    width = shutil.get_terminal_size((150, 24)).columns  # piped: wide enough for the fixes
    console = Console(highlight=False, width=max(width, 100))
    raise typer.Exit(print_report(diagnose(config), console))
