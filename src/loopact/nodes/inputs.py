"""Agent side of the input-node protocol: accumulate and latest caches (SPEC C3, C4).

:class:`InputHub` watches ``/<agent>/input/*/info``, subscribes each input's data topic and
keeps, per input, either every message since the last injection (``accumulate``, bounded: the
oldest are dropped and counted under a flood) or only the newest (``latest``). New
accumulate-mode data becomes one snapshot user message (:meth:`InputHub.take_snapshot`) that
the agent injects into the conversation at the next round boundary, and each arrival calls
``on_new`` so that an idle continuous-mode agent wakes for it (SPEC A7); latest-mode data is read
on demand (:meth:`InputHub.latest`, the ``read_input`` and ``seewhat`` tools) and appears in a
snapshot only as a one-line status unless the input asks to be injected. Images never ride
along in every round.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import ProtocolError
from loopact.events import EventBus, EventType
from loopact.llm.messages import Image, Message
from loopact.nodes.connector import Connector, ImageData, Payload, PayloadKind, Subscription
from loopact.nodes.heartbeat import HeartbeatWatch
from loopact.nodes.protocol import (
    DEFAULT_AGENT_NAME,
    DROP_AFTER_S,
    InputInfo,
    input_data_topic,
    name_from_topic,
)
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.tools.builtin.frames import keep_for_plan
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)

MAX_TEXT_CHARS = 4000
"""A text/JSON message longer than this is cut (memory and context bound)."""


@dataclass
class _Input:
    info: InputInfo
    last_beat_s: float
    sub: Subscription | None = None
    items: deque[Any] = field(default_factory=deque)
    dropped: int = 0
    received: int = 0
    latest: Any = None
    latest_s: float = 0.0
    injected_latest_s: float = 0.0


class InputHub(HeartbeatWatch):
    """Discover inputs, cache their data, build snapshot messages (SPEC C3).

    Args:
        connector: The transport.
        agent: The agent name (topic prefix).
        bus: Where to emit ``node_*`` events (None: log only).
        max_accumulate: Messages kept per accumulate-mode input between injections.
        drop_after_s: Heartbeat silence after which an input is forgotten, seconds.
        on_new: Called (on the event loop thread) each time accumulate-mode data arrives,
            e.g. ``agent.wake``; None for nobody.
    """

    _kind = "input"
    _logger = logger
    _error_log = "input on %s: %s"
    _check_failed_log = "input check failed"
    _reaper_name = "loopact-inputs-reaper"
    _reap_period_s = 0.25

    def __init__(
        self,
        connector: Connector,
        agent: str = DEFAULT_AGENT_NAME,
        bus: EventBus | None = None,
        max_accumulate: int = 50,
        drop_after_s: float = DROP_AFTER_S,
        on_new: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(connector, agent, bus, drop_after_s)
        self.max_accumulate = max_accumulate
        self.on_new = on_new
        self.inputs: dict[str, _Input] = {}

    def _release(self) -> None:
        """Unsubscribe every input's data topic and forget the inputs (on :meth:`stop`)."""
        for inp in self.inputs.values():
            if inp.sub is not None:
                inp.sub.close()
        self.inputs.clear()

    def _on_heartbeat(self, topic: str, payload: Payload) -> None:
        name = name_from_topic(topic, self.prefix, "/info")
        if payload == "":  # an empty heartbeat: the input node left (MQTT: its last will)
            self._forget(name, "the node went offline")
            return
        try:
            if not isinstance(payload, str):
                raise ProtocolError("heartbeat is not a string message")
            info = InputInfo.parse(payload, name)
        except ProtocolError as exc:
            self._report_error(topic, f"invalid input heartbeat, input ignored: {exc}")
            return
        self._errors.pop(topic, None)
        now = time.monotonic()
        inp = self.inputs.get(name)
        if inp is not None and (inp.info.kind, inp.info.mode) == (info.kind, info.mode):
            inp.last_beat_s = now
            inp.info = info
            return
        if inp is not None and inp.sub is not None:
            inp.sub.close()
        inp = _Input(info, now)
        inp.items = deque(maxlen=self.max_accumulate)
        kind: PayloadKind = "image" if info.kind == "image" else "string"

        def on_data(payload: Payload, name: str = name) -> None:
            self._on_data(name, payload)

        inp.sub = self.connector.subscribe(
            input_data_topic(self.agent, name),
            kind,
            on_data,
            depth=2 if kind == "image" else 50,
        )
        self.inputs[name] = inp
        logger.info("discovered input %s (%s, %s)", name, info.mode, info.kind)
        self._emit(
            EventType.NODE_ADDED, name=name, kind="input", mode=info.mode, data_kind=info.kind
        )

    def _on_data(self, name: str, payload: Payload) -> None:
        inp = self.inputs.get(name)
        if inp is None:
            return
        value: Any = payload
        if isinstance(payload, str):
            if len(payload) > MAX_TEXT_CHARS:
                value = payload[:MAX_TEXT_CHARS] + " [...cut]"
            if inp.info.kind == "json":
                try:
                    value = json.loads(payload)
                except json.JSONDecodeError:
                    value = payload[:MAX_TEXT_CHARS]
        elif inp.info.kind != "image":
            return
        inp.received += 1
        now = time.monotonic()
        inp.latest, inp.latest_s = value, now
        if inp.info.mode == "accumulate":
            if len(inp.items) == inp.items.maxlen:
                inp.dropped += 1
            inp.items.append(value)
            self._notify()

    def _notify(self) -> None:
        if self.on_new is None:
            return
        try:
            self.on_new()
        except Exception:  # a broken listener must not lose the data: it stays cached
            logger.exception("input listener %r failed", self.on_new)

    def check(self, now: float | None = None) -> None:
        """Forget inputs whose heartbeat has been silent for ``drop_after_s``."""
        now = time.monotonic() if now is None else now
        for name, inp in list(self.inputs.items()):
            if now - inp.last_beat_s > self.drop_after_s:
                self._forget(name, "no heartbeat")

    def _forget(self, name: str, reason: str) -> None:
        inp = self.inputs.pop(name, None)
        if inp is None:
            return
        if inp.sub is not None:
            inp.sub.close()
        self._emit(EventType.NODE_REMOVED, name=name, kind="input", reason=reason)

    # ---------------------------------------------------------------- reading
    def latest(self, name: str) -> tuple[Any, float] | None:
        """The newest value of input ``name`` and its age in seconds, or None."""
        inp = self.inputs.get(name)
        if inp is None or inp.latest is None:
            return None
        return inp.latest, time.monotonic() - inp.latest_s

    def latest_image(self, name: str | None = None) -> tuple[ImageData, str, float] | None:
        """The newest frame of ``name`` (or of the most recently updated image input).

        Returns:
            ``(image, input_name, age_s)`` or None when no image input has data.
        """
        candidates = [
            (inp.latest_s, n, inp)
            for n, inp in self.inputs.items()
            if inp.info.kind == "image"
            and isinstance(inp.latest, ImageData)
            and (name is None or n == name)
        ]
        if not candidates:
            return None
        stamp, n, inp = max(candidates, key=lambda c: c[0])
        return inp.latest, n, time.monotonic() - stamp

    def has_new(self) -> bool:
        """True when a snapshot would carry new data."""
        return any(self._pending(inp) for inp in self.inputs.values())

    def _pending(self, inp: _Input) -> bool:
        if inp.info.mode == "accumulate":
            return bool(inp.items) or inp.dropped > 0
        return inp.info.inject and inp.latest is not None and inp.latest_s > inp.injected_latest_s

    def take_snapshot(self, gate: ImageGate | None = None) -> Message | None:
        """One user message with every new accumulate-mode item (each exactly once), injected
        latest-mode values, and a one-line status of the other inputs; None if nothing is new.
        """
        if not self.has_new():
            return None
        lines = ["[input snapshot]"]
        images: list[Image] = []
        status: list[str] = []
        for name, inp in sorted(self.inputs.items()):
            if inp.info.mode == "accumulate" and (inp.items or inp.dropped):
                if inp.dropped:
                    lines.append(f"{name}: {inp.dropped} older messages dropped (flood)")
                for item in inp.items:
                    lines.append(f"{name}: {_as_text(item)}")
                    if isinstance(item, ImageData) and len(images) < 2:
                        images.extend(_gate(item, gate))
                inp.items.clear()
                inp.dropped = 0
            elif self._pending(inp):
                inp.injected_latest_s = inp.latest_s
                if isinstance(inp.latest, ImageData):
                    lines.append(f"{name}: newest image attached")
                    images.extend(_gate(inp.latest, gate))
                else:
                    lines.append(f"{name} (latest): {_as_text(inp.latest)}")
            elif inp.latest is not None:
                age = time.monotonic() - inp.latest_s
                status.append(f"{name} ({inp.info.kind}, latest, {age:.1f} s old)")
        if status:
            lines.append("other inputs (read on demand): " + ", ".join(status))
        return Message.user("\n".join(lines), tuple(images))


def _as_text(value: Any) -> str:
    if isinstance(value, ImageData):
        h, w = value.rgb.shape[:2]
        return f"<image {w}x{h}>"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)[:MAX_TEXT_CHARS]


def _gate(img: ImageData, gate: ImageGate | None) -> list[Image]:
    result = (gate or ImageGate()).process(img.rgb)
    return [result.image] if result.image is not None else []


def make_input_tools(hub: InputHub, gate: ImageGate | None = None, *, seewhat: bool) -> list[Tool]:
    """Tools that read latest-mode inputs on demand (SPEC C3, D5).

    Args:
        hub: The input hub.
        gate: Image gate for frames handed to the model.
        seewhat: Also add ``seewhat`` (the newest camera-input frame) — for agents without a
            robot camera, whose own ``seewhat`` would clash.
    """
    image_gate = gate or ImageGate()

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=5)
    async def read_input(name: str) -> ToolResult:
        """Read the newest value of a latest-mode input (sensor) by name.

        Args:
            name: The input's name.
        """
        got = hub.latest(name)
        if got is None:
            known = ", ".join(sorted(hub.inputs)) or "none"
            return ToolResult.failure(f"input {name!r} has no data (known inputs: {known})")
        value, age = got
        if isinstance(value, ImageData):
            images = _gate(value, image_gate)
            return ToolResult.success(
                f"newest frame of {name}", images=images, age_s=round(age, 3), stamp_s=value.stamp_s
            )
        return ToolResult.success(value, age_s=round(age, 3))

    tools: list[Tool] = [read_input]
    if seewhat:

        @tool(name="seewhat", safety=SafetyClass.READ_ONLY, timeout_s=10)
        async def seewhat_input(ctx: ToolContext) -> ToolResult:
            """Look through the camera: returns the newest camera frame."""
            got = hub.latest_image()
            if got is None:
                return ToolResult.failure("no camera input has sent a frame yet")
            img, name, age = got
            images = _gate(img, image_gate)
            if not images:
                return ToolResult.failure(f"the newest frame of {name} was rejected by the gate")
            kept = await keep_for_plan(ctx, images, "seewhat")  # {{steps.N...image}}
            return ToolResult.success(
                f"newest frame of {name}",
                images=images,
                **kept,
                input=name,
                age_s=round(age, 3),
                stamp_s=img.stamp_s,
            )

        tools.append(seewhat_input)
    return tools
