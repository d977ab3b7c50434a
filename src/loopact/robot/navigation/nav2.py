"""Nav2 as the navigation backend: ``nav2_msgs/action/NavigateToPose`` (issue 40 item 5).

``navigation`` sends the goal's pose in the ``map`` frame to Nav2's ``navigate_to_pose``
action server, reports its feedback (distance remaining, estimated time, recoveries) as
progress, and cancels the goal on every way the tool can end early: the agent's preemption
(a new command; the tool's task is cancelled), a stop or an emergency stop (the governor's
stop listeners, before the base is zeroed), and every timeout (the server does not accept,
the goal runs too long, the server vanishes mid-goal), also while the goal's answer is still on
its way (cancelled once the server accepts it). Nav2's result becomes a clear tool
result: success, or "Nav2 aborted the goal ...: error code 9003 (TIMEOUT)".

The governor keeps owning ``cmd_vel`` on the base side: Nav2's velocity output goes to the
base-side governor's request topic (docs/navigation.md), never straight to the base.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

from loopact._compat import wait_within
from loopact.errors import NodeError, RobotError, StopCause
from loopact.i18n import Phrase
from loopact.nodes.ros2.actions import send_goal
from loopact.nodes.ros2.interfaces import ros_types
from loopact.robot.interface import Pose
from loopact.robot.motion import Progress, RobotEnv
from loopact.robot.navigation import texts
from loopact.robot.navigation.goals import Goal, result_names
from loopact.robot.outcome import achieved, failed, refused
from loopact.tools.base import ToolResult

logger = logging.getLogger(__name__)

ACTION = "navigate_to_pose"
CONNECT_S = 2.0
"""How long to wait for the action server, and for it to accept a goal, seconds."""
CANCEL_WAIT_S = 2.0
"""How long to wait for the server to confirm a cancel, seconds."""
CANCEL_ATTEMPTS = 3
"""Cancel requests sent for one goal before loopact stops asking."""
GONE_S = 3.0
"""The server missing from the graph this long mid-goal means it vanished, seconds."""
GOAL_TIMEOUT_S = 280.0
"""The longest a goal may run before loopact cancels it (inside the tool's 300 s), seconds."""
DISCOVERY_S = 10.0
"""How long after the action client is created a goal waits for the server to be discovered,
seconds: DDS discovery of a server's three services and two topics takes seconds on a busy
machine, and a goal right after start-up must not miss a Nav2 that is running."""

STATUS = {4: "succeeded", 5: "cancelled", 6: "aborted"}
"""``action_msgs/GoalStatus`` codes of a finished goal."""
ERROR_NAMES = {0: "NONE", 9000: "UNKNOWN", 9001: "FAILED_TO_LOAD_BEHAVIOR_TREE"}
ERROR_NAMES.update({9002: "TF_ERROR", 9003: "TIMEOUT"})
"""NavigateToPose's error codes (nav2_msgs, kilted)."""


def pose_msg(goal: Goal, pose_stamped: Any, here: Pose) -> Any:
    """Fill a ``geometry_msgs/PoseStamped`` in ``map`` with the goal (facing along the way
    from ``here`` when the goal has no heading). Stamp zero: Nav2 uses the latest TF."""
    yaw = goal.yaw_rad
    if yaw is None:
        yaw = math.atan2(goal.y_m - here.y_m, goal.x_m - here.x_m)
    pose_stamped.header.frame_id = "map"
    pose_stamped.pose.position.x = float(goal.x_m)
    pose_stamped.pose.position.y = float(goal.y_m)
    pose_stamped.pose.orientation.z = math.sin(yaw / 2)
    pose_stamped.pose.orientation.w = math.cos(yaw / 2)
    return pose_stamped


def feedback_text(fb: Any) -> str:
    """One progress line from a ``NavigateToPose`` feedback message."""
    eta = fb.estimated_time_remaining.sec + fb.estimated_time_remaining.nanosec * 1e-9
    rec = int(fb.number_of_recoveries)
    return f"navigation (Nav2): {float(fb.distance_remaining):.1f} m to go, about {eta:.0f} s" + (
        f", {rec} recover{'ies' if rec != 1 else 'y'}" if rec else ""
    )


class Nav2Backend:
    """Goals to Nav2's ``navigate_to_pose`` over a :class:`~loopact.nodes.ros2.Ros2Connector`.

    Args:
        connector: The agent's ROS 2 connector (started).
        action_name: The action server's name.
        goal_timeout_s: Cancel a goal that has not finished after this long, seconds.
    """

    def __init__(
        self, connector: Any, action_name: str = ACTION, goal_timeout_s: float = GOAL_TIMEOUT_S
    ) -> None:
        self.connector = connector
        self.action_name = action_name
        self.goal_timeout_s = goal_timeout_s
        self._client: Any = None
        self._created_s = 0.0  # time.monotonic() when the client was created
        self._cancels: dict[int, Any] = {}  # id(goal handle) -> its cancel future
        self.last_cancel_s: float | None = None

    def client(self) -> Any:
        """The action client (created once)."""
        if self._client is None:
            action = ros_types("nav2_msgs.action", "NavigateToPose")
            self._client = self.connector.action_client(action, self.action_name)
            self._created_s = time.monotonic()
        return self._client

    async def server_ready(self, within_s: float = CONNECT_S) -> bool:
        """True once the action server is on the graph.

        Waits up to ``within_s`` seconds, or until :data:`DISCOVERY_S` after the client was
        created if that is later (discovery is still under way after start-up).
        """
        client = self.client()
        deadline = max(time.monotonic() + within_s, self._created_s + DISCOVERY_S)
        while not client.server_is_ready():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def go(self, env: RobotEnv, goal: Goal, progress: Progress | None) -> ToolResult:
        """Send ``goal`` and follow it to its end (see the module docstring)."""
        stopped = asyncio.Event()
        why: list[str] = []
        handles: list[Any] = []  # the accepted goal, once the server has answered

        def on_stop(reason: str) -> None:
            why.append(reason)
            stopped.set()
            for handle in handles:  # the cancel request leaves before the base is zeroed
                self._cancel_now(handle)

        # listening from before the goal leaves: a stop while it is on its way cancels it too
        remove = env.governor.add_stop_listener(on_stop)
        try:
            started = await self._start(env, goal, progress)
            if isinstance(started, ToolResult):
                return started
            handles.append(started)
            if stopped.is_set():
                self._cancel_now(started)
            return await self._follow(env, goal, started, stopped, why)
        except BaseException:
            for handle in handles:
                self._cancel_now(handle)
                await self._confirm_cancel(handle)
            raise
        finally:
            remove()

    async def _start(self, env: RobotEnv, goal: Goal, progress: Progress | None) -> Any:
        """The accepted goal's handle, or the failed :class:`ToolResult` saying why not."""
        try:
            here = await env.map_pose()
            if not await self.server_ready():
                return failed(texts.nav2_no_server(self.action_name))
            handle = await self._send(goal, here, progress)
        except RobotError as exc:
            return refused(exc)
        except NodeError as exc:
            return failed(str(exc))
        return handle if handle is not None else failed(texts.nav2_rejected())

    async def _send(self, goal: Goal, here: Pose, progress: Progress | None) -> Any:
        NavigateToPose = ros_types("nav2_msgs.action", "NavigateToPose")
        msg = NavigateToPose.Goal()
        pose_msg(goal, msg.pose, here)

        def on_feedback(fb_msg: Any) -> None:
            if progress is not None:
                self.connector.post(progress, feedback_text(fb_msg.feedback))

        try:
            handle = await send_goal(
                self.connector.ros_result, self.client(), msg, CONNECT_S + 3.0, on_feedback
            )
        except asyncio.TimeoutError:
            raise NodeError(str(texts.nav2_no_answer())) from None
        return handle if handle.accepted else None

    async def _follow(
        self, env: RobotEnv, goal: Goal, handle: Any, stopped: asyncio.Event, why: list[str]
    ) -> ToolResult:
        result_fut = asyncio.ensure_future(self.connector.ros_result(handle.get_result_async()))
        stop_wait = asyncio.ensure_future(stopped.wait())
        deadline = time.monotonic() + self.goal_timeout_s
        gone_since: float | None = None
        try:
            while not result_fut.done():
                await asyncio.wait({result_fut, stop_wait}, timeout=0.25)
                if stopped.is_set():
                    await self._confirm_cancel(handle)
                    return self._ended(goal, StopCause.STOPPED, why[0] if why else "stop")
                now = time.monotonic()
                if now > deadline:
                    self._cancel_now(handle)
                    await self._confirm_cancel(handle)
                    return failed(texts.nav2_timeout(goal.label, self.goal_timeout_s))
                ready = self.client().server_is_ready()
                gone_since = None if ready else (gone_since or now)
                if gone_since is not None and now - gone_since > GONE_S:
                    return failed(texts.nav2_gone(goal.label))
        finally:
            stop_wait.cancel()
            if not result_fut.done():
                result_fut.cancel()
        return await self._result(env, goal, result_fut.result())

    async def _result(self, env: RobotEnv, goal: Goal, response: Any) -> ToolResult:
        status = STATUS.get(int(response.status), f"status {int(response.status)}")
        res = response.result
        code = int(getattr(res, "error_code", 0))
        message = str(getattr(res, "error_msg", ""))
        if status == "succeeded":
            try:
                pose = await env.map_pose()
            except RobotError as exc:
                return refused(exc)
            data = {
                "result": texts.reached_nav2(goal.label),
                "pose": {
                    "x_m": round(pose.x_m, 3),
                    "y_m": round(pose.y_m, 3),
                    "frame": pose.frame,
                },
                **result_names(env, goal),
            }
            meta = {
                "goal": goal.as_dict(),
                "backend": "nav2",
                "achieved": achieved(0.0, 0.0, StopCause.TARGET),
            }
            return ToolResult(ok=True, data=data, metadata=meta)
        named = ERROR_NAMES.get(code, "")
        detail = ", ".join(x for x in (named, message) if x)
        cause = {"aborted": StopCause.NAV2_ABORTED, "cancelled": StopCause.NAV2_CANCELLED}.get(
            status, StopCause.ERROR
        )
        out = failed(texts.nav2_result(goal.label, status, code, detail), cause)
        out.metadata.update(goal=goal.as_dict(), backend="nav2", error_code=code)
        return out

    def _ended(self, goal: Goal, cause: StopCause, reason: str) -> ToolResult:
        why = Phrase("stop.reason", reason=reason)
        out = failed(texts.stopped_early(goal.label, cause, why, 0.0), cause)
        out.metadata.update(goal=goal.as_dict(), backend="nav2")
        return out

    def _cancel_now(self, handle: Any) -> None:
        """Send the cancel request now (idempotent per goal)."""
        if id(handle) in self._cancels:
            return
        self.last_cancel_s = time.monotonic()
        self._cancels[id(handle)] = handle.cancel_goal_async()

    async def _confirm_cancel(self, handle: Any) -> None:
        """Wait (bounded) for the server to confirm the cancel, then forget the goal. A cancel
        not answered in :data:`CANCEL_WAIT_S` is sent again, up to :data:`CANCEL_ATTEMPTS` in
        all: a request can be lost while the two sides' discovery of the cancel service
        completes, and the goal would drive on."""
        fut = self._cancels.pop(id(handle), None)
        if fut is None:
            return
        for attempt in range(1, CANCEL_ATTEMPTS + 1):
            try:
                await wait_within(self.connector.ros_result(fut), CANCEL_WAIT_S)
                return
            except asyncio.TimeoutError:
                if attempt < CANCEL_ATTEMPTS:
                    logger.warning("Nav2 did not answer cancel %d in %g s", attempt, CANCEL_WAIT_S)
                    fut = handle.cancel_goal_async()
            except Exception:  # NodeError: the request failed; the goal ends with the server
                return
