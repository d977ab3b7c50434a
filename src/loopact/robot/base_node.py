"""``loopact base``: the safety governor as its own ROS 2 node next to the base (SPEC X3).

The agent (``--robot ros2``) and every hot-plugged or remote tool send motion *requests*; this
node is the only publisher on ``cmd_vel`` and the head controller topic. It runs the same
:class:`~loopact.robot.governor.SafetyGovernor` as the in-process robot, over a
:class:`~loopact.robot.ros2_robot.Ros2Robot` in ``direct`` mode:

- ``/<agent>/base/cmd_vel`` (``geometry_msgs/Twist``): a non-zero request takes the base (one
  lease for the agent), is clamped to the profile's limits, checked against the obstacle stop
  (depth), the geofence (site map) and the motion deadline, then published on ``cmd_vel``; a
  zero request ends the motion. After a halt (obstacle, geofence, deadline, watchdog,
  emergency stop) further requests are ignored until the agent sends a zero twist.
- ``/<agent>/base/head_commands`` (``std_msgs/Float64MultiArray`` [pan, tilt] rad): checked
  against the head limits, then published on the head topic.
- ``/<agent>/base/emergency_stop`` (``std_msgs/String``): ``stop`` latches the emergency stop
  (from anyone; so does any message that is not a reset, garbage included: an e-stop errs on
  the safe side). Releasing it needs an operator (issues 21, 41; docs/security.md,
  :class:`~loopact.robot.estop.EstopReset`): ``reset NONCE PROOF`` or ``{"command": "reset",
  "nonce": ..., "proof": ..., "by": ...}`` with a proof of the operator's reset secret over
  the nonce the status publishes (:func:`~loopact.robot.estop.estop_proof`; the nonce is
  spent by a release, so a replayed proof is refused), or ``reset`` on the operator's own
  reset topic. Any other ``reset`` is refused and counted — a secret sent in clear too (it
  is logged as exposed). Every release and every refusal is logged with who sent it (the
  ``by`` it names, and the publishing node from the ROS graph) and published on the status
  topic (``estop_reset`` / ``estop_reset_refused``).
- ``/<agent>/base/teleop_cmd_vel`` (``geometry_msgs/Twist``): an operator's teleop (a joystick
  node's ``cmd_vel``, remapped here): takes the base over from the agent (its motion ends
  ``taken_over``; its requests are ignored meanwhile), clamped and obstacle-limited like any
  motion, and handed back when it stops for 0.5 s (the deadman); ``takeover`` and
  ``handback`` status events say so (issue 41).
- ``/<agent>/base/status`` (``std_msgs/String`` JSON): 2 Hz and on every halt: the governor's
  state (the e-stop latch with its source and the nonce to prove against, the operator's
  hold), the last halt with its typed cause and what the governor said (``last_halt``:
  ``{reason, detail, cause, why}``, ``why`` a phrase the agent renders in its user's
  language), watchdog trips, and other publishers found on ``cmd_vel``.

The governor's watchdog stops the base when requests stop arriving for
``limits.command_timeout_s`` during a motion: a dead agent or a broken link stops the robot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import deque
from typing import Any

from loopact.errors import MotionStopped, RobotError, SafetyError, StopCause
from loopact.i18n import Phrase
from loopact.nodes.ros2.connector import Ros2Connector
from loopact.nodes.ros2.interfaces import ros_types
from loopact.robot.estop import (
    MIN_RESET_TOKEN_CHARS,
    EstopReset,
    parse_estop_message,
)
from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import Twist
from loopact.robot.lease import MotionLease
from loopact.robot.logtext import log_text
from loopact.robot.operator import OperatorHold
from loopact.robot.profile import HardwareProfile, SiteMap
from loopact.robot.ros2_robot import Ros2Robot, base_request_topics

__all__ = ["MIN_RESET_TOKEN_CHARS", "BaseGovernorNode", "EstopReset", "parse_estop", "run_base"]

logger = logging.getLogger(__name__)

STATUS_PERIOD_S = 0.5
FOREIGN_CHECK_PERIOD_S = 1.0


def parse_estop(text: str) -> tuple[str, str | None, str | None]:
    """``(command, token, by)`` of an emergency-stop message (``stop`` for anything that is
    not a reset; :func:`~loopact.robot.estop.parse_estop_message` has the rest)."""
    request = parse_estop_message(text)
    return request.command, request.token, request.by


class BaseGovernorNode:
    """The base-side governor (see the module docstring).

    Args:
        connector: Its own ROS 2 connector (node name e.g. ``loopact_base``).
        profile: Hardware profile (topics, limits, camera, head).
        site: Site map for the geofence (None: no geofence).
        agent: Agent name (prefix of the request topics).
        reset: Who may release a latched emergency stop; None: nobody over ROS 2 (issue 21).
        deadman_s: The operator's deadman, seconds (issue 41).
    """

    def __init__(
        self,
        connector: Ros2Connector,
        profile: HardwareProfile,
        site: SiteMap | None = None,
        agent: str = "loopact",
        reset: EstopReset | None = None,
        deadman_s: float = 0.5,
    ) -> None:
        self.connector = connector
        self.profile = profile
        self.site = site
        self.agent = agent
        self.topics = base_request_topics(agent)
        self.robot = Ros2Robot(connector, profile, command="direct", agent=agent)
        self.reset = reset or EstopReset()
        self.governor = SafetyGovernor(
            self.robot, profile, site, estop=self.reset.latch(), deadman_s=deadman_s
        )
        self.governor.operator.listeners.append(self._on_operator)
        self.lease: MotionLease | None = None
        self.blocked = False
        self.last_halt: dict[str, Any] | None = None
        self.foreign_publishers: list[str] = []
        self.requests = 0
        self.teleop_refused: str | None = None
        self.last_reset: dict[str, Any] | None = None
        self.last_reset_refused: dict[str, Any] | None = None
        self._lease_forward = False
        self._queue: deque[tuple[str, Any]] = deque(maxlen=50)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Any] = []
        self._status_pub: Any = None

    async def start(self) -> None:
        """Subscribe to the requests and start the governor, status and checks."""
        RosTwist = ros_types("geometry_msgs.msg", "Twist")
        Float64MultiArray, String = ros_types("std_msgs.msg", "Float64MultiArray", "String")

        c = self.connector
        await self.robot.start()
        self.governor.start()
        self._status_pub = c.publisher(String, self.topics["status"], c.qos(depth=10))
        self._subs += [
            c.subscribe_msg(
                RosTwist,
                self.topics["cmd_vel"],
                c.qos(depth=10),
                lambda t: self._push("twist", t),
                convert=_twist,
            ),
            c.subscribe_msg(
                Float64MultiArray,
                self.topics["head_commands"],
                c.qos(depth=10),
                lambda h: self._push("head", h),
                convert=lambda m: list(m.data),
            ),
            c.subscribe_msg(
                String,
                self.topics["emergency_stop"],
                c.qos(depth=10),
                lambda s, who: self._push("estop", (s, who, False)),
                convert=lambda m: str(m.data),
                with_publisher=True,
            ),
            c.subscribe_msg(
                RosTwist,
                self.topics["teleop"],
                c.qos(depth=10),
                lambda t, who: self._push("teleop", (t, who)),
                convert=_twist,
                with_publisher=True,
            ),
        ]
        if self.reset.operator_topic:
            self._subs.append(
                c.subscribe_msg(
                    String,
                    self.reset.operator_topic,
                    c.qos(depth=10),
                    lambda s, who: self._push("estop", (s, who, True)),
                    convert=lambda m: str(m.data),
                    with_publisher=True,
                )
            )
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._serve(), name="loopact-base-requests"),
            loop.create_task(self._status_loop(), name="loopact-base-status"),
            loop.create_task(self._foreign_loop(), name="loopact-base-foreign"),
        ]
        logger.info(
            "base governor running for agent %s on %s", self.agent, self.profile.topics.cmd_vel
        )

    async def close(self) -> None:
        """Stop the base, the tasks and the robot (the connector is the caller's)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sub in self._subs:
            sub.close()
        with contextlib.suppress(Exception):
            await self.governor.close()
        await self.robot.close()

    def _push(self, kind: str, value: Any) -> None:
        self._queue.append((kind, value))
        self._wake.set()

    async def _serve(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                kind, value = self._queue.popleft()
                try:
                    if kind == "twist":
                        await self.handle_twist(value)
                    elif kind == "teleop":
                        await self.handle_teleop(*value)
                    elif kind == "head":
                        await self.handle_head(value)
                    else:
                        text, who, operator = value
                        await self.handle_estop(text, publisher=who, operator=operator)
                except (SafetyError, RobotError) as exc:
                    self._halted(
                        "refused", str(exc), getattr(exc, "cause", None), _phrase(exc.said)
                    )
                except Exception:
                    logger.exception("base request %s failed", kind)

    async def handle_twist(self, twist: Twist) -> None:
        """Apply one base request (see the module docstring)."""
        self.requests += 1
        gov = self.governor
        if gov.operator.holder("base") is not None:
            return  # the operator drives: the agent's requests wait for the hand-back
        if twist.is_zero:
            if self.lease is not None:
                await gov.end_motion(self.lease)
                self.lease = None
            elif not gov.last_twist.is_zero:
                await gov.stop_all("zero request")
            self.blocked = False
            return
        if self.blocked:
            return
        lease = self.lease
        forward = twist.linear_mps > 0
        if lease is not None and not lease.active:
            self._lease_halted(lease)
            return
        if lease is None or (forward and not self._lease_forward):
            if lease is not None:
                await gov.end_motion(lease)
            try:
                lease = await gov.begin_motion(
                    "agent", self.profile.limits.max_motion_duration_s, forward=forward
                )
            except SafetyError as exc:
                self.blocked = True
                cause = exc.cause if isinstance(exc, MotionStopped) else None
                self._halted("refused", str(exc), cause, _phrase(exc.said))
                return
            self.lease = lease
            self._lease_forward = forward
        await gov.command(lease, twist)
        if not lease.active:
            self._lease_halted(lease)

    def _lease_halted(self, lease: MotionLease) -> None:
        self._halted(lease.stopped_by or "stopped", lease.detail, lease.cause, lease.why)
        self.lease = None
        self.blocked = True

    async def handle_teleop(self, twist: Twist, publisher: str = "?") -> None:
        """An operator's teleop command (issue 41): takes the base over and holds it behind
        the deadman; a refusal (the emergency stop) is logged once until it changes."""
        try:
            await self.governor.teleop(twist, who=publisher, source="ros2 teleop")
            self.teleop_refused = None
        except SafetyError as exc:
            if str(exc) != self.teleop_refused:
                self.teleop_refused = str(exc)
                logger.warning("teleop from %s refused: %s", publisher, exc)

    def _on_operator(self, hold: OperatorHold, event: str) -> None:
        """The governor's takeover and hand-back: the agent's lease is gone; tell the graph."""
        if event == "takeover" and self.lease is not None:
            self._halted("taken_over", f"by {hold.who}", StopCause.TAKEN_OVER, self.lease.why)
            self.lease = None
        self.blocked = False
        self.publish_status(event=event)

    async def handle_head(self, values: list[float]) -> None:
        """Apply one head request ``[pan, tilt]`` in radians."""
        if len(values) != 2 or not all(math.isfinite(v) for v in values):
            self._halted("refused", f"head request must be [pan, tilt] in radians, got {values}")
            return
        lease = await self.governor.begin_head("agent")
        await self.governor.set_head(lease, math.degrees(values[0]), math.degrees(values[1]))

    async def handle_estop(self, text: str, publisher: str = "?", operator: bool = False) -> None:
        """Any message latches the emergency stop (from anyone), except a reset, which needs
        a proof of the operator's secret or the operator's own topic (see the module
        docstring and :class:`~loopact.robot.estop.EstopReset`).

        Args:
            text: The message.
            publisher: The publishing node (``namespace/name``, ``"?"`` if unknown).
            operator: The message came on the operator's reset topic.
        """
        request = parse_estop_message(text)
        where = self.reset.operator_topic if operator else self.topics["emergency_stop"]
        assert where is not None
        latched = self.governor.emergency_stopped
        result = await self.governor.handle_estop_request(
            request, f"ros2 {publisher}", where, trusted=operator
        )
        if result is None:
            self.lease = None
            why = Phrase("stop.reason", reason=self.governor.estop.reason)
            detail = f"requested over ROS 2 by {publisher}"
            self._halted("emergency_stop", detail, StopCause.EMERGENCY_STOP, why)
            return
        who = {"by": request.by or publisher, "publisher": publisher, "topic": where}
        if result.released:
            via = "operator topic" if operator else "proof"
            self.blocked = False
            self.last_reset = {**who, "via": via, "was_latched": latched, "time": time.time()}
            logger.warning(
                "emergency stop released by %s via %s on %s (publisher %s)",
                log_text(who["by"]),  # from the message: one quoted line, never a forged one
                via,
                where,
                publisher,
            )
            self.publish_status(event="estop_reset")
            return
        count = self.governor.estop.resets_refused
        self.last_reset_refused = {
            **who,
            "reason": result.reason,
            "count": count,
            "time": time.time(),
        }
        logger.warning(
            "emergency stop reset refused (%s) from %s on %s: a reset needs %s",
            result.reason,
            publisher,
            where,
            self.reset.sources,
        )
        self.publish_status(event="estop_reset_refused")

    def _halted(
        self,
        reason: str,
        detail: str,
        cause: StopCause | None = None,
        why: Phrase | None = None,
    ) -> None:
        self.last_halt = {
            "reason": reason,
            "detail": detail,
            "cause": cause.value if cause is not None else None,
            "why": why.to_json() if why is not None else None,
        }
        logger.warning("base: %s (%s)", reason, detail)
        self.publish_status(event="halt")

    def status(self) -> dict[str, Any]:
        """The JSON status published on ``/<agent>/base/status``."""
        return {
            **self.governor.status(),
            "watchdog_trips": self.governor.watchdog_trips,
            "blocked": self.blocked,
            "last_halt": self.last_halt,
            "requests": self.requests,
            "foreign_cmd_vel_publishers": self.foreign_publishers,
            "last_reset": self.last_reset,
            "last_reset_refused": self.last_reset_refused,
        }

    def publish_status(self, event: str = "status") -> None:
        """Publish the status now."""
        String = ros_types("std_msgs.msg", "String")

        if self._status_pub is not None:
            body = {"event": event, **self.status()}
            self._status_pub.publish(String(data=json.dumps(body, default=str)))

    async def _status_loop(self) -> None:
        trips = 0
        while True:
            await asyncio.sleep(STATUS_PERIOD_S)
            if self.governor.watchdog_trips != trips:
                trips = self.governor.watchdog_trips
                self.last_halt = {
                    "reason": "watchdog",
                    "detail": "motion requests stopped",
                    "cause": StopCause.WATCHDOG.value,
                    "why": None,
                }
                if self.lease is not None and not self.lease.active:
                    self.lease = None
                    self.blocked = True
                logger.warning("base watchdog: requests stopped, base zeroed")
                self.publish_status(event="halt")
            else:
                self.publish_status()

    async def _foreign_loop(self) -> None:
        node = self.connector.node
        topic = self.profile.topics.cmd_vel
        own = node.get_name()
        reported: set[str] = set()
        while True:
            await asyncio.sleep(FOREIGN_CHECK_PERIOD_S)
            try:
                infos = node.get_publishers_info_by_topic(node.resolve_topic_name(topic))
            except Exception as exc:
                logger.debug("publisher query failed: %r", exc)
                continue
            others = sorted(
                {
                    f"{i.node_namespace.rstrip('/')}/{i.node_name}"
                    for i in infos
                    if i.node_name != own
                }
            )
            self.foreign_publishers = others
            new = set(others) - reported
            if new:
                reported |= new
                logger.warning(
                    "another node publishes on %s while the governor runs: %s "
                    "(its commands bypass the safety governor)",
                    topic,
                    ", ".join(sorted(new)),
                )
                self.publish_status(event="foreign_publisher")


def _phrase(said: Any) -> Phrase | None:
    return said if isinstance(said, Phrase) else None


def _twist(msg: Any) -> Twist:
    return Twist(float(msg.linear.x), float(msg.angular.z), float(msg.linear.y))


async def run_base(
    profile: str = "sim",
    site: str | None = None,
    agent: str = "loopact",
    reset: EstopReset | None = None,
) -> int:
    """``loopact base``: run the governor node until SIGINT/SIGTERM; returns the exit code.

    ``reset`` says who may release a latched emergency stop (None: nobody over ROS 2).

    Raises:
        ConfigError: Unknown profile or site.
        NodeError: ROS 2 is unavailable.
    """
    import signal

    from loopact.robot.profile import load_profile, load_site

    prof = load_profile(profile)
    site_map = load_site(site) if site else None
    connector = Ros2Connector("loopact_base")
    node = BaseGovernorNode(connector, prof, site_map, agent, reset)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await node.start()
        print(f"loopact base: governing {prof.topics.cmd_vel} for agent {agent!r}", flush=True)
        await stop.wait()
    finally:
        await node.close()
        await connector.shutdown()
    return 0
