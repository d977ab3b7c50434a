"""The suite's report: a table for people and a JSON file for tools (issue 20).

Columns: task, pass/fail, why, time, model requests, tokens, tool calls; then the success
rate per category (and per language) over every run.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from loopact._version import __version__
from loopact.eval.runner import TaskResult
from loopact.eval.task import CATEGORIES


def rates(results: Sequence[TaskResult], key: str = "category") -> dict[str, dict[str, Any]]:
    """``{group: {"passed": n, "runs": m, "rate": n / m}}`` by ``category`` or ``lang``."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        groups[getattr(r.task, key)].append(r.passed)
    order = list(CATEGORIES) if key == "category" else sorted(groups)
    return {
        g: {
            "passed": sum(groups[g]),
            "runs": len(groups[g]),
            "rate": sum(groups[g]) / len(groups[g]),
        }
        for g in order
        if g in groups
    }


def print_table(console: Console, results: Sequence[TaskResult], title: str) -> None:
    """The per-run table, then the rates per category and language, then the total."""
    table = Table(title=title, show_lines=False)
    for col, just in (
        ("task", "left"),
        ("result", "left"),
        ("why", "left"),
        ("time", "right"),
        ("requests", "right"),
        ("tokens", "right"),
        ("tool calls", "right"),
    ):
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    repeat = max((r.run for r in results), default=1) > 1
    for r in results:
        name = f"{r.task.id} #{r.run}" if repeat else r.task.id
        mark = "[green]pass[/]" if r.passed else f"[red]fail[/] ({r.status})"
        table.add_row(
            name,
            mark,
            r.why,
            f"{r.time_s:.1f} s",
            str(r.model_requests),
            str(r.tokens),
            str(r.tool_calls),
        )
    console.print(table)
    summary = Table(title="success rate", show_lines=False)
    summary.add_column("group")
    summary.add_column("passed", justify="right")
    summary.add_column("rate", justify="right")
    for key in ("category", "lang"):
        for group, v in rates(results, key).items():
            summary.add_row(group, f"{v['passed']}/{v['runs']}", f"{100 * v['rate']:.0f} %")
    passed = sum(r.passed for r in results)
    total = len(results)
    summary.add_row("[bold]all[/]", f"{passed}/{total}", f"{100 * passed / max(total, 1):.0f} %")
    console.print(summary)


def write_json(path: Path, results: Sequence[TaskResult], model: str) -> None:
    """The JSON report: when, where, which model, every run, and the rates.

    Raises:
        OSError: The file cannot be written.
    """
    passed = sum(r.passed for r in results)
    data = {
        "schema": 1,
        "loopact": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {_cpus()} CPUs, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}",
        "model": model,
        "passed": passed,
        "runs": len(results),
        "rate": passed / max(len(results), 1),
        "by_category": rates(results, "category"),
        "by_lang": rates(results, "lang"),
        "results": [r.as_dict() for r in results],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _cpus() -> int:
    import os

    return os.cpu_count() or 1
