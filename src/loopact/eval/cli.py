"""``loopact eval``: run the graded task suite and report (issue 20; docs/eval.md).

Exit codes: 0 every run passed, 1 some failed, 2 a usage or configuration error.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from loopact.config import Config
from loopact.errors import ConfigError

PACKAGED_SCRIPTS = Path(__file__).parent / "recorded"
"""The recorded scripts that ship with loopact (``--model-script recorded/``)."""

EXIT_USAGE = 2
"""A usage or configuration error (as ``loopact run``)."""

LOCAL_TIME_FACTOR = 8.0
"""The local CPU brain gets this many times each task's wall-clock bound."""


@dataclass(frozen=True)
class EvalArgs:
    """The command's flags that are not config keys."""

    patterns: list[str]
    model_script: Path | None
    repeat: int
    out_dir: Path | None
    json_path: Path | None
    sim_speed: float
    record: Path | None
    time_factor: float | None


def resolve_scripts(given: Path) -> Path:
    """``--model-script DIR``: the folder as given, or, when no such folder exists and it
    names a packaged set (``recorded``), the scripts shipped with loopact.

    Raises:
        ConfigError: Neither exists.
    """
    if given.is_dir():
        return given
    packaged = PACKAGED_SCRIPTS.parent / given.name
    if given.name == PACKAGED_SCRIPTS.name and packaged.is_dir():
        return packaged
    raise ConfigError(
        f"--model-script {given}: no such folder (give a folder of <task>.json scripts, or "
        "'recorded/' for the scripts that ship with loopact)",
        key="--model-script",
    )


def writable_dir(path: Path, flag: str) -> Path:
    """Create folder ``path`` (and its parents) if needed and check that files can be written
    in it, before the suite runs for minutes and its results are lost at the end.

    Returns:
        ``path``.

    Raises:
        ConfigError: It is a file, cannot be created, or is not writable (names ``flag``).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except FileExistsError:
        raise ConfigError(f"{flag} {path} is a file, not a folder", key=flag) from None
    except OSError as exc:
        raise ConfigError(
            f"{flag} {path}: cannot write there: {exc.strerror or exc}", flag
        ) from None
    return path


def list_tasks(console: Console, patterns: list[str] | None = None) -> None:
    """``--list``: the tasks ``-t`` selects (all without it) with their category, language,
    instruction and what is graded.

    Raises:
        ValueError: A pattern matches no task (:func:`loopact.eval.tasks.select`).
    """
    from rich.table import Table

    from loopact.eval.tasks import TASKS, select

    tasks = select(patterns)
    title = f"{len(tasks)} tasks" + (f" of {len(TASKS)}" if len(tasks) < len(TASKS) else "")
    table = Table(title=f"{title} (graded by simulator ground truth)")
    for col in ("task", "category", "lang", "instruction", "graded"):
        table.add_column(col, overflow="fold")
    for t in tasks:
        instruction = t.instruction
        if t.interrupt is not None:
            instruction += f"  (then '{t.interrupt.text}' after {t.interrupt.after_moved_m} m)"
        table.add_row(t.id, t.category, t.lang, instruction, t.summary)
    console.print(table)


def run_eval(cfg: Config, args: EvalArgs, console: Console, err: Console) -> int:
    """Run the selected tasks; print the table; write the JSON. Returns the exit code.

    Raises:
        ConfigError: Bad flags or configuration (exit 2 by the caller).
    """
    from loopact.eval.tasks import select

    try:
        tasks = select(args.patterns)
    except ValueError as exc:
        raise ConfigError(str(exc), key="--task") from None
    if args.repeat < 1:
        raise ConfigError("--repeat must be at least 1", key="--repeat")
    if not args.sim_speed > 0:  # NaN too
        raise ConfigError(f"--sim-speed must be > 0 (or inf), got {args.sim_speed}", "--sim-speed")
    if args.time_factor is not None and not 0 < args.time_factor < math.inf:
        raise ConfigError(
            f"--time-factor must be a finite number > 0 (1 keeps each task's bound), "
            f"got {args.time_factor}",
            key="--time-factor",
        )
    scripts = resolve_scripts(args.model_script) if args.model_script is not None else None
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = writable_dir((args.out_dir or Path("eval-runs") / stamp).resolve(), "--out")
    json_path = args.json_path or out_dir / "eval.json"
    if json_path.is_dir():
        raise ConfigError(f"--json {json_path} is a folder; give the report's file name", "--json")
    writable_dir(json_path.parent, "--json")
    if args.record is not None:
        writable_dir(args.record, "--record")
    local = scripts is None and not cfg.endpoint_configured
    factor = args.time_factor or (LOCAL_TIME_FACTOR if local else 1.0)
    from loopact.eval.runner import EvalOptions

    options = EvalOptions(
        out_dir=out_dir,
        scripts=scripts,
        repeat=args.repeat,
        sim_speed=args.sim_speed,
        time_factor=factor,
        record=args.record,
    )
    if local:  # only once every flag is known to be good (a newcomer's audit)
        from loopact.llm.local.brain import local_brain_banner

        err.print(local_brain_banner(cfg.local, cfg.agent.lang), markup=False)
    return asyncio.run(_run(cfg, tasks, options, json_path, console, err))


async def _run(
    cfg: Config, tasks: list[Any], options: Any, json_path: Path, console: Console, err: Console
) -> int:
    from loopact.eval.report import print_table, write_json
    from loopact.eval.runner import Suite, TaskResult

    total = len(tasks) * options.repeat
    done = 0

    def progress(r: TaskResult) -> None:
        nonlocal done
        done += 1
        mark = "pass" if r.passed else "FAIL"
        err.print(
            f"[{done}/{total}] {r.task.id}: {mark} in {r.time_s:.1f} s - {r.why}",
            markup=False,
            highlight=False,
        )

    async with Suite(cfg, options) as suite:
        err.print(
            f"loopact eval: {len(tasks)} tasks x {options.repeat}, runs in {options.out_dir}",
            markup=False,
        )
        results = await suite.run(tasks, progress)
        label = suite.model_label
    print_table(console, results, f"loopact eval - {label}")
    try:
        write_json(json_path, results, label)
    except OSError as exc:  # checked before the run; the disk can still fill up
        err.print(f"loopact: cannot write the JSON report {json_path}: {exc}", markup=False)
        return 1
    console.print(f"wrote {json_path}", markup=False, highlight=False)
    return 0 if all(r.passed for r in results) else 1


def eval_command(
    list_: bool = typer.Option(False, "--list", help="List the tasks and exit."),
    task: list[str] = typer.Option(
        [], "--task", "-t", help="Only these tasks: an id, a pattern (nav_*), a category or en/zh."
    ),
    model_script: Path | None = typer.Option(
        None,
        "--model-script",
        help="Replay recorded scripts (DIR/<task>.json) through the scripted model server; "
        "'recorded/' is the set that ships with loopact.",
    ),
    provider: str | None = typer.Option(None, "--provider", help="openai, anthropic or dify."),
    base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. .../v1."),
    model: str | None = typer.Option(None, "--model", help="Model name."),
    api_key: str | None = typer.Option(None, "--api-key", help="API key (prefer env vars)."),
    repeat: int = typer.Option(1, "--repeat", "-n", help="Runs per task (success rates)."),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for each run's trace, sim log and workspace."
    ),
    json_path: Path | None = typer.Option(
        None, "--json", help="The JSON report (default: OUT/eval.json)."
    ),
    sim_speed: float = typer.Option(4.0, "--sim-speed", help="Simulated seconds per real s."),
    record: Path | None = typer.Option(
        None, "--record", help="Write a replay script of every passing run into DIR."
    ),
    time_factor: float | None = typer.Option(
        None, "--time-factor", help="Multiply each task's time bound (default 1; local brain 8)."
    ),
    config: Path | None = typer.Option(None, "--config", help="Config file (YAML)."),
    tool_calling: str | None = typer.Option(
        None, "--tool-calling", help="native, text (action lines) or auto."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    """Run the graded task suite on the simulated robot (graded by ground truth; docs/eval.md).

    Prints a table and a JSON report; grades read ground truth, never the model's words.
    """
    from loopact.config import flag_names, load_config

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # a pipe or CI log gets the table wide enough not to fold the task ids
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 180)
    if list_:
        try:
            list_tasks(console, task)
        except ValueError as exc:
            err.print(f"loopact: {exc}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        return
    overrides = {
        "model": {"provider": provider, "base_url": base_url, "model": model, "api_key": api_key},
        "agent": {"tool_calling": tool_calling},
    }
    args = EvalArgs(task, model_script, repeat, out, json_path, sim_speed, record, time_factor)
    try:
        cfg, _ = load_config(config, overrides=overrides, flag_names=flag_names(overrides))
        code = run_eval(cfg, args, console, err)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(code)
