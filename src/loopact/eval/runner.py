"""Run graded tasks on a fresh simulated robot each and grade them (``loopact eval``; issue 20).

A task run is composed exactly as ``loopact run --once`` composes one
(:func:`loopact.app.run.open_agent`): the configured model (or a recorded script served by
the scripted model server, or the local brain when no endpoint is configured, started once
for the whole suite), the MuJoCo robot with its governor, the built-in tools. Each run gets
its own folder with the simulator's pose log (``sim_log.jsonl``), the trace
(``trace.jsonl``) and the workspace, which the grader reads afterwards. Memory and the web
console are off so that runs do not influence each other; write tools are allowed (as with
``--yes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from loopact._compat import wait_within
from loopact.config import Config, MessagesConfig, TopicMessagesConfig
from loopact.errors import ConfigError, LoopactError
from loopact.eval.messages import TopicRecorder
from loopact.eval.task import Evidence, Limits, Task, Verdict
from loopact.events import EventBus, EventType
from loopact.llm.local.process import LocalBrain
from loopact.robot.session import RobotSession

log = logging.getLogger(__name__)

SETTLE_S = 1.5
"""Simulated seconds the robot is watched after a task ends, so the log shows it at rest."""


@dataclass(frozen=True)
class EvalOptions:
    """How a suite runs.

    Attributes:
        out_dir: Where each run's folder (``<task>/<n>/``) and the JSON report go.
        scripts: Folder of recorded scripts (``<task id>.json``) replayed by the scripted
            model server instead of the configured model, or None.
        repeat: Runs per task (success rates).
        sim_speed: Simulated seconds per wall second.
        time_factor: Multiplies each task's wall-clock bound (slow models).
        record: Write a replay script of every passing run here (``<task id>.json``), or None.
    """

    out_dir: Path
    scripts: Path | None = None
    repeat: int = 1
    sim_speed: float = 4.0
    time_factor: float = 1.0
    record: Path | None = None


@dataclass
class TaskResult:
    """One graded run.

    Attributes:
        task: The task.
        run: 1-based run number (``--repeat``).
        passed: The grader's decision.
        why: The grader's reason (or what stopped the run).
        status: How the agent's task ended (``completed``, ``bounded``, ``preempted``,
            ``failed``), or ``timeout`` / ``error``.
        time_s: Wall time of the task, seconds (from the instruction to its end).
        model_requests: Model requests the trace recorded.
        input_tokens: Prompt tokens over those requests.
        output_tokens: Output tokens.
        tool_calls: Tool calls.
        reply: The answer (cut to 300 characters).
        folder: The run's folder (trace, sim log, workspace).
    """

    task: Task
    run: int
    passed: bool
    why: str
    status: str
    time_s: float = 0.0
    model_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    reply: str = ""
    folder: Path = field(default_factory=Path)

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, Any]:
        """The JSON report's entry."""
        return {
            "task": self.task.id,
            "category": self.task.category,
            "lang": self.task.lang,
            "instruction": self.task.instruction,
            "run": self.run,
            "passed": self.passed,
            "why": self.why,
            "status": self.status,
            "time_s": round(self.time_s, 2),
            "model_requests": self.model_requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": self.tool_calls,
            "reply": self.reply,
            "folder": str(self.folder),
        }


class Suite:
    """Runs tasks one after another, sharing what can be shared (the local brain, the MQTT
    broker) and nothing that a grade depends on (each run has its own robot and folder).

    Args:
        cfg: The loaded configuration (``loopact eval`` flags applied).
        options: How to run.
    """

    def __init__(self, cfg: Config, options: EvalOptions) -> None:
        self.cfg = cfg
        self.options = options
        self._stack = AsyncExitStack()
        self._brain: LocalBrain | None = None
        self._brain_cfg: Config | None = None
        self._broker: Any = None

    async def __aenter__(self) -> Suite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    @property
    def model_label(self) -> str:
        """What answers: ``scripts <dir>``, ``local brain <file>`` or ``<provider> <model>``."""
        if self.options.scripts is not None:
            return f"recorded scripts {self.options.scripts}"
        if self._brain_cfg is not None:
            return f"local brain {self._brain_cfg.model.model}"
        return f"{self.cfg.model.provider} {self.cfg.model.model}"

    async def run(
        self, tasks: list[Task], on_result: Callable[[TaskResult], None] | None = None
    ) -> list[TaskResult]:
        """Run every task ``options.repeat`` times; ``on_result`` hears each as it ends."""
        results = []
        for n in range(1, self.options.repeat + 1):
            for task in tasks:
                result = await self.run_one(task, n)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        return results

    async def run_one(self, task: Task, n: int = 1) -> TaskResult:
        """Run and grade one task; never raises for a failing run (the result says why).

        Raises:
            ConfigError: The configuration cannot start an agent at all (the whole suite
                would fail the same way).
        """
        folder = self.options.out_dir / task.id / str(n)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workspace").mkdir(exist_ok=True)
        server = None
        if self.options.scripts is not None:
            path = self.options.scripts / f"{task.id}.json"
            if not path.is_file():
                return TaskResult(
                    task, n, False, f"no recorded script {path}", "error", folder=folder
                )
            from loopact.testing import ScriptedModelServer

            server = ScriptedModelServer(path).start()
        try:
            return await self._run_graded(task, n, folder, server)
        finally:
            if server is not None:
                server.stop()

    async def _run_graded(self, task: Task, n: int, folder: Path, server: Any) -> TaskResult:
        cfg = await self._task_config(task, folder, server)
        recorder = None
        if task.messages:
            recorder = TopicRecorder(self._broker.url, task.messages)
            await recorder.start()
        try:
            run = await self._run_agent(cfg, task, folder)
        finally:
            messages = await recorder.stop() if recorder is not None else []
        result = run.result(task, n, folder)
        if run.crashed is None:
            verdict = self._grade(task, cfg, folder, messages, run)
            result.passed, result.why = verdict.passed, verdict.why
        if server is not None:
            with contextlib.suppress(LoopactError):
                server.assert_consumed()
            if server.failures and result.passed:
                result.passed = False
                result.why = "the replay diverged from its script: " + "; ".join(server.failures)
        if result.passed and self.options.record is not None:
            _record(folder / "trace.jsonl", self.options.record / f"{task.id}.json")
        return result

    async def _task_config(self, task: Task, folder: Path, server: Any) -> Config:
        base = self.cfg
        model = base.model
        if server is not None:
            model = model.model_copy(
                update={
                    "base_url": server.base_url,
                    "model": "scripted",
                    "api_key": pydantic.SecretStr("scripted"),
                }
            )
        elif not base.endpoint_configured:
            base = await self._local_brain()
            model = base.model
        bound_s = task.timeout_s * self.options.time_factor
        bounds = base.agent.bounds.model_copy(
            update={"task_timeout_s": max(base.agent.bounds.task_timeout_s, bound_s)}
        )
        update: dict[str, Any] = {
            "model": model,
            "robot": base.robot.model_copy(
                update={
                    "kind": "sim",
                    "sim_speed": self.options.sim_speed,
                    "scenario": task.scenario,
                    "site": "sim_room",  # the scenario's own (open_sim)
                    "map": None,
                    "sim_log": folder / "sim_log.jsonl",
                }
            ),
            "agent": base.agent.model_copy(
                update={"workspace": folder / "workspace", "mode": "task", "bounds": bounds}
            ),
            "trace": base.trace.model_copy(update={"path": folder / "trace.jsonl"}),
            "memory": base.memory.model_copy(update={"enabled": False}),
            "web": base.web.model_copy(update={"enabled": False}),
            "confirm": base.confirm.model_copy(update={"auto_approve": True}),
            "nodes": base.nodes.model_copy(update={"transport": "none"}),
            "messages": MessagesConfig(),
            "voice": base.voice.model_copy(
                update={"enabled": False, "audio_in": None, "audio_out": None}
            ),
        }
        if task.messages:
            broker = await self._mqtt_broker()
            update["messages"] = MessagesConfig(
                mqtt=TopicMessagesConfig(allow_to=list(task.messages))
            )
            update["mqtt"] = base.mqtt.model_copy(update={"broker": broker.url})
        return base.model_copy(update=update)

    async def _local_brain(self) -> Config:
        """Start the offline brain once for the suite (as ``loopact run`` would per run)."""
        if self._brain_cfg is None:
            from loopact.app.local import start_local_brain

            self._brain_cfg, self._brain = await start_local_brain(
                self.cfg, self._stack, EventBus()
            )
        return self._brain_cfg

    async def _mqtt_broker(self) -> Any:
        """A real MQTT broker on a free loopback port for the message tasks, started once.

        Raises:
            ConfigError: Neither mosquitto nor amqtt is installed.
        """
        if self._broker is None:
            from loopact.testing.mqtt_broker import MqttBroker

            broker = MqttBroker(self.options.out_dir / ".broker")
            try:
                await asyncio.to_thread(broker.start)
            except (OSError, RuntimeError) as exc:
                raise ConfigError(
                    f"the message tasks need an MQTT broker: {exc} (apt-get install "
                    "mosquitto, or pip install amqtt; or leave them out with --task)",
                    key="eval",
                ) from None
            self._stack.callback(broker.stop)
            self._broker = broker
        return self._broker

    async def _run_agent(self, cfg: Config, task: Task, folder: Path) -> _Run:
        from loopact.app.run import open_agent

        run = _Run()
        bound_s = cfg.agent.bounds.task_timeout_s + 30.0
        try:
            async with AsyncExitStack() as stack:
                cfg, opened = await open_agent(
                    cfg,
                    stack,
                    EventBus(),
                    once=task.instruction,
                    config_source=None,
                    interactive=False,
                    local_brain=self._brain if self._brain is not None else False,
                    mcp_servers=False,
                )
                session = opened.body.session
                assert session is not None
                run.limits = _limits(session)
                agent = opened.agent
                t0 = time.perf_counter()
                main = asyncio.ensure_future(agent.run_task(task.instruction, source="eval"))
                watcher = None
                if task.interrupt is not None:
                    watcher = asyncio.ensure_future(_interrupt(agent, session, task, run))
                try:
                    outcome = await wait_within(main, bound_s)
                    run.status = outcome.status
                except asyncio.TimeoutError:
                    run.status = "timeout"
                    run.crashed = f"no end after {bound_s:.0f} s (wall clock)"
                finally:
                    run.time_s = time.perf_counter() - t0
                    if watcher is not None:
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await watcher
                await session.stop("eval: task over")
                await session.robot.clock.sleep(SETTLE_S)
        except ConfigError:
            raise
        except (LoopactError, OSError) as exc:
            run.status, run.crashed = "error", f"{type(exc).__name__}: {exc}"
        run.read_trace(folder / "trace.jsonl")
        return run

    def _grade(
        self, task: Task, cfg: Config, folder: Path, messages: list[dict[str, str]], run: _Run
    ) -> Verdict:
        from loopact.sim.describe import describe_world
        from loopact.sim.simlog import read_sim_log

        try:
            poses = list(read_sim_log(folder / "sim_log.jsonl"))
        except (OSError, ValueError) as exc:
            return Verdict(False, f"no ground truth: {exc}")
        if not poses:
            return Verdict(False, "no ground truth: the sim log is empty")
        assert run.limits is not None
        evidence = Evidence(
            world=describe_world(cfg.robot.scenario),
            scenario=cfg.robot.scenario,
            poses=poses,
            events=run.events,
            workspace=folder / "workspace",
            messages=messages,
            limits=run.limits,
            interrupt_t_s=run.interrupt_t_s,
        )
        try:
            return task.grader(evidence)
        except (KeyError, ValueError, TypeError) as exc:  # a grader bug must not stop the suite
            log.exception("grader of %s failed", task.id)
            return Verdict(False, f"grader error: {type(exc).__name__}: {exc}")


@dataclass
class _Run:
    """What one agent run left (filled in as it goes)."""

    status: str = "error"
    crashed: str | None = None
    time_s: float = 0.0
    interrupt_t_s: float | None = None
    limits: Limits | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def read_trace(self, path: Path) -> None:
        from loopact.trace import read_trace

        with contextlib.suppress(OSError, ValueError):
            self.events = list(read_trace(path))

    def result(self, task: Task, n: int, folder: Path) -> TaskResult:
        usage = [
            e.get("usage") or {} for e in self.events if e.get("type") == EventType.MODEL_RESPONSE
        ]
        replies = [e.get("text") or "" for e in self.events if e.get("type") == EventType.REPLY]
        return TaskResult(
            task,
            n,
            passed=False,
            why=self.crashed or "",
            status=self.status,
            time_s=self.time_s,
            model_requests=sum(1 for e in self.events if e.get("type") == EventType.MODEL_REQUEST),
            input_tokens=sum(int(u.get("input_tokens") or 0) for u in usage),
            output_tokens=sum(int(u.get("output_tokens") or 0) for u in usage),
            tool_calls=sum(1 for e in self.events if e.get("type") == EventType.TOOL_CALL),
            reply=(replies[-1] if replies else "")[:300],
            folder=folder,
        )


def _limits(session: RobotSession) -> Limits:
    lim = session.profile.limits
    return Limits(
        max_linear_mps=lim.max_linear_mps,
        max_angular_dps=lim.max_angular_dps,
        geofence=tuple((float(x), float(y)) for x, y in session.site.geofence),
        robot_radius_m=session.profile.footprint_radius_m,
    )


async def _interrupt(agent: Any, session: RobotSession, task: Task, run: _Run) -> None:
    """Send the task's interrupt once the robot has truly moved far enough (ground truth)."""
    assert task.interrupt is not None
    robot = session.robot
    p0 = await robot.get_pose()
    while True:
        p = await robot.get_pose()
        if math.hypot(p.x_m - p0.x_m, p.y_m - p0.y_m) >= task.interrupt.after_moved_m:
            break
        await robot.clock.sleep(0.05)
    run.interrupt_t_s = robot.clock.now()
    agent.submit(task.interrupt.text, source="eval")


def _record(trace: Path, out: Path) -> None:
    """Write the replay script of a passing run (``loopact trace --to-script``, SPEC H3)."""
    from loopact.trace import read_trace, to_script

    try:
        script = to_script(list(read_trace(trace)))
    except (OSError, ValueError) as exc:
        log.warning("could not record %s: %s", trace, exc)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(script, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
