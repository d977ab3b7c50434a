"""Recording, the Foxglove live view and OpenTelemetry for a run (issue 44; SPEC H3, A8).

:func:`open_observe` (beside the trace, before anything connects) opens what ``record``,
``foxglove`` and ``telemetry`` ask for and subscribes it to the event bus;
:meth:`Observe.attach` then gives it the robot (pose, TF and camera readers, the site, the
simulator's ground truth) and turns the governor's decisions into ``governor`` events. With
none of them on, nothing is imported and nothing subscribes ("free when off"); the governor
events are emitted in every run (the trace keeps them too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console

from loopact._version import __version__
from loopact.config import Config
from loopact.errors import ConfigError
from loopact.events import EventBus, EventType

if TYPE_CHECKING:
    from loopact.agent import Agent
    from loopact.observe.recorder import Recorder
    from loopact.robot.session import RobotSession


@dataclass
class Observe:
    """What :func:`open_observe` opened.

    Attributes:
        recorder: The MCAP file and / or live view, or None.
        telemetry_endpoint: Where spans go, or None when telemetry is off.
    """

    cfg: Config
    stack: AsyncExitStack
    recorder: Recorder | None = None
    telemetry_endpoint: str | None = None
    _closers: list[Callable[[], Any]] = field(default_factory=list)

    async def attach(self, session: RobotSession | None, bus: EventBus, agent: Agent) -> None:
        """Give the robot to the recording and the governor's decisions to the bus."""
        if session is None:
            return
        governor = session.governor

        def decided(said: dict[str, Any]) -> None:
            bus.emit(EventType.GOVERNOR, agent.status().get("task_id"), **said)

        governor.on_decision = decided
        self.stack.callback(setattr, governor, "on_decision", None)
        if self.recorder is None:
            return
        from loopact.observe.tap import tap_robot

        mount = session.profile.camera
        self.recorder.camera = (mount.mount_forward_m, mount.mount_height_m)
        site = session.site
        self.recorder.record_site(
            {name: (w.x_m, w.y_m) for name, w in site.waypoints.items()},
            site.geofence,
            site.frame,
        )
        listen = getattr(getattr(session.robot, "sim", None), "listen_truth", None)
        if callable(listen):  # the simulator: its ground truth, the lines of its sim log
            self.stack.callback(listen(self.recorder.on_truth))
        rec = self.cfg.record
        tap = tap_robot(self.recorder, session.robot, rec.pose_hz, rec.camera_hz, rec.jpeg_quality)
        self.stack.push_async_callback(tap.close)


def open_observe(cfg: Config, bus: EventBus, stack: AsyncExitStack, console: Console) -> Observe:
    """Open the recording (``record.path``), the live view (``foxglove.enabled``) and the
    telemetry (``telemetry.otlp_endpoint`` or ``OTEL_EXPORTER_OTLP_*``) this run asks for;
    ``stack`` closes them (the MCAP file is finished, queued spans are flushed).

    Raises:
        ConfigError: The observe extra is missing, the MCAP file cannot be written
            (``record.path``), the live view's address is beyond loopback or taken
            (``foxglove.*``), or the OTLP settings are wrong (``telemetry.otlp_endpoint``).
    """
    from loopact.observe.otel import traces_endpoint

    observe = Observe(cfg, stack)
    endpoint = traces_endpoint(cfg.telemetry.otlp_endpoint, os.environ)
    if endpoint is not None:
        observe.telemetry_endpoint = endpoint
        _start_telemetry(cfg, bus, stack, endpoint)
        console.print(f"telemetry: spans to {endpoint}", highlight=False, markup=False)
    if cfg.record.path is None and not cfg.foxglove.enabled:
        return observe
    observe.recorder = _open_recorder(cfg, stack, console)
    stack.callback(bus.subscribe(observe.recorder.on_event))
    return observe


def _start_telemetry(cfg: Config, bus: EventBus, stack: AsyncExitStack, endpoint: str) -> None:
    from loopact.observe.otel import Telemetry, endpoint_server

    telemetry = Telemetry(
        endpoint,
        bus.subscribe,
        provider=cfg.model.provider,
        model=cfg.model.model,
        service_name=cfg.telemetry.service_name,
        version=__version__,
        agent_name=cfg.agent.name,
        server=endpoint_server(cfg.model.base_url),
    )
    stack.callback(telemetry.close)


def _open_recorder(cfg: Config, stack: AsyncExitStack, console: Console) -> Recorder:
    try:
        from loopact.observe.recorder import Recorder
    except ImportError as exc:
        key = "record.path" if cfg.record.path is not None else "foxglove.enabled"
        raise ConfigError(
            f"recording and the Foxglove live view need foxglove-sdk ({exc.name} is missing): "
            "pip install 'loopact[observe]'",
            key=key,
        ) from None
    recorder = Recorder()
    stack.callback(recorder.close)
    if cfg.record.path is not None:
        try:
            recorder.open_file(cfg.record.path.expanduser())
        except OSError as exc:
            raise ConfigError(f"record.path: {exc}", key="record.path") from None
        recorder.write_metadata(
            "loopact",
            {
                "loopact": __version__,
                "provider": cfg.model.provider,
                "model": cfg.model.model,
                "robot": cfg.robot.kind,
            },
        )
        console.print(f"recording: {cfg.record.path}", highlight=False, markup=False)
    if cfg.foxglove.enabled:
        url = recorder.serve(cfg.foxglove.host, cfg.foxglove.port)
        console.print(
            f"Foxglove live view: {url} (Foxglove > Open connection > Foxglove WebSocket)",
            highlight=False,
            markup=False,
        )
    return recorder
