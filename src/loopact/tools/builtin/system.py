"""``system_status``: the machine the agent runs on (SPEC C6).

Reports the machine id, host name, CPU use, load average, memory, disk space of the workspace's
file system, temperature (where the kernel exposes sensors) and NVIDIA GPUs (only when
``nvidia-smi`` is installed). Every blocking call runs in a worker thread; ``nvidia-smi`` has a
timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import psutil

from loopact._compat import wait_within
from loopact.tools.base import SafetyClass, Tool, ToolContext, tool
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

CPU_SAMPLE_S = 0.1
"""How long CPU use is sampled, in seconds."""

NVIDIA_SMI_TIMEOUT_S = 5.0
"""Timeout for the ``nvidia-smi`` query, in seconds."""

_MB = 1024 * 1024
_GB = 1024 * 1024 * 1024


def _machine_id() -> str:
    """``/etc/machine-id`` (systemd), else the host name."""
    for candidate in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            value = Path(candidate).read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        if value:
            return value
    return socket.gethostname()


def _temperature_c() -> dict[str, float]:
    """Current readings per sensor in degrees Celsius; empty where none are readable."""
    read = getattr(psutil, "sensors_temperatures", None)
    if read is None:
        return {}
    try:
        sensors = read()
    except (OSError, RuntimeError, ValueError):
        return {}
    out: dict[str, float] = {}
    for chip, readings in sensors.items():
        for i, r in enumerate(readings):
            if r.current is None:
                continue
            label = f"{chip}/{r.label}" if r.label else (chip if i == 0 else f"{chip}/{i}")
            out[label] = round(float(r.current), 1)
    return out


def _host_facts(workspace: Path) -> dict[str, Any]:
    """Everything except GPUs; blocking (samples CPU for :data:`CPU_SAMPLE_S`)."""
    vm = psutil.virtual_memory()
    disk = shutil.disk_usage(workspace)
    try:
        load: tuple[float | None, ...] = tuple(round(x, 2) for x in os.getloadavg())
    except (OSError, AttributeError):  # not available on this platform
        load = (None, None, None)
    facts: dict[str, Any] = {
        "machine_id": _machine_id(),
        "hostname": socket.gethostname(),
        "cpu_percent": psutil.cpu_percent(interval=CPU_SAMPLE_S),
        "cpu_count": psutil.cpu_count() or 0,
        "load_avg_1m": load[0],
        "load_avg_5m": load[1],
        "load_avg_15m": load[2],
        "memory_used_mb": round((vm.total - vm.available) / _MB, 1),
        "memory_total_mb": round(vm.total / _MB, 1),
        "memory_percent": vm.percent,
        "disk_path": str(workspace),
        "disk_used_gb": round(disk.used / _GB, 2),
        "disk_free_gb": round(disk.free / _GB, 2),
        "disk_total_gb": round(disk.total / _GB, 2),
    }
    temps = _temperature_c()
    if temps:
        facts["temperature_c"] = max(temps.values())
        facts["temperatures_c"] = temps
    return facts


def _parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Parse ``nvidia-smi --format=csv,noheader,nounits`` lines (see :func:`_gpus`)."""
    gpus: list[dict[str, Any]] = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != 5:
            continue
        name, util, used, total, temp = cols

        def num(v: str) -> float | None:
            try:
                return float(v)
            except ValueError:  # "[N/A]"
                return None

        gpus.append(
            {
                "name": name,
                "utilization_percent": num(util),
                "memory_used_mb": num(used),
                "memory_total_mb": num(total),
                "temperature_c": num(temp),
            }
        )
    return gpus


async def _gpus() -> list[dict[str, Any]] | None:
    """NVIDIA GPUs via ``nvidia-smi``; None when it is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    proc = await asyncio.create_subprocess_exec(
        exe,
        "--query-gpu=name,utilization.gpu,memory.used,memory.total,temperature.gpu",
        "--format=csv,noheader,nounits",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await wait_within(proc.communicate(), NVIDIA_SMI_TIMEOUT_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        log.debug("nvidia-smi exited with %s", proc.returncode)
        return None
    return _parse_nvidia_smi(out.decode("utf-8", errors="replace"))


_STATUS_EXECUTOR = BlockingExecutor(max_workers=2, max_stuck=4, name="loopact-status")
"""Where the periodic status input reads the host (it has no tool context)."""


async def system_status_data(
    workspace: Path, executor: BlockingExecutor | None = None
) -> dict[str, Any]:
    """Collect the ``system_status`` dict (SPEC C6).

    Args:
        workspace: The folder whose file system's disk space is reported.
        executor: Where the host is read (the disk space of a hung network mount never
            comes back): the call's :attr:`ToolContext.executor`; None: a small one of
            this module's. Never the default thread pool (issue 22 item 8).

    Returns:
        ``machine_id``, ``hostname``, ``cpu_percent``, ``cpu_count``, ``load_avg_1m/5m/15m``,
        ``memory_used_mb``, ``memory_total_mb``, ``memory_percent``, ``disk_path``,
        ``disk_used_gb``, ``disk_free_gb``, ``disk_total_gb``; ``temperature_c`` (hottest
        sensor, degrees Celsius) and ``temperatures_c`` (per sensor) only where readable;
        ``gpus`` (list of ``name``, ``utilization_percent``, ``memory_used_mb``,
        ``memory_total_mb``, ``temperature_c``) only when ``nvidia-smi`` works.
    """
    facts: dict[str, Any]
    run = (executor or _STATUS_EXECUTOR).run
    facts, gpus = await asyncio.gather(run(_host_facts, workspace), _gpus_or_none())
    if gpus is not None:
        facts["gpus"] = gpus
    return facts


async def _gpus_or_none() -> list[dict[str, Any]] | None:
    try:
        return await _gpus()
    except (OSError, asyncio.TimeoutError) as exc:
        log.debug("nvidia-smi query failed: %s", exc)
        return None


def make_system_tools(workspace: Path) -> list[Tool]:
    """The ``system_status`` tool, reporting disk space for ``workspace`` (SPEC C6).

    Args:
        workspace: The workspace folder (must exist).
    """

    @tool(
        safety=SafetyClass.READ_ONLY,
        reentrant=True,
        timeout_s=15.0,
        description=(
            "Report this computer's CPU, memory, disk, temperature and GPU use, "
            "with units in the key names."
        ),
    )
    async def system_status(ctx: ToolContext) -> dict[str, Any]:
        """Report the machine's health."""
        return await system_status_data(workspace, ctx.executor)

    return [system_status]
