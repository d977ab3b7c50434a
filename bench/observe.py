"""What recording and telemetry cost (issue 44; SPEC H4), as ratios against a baseline measured
in the same run, interleaved so that the machine's load hits both alike.

1. Recording: the simulator driving the robot for a fixed wall-clock window, once plain and
   once recorded to MCAP (``record`` defaults: pose and TF at 10 Hz, ground truth at 20 Hz,
   camera at 1 Hz; the agent's events are not in this window). The figure is the process's
   CPU time (every thread: physics, rendering, the recorder) recorded / plain. Target: <= 1.05.
   The same with the camera off shows where the cost goes.
2. Camera: a 640x480 frame of the simulator encoded as JPEG and written to the MCAP file as fast
   as one thread can: frames per second and ms per frame (30 fps needs < 33 ms on one core);
   and the recorder's camera reader at 30 Hz on the simulator (each frame a render of its own).
3. Telemetry: the loop-overhead task of ``bench/overhead.py`` (R rounds of a no-op tool against
   the scripted model server) with telemetry off and on (spans exported over OTLP/HTTP to
   ``tests/observe/otlp_receiver.py`` in its own process): CPU per round of the thread running
   the asyncio loop (the agent's own work) and of the whole process (the exporter's thread too).
   Targets: off, no change beyond noise (off is the code path of every run without an
   endpoint: nothing subscribed); on, <= +0.2 ms per round.

Usage: .venv/bin/python bench/observe.py [--window 6] [--repeats 3] [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loops import loopact_agent, per_round, run_loopact_task, script, stamp

ROOT = Path(__file__).resolve().parents[1]
CAMERA_HZ = 1.0  # record.camera_hz's default


async def drive_window(window_s: float, record: Path | None, camera_hz: float) -> float:
    """Process CPU seconds of ``window_s`` wall seconds of the robot driving in a circle."""
    from loopact.observe.recorder import Recorder
    from loopact.observe.tap import tap_robot
    from loopact.sim import open_sim

    session = await open_sim(speed=1.0)
    recorder = tap = unlisten = None
    try:
        if record is not None:
            recorder = Recorder(camera=(0.1, 0.35))
            recorder.open_file(record)
            unlisten = session.robot.sim.listen_truth(recorder.on_truth)  # type: ignore[attr-defined]
            tap = tap_robot(recorder, session.robot, 10.0, camera_hz)
        drive = next(t for t in session.tools if t.name == "drive")
        cpu0 = time.process_time()
        task = asyncio.ensure_future(
            drive(linear_mps=0.2, angular_dps=20.0, duration_s=60.0)  # type: ignore[operator]
        )
        await asyncio.sleep(window_s)
        cpu = time.process_time() - cpu0
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        if tap is not None:
            await tap.close()
        if unlisten is not None:
            unlisten()
        if recorder is not None:
            recorder.close()
        await session.close()
    return cpu


async def bench_recording(window_s: float, repeats: int) -> None:
    plain: list[float] = []
    recorded: list[float] = []
    no_camera: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            plain.append(await drive_window(window_s, None, 0.0))
            recorded.append(await drive_window(window_s, Path(tmp) / f"r{i}.mcap", CAMERA_HZ))
            no_camera.append(await drive_window(window_s, Path(tmp) / f"n{i}.mcap", 0.0))
        size = (Path(tmp) / "r0.mcap").stat().st_size
    base = statistics.median(plain)
    print(f"recording, {window_s:g} s driving, {repeats} runs each (median process CPU):")
    print(f"  plain                 {base:6.2f} s")
    print(f"  (each run: {', '.join(f'{v:.2f}' for v in plain)} s)")
    for name, values in (
        (f"recorded (camera {CAMERA_HZ:g} Hz)", recorded),
        ("recorded, no camera", no_camera),
    ):
        med = statistics.median(values)
        print(f"  {name:22}{med:6.2f} s   ratio {med / base:5.3f}   (target <= 1.05)")
    rate = size / 1e3 / window_s
    print(f"  file: {rate:.0f} kB per second of driving with the camera at {CAMERA_HZ:g} Hz")


async def bench_camera(seconds: float) -> None:
    from loopact.observe.messages import encode_jpeg
    from loopact.observe.recorder import Recorder
    from loopact.observe.tap import tap_robot
    from loopact.sim import open_sim

    session = await open_sim(speed=1.0)
    try:
        frame = await session.robot.get_frame()
        with tempfile.TemporaryDirectory() as tmp:
            recorder = Recorder()
            recorder.open_file(Path(tmp) / "c.mcap")
            n, t0, cpu0 = 0, time.perf_counter(), time.thread_time()
            while time.perf_counter() - t0 < seconds:
                recorder.record_frame(time.time(), encode_jpeg(frame.rgb, 75))
                n += 1
            wall, cpu = time.perf_counter() - t0, time.thread_time() - cpu0
            print(
                f"camera {frame.rgb.shape[1]}x{frame.rgb.shape[0]} JPEG + MCAP write, one thread:"
            )
            print(f"  {n / wall:6.1f} frames/s, {cpu / n * 1000:5.2f} ms CPU per frame "
                  f"(30 fps uses {cpu / n * 30 * 100:4.1f} % of one core)")  # fmt: skip
            tap = tap_robot(recorder, session.robot, 10.0, 30.0)
            await asyncio.sleep(seconds)
            frames = tap.frames
            await tap.close()
            recorder.close()
            print(f"  the camera reader at 30 Hz on the simulator: {frames / seconds:5.1f} fps "
                  "(each frame a render of its own)")  # fmt: skip
    finally:
        await session.close()


class _Timed:
    """The telemetry subscriber, with the loop thread's CPU spent inside it added up."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cpu_s = 0.0

    def __call__(self, event: Any) -> None:
        t0 = time.thread_time()
        self.inner(event)
        self.cpu_s += time.thread_time() - t0


async def loop_rounds(rounds: int, endpoint: str | None) -> tuple[list[float], float]:
    """Per-round CPU of the loop thread, and the CPU the span builder itself took (s)."""
    from loopact.observe.otel import Telemetry
    from loopact.testing import ScriptedModelServer

    stamps: list[tuple[float, float]] = []
    with ScriptedModelServer(script(rounds)) as server, tempfile.TemporaryDirectory() as ws:
        agent = loopact_agent(server.base_url, rounds, Path(ws), lambda: stamps.append(stamp()))
        telemetry = timed = None
        if endpoint is not None:

            def subscribe(fn: Any) -> Any:
                nonlocal timed
                timed = _Timed(fn)
                return agent.bus.subscribe(timed)

            telemetry = Telemetry(endpoint, subscribe, provider="openai", model="bench")
        await run_loopact_task(agent)
        await agent.close()
        if telemetry is not None:
            telemetry.close()
    return per_round(stamps)[1], timed.cpu_s if timed is not None else 0.0


async def bench_telemetry(rounds: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        receiver = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/observe/otlp_receiver.py"), tmp],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert receiver.stdout is not None
            endpoint = f"http://127.0.0.1:{receiver.stdout.readline().split()[1]}/v1/traces"
            runs: dict[str, list[float]] = {"baseline": [], "off": [], "on": []}
            inside = 0.0
            names = list(runs)
            for i in range(repeats):
                for name in names[i % 3 :] + names[: i % 3]:  # each variant first in turn
                    cpu, spent = await loop_rounds(rounds, endpoint if name == "on" else None)
                    runs[name].extend(cpu)
                    inside += spent
        finally:
            receiver.terminate()
            receiver.wait(timeout=10)
    base = statistics.median(runs["baseline"]) * 1000
    print(f"telemetry, {rounds} rounds x {repeats} tasks per variant (loop thread CPU per round):")
    for name, cpu in runs.items():
        med = statistics.median(cpu) * 1000
        print(f"  {name:9} median {med:6.3f} ms  ({med - base:+.3f} ms against baseline)")
    per_round_ms = inside / (rounds * repeats) * 1000
    print(f"  the span builder itself (timed inside, on): {per_round_ms:.3f} ms per round")
    print("  baseline and off run the same code (nothing subscribed): their gap is the noise")
    print("  targets: off no change beyond noise; on <= +0.2 ms per round")


async def whole_runs(repeats: int) -> None:
    """``loopact run --once`` (move, look, reply) as a user runs it, with and without
    ``--record``: CPU of the whole process, start-up included."""
    import resource

    from loopact.testing import ScriptedModelServer

    turns = [
        {"tool_calls": [{"id": "c1", "name": "move_forward", "arguments": {"distance_m": 0.5}}]},
        {"tool_calls": [{"id": "c2", "name": "seewhat", "arguments": {}}]},
        {"text": "done"},
    ]
    cpu: dict[str, list[float]] = {"plain": [], "recorded": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for name in ("plain", "recorded") if i % 2 == 0 else ("recorded", "plain"):
                with ScriptedModelServer(turns) as server:
                    args = ["run", "--robot", "sim", "--once", "go", "--no-web", "--no-memory"]
                    args += ["--base-url", server.base_url, "--model", "m", "--api-key", "k" * 20]
                    args += ["--workspace", f"{tmp}/ws"]
                    if name == "recorded":
                        args += ["--record", f"{tmp}/run.mcap"]
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    subprocess.run(
                        [sys.executable, "-m", "loopact", *args],
                        cwd=tmp,
                        capture_output=True,
                        check=True,
                        timeout=300,
                    )
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(
                    after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                )
    plain, recorded = statistics.median(cpu["plain"]), statistics.median(cpu["recorded"])
    print(f"whole runs (loopact run --once: move 0.5 m, seewhat, reply), {repeats} each:")
    print(
        f"  plain {plain:5.2f} s CPU, recorded {recorded:5.2f} s CPU: ratio {recorded / plain:.3f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--only", choices=("telemetry", "camera", "recording"), default=None)
    args = parser.parse_args()
    if args.only in (None, "telemetry"):
        await bench_telemetry(args.rounds, max(args.repeats * 4, 12))
    if args.only in (None, "camera"):
        await bench_camera(3.0)
    if args.only in (None, "recording"):
        await bench_recording(args.window, args.repeats)
        await whole_runs(args.repeats)


if __name__ == "__main__":
    asyncio.run(main())
