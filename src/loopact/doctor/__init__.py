"""``loopact doctor``: what this machine has for each feature, and the fix for what is missing
(SPEC H1, H2; issue 44).

:func:`diagnose` runs every check (:mod:`~loopact.doctor.checks`, :mod:`~loopact.doctor.brain`)
for the configuration ``loopact run`` would load; :func:`print_report` prints them as one table
and says whether the main job can run. Exit code 0 exactly when it can (no needed piece is
missing); a warning (a busy port, no sound card) never fails it.
"""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from loopact.doctor.brain import check_config, check_cpu, check_endpoint, check_local_brain
from loopact.doctor.checks import (
    Check,
    blocking,
    check_browser,
    check_mqtt,
    check_observe,
    check_ports,
    check_python,
    check_ros2,
    check_simulator,
    check_voice,
    check_web,
)

__all__ = ["Check", "diagnose", "print_report"]

_MARKS = {"ok": "[green]✓[/]", "missing": "[red]✗[/]", "warn": "[yellow]![/]", "info": "·"}


def diagnose(config: Path | None = None) -> list[Check]:
    """Every check, in the table's order, for the configuration at ``config`` (or the one
    ``loopact run`` would find)."""
    from loopact.observe.otel import traces_endpoint

    cfg, rows = check_config(config)
    rows.insert(0, check_python())
    try:
        telemetry_on = traces_endpoint(cfg.telemetry.otlp_endpoint, os.environ) is not None
    except Exception:  # a wrong OTLP setting is reported by loopact run itself
        telemetry_on = True
    rows.append(check_endpoint(cfg))
    rows.append(check_cpu())
    rows += check_local_brain(cfg)
    rows += check_simulator(cfg)
    rows.append(check_web())
    rows += check_ports(cfg)
    rows += check_ros2(cfg)
    rows.append(check_mqtt(cfg))
    rows += check_voice(cfg)
    rows += check_observe(cfg, telemetry_on)
    rows.append(check_browser())
    return rows


def print_report(rows: list[Check], console: Console) -> int:
    """Print the table and the verdict; returns the exit code (0: the main job can run)."""
    table = Table(title="loopact doctor", show_lines=False, expand=False)
    for column in ("feature", "check", "", "found", "fix"):
        table.add_column(column, overflow="fold")
    for row in rows:
        mark = _MARKS[row.status]
        if row.status == "missing" and not row.needed:
            mark = "[yellow]✗[/]"
        feature = f"{row.feature} *" if row.needed else row.feature
        table.add_row(feature, row.name, mark, _plain(row.detail), _plain(row.fix))
    console.print(table)
    console.print("* needed by the main job as configured (loopact run)", highlight=False)
    missing = blocking(rows)
    if not missing:
        console.print("[green]The main job can run.[/]")
        return 0
    names = ", ".join(f"{r.feature}: {r.name}" for r in missing)
    console.print(f"[red]The main job cannot run[/]: missing {names}. Fix: see the table.")
    return 1


def _plain(text: str) -> str:
    """Text shown as it is (no rich markup from paths or messages)."""
    from rich.markup import escape

    return escape(text)
