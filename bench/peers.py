"""loopact against other agent frameworks on one scripted tool task (issue 20, SPEC H4).

The same task through each loop: R rounds of one call of a no-op tool, then the answer "done"
(``bench/loops.py``). The loops: a hand-written loop on the raw ``openai`` SDK (the baseline),
loopact's agent, LangGraph's prebuilt ReAct agent (``create_react_agent`` with
``langchain_openai.ChatOpenAI``), smolagents' ``ToolCallingAgent`` (``OpenAIServerModel``; its
runs end with a call of its ``final_answer`` tool, so its script's last turn is that call),
openai-agents (``Runner`` with ``OpenAIChatCompletionsModel``, tracing off) and pydantic-ai
(``Agent`` with ``OpenAIChatModel``), each through its own OpenAI-compatible model client.

Each run of a loop is a fresh worker process with its own scripted model server process
(``loopact.testing.ScriptedModelServer``, real HTTP on loopback) holding the turns of all its
tasks; the server reports the requests it got and fails the run when a turn was left over or
anything else went wrong. The loops run one at a time, interleaved (every repeat runs every
loop in a rotated order), so drift in machine load hits all alike. Figures:

- CPU per round: CPU time of the whole worker process (every thread: SDK, HTTP client, stream
  parsing, the framework's bookkeeping; not the server, which is another process) between two
  consecutive calls of the tool, p50 over all rounds after a warm-up task. A framework's
  overhead is its p50 minus the raw loop's, the ratio its p50 over the raw loop's.
- Wall per round, the same way (includes the server's time and scheduling noise).
- Tokens per task: the scripted server's count (request bytes / 4 + output characters / 4),
  so a framework's system prompt and tool schemas count.
- Setup: import of the framework (openai included) and construction of its agent, in the fresh
  worker process, median over the repeats.

Stream on: every loop asks to stream and reads SSE chunks (arguments in 64-character pieces).
Stream off: every loop that can asks for whole responses; loopact always asks to stream, and
the server answers it, like every request of this mode, with one whole JSON completion (the
scripted server's ``stream_as_json``, what a non-streaming endpoint or gateway sends).

Install the frameworks with ``.venv/bin/pip install -e '.[dev,bench]'``; a loop whose packages
are missing is listed as not installed. Target (issue 20): loopact's overhead <= +1.0 ms CPU
per round and the lowest of all frameworks, in both modes.

Usage: .venv/bin/python bench/peers.py [--rounds 20] [--tasks 6] [--repeats 4]
       [--only raw loopact ...] [--stream both|on|off] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loops import (
    Stamp,
    pct,
    per_round,
    script,
    stamp,
)
from peer_loops import BASELINE, PEERS, RAW_JSON, Peer, Setup

# Run as a script, this folder is sys.path[0], and its mcp.py would shadow the mcp SDK that
# openai-agents imports (loops, from this folder, is imported above).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

RUN_TIMEOUT_S = 600.0


# --- worker and server processes ------------------------------------------------------------


async def worker(name: str, base_url: str, stream: bool, rounds: int, tasks: int) -> dict[str, Any]:
    """Build loop ``name`` and run ``tasks`` tasks (the first is a warm-up, not counted).

    Returns:
        ``setup_s`` / ``setup_cpu_s`` (import and construction), ``wall`` / ``cpu``: seconds per
        round of the counted tasks.

    Raises:
        RuntimeError: A task did not call the tool ``rounds`` times or did not answer "done".
    """
    stamps: list[Stamp] = []

    def mark() -> None:
        stamps.append(stamp(time.process_time))

    t0, c0 = time.perf_counter(), time.process_time()
    runner = await PEERS[name].build(Setup(base_url, stream, rounds, mark))
    setup_s, setup_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    walls: list[float] = []
    cpus: list[float] = []
    for index in range(tasks):
        stamps.clear()
        await runner.run()
        if len(stamps) != rounds:
            raise RuntimeError(f"{name}: the tool ran {len(stamps)} times, expected {rounds}")
        wall, cpu = per_round(stamps)
        if index > 0:
            walls += wall
            cpus += cpu
    await runner.close()
    return {"setup_s": setup_s, "setup_cpu_s": setup_cpu_s, "wall": walls, "cpu": cpus}


def serve(script_path: str) -> None:
    """The server process: print its base URL, serve until stdin closes, print a JSON report.

    The report: ``requests``, ``tokens`` (the server's count, see :meth:`Turn.usage_for`) and
    ``problems`` (what ``assert_consumed()`` found; empty when the script ran as written).
    """
    from loopact.errors import ScriptError
    from loopact.testing import ScriptedModelServer

    server = ScriptedModelServer(script_path).start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()
    tokens = 0
    for request in server.requests:
        if request.turn_index is not None:
            turn = server.script.turns[request.turn_index]
            tokens += turn.usage_for(request.raw_body).total_tokens
    problems = ""
    try:
        server.assert_consumed()
    except ScriptError as exc:
        problems = str(exc)
    print(json.dumps({"requests": len(server.requests), "tokens": tokens, "problems": problems}))


@dataclass
class Result:
    """One loop's figures in one stream mode, over all repeats."""

    peer: str
    stream: bool
    versions: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    cpu_p50_by_repeat: list[float] = field(default_factory=list)
    setup_s: list[float] = field(default_factory=list)
    tokens_per_task: list[float] = field(default_factory=list)
    error: str | None = None


def run_once(
    peer: Peer, stream: bool, rounds: int, tasks: int, tmp: Path
) -> tuple[dict[str, Any], float]:
    """One worker run against its own server process.

    Returns:
        The worker's figures and the tokens per task.

    Raises:
        RuntimeError: The worker failed, or the server saw the script used otherwise than
            written (its report).
    """
    one = script(rounds, stream_as_json=not stream, final_call=peer.final_call)
    script_path = tmp / f"{peer.name}-{'on' if stream else 'off'}.json"
    script_path.write_text(json.dumps({"turns": one["turns"] * tasks}))
    out_path = tmp / "worker.json"
    out_path.unlink(missing_ok=True)
    me = [sys.executable, str(Path(__file__).resolve())]
    server = subprocess.Popen(
        [*me, "--serve", str(script_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        base_url = server.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"the scripted server did not start: {base_url!r}")
        argv = [
            *me,
            "--worker",
            peer.name,
            "--base-url",
            base_url,
            "--stream",
            "on" if stream else "off",
            "--rounds",
            str(rounds),
            "--tasks",
            str(tasks),
            "--out",
            str(out_path),
        ]
        done = subprocess.run(
            argv,
            stdout=subprocess.DEVNULL,  # smolagents' console output
            stderr=subprocess.PIPE,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        server.stdin.close()
        report = json.loads(server.stdout.read() or "{}")
    finally:
        with contextlib.suppress(OSError):
            server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"worker exited {done.returncode}")
    if report.get("problems"):
        raise RuntimeError(f"scripted server: {report['problems']}")
    figures: dict[str, Any] = json.loads(out_path.read_text())
    return figures, report["tokens"] / tasks


def versions(peer: Peer) -> dict[str, str] | None:
    """The installed versions of the peer's distributions; None when one is missing."""
    found: dict[str, str] = {}
    for dist in peer.dists:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None
    return found


# --- report ---------------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def table(results: list[Result], stream: bool) -> list[str]:
    ms = 1000.0
    rows = [r for r in results if r.stream is stream]
    base = next((r for r in rows if r.peer == BASELINE and r.cpu), None)
    lines = [
        f"stream {'on' if stream else 'off'}:",
        "",
        "| loop | CPU/round p50 | CPU ratio | overhead (per-repeat range) | wall/round p50 "
        "| wall ratio | tokens/task | setup |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        label = r.peer + "".join(f" {v}" for v in r.versions.values())
        if r.error or not r.cpu or base is None:
            lines.append(f"| {label} | {r.error or 'no figures'} |")
            continue
        c50, w50 = statistics.median(r.cpu), statistics.median(r.wall)
        b50, bw50 = statistics.median(base.cpu), statistics.median(base.wall)
        diffs = [
            (a - b) * ms for a, b in zip(r.cpu_p50_by_repeat, base.cpu_p50_by_repeat, strict=False)
        ]
        spread = f"{min(diffs):+.2f}..{max(diffs):+.2f}" if diffs else "-"
        lines.append(
            f"| {label} | {c50 * ms:.2f} ms (p90 {pct(r.cpu, 0.9) * ms:.2f}) | "
            f"{c50 / b50:.2f} | {(c50 - b50) * ms:+.2f} ms ({spread}) | {w50 * ms:.2f} ms | "
            f"{w50 / bw50:.2f} | {statistics.median(r.tokens_per_task):.0f} | "
            f"{statistics.median(r.setup_s):.2f} s |"
        )
    return lines


def summary(results: list[Result], stream: bool) -> str:
    ms = 1000.0
    mode = f"stream {'on' if stream else 'off'}"
    rows = {r.peer: r for r in results if r.stream is stream and r.cpu and not r.error}
    if BASELINE not in rows or "loopact" not in rows:
        return f"{mode}: loopact or the baseline has no figures"
    b50 = statistics.median(rows[BASELINE].cpu)
    own = {
        n: (statistics.median(r.cpu) - b50) * ms
        for n, r in rows.items()
        if n not in (BASELINE, RAW_JSON)
    }
    lowest = min(own, key=lambda n: own[n])
    met = own["loopact"] <= 1.0 and lowest == "loopact"
    line = (
        f"{mode}: loopact's overhead {own['loopact']:+.2f} ms CPU per round over the raw SDK "
        f"loop (target <= +1.00); lowest of {len(own)} frameworks: {lowest} "
        f"({own[lowest]:+.2f} ms) -> target {'met' if met else 'NOT met'}"
    )
    if RAW_JSON in rows:
        j50 = statistics.median(rows[RAW_JSON].cpu)
        ours = statistics.median(rows["loopact"].cpu)
        line += (
            f"; over the raw loop without the SDK's request transformation ({RAW_JSON}): "
            f"{(ours - j50) * ms:+.2f} ms"
        )
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="tool rounds per task")
    parser.add_argument("--tasks", type=int, default=6, help="tasks per run (first: warm-up)")
    parser.add_argument("--repeats", type=int, default=4, help="runs of every loop per mode")
    parser.add_argument("--only", nargs="+", choices=list(PEERS), help="these loops only")
    parser.add_argument("--stream", choices=["both", "on", "off"], default="both")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--worker", choices=list(PEERS), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    if args.worker:
        figures = asyncio.run(
            worker(args.worker, args.base_url, args.stream == "on", args.rounds, args.tasks)
        )
        args.out.write_text(json.dumps(figures))
        return 0
    if args.rounds < 2 or args.tasks < 2 or args.repeats < 1:
        parser.error("--rounds and --tasks must be >= 2, --repeats >= 1")
    names = [BASELINE] + [n for n in (args.only or PEERS) if n != BASELINE]
    modes = {"both": [True, False], "on": [True], "off": [False]}[args.stream]
    started, load_before = datetime.datetime.now(datetime.timezone.utc), load()
    print(f"{started:%Y-%m-%d %H:%M} UTC, {machine()}, load average {load_before}")
    print(
        f"{args.repeats} repeats x {args.tasks - 1} tasks x {args.rounds - 1} rounds counted "
        f"per loop and mode (R={args.rounds} tool rounds per task, one warm-up task per run)"
    )
    results: list[Result] = []
    for stream in modes:
        for n in names:
            found = versions(PEERS[n])
            result = Result(n, stream, found or {})
            if found is None:
                result.error = "not installed (pip install -e '.[bench]')"
            results.append(result)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        for repeat in range(args.repeats):
            for stream in modes:
                rows = [r for r in results if r.stream is stream and r.error is None]
                shift = repeat % len(rows)
                for r in rows[shift:] + rows[:shift]:  # rotated: none is always first
                    try:
                        figures, tokens = run_once(
                            PEERS[r.peer], stream, args.rounds, args.tasks, Path(tmp)
                        )
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                        r.error = f"failed: {exc}"[:300]
                        print(f"  {r.peer} (stream {'on' if stream else 'off'}): {r.error}")
                        continue
                    r.wall += figures["wall"]
                    r.cpu += figures["cpu"]
                    r.cpu_p50_by_repeat.append(statistics.median(figures["cpu"]))
                    r.setup_s.append(figures["setup_s"])
                    r.tokens_per_task.append(tokens)
            print(f"  repeat {repeat + 1}/{args.repeats} done, load average {load()}", flush=True)
    print(f"load average before {load_before}, after {load()}")
    for stream in modes:
        print()
        print("\n".join(table(results, stream)))
    print()
    for stream in modes:
        print(summary(results, stream))
    if args.json:
        payload = {
            "date": f"{started:%Y-%m-%d %H:%M} UTC",
            "machine": machine(),
            "load_before": load_before,
            "load_after": load(),
            "rounds": args.rounds,
            "tasks": args.tasks,
            "repeats": args.repeats,
            "results": [r.__dict__ for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
