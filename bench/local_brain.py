"""How good a robot brain is the local model? (issue 6)

Runs robot instructions in English and Chinese through the whole runtime — the real agent
loop, the OpenAI-compatible provider, the local llama.cpp brain, the tool registry and the
MuJoCo simulated robot (a fresh one per instruction) — and compares the tool calls the agent
made with the expected ones (names in order, numeric arguments within a tolerance).

Prints, per tool-calling mode and per kind of case (single-step, multi-step, held-out
single-step paraphrases that nothing was tuned on, small talk, and the perception-dependent set
of issue 45, graded by the simulator's ground truth rather than by the calls):

- fully correct %: the executed calls match one of the accepted call sequences exactly
  (read-only look-ups like ``get_current_pose`` that were not asked for are ignored; calls the
  runtime refused before running them for their units, ``error_kind: "units"``, did not run
  and are not counted);
- valid-call %: instructions where the brain made at least one call and every call it made
  named a known tool with schema-valid arguments;
- median time to first motion (task start to the first motion tool call) and median task time;
- for the perception set: the ground-truth pass rate, and ``dependent_ran``: calls made after
  a look-up that did not find its object (a failed result or ``found: false``) in cases where
  nothing depends on that but the steps that must then not run (target: 0).

The instructions and the grader are in ``bench/brain_cases.py``.

Usage::

    .venv/bin/python bench/local_brain.py                   # the pinned 0.5B model
    .venv/bin/python bench/local_brain.py --model-path other.gguf --modes native,text
    .venv/bin/python bench/local_brain.py --only single --limit 10 --json out.json
    .venv/bin/python bench/local_brain.py --grep centimet --grep 厘米   # selected cases
    .venv/bin/python bench/local_brain.py --base-url http://host/v1 --model NAME  # any endpoint

Modes: ``native`` = tools in the request, written as ``<tool_call>`` text by the provider
(grammar-constrained when the endpoint supports it); ``text`` = the agent's action-text mode
(SPEC A5) when the runtime has it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain_cases import CASES, Case, matches

from loopact.agent import Agent
from loopact.app.run import open_agent
from loopact.config import Config, LocalConfig
from loopact.eval.task import Evidence, Limits, Verdict
from loopact.events import EventBus
from loopact.llm.local.process import LocalBrain
from loopact.tools.base import SafetyClass


@dataclass
class Result:
    case: Case
    mode: str
    calls: list[tuple[str, dict[str, Any]]]
    valid: bool
    correct: bool
    first_motion_s: float | None
    task_s: float
    status: str
    reply: str
    why: str = ""  # the ground-truth grader's reason (perception set)
    dependent_ran: int = 0  # calls after a look-up that found nothing (perception set)


def case_config(
    args: argparse.Namespace, mode: str, tmp: Path, scenario: str = "default"
) -> Config:
    """The configuration of one case: ``loopact run --robot sim`` as a user would start it,
    with its own workspace and memory and write tools pre-approved (``--yes``)."""
    model: dict[str, Any] = {}
    if args.base_url:
        model = {
            "base_url": args.base_url,
            "model": args.model,
            "api_key": "bench",
            "capabilities": {
                "vision": False,
                "native_tool_calls": False,
                "parallel_tool_calls": False,
                "constrained_decoding": not args.no_grammar,
                "stream_usage": False,
            },
        }
    return Config.model_validate(
        {
            "model": model,
            "robot": {
                "kind": "sim",
                "sim_speed": args.sim_speed,
                "sim_log": str(tmp / "sim_log.jsonl"),
                "scenario": scenario,
            },
            "agent": {
                "workspace": str(tmp / "ws"),
                "tool_calling": mode,
                "bounds": {"max_rounds": 4, "request_timeout_s": 120, "task_timeout_s": 240},
            },
            "confirm": {"auto_approve": True},
            "memory": {"path": str(tmp / "memory")},
            "web": {"enabled": False},
            "local": {
                "model_path": args.model_path,
                "context_tokens": args.ctx,
                "max_output_tokens": args.max_tokens,
                "split_steps": not args.no_split,
            },
        }
    )


async def run_case(
    args: argparse.Namespace, brain: LocalBrain | None, case: Case, mode: str
) -> Result:
    """One instruction through the agent exactly as ``loopact run`` assembles it
    (:func:`loopact.app.run.open_agent`: tools, robot, board, memory, prompt), on the
    shared local server when there is one."""
    with tempfile.TemporaryDirectory(prefix="loopact-bench-") as tmp:
        async with AsyncExitStack() as stack:
            cfg = case_config(args, mode, Path(tmp), case.scenario)
            _, opened = await open_agent(
                cfg,
                stack,
                EventBus(),
                once=case.text,
                config_source=None,
                interactive=False,
                local_brain=brain if brain is not None else False,
                mcp_servers=False,
            )
            result = await _measure(opened.agent, case, mode)
            session = opened.body.session
            assert session is not None
            lim = session.profile.limits
            limits = Limits(
                max_linear_mps=lim.max_linear_mps,
                max_angular_dps=lim.max_angular_dps,
                geofence=tuple((float(x), float(y)) for x, y in session.site.geofence),
                robot_radius_m=session.profile.footprint_radius_m,
            )
        if case.grader is not None:  # the simulator closed: its pose log is complete
            verdict = _ground_truth(case, Path(tmp), limits, result.reply)
            result.correct, result.why = verdict.passed, verdict.why
        return result


def _ground_truth(case: Case, folder: Path, limits: Limits, reply: str) -> Verdict:
    """Grade a perception case by the simulator's pose log and world description."""
    from loopact.sim.describe import describe_world
    from loopact.sim.simlog import read_sim_log

    assert case.grader is not None
    poses = list(read_sim_log(folder / "sim_log.jsonl"))
    if not poses:
        return Verdict(False, "no ground truth: the sim log is empty")
    events = [{"type": "reply", "text": reply}]
    world = describe_world(case.scenario)
    ev = Evidence(world, poses, events, folder / "ws", [], limits, scenario=case.scenario)
    return case.grader(ev)


async def _measure(agent: Agent, case: Case, mode: str) -> Result:
    """Run ``case`` on ``agent`` and compare the calls that ran with the accepted ones."""
    motion = {t.name for t in agent.registry if t.safety is SafetyClass.MOTION}
    calls: list[tuple[str, dict[str, Any]]] = []
    valid = True
    first_motion: list[float] = []
    t0 = time.perf_counter()
    missed: list[str] = []  # a look-up that did not find its object
    dependent_ran = 0

    def on_event(ev: Any) -> None:
        nonlocal valid, dependent_ran
        if ev.type == "tool_call" and missed and not case.branching:
            dependent_ran += 1
        if ev.type == "tool_result" and _not_found(ev.data):
            missed.append(str(ev.data.get("name")))
        if ev.type == "tool_call" and ev.data.get("name") in motion and not first_motion:
            first_motion.append(time.perf_counter() - t0)
        if ev.type == "tool_result":
            meta = ev.data.get("metadata") or {}
            kind = meta.get("error_kind")
            if kind in ("unknown_tool", "arguments"):
                valid = False
            elif kind == "units":
                pass  # refused before running (a quantity in the wrong kind of argument)
            else:
                # the arguments the tool ran with: the model's, after unit normalisation
                args = dict(ev.data.get("_args", {}))
                for key, change in (meta.get("normalized") or {}).items():
                    args[key] = change["to"]
                calls.append((ev.data["name"], args))

    args_by_id: dict[str, dict[str, Any]] = {}

    def on_call(ev: Any) -> None:
        if ev.type == "tool_call":
            args_by_id[ev.data["id"]] = dict(ev.data.get("arguments") or {})
        if ev.type == "tool_result":
            ev.data.setdefault("_args", args_by_id.get(ev.data["id"], {}))
        on_event(ev)

    agent.bus.subscribe(on_call)
    try:
        outcome = await asyncio.wait_for(agent.run_task(case.text), 300)
        status, reply = outcome.status, outcome.reply
    except Exception as exc:  # the bench records every failure and goes on
        status, reply = f"error: {type(exc).__name__}: {exc}", ""
    task_s = time.perf_counter() - t0
    correct = any(matches(calls, acc) for acc in case.accept)
    return Result(
        case=case,
        mode=mode,
        calls=calls,
        valid=valid and bool(calls),
        correct=correct,
        first_motion_s=first_motion[0] if first_motion else None,
        task_s=task_s,
        status=status,
        reply=reply,
        dependent_ran=dependent_ran,
    )


def _not_found(data: dict[str, Any]) -> bool:
    """Whether a ``tool_result`` event is a look-up that did not find its object: a failed
    result, or ``found: false`` in its data."""
    out = data.get("data")
    return data.get("ok") is False or (isinstance(out, dict) and out.get("found") is False)


ONCE_TEXTS = (
    "move forward one meter",
    "turn left 90 degrees",
    "向左转90度",
    "go to the kitchen",
    "back up half a meter",
)
MOTION_TOOLS = {"move_forward", "move_backward", "turn_left", "turn_right", "navigation", "drive"}


def once_runs(n: int) -> dict[str, Any]:
    """Time ``n`` separate ``loopact run --once`` processes with no endpoint (issue 13).

    Each run is a new process: the local server starts, the prompt state is loaded from the
    cache, the task runs. Measured from the process start: ``startup_s`` to ``task_start``;
    from ``task_start``: ``first_motion_s`` to the first motion ``tool_call``.
    """
    import os
    import subprocess

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LOOPACT_BASE_URL", "LOOPACT_API_KEY", "OPENAI_API_KEY", "LOOPACT_MODEL")
    }
    startups: list[float] = []
    firsts: list[float] = []
    sources: list[str] = []
    for i in range(n):
        text = ONCE_TEXTS[i % len(ONCE_TEXTS)]
        with tempfile.TemporaryDirectory(prefix="loopact-once-") as tmp:
            trace = Path(tmp) / "t.jsonl"
            cmd = [sys.executable, "-m", "loopact", "run", "--robot", "sim", "--once", text]
            cmd += ["--yes", "--no-web", "--trace", str(trace), "--workspace", tmp + "/ws"]
            t0 = time.time()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            events = [json.loads(ln) for ln in trace.read_text().splitlines()]
        start = next((e["ts"] for e in events if e["type"] == "task_start"), None)
        motion = next(
            (e["ts"] for e in events if e["type"] == "tool_call" and e["name"] in MOTION_TOOLS),
            None,
        )
        prompt: dict[str, Any] = next((e for e in events if e["type"] == "local_brain_prompt"), {})
        sources.append(str(prompt.get("source")))
        if start is not None:
            startups.append(start - t0)
        if start is not None and motion is not None:
            firsts.append(motion - start)
        print(
            f"[once {i + 1}/{n}] exit {proc.returncode} {text!r}: start-up "
            f"{(start or t0) - t0:.1f} s, first motion "
            f"{(motion - start) if (motion and start) else float('nan'):.2f} s, "
            f"prompt {prompt.get('source')}",
            flush=True,
        )
    return {
        "once_runs": n,
        "median_startup_s": round(statistics.median(startups), 2) if startups else None,
        "median_first_motion_s": round(statistics.median(firsts), 2) if firsts else None,
        "max_first_motion_s": round(max(firsts), 2) if firsts else None,
        "prompt_sources": sources,
    }


def pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.0f}% ({n}/{d})" if d else "n/a"


def summarise(results: list[Result], mode: str) -> dict[str, Any]:
    rs = [r for r in results if r.mode == mode]
    single = [r for r in rs if r.case.kind == "single"]
    multi = [r for r in rs if r.case.kind == "multi"]
    multi_new = [r for r in rs if r.case.kind == "multi_new"]
    heldout = [r for r in rs if r.case.kind == "heldout"]
    flat = [r for r in rs if r.case.kind == "flat"]
    chat = [r for r in rs if r.case.kind == "chat"]
    seeing = [r for r in rs if r.case.kind == "perception"]
    arm = [r for r in rs if r.case.kind == "arm"]
    acting = [r for r in rs if r.case.kind not in ("chat", "perception", "arm")]
    fm = [r.first_motion_s for r in rs if r.first_motion_s is not None]
    return {
        "mode": mode,
        "n": len(rs),
        "fully_correct_single": pct(sum(r.correct for r in single), len(single)),
        "fully_correct_multi": pct(sum(r.correct for r in multi), len(multi)),
        "fully_correct_multi_new": pct(sum(r.correct for r in multi_new), len(multi_new)),
        "fully_correct_heldout": pct(sum(r.correct for r in heldout), len(heldout)),
        "fully_correct_flat": pct(sum(r.correct for r in flat), len(flat)),
        "fully_correct_all": pct(sum(r.correct for r in acting), len(acting)),
        "chat_answered_without_call": pct(sum(r.correct for r in chat), len(chat)),
        "ground_truth_perception": pct(sum(r.correct for r in seeing), len(seeing)),
        "perception_dependent_ran": sum(r.dependent_ran for r in seeing),
        "ground_truth_arm": pct(sum(r.correct for r in arm), len(arm)),
        "valid_call": pct(sum(r.valid for r in acting), len(acting)),
        "median_first_motion_s": round(statistics.median(fm), 2) if fm else None,
        "median_task_s": round(statistics.median([r.task_s for r in rs]), 2) if rs else None,
        "crashes": sum(r.status.startswith("error") for r in rs),
    }


async def main_async(args: argparse.Namespace) -> int:
    cases = [c for c in CASES if args.only in ("all", c.kind)]
    if args.grep:
        pats = [re.compile(g, re.IGNORECASE) for g in args.grep]
        cases = [c for c in cases if any(p.search(c.text) for p in pats)]
    cases = cases[: args.limit or None]
    brain: LocalBrain | None = None
    if not args.base_url:
        cfg = LocalConfig(
            model_path=Path(args.model_path) if args.model_path else None,
            context_tokens=args.ctx,
        )
        brain = LocalBrain.from_config(cfg)
        t0 = time.perf_counter()
        await brain.start()
        print(f"local brain {brain.model_path.name} ready in {time.perf_counter() - t0:.1f} s")

    results: list[Result] = []
    try:
        for mode in args.modes.split(","):
            for i, case in enumerate(cases, 1):
                r = await run_case(args, brain, case, mode)
                results.append(r)
                mark = "OK " if r.correct else ("val" if r.valid else "BAD")
                why = f" [{r.why}]" if r.why else ""
                print(
                    f"[{mode} {i:2d}/{len(cases)}] {mark} {r.task_s:5.1f}s {case.text!r} -> "
                    f"{[(n, a) for n, a in r.calls]} {r.status}{why} | {r.reply[:80]!r}",
                    flush=True,
                )
    finally:
        if brain is not None:
            await brain.stop()
    summary: list[dict[str, Any]] = [summarise(results, m) for m in args.modes.split(",")]
    if args.once_runs:
        summary.append(once_runs(args.once_runs))
    for s in summary:
        print(json.dumps(s, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "summary": summary,
                    "results": [
                        {
                            "text": r.case.text,
                            "mode": r.mode,
                            "kind": r.case.kind,
                            "calls": r.calls,
                            "correct": r.correct,
                            "valid": r.valid,
                            "first_motion_s": r.first_motion_s,
                            "task_s": r.task_s,
                            "status": r.status,
                            "reply": r.reply,
                            "why": r.why,
                            "dependent_ran": r.dependent_ran,
                        }
                        for r in results
                    ],
                },
                ensure_ascii=False,
                indent=1,
            )
        )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model-path", help="A GGUF file (default: the pinned local brain).")
    p.add_argument("--base-url", help="Benchmark any OpenAI-compatible endpoint instead.")
    p.add_argument("--model", default="local", help="Model name for --base-url.")
    p.add_argument("--modes", default="native", help="Comma list of: native, text.")
    p.add_argument(
        "--only",
        choices=[
            "all",
            "single",
            "multi",
            "multi_new",
            "heldout",
            "flat",
            "chat",
            "perception",
            "arm",
        ],
        default="all",
    )
    p.add_argument("--limit", type=int, default=0, help="Run only the first N cases.")
    p.add_argument(
        "--grep",
        action="append",
        default=[],
        metavar="REGEX",
        help="Run only the cases whose instruction matches (repeatable; any match selects).",
    )
    p.add_argument("--ctx", type=int, default=8192, help="Context size of the local brain.")
    p.add_argument("--max-tokens", type=int, default=LocalConfig().max_output_tokens)
    p.add_argument("--sim-speed", type=float, default=4.0, help="Sim time per real second.")
    p.add_argument(
        "--no-grammar",
        action="store_true",
        help="With --base-url: tell loopact the endpoint cannot constrain its output.",
    )
    p.add_argument(
        "--no-split",
        action="store_true",
        help="Do not run sequencing instructions clause by clause (local.split_steps off).",
    )
    p.add_argument(
        "--once-runs",
        type=int,
        default=0,
        metavar="N",
        help="Also time N `loopact run --once` processes: start-up and first motion.",
    )
    p.add_argument("--json", help="Write every result here.")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
