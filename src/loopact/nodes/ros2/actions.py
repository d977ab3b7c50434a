"""The ROS 2 connector's long calls: the ``ExecuteTool`` action, both sides (SPEC C2, C4).

:func:`serve_execute_tool` serves goals on one endpoint by running a
:data:`~loopact.nodes.connector.Handler` on the asyncio loop while an executor pool thread
waits for it (each running call holds one thread); a cancel request cancels the handler.
:class:`RosCall` is the client side's handle of one sent goal, and :func:`send_goal` sends a
goal of any action so that none is left running that nobody follows. The action is
``loopact_interfaces/action/ExecuteTool`` (docs/ros2-nodes.md, "Output node").
:class:`~loopact.nodes.ros2.Ros2Connector` owns both.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from loopact._compat import wait_within
from loopact.errors import NodeError
from loopact.nodes.connector import CallReply, Handler, Subscription
from loopact.nodes.ros2.interfaces import ros_types

logger = logging.getLogger(__name__)

PROGRESS_MAX_CHARS = 2000
"""Longest progress text sent as feedback (characters)."""

CANCEL_CONFIRM_S = 2.0
"""How long :meth:`RosCall.cancel` waits for the server to confirm (seconds)."""


async def send_goal(
    await_ros: Callable[[Any], Awaitable[Any]],
    client: Any,
    goal: Any,
    timeout_s: float,
    feedback_callback: Callable[[Any], None] | None = None,
) -> Any:
    """Send ``goal`` on the rclpy ``ActionClient`` ``client``; its goal handle (accepted or not).

    A goal given up before its answer came (``timeout_s`` passed, or the awaiting task was
    cancelled: a preemption) is cancelled when the server accepts it after all, so no goal runs
    on that the caller no longer follows (a Nav2 goal drove on to its end, issue 40).

    Args:
        await_ros: Awaits an rclpy future from asyncio (``Ros2Connector.ros_result``).
        client: The action client.
        goal: The action's ``Goal`` message.
        timeout_s: How long to wait for the server's answer, seconds.
        feedback_callback: Called on the spin thread with each feedback message.

    Raises:
        asyncio.TimeoutError: No answer within ``timeout_s``.
    """
    sent = client.send_goal_async(goal, feedback_callback=feedback_callback)
    try:
        return await wait_within(await_ros(sent), timeout_s)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        sent.add_done_callback(_cancel_if_accepted)
        raise


def _cancel_if_accepted(answer: Any) -> None:
    """The answer to an abandoned goal (spin thread; must not raise): cancel it if accepted."""
    try:
        handle = answer.result() if not answer.cancelled() and answer.exception() is None else None
        if handle is not None and handle.accepted:
            logger.warning("an abandoned action goal was accepted late; cancelling it")
            handle.cancel_goal_async()  # nobody waits for this answer
    except Exception:  # the client is gone (its node closed): nothing to cancel
        logger.exception("cancelling an abandoned action goal failed")


def failed_reply(error: str, *, cancelled: bool = False) -> CallReply:
    """A failed :class:`CallReply` (exit code 1) whose result says ``error``."""
    body = {"ok": False, "error": error, "data": None, "metadata": {}, "images": []}
    return CallReply(json.dumps(body), 1, cancelled=cancelled)


@dataclass(eq=False)
class _Served:
    server: Any
    destroy: Callable[[Any], None]
    closed: bool = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.destroy(self.server)


def serve_execute_tool(
    node: Any,
    endpoint: str,
    handler: Handler,
    *,
    loop: asyncio.AbstractEventLoop,
    group: Any,
    running: dict[bytes, concurrent.futures.Future[CallReply]],
    destroy: Callable[[Any], None],
) -> Subscription:
    """Serve ``ExecuteTool`` goals on ``endpoint`` (see :meth:`Connector.serve`).

    Args:
        node: The rclpy node that owns the action server.
        endpoint: The action name, ``/<agent>/output/<name>``.
        handler: Runs one call on ``loop``: ``(input_json, timeout_s, progress)``.
        loop: The connector's event loop.
        group: The callback group of the server's callbacks (reentrant: calls overlap).
        running: The connector's running calls by goal id (for cancel and shutdown).
        destroy: Destroys the server on the spin thread (what ``close()`` calls).

    Returns:
        The served endpoint; ``close()`` destroys the action server.
    """
    ExecuteTool = ros_types("loopact_interfaces.action", "ExecuteTool")
    ActionServer, CancelResponse, GoalResponse = ros_types(
        "rclpy.action", "ActionServer", "CancelResponse", "GoalResponse"
    )

    def execute(goal_handle: Any) -> Any:
        req = goal_handle.request
        key = bytes(goal_handle.goal_id.uuid)

        def progress(text: str) -> None:
            feedback = ExecuteTool.Feedback(progress=str(text)[:PROGRESS_MAX_CHARS])
            with contextlib.suppress(Exception):
                goal_handle.publish_feedback(feedback)

        reply = _run_handler(
            handler(req.input_json, float(req.timeout_sec), progress), loop, key, running
        )
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return ExecuteTool.Result(output_json=reply.output_json, exit_code=reply.exit_code)

    def on_cancel(goal_handle: Any) -> Any:
        cfut = running.get(bytes(goal_handle.goal_id.uuid))
        if cfut is not None:
            cfut.cancel()
        return CancelResponse.ACCEPT

    server = ActionServer(
        node,
        ExecuteTool,
        endpoint,
        execute_callback=execute,
        goal_callback=lambda _req: GoalResponse.ACCEPT,
        cancel_callback=on_cancel,
        callback_group=group,
    )
    return _Served(server, destroy)


def _run_handler(
    call: Coroutine[Any, Any, CallReply],
    loop: asyncio.AbstractEventLoop,
    key: bytes,
    running: dict[bytes, concurrent.futures.Future[CallReply]],
) -> CallReply:
    """Run the handler's coroutine on ``loop`` and wait for it (on an executor thread)."""
    cfut = asyncio.run_coroutine_threadsafe(call, loop)
    running[key] = cfut
    try:
        return cfut.result()
    except concurrent.futures.CancelledError:
        return failed_reply("cancelled", cancelled=True)
    except Exception as exc:
        return failed_reply(f"node failure: {exc!r}")
    finally:
        running.pop(key, None)


class RosCall:
    """One sent ``ExecuteTool`` goal (a :class:`~loopact.nodes.connector.CallHandle`).

    Args:
        wait: Awaits an rclpy future on the event loop (the connector's ``_await``).
        endpoint: The action name.
        goal_handle: rclpy's ``ClientGoalHandle`` of the accepted goal.
    """

    def __init__(
        self, wait: Callable[[Any], Awaitable[Any]], endpoint: str, goal_handle: Any
    ) -> None:
        self._wait = wait
        self._endpoint = endpoint
        self._goal = goal_handle

    @property
    def endpoint(self) -> str:
        """The endpoint called."""
        return self._endpoint

    async def result(self) -> CallReply:
        """Wait for the reply (no timeout here: the caller bounds it with the call's timeout).

        Raises:
            NodeError: The node aborted the goal without a result.
        """
        GoalStatus = ros_types("action_msgs.msg", "GoalStatus")

        response = await self._wait(self._goal.get_result_async())
        res = response.result
        cancelled = response.status == GoalStatus.STATUS_CANCELED
        if response.status == GoalStatus.STATUS_ABORTED and not res.output_json:
            raise NodeError(f"{self._endpoint}: the node aborted the call")
        return CallReply(res.output_json, int(res.exit_code), cancelled=cancelled)

    async def cancel(self) -> None:
        """Ask the node to cancel (waits at most :data:`CANCEL_CONFIRM_S` for its answer)."""
        try:
            await wait_within(self._wait(self._goal.cancel_goal_async()), CANCEL_CONFIRM_S)
        except (asyncio.TimeoutError, Exception) as exc:
            logger.debug("cancel of %s not confirmed: %r", self._endpoint, exc)
