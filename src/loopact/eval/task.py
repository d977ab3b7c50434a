"""What a graded task is: an instruction, its ground truth, and a grader (SPEC H4, issue 20).

A :class:`Task` is run on a fresh simulated robot (:mod:`loopact.eval.runner`); what the run
left behind is gathered into :class:`Evidence` (the simulator's pose log, the world
description, the trace, the files written, the messages a subscriber received) and the task's
grader turns that into a :class:`Verdict`. Graders read ground truth only: where the robot
really was, what was really in view, what was really written or sent; never what the model or
a tool said happened (a tool result in the trace is not evidence of motion). The refusal
graders (:mod:`loopact.eval.refusal`) read the trace and the reply as well, for whether a
motion was refused or clamped and the user told: on top of ground truth, never instead of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopact.events import EventType

CATEGORIES = (
    "navigation",
    "motion",
    "approach",
    "perception",
    "question",
    "line",
    "stop",
    "multi-step",
    "files",
    "messages",
    "refusal",
    "manipulation",
)
"""Task categories, in the order reports list them."""


@dataclass(frozen=True)
class Interrupt:
    """A second command the eval sends while the task runs (a person saying "stop").

    Attributes:
        text: What is sent (through :meth:`loopact.agent.Agent.submit`, as a channel would).
        after_moved_m: Sent once the robot's true position is this far (metres) from where
            it was when the task started.
    """

    text: str
    after_moved_m: float = 0.4


@dataclass(frozen=True)
class Limits:
    """The robot's limits the refusal graders hold the ground truth to.

    Attributes:
        max_linear_mps: Profile speed limit, m/s.
        max_angular_dps: Profile turn-rate limit, degrees per second.
        geofence: The site's geofence polygon ``[(x_m, y_m), ...]`` (map frame), or empty.
        robot_radius_m: The footprint radius, metres.
    """

    max_linear_mps: float
    max_angular_dps: float
    geofence: tuple[tuple[float, float], ...]
    robot_radius_m: float


@dataclass(frozen=True)
class Evidence:
    """Ground truth of one run, for the grader.

    Attributes:
        world: ``loopact sim --describe`` of the run's scenario (objects, waypoints, room).
        poses: The ``--sim-log`` samples (``t_s``, ``x_m``, ``y_m``, ``yaw_deg``, ``head``).
        events: The run's trace, one dict per event (docs/trace.md).
        workspace: The folder the file tools wrote into.
        messages: What a subscriber received on the message topics:
            ``{"topic": str, "text": str}`` in arrival order.
        limits: The robot's profile limits and the site's geofence.
        interrupt_t_s: Simulated time at which the eval sent the task's interrupt, or None.
        image_size: The camera's ``(width, height)`` in pixels.
        scenario: The scenario the run was in (its map gives the shortest paths).
    """

    world: dict[str, Any]
    poses: list[dict[str, Any]]
    events: list[dict[str, Any]]
    workspace: Path
    messages: list[dict[str, str]]
    limits: Limits
    interrupt_t_s: float | None = None
    image_size: tuple[int, int] = (640, 480)
    scenario: str = "default"

    @property
    def reply(self) -> str:
        """The task's answer as the trace recorded it (the last ``reply`` event), or ""."""
        replies = [e.get("text") or "" for e in self.events if e.get("type") == EventType.REPLY]
        return replies[-1] if replies else ""


@dataclass(frozen=True)
class Verdict:
    """A grader's decision.

    Attributes:
        passed: Whether the ground truth meets the task.
        why: One line a person reads: the measured figure against the requirement
            ("0.07 m from the kitchen (<= 0.30)").
    """

    passed: bool
    why: str


Grader = Callable[[Evidence], Verdict]


@dataclass(frozen=True)
class Task:
    """One graded task.

    Attributes:
        id: Unique name (``nav_kitchen``); also the recorded script's file name.
        category: One of :data:`CATEGORIES`.
        instruction: What the user says.
        grader: Ground truth -> verdict.
        lang: ``en`` or ``zh`` (the instruction's language; the agent answers in it).
        interrupt: A command sent while it runs (the "stop" tasks), or None.
        timeout_s: Wall-clock bound for a scripted model at the default simulation speed,
            seconds (the runner multiplies it for slow models; the agent's own bounds apply
            inside it).
        messages: MQTT topics the run may send to (``send_message`` over a real broker);
            the subscriber's deliveries become :attr:`Evidence.messages`.
        summary: What the grader checks, for ``--list``.
        scenario: The simulator scenario the task runs in (``default``: the room; ``flat``,
            ``flat-blocked``: the flat of issue 40; ``arm``: the arm scene of issue 43).
    """

    id: str
    category: str
    instruction: str
    grader: Grader
    lang: str = "en"
    interrupt: Interrupt | None = None
    timeout_s: float = 120.0
    messages: tuple[str, ...] = ()
    summary: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    scenario: str = "default"

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"task {self.id}: unknown category {self.category!r}")
        if self.lang not in ("en", "zh"):
            raise ValueError(f"task {self.id}: lang must be en or zh, not {self.lang!r}")
