"""MCP both ways (issue 18): hot-plug latency, connect/disconnect soak, stdio call overhead.

1. **list_changed -> offered.** loopact's client (:class:`loopact.mcp.hub.McpHub`) against
   ``bench/mcp_server.py`` over stdio: the server adds a tool and sends the notification
   (recording the wall-clock time just before it); the figure is the time until the tool is
   in the agent's registry (``node_added``), over the 2025-era handshake
   (``notifications/tools/list_changed``) and the 2026-era protocol (``subscriptions/listen``).
   Target: within 1 s.
2. **Connect/disconnect soak.** ``loopact mcp --http`` (``--robot none``) in its own process;
   the SDK's client connects (initialize handshake, a stateful session), lists the tools and
   disconnects (DELETE), N times. Errors are counted; the server's RSS is sampled (psutil)
   after a warm-up and every 100 cycles; the figure is the growth against the warm-up sample,
   measured in the same run. Target: 1,000 cycles, 0 errors, flat memory.
3. **stdio call overhead.** The SDK's client calls ``file_list`` on ``loopact mcp --robot none``
   over stdio; the baseline, measured in the same run, is the same tool through
   :meth:`ToolRegistry.execute` in this process. Overhead = p50(MCP) - p50(direct).
   Target: p50 < 5 ms. For reference, interleaved too: a no-op tool of the SDK's own
   low-level server (``bench/mcp_server.py``), the floor of the SDK and the two processes.

Usage: .venv/bin/python bench/mcp.py [--hotplug 20] [--cycles 1000] [--calls 300]
"""

# ruff: noqa: E402  (imports after the sys.path fix below)
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder is sys.path[0] and its mcp.py would shadow the SDK's package.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
from typing import Any

import httpx2
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from loopact.config import McpServerConfig
from loopact.events import EventBus
from loopact.llm.messages import ToolCall
from loopact.mcp.hub import McpHub
from loopact.tools.base import ToolContext
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

HERE = Path(__file__).resolve().parent


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LOOPACT_API_KEY", "OPENAI_API_KEY", "LOOPACT_BASE_URL", "LOOPACT_MCP_TOKEN"):
        env.pop(key, None)
    env["XDG_CONFIG_HOME"] = str(home / "xdg")
    env["XDG_DATA_HOME"] = str(home / "xdg-data")
    env["XDG_CACHE_HOME"] = str(home / "xdg-cache")
    return env


# ---------------------------------------------------------------------- 1. hot-plug
async def hotplug(n: int, tmp: Path, mode: str) -> dict[str, Any]:
    stamps = tmp / f"stamps-{mode}"
    stamps.mkdir()
    registry = ToolRegistry()
    bus = EventBus()
    added: dict[str, float] = {}
    protocol: list[str] = []

    def on_event(e: Any) -> None:
        if e.type == "node_added":
            added.setdefault(e.data["name"], time.time())
        elif e.type == "mcp_server" and e.data.get("protocol"):
            protocol.append(e.data["protocol"])

    bus.subscribe(on_event)
    cfg = McpServerConfig(command=sys.executable, args=[str(HERE / "mcp_server.py"), str(stamps)])
    hub = McpHub({"bench": cfg}, registry, bus=bus, log_dir=tmp / "logs", mode=mode)
    await hub.start()
    ctx = ToolContext(task_id="bench", call_id="c", workspace=tmp)
    latencies = []
    try:
        for i in range(n):
            name = f"extra_{i}"
            await registry.execute(ToolCall(f"g{i}", "grow", {"n": i}), ctx, 10)
            deadline = time.monotonic() + 10
            while name not in added and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            sent = float((stamps / str(i)).read_text())
            latencies.append(added[name] - sent)
    finally:
        await hub.stop()
    return {
        "n": n,
        "median_s": statistics.median(latencies),
        "max_s": max(latencies),
        "protocol": protocol[-1] if protocol else None,
    }


# ---------------------------------------------------------------------- 2. soak
async def _serve_http(tmp: Path) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loopact", "mcp", "--robot", "none", "--no-web", "--no-memory",
        "--workspace", str(tmp / "ws"), "--http", "127.0.0.1:0",
        env=_env(tmp), cwd=tmp, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
        if not line:
            raise RuntimeError("loopact mcp --http exited")
        found = re.search(r"at (http://\S+/mcp)", line)
        if found:
            return proc, found.group(1)


async def soak(cycles: int, tmp: Path) -> dict[str, Any]:
    proc, url = await _serve_http(tmp)
    server = psutil.Process(proc.pid)
    errors: list[str] = []
    samples: dict[int, float] = {}
    warmup = min(100, cycles // 10 or 1)
    times = []
    try:
        for i in range(1, cycles + 1):
            t0 = time.perf_counter()
            try:
                http = httpx2.AsyncClient(timeout=30)
                transport = streamable_http_client(url, http_client=http)
                async with http, Client(transport, mode="legacy", cache=None) as client:
                    tools = (await client.list_tools()).tools
                    if not tools:
                        errors.append(f"cycle {i}: no tools")
            except Exception as exc:
                errors.append(f"cycle {i}: {type(exc).__name__}: {exc}")
            times.append(time.perf_counter() - t0)
            if i == warmup or i % 100 == 0:
                samples[i] = server.memory_info().rss / 1e6
    finally:
        proc.terminate()
        await proc.wait()
    base = samples[warmup]
    last = samples[max(samples)]
    return {
        "cycles": cycles,
        "errors": len(errors),
        "first_errors": errors[:3],
        "rss_warm_mb": base,
        "rss_end_mb": last,
        "growth_mb": last - base,
        "growth_ratio": last / base,
        "samples_mb": {k: round(v, 1) for k, v in sorted(samples.items())},
        "cycle_p50_ms": statistics.median(times) * 1000,
    }


# ---------------------------------------------------------------------- 3. overhead
def _child(marker: str) -> psutil.Process:
    """The child process whose command line contains ``marker``."""
    for proc in psutil.Process().children(recursive=True):
        if any(marker in part for part in proc.cmdline()):
            return proc
    raise RuntimeError(f"no child process {marker}")


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def overhead(calls: int, tmp: Path) -> dict[str, Any]:
    ws = tmp / "ws-overhead"
    ws.mkdir()
    (ws / "a.txt").write_text("a")
    registry = ToolRegistry(make_builtin_tools(ws))
    ctx = ToolContext(task_id="bench", call_id="c", workspace=ws)
    direct, over, sdk = [], [], []
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "loopact",
            "mcp",
            "--robot",
            "none",
            "--no-web",
            "--no-memory",
            "--workspace",
            str(ws),
        ],  # fmt: skip
        env=_env(tmp),
        cwd=str(tmp),
    )
    (tmp / "stamps-sdk").mkdir()
    reference = StdioServerParameters(
        command=sys.executable, args=[str(HERE / "mcp_server.py"), str(tmp / "stamps-sdk")]
    )
    async with Client(params, cache=None) as client, Client(reference, cache=None) as bare:
        for _ in range(20):  # warm-up every path
            await client.call_tool("file_list", {})
            await bare.call_tool("noop", {})
            await registry.execute(ToolCall("w", "file_list", {}), ctx, 10)
        procs = {
            "loopact": _child("loopact"),
            "sdk": _child("mcp_server.py"),
        }
        cpu0 = {k: _cpu(p) for k, p in procs.items()}
        for i in range(calls):  # interleaved, so load hits all three alike
            t0 = time.perf_counter()
            await registry.execute(ToolCall(f"d{i}", "file_list", {}), ctx, 10)
            t1 = time.perf_counter()
            result = await client.call_tool("file_list", {})
            t2 = time.perf_counter()
            await bare.call_tool("noop", {})
            t3 = time.perf_counter()
            assert not result.is_error
            direct.append(t1 - t0)
            over.append(t2 - t1)
            sdk.append(t3 - t2)
        cpu = {k: (_cpu(p) - cpu0[k]) / calls * 1000 for k, p in procs.items()}
    return {
        "server_cpu_ms": cpu["loopact"],
        "sdk_server_cpu_ms": cpu["sdk"],
        "calls": calls,
        "direct_p50_ms": statistics.median(direct) * 1000,
        "mcp_p50_ms": statistics.median(over) * 1000,
        "mcp_p99_ms": _pct(over, 0.99) * 1000,
        "sdk_p50_ms": statistics.median(sdk) * 1000,
        "overhead_p50_ms": (statistics.median(over) - statistics.median(direct)) * 1000,
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hotplug", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for mode in ("legacy", "auto"):
            h = await hotplug(args.hotplug, tmp, mode)
            print(
                f"list_changed -> offered (n={h['n']}, protocol {h['protocol']}): median "
                f"{h['median_s'] * 1000:.0f} ms, max {h['max_s'] * 1000:.0f} ms "
                "(target < 1000 ms)",
                flush=True,
            )
        o = await overhead(args.calls, tmp)
        print(
            f"stdio call (n={o['calls']}): direct p50 {o['direct_p50_ms']:.2f} ms, over MCP p50 "
            f"{o['mcp_p50_ms']:.2f} ms (p99 {o['mcp_p99_ms']:.1f} ms): overhead p50 "
            f"{o['overhead_p50_ms']:.2f} ms (target < 5 ms); the SDK's own server, a no-op "
            f"tool: p50 {o['sdk_p50_ms']:.2f} ms; server CPU per call: loopact "
            f"{o['server_cpu_ms']:.2f} ms, the SDK's server {o['sdk_server_cpu_ms']:.2f} ms",
            flush=True,
        )
        s = await soak(args.cycles, tmp)
        print(
            f"connect/disconnect x{s['cycles']}: {s['errors']} errors {s['first_errors']}; "
            f"server RSS {s['rss_warm_mb']:.1f} MB after warm-up -> {s['rss_end_mb']:.1f} MB "
            f"(x{s['growth_ratio']:.3f}, {s['growth_mb']:+.1f} MB); samples {s['samples_mb']}; "
            f"cycle p50 {s['cycle_p50_ms']:.0f} ms",
            flush=True,
        )
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
