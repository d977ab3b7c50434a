"""The run on Foxglove channels: an MCAP file, the live view, or both (SPEC H3, A8; issue 44).

A :class:`Recorder` owns one ``foxglove.Context`` (foxglove-sdk, MIT) and its channels
(:mod:`loopact.observe.topics`); sinks attach to the context: :meth:`Recorder.open_file` (an
MCAP file) and :meth:`Recorder.serve` (Foxglove's WebSocket protocol on loopback). Whatever is
logged goes to every sink, so the file and the live view carry the same channels.

What feeds it: :meth:`on_event` (subscribed to the event bus: every agent event, tool images,
governor decisions), :meth:`record_pose` and :meth:`record_frame` (the robot, from
:func:`loopact.observe.tap.tap_robot`), :meth:`on_truth` (the simulator's ground-truth
samples, the very lines of its sim log), :meth:`record_site`, :meth:`record_map` and
:meth:`record_path`. Each is safe to call from any thread (the simulator's samples arrive on its
physics thread); a message that cannot be recorded is logged once and skipped, never raised
into the agent.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import foxglove
import numpy as np
import numpy.typing as npt
from foxglove.channels import (
    CompressedImageChannel,
    FrameTransformsChannel,
    GridChannel,
    LogChannel,
    PoseInFrameChannel,
    PosesInFrameChannel,
    SceneUpdateChannel,
)

from loopact.events import Event, EventType
from loopact.observe import messages as fm
from loopact.observe import topics as tp

log = logging.getLogger(__name__)

#: The JSON schema of :data:`~loopact.observe.topics.EVENTS`: an event as in the trace.
EVENT_SCHEMA = {
    "title": "loopact.Event",
    "type": "object",
    "properties": {
        "ts": {"type": "number", "description": "Unix seconds"},
        "type": {"type": "string", "description": "event type (docs/trace.md)"},
        "task_id": {"type": ["string", "null"]},
    },
    "required": ["ts", "type"],
}
SIM_LOG_SCHEMA = {
    "title": "loopact.SimSample",
    "type": "object",
    "properties": {
        "t_s": {"type": "number", "description": "simulated seconds"},
        "x_m": {"type": "number"},
        "y_m": {"type": "number"},
        "yaw_deg": {"type": "number"},
    },
    "required": ["t_s", "x_m", "y_m", "yaw_deg"],
}
#: The simulator's sim log lines as they are (``/sim/log``), beside their PoseInFrame.
SIM_LOG = "/sim/log"


class Recorder:
    """Foxglove channels of one run; sinks are added with :meth:`open_file` and :meth:`serve`.

    Args:
        camera: ``(forward_m, height_m)`` of the camera on the robot, for the ``base_link ->
            camera`` transform; None without a camera.
    """

    def __init__(self, camera: tuple[float, float] | None = None) -> None:
        self.context = foxglove.Context()
        ctx = self.context
        self.camera = camera
        self._tf = FrameTransformsChannel(tp.TF, context=ctx)
        self._odom = PoseInFrameChannel(tp.ODOM_POSE, context=ctx)
        self._camera = CompressedImageChannel(tp.CAMERA, context=ctx)
        self._tool_image = CompressedImageChannel(tp.TOOL_IMAGE, context=ctx)
        self._log = LogChannel(tp.LOG, context=ctx)
        self._events = foxglove.Channel(tp.EVENTS, schema=EVENT_SCHEMA, context=ctx)
        self._governor = SceneUpdateChannel(tp.GOVERNOR, context=ctx)
        self._truth = PoseInFrameChannel(tp.TRUTH_POSE, context=ctx)
        self._sim_log = foxglove.Channel(SIM_LOG, schema=SIM_LOG_SCHEMA, context=ctx)
        self._objects = SceneUpdateChannel(tp.TRUTH_OBJECTS, context=ctx)
        self._site = SceneUpdateChannel(tp.SITE, context=ctx)
        self._map = GridChannel(tp.MAP, context=ctx)
        self._plan = PosesInFrameChannel(tp.PLAN, context=ctx)
        self._lock = threading.Lock()
        self._calls: dict[str, float] = {}  # tool call id -> its tool_call's ts
        self._pose: tuple[float, float] | None = None  # last odometry (x, y), for markers
        self._decisions = 0
        self._failed: set[str] = set()
        self._mcap: Any = None
        self._server: Any = None
        self.path: Path | None = None
        self.url: str | None = None
        self.counts: Counter[str] = Counter()

    # ---- sinks -------------------------------------------------------------------------------

    def open_file(self, path: Path) -> None:
        """Record into the MCAP file ``path`` (written over; parent folders created).

        Raises:
            OSError: The file cannot be created.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._mcap = foxglove.open_mcap(path, allow_overwrite=True, context=self.context)
        except Exception as exc:  # the SDK raises its own error types for I/O
            raise OSError(f"cannot write {path}: {exc}") from None
        self.path = path

    def write_metadata(self, name: str, values: dict[str, Any]) -> None:
        """An MCAP metadata record (``loopact``: version, provider, model, robot); only the
        file has it. Values are written as text; None values are left out."""
        if self._mcap is not None:
            self._mcap.write_metadata(name, {k: str(v) for k, v in values.items() if v is not None})

    def serve(self, host: str, port: int) -> str:
        """Serve the channels live over Foxglove's WebSocket protocol; returns ``ws://...``.

        The protocol has no token, so only a loopback address is accepted (the web console's
        rule: beyond loopback only with a token; docs/observability.md, "Live view").

        Raises:
            ConfigError: ``host`` is not loopback (``foxglove.host``), or the port cannot be
                bound (``foxglove.port``).
        """
        from loopact.observe.live import start_live

        self._server, self.url = start_live(self.context, host, port)
        return self.url

    def close(self) -> None:
        """Finish the file and stop the live view; idempotent."""
        with self._lock:
            mcap, self._mcap = self._mcap, None
            server, self._server = self._server, None
        if mcap is not None:
            try:
                mcap.close()
            except Exception:
                log.exception("could not finish the MCAP file %s", self.path)
        if server is not None:
            server.stop()

    # ---- agent events ------------------------------------------------------------------------

    def on_event(self, event: Event | dict[str, Any]) -> None:
        """Record one agent event (an event bus subscriber, or a trace line as a dict)."""
        ev = event.to_json() if isinstance(event, Event) else dict(event)
        kind = str(ev.get("type", "?"))
        if kind in tp.SKIPPED_TYPES:
            return
        ts = float(ev.get("ts") or time.time())
        if kind == EventType.TOOL_CALL and isinstance(ev.get("id"), str):
            self._calls[ev["id"]] = ts
        elif kind == EventType.TOOL_RESULT and isinstance(ev.get("id"), str):
            started = self._calls.pop(ev["id"], None)
            if started is not None:
                ev["duration_s"] = round(ts - started, 6)
        elif kind == EventType.TOOL_IMAGE:
            self._tool_image_of(ev, ts)
        elif kind == EventType.GOVERNOR:
            self._decision(ev, ts)
        elif kind == EventType.ROBOT_STATE and _numbers(ev, "x_m", "y_m"):
            self._pose = (float(ev["x_m"]), float(ev["y_m"]))
        t = fm.ns(ts)
        self._put(
            tp.LOG,
            lambda: self._log.log(
                fm.log_line(ts, tp.level_of(ev), kind, tp.summary(ev), ev.get("task_id")),
                log_time=t,
            ),
        )
        slim = {k: v for k, v in ev.items() if k != "data_b64"}
        self._put(tp.EVENTS, lambda: self._events.log(_json_bytes(slim), log_time=t))

    def _tool_image_of(self, ev: dict[str, Any], ts: float) -> None:
        data = ev.get("data_b64")
        if not isinstance(data, str) or ev.get("media_type", "image/jpeg") != "image/jpeg":
            return
        try:
            jpeg = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return
        self._put(
            tp.TOOL_IMAGE,
            lambda: self._tool_image.log(fm.jpeg_image(ts, jpeg), log_time=fm.ns(ts)),
        )

    def _decision(self, ev: dict[str, Any], ts: float) -> None:
        self._decisions += 1
        marker = fm.decision_marker(
            ts,
            self._decisions,
            str(ev.get("decision", "?")),
            str(ev.get("reason", "")),
            str(ev.get("detail", "")),
            self._pose,
        )
        self._put(tp.GOVERNOR, lambda: self._governor.log(marker, log_time=fm.ns(ts)))

    # ---- robot, simulator, site --------------------------------------------------------------

    def record_pose(
        self,
        wall_s: float,
        x_m: float,
        y_m: float,
        yaw_rad: float,
        head: tuple[float, float] | None = None,
    ) -> None:
        """One odometry pose (``odom``, metres and radians) and its transforms.

        Args:
            wall_s: Unix seconds of the reading.
            x_m: x in metres.
            y_m: y in metres.
            yaw_rad: Heading in radians.
            head: ``(pan_rad, tilt_rad)`` of the camera head (tilt down positive), or None.
        """
        self._pose = (x_m, y_m)
        camera = None
        if self.camera is not None:
            pan, tilt = head or (0.0, 0.0)
            camera = (self.camera[0], self.camera[1], pan, tilt)
        t = fm.ns(wall_s)
        pose = fm.pose_in_frame(wall_s, tp.ODOM_FRAME, x_m, y_m, yaw_rad)
        self._put(tp.ODOM_POSE, lambda: self._odom.log(pose, log_time=t))
        frames = fm.transforms(wall_s, x_m, y_m, yaw_rad, camera)
        self._put(tp.TF, lambda: self._tf.log(frames, log_time=t))

    def record_frame(self, wall_s: float, jpeg: bytes) -> None:
        """One camera frame (JPEG) taken at ``wall_s`` (Unix seconds)."""
        image = fm.jpeg_image(wall_s, jpeg)
        self._put(tp.CAMERA, lambda: self._camera.log(image, log_time=fm.ns(wall_s)))

    def on_truth(self, sample: dict[str, Any], wall_s: float | None = None) -> None:
        """One ground-truth sample of the simulator, a sim log line (``loopact.sim.simlog``):
        on ``/sim/ground_truth`` (PoseInFrame, ``map``), ``/sim/log`` (the line itself) and
        ``/sim/objects`` (when it has objects). ``wall_s``: its Unix time (default: the
        line's ``wall_s``, else now)."""
        when = wall_s if wall_s is not None else float(sample.get("wall_s") or time.time())
        t = fm.ns(when)
        pose = fm.pose_in_frame(
            when,
            tp.MAP_FRAME,
            float(sample["x_m"]),
            float(sample["y_m"]),
            np_radians(float(sample["yaw_deg"])),
        )
        self._put(tp.TRUTH_POSE, lambda: self._truth.log(pose, log_time=t))
        self._put(SIM_LOG, lambda: self._sim_log.log(_json_bytes(sample), log_time=t))
        objects = sample.get("objects") or {}
        if objects:
            update = fm.objects_update(when, objects)
            self._put(tp.TRUTH_OBJECTS, lambda: self._objects.log(update, log_time=t))

    def record_site(
        self,
        waypoints: dict[str, tuple[float, float]],
        geofence: Sequence[tuple[float, float]],
        frame: str = tp.MAP_FRAME,
        wall_s: float | None = None,
    ) -> None:
        """The site map: waypoints (name -> ``(x_m, y_m)``) and the geofence polygon."""
        when = time.time() if wall_s is None else wall_s
        update = fm.site_update(when, waypoints, geofence, frame)
        self._put(tp.SITE, lambda: self._site.log(update, log_time=fm.ns(when)))

    def record_map(
        self,
        cells: npt.NDArray[Any],
        resolution_m: float,
        origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
        frame: str = tp.MAP_FRAME,
        wall_s: float | None = None,
    ) -> None:
        """An occupancy map (``nav_msgs/OccupancyGrid`` values; see
        :func:`loopact.observe.messages.occupancy_grid`) on ``/map``.

        Raises:
            ValueError: ``cells`` is not 2-D or the resolution is not positive.
        """
        when = time.time() if wall_s is None else wall_s
        grid = fm.occupancy_grid(when, np.asarray(cells), resolution_m, origin, frame)
        self._put(tp.MAP, lambda: self._map.log(grid, log_time=fm.ns(when)))

    def record_path(
        self,
        points: Iterable[tuple[float, float, float]],
        frame: str = tp.MAP_FRAME,
        wall_s: float | None = None,
    ) -> None:
        """A planned path, ``(x_m, y_m, yaw_rad)`` per point, on ``/plan``."""
        when = time.time() if wall_s is None else wall_s
        poses = fm.path(when, list(points), frame)
        self._put(tp.PLAN, lambda: self._plan.log(poses, log_time=fm.ns(when)))

    # ---- internals -------------------------------------------------------------------------

    def _put(self, topic: str, write: Any) -> None:
        """Run one channel write; count it, or log its first failure per topic and go on."""
        try:
            write()
        except Exception:
            if topic not in self._failed:
                self._failed.add(topic)
                log.exception("recording on %s failed; the run goes on", topic)
            return
        self.counts[topic] += 1


def np_radians(deg: float) -> float:
    """Degrees to radians."""
    return float(np.radians(deg))


def _numbers(ev: dict[str, Any], *keys: str) -> bool:
    values = [ev.get(k) for k in keys]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _json_bytes(obj: Any) -> bytes:
    """Compact JSON of an event or sample; bytes and other odd values become text."""
    return json.dumps(obj, ensure_ascii=False, default=_default, separators=(",", ":")).encode()


def _default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)
