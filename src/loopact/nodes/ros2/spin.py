"""The ROS 2 connector's executor thread (SPEC C4): one spin thread and a small callback pool.

:class:`SpinThread` waits for ready callbacks of one rclpy executor on its own thread and runs
each in a thread pool, and runs clean-up work (destroying entities) between two waits, where
rclpy allows it. :class:`~loopact.nodes.ros2.Ros2Connector` owns it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from loopact.nodes.ros2.interfaces import ros_module

logger = logging.getLogger(__name__)

MAX_WAIT_FAILURES = 50
"""Failed waits in a row (each retried after 10 ms) before the spin thread gives up."""


class SpinThread:
    """Spins one rclpy executor on its own thread; callbacks run in a pool (see :meth:`_spin`).

    Args:
        executor: An rclpy ``SingleThreadedExecutor`` with the node added.
        wake: A guard condition of that node: triggered to wake the wait for deferred work.
        num_threads: Pool threads (each running served call holds one).
        closed: True once the owner shuts down: the thread ends, failures are no longer logged.
    """

    def __init__(
        self, executor: Any, wake: Any, num_threads: int, closed: Callable[[], bool]
    ) -> None:
        self._executor = executor
        self._wake = wake
        self._closed = closed
        self._slots = threading.BoundedSemaphore(num_threads)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            num_threads, thread_name_prefix="loopact-ros2-cb"
        )
        self._deferred: collections.deque[Callable[[], None]] = collections.deque()
        self._thread = threading.Thread(target=self._spin, name="loopact-ros2-spin", daemon=True)

    def start(self) -> None:
        """Start the spin thread."""
        self._thread.start()

    @property
    def alive(self) -> bool:
        """True while the spin thread runs."""
        return self._thread.is_alive()

    def join(self) -> None:
        """After the executor's shutdown: wait for the thread (5 s at most), drop queued work."""
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def between_waits(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the spin thread between two waits (or now, when it is not running).

        rclpy entities must not be destroyed while the executor builds its wait set from them:
        an action client destroyed from the asyncio thread at that moment made rcl fail with
        "action client pointer is invalid", and the spin thread stopped for good (seen when a
        tool node was dropped, issue 4).
        """
        thread = self._thread
        if not thread.is_alive() or threading.current_thread() is thread:
            fn()
            return
        self._deferred.append(fn)
        with contextlib.suppress(Exception):
            self._wake.trigger()

    def _run_deferred(self) -> None:
        while self._deferred:
            fn = self._deferred.popleft()
            try:
                fn()
            except Exception as exc:
                logger.debug("deferred ROS 2 clean-up failed: %r", exc)

    def _spin(self) -> None:
        """Wait for ready callbacks and run each in the pool (executor thread).

        rclpy's ``MultiThreadedExecutor`` (up to at least rclpy 9.1, Kilted) yields a callback
        again while it still waits in the pool's queue, so its spin thread busy-loops holding the
        GIL for as long as any callback is queued (ros2/rclpy#1452): with odometry at 30 Hz and
        camera images in one process that starved the asyncio loop for up to 0.8 s, and the
        odometry went stale mid-motion. Here the spin thread takes a free pool slot first and
        waits until the callback has started before it waits for the next one, so a callback is
        never handed out twice and the thread sleeps in the wait set when there is nothing to do.
        A served long call holds its slot until it ends (``num_threads`` at once).
        """
        ex = ros_module("rclpy.executors")
        pool = self._pool
        idle = (ex.TimeoutException, ex.ConditionReachedException)
        stopped = (ex.ShutdownException, ex.ExternalShutdownException)
        failures = 0
        try:
            while not self._closed():
                self._run_deferred()
                while not self._slots.acquire(timeout=0.2):
                    if self._closed():
                        return
                try:
                    handler, _entity, _node = self._executor.wait_for_ready_callbacks(
                        timeout_sec=0.2
                    )
                except idle:
                    self._slots.release()
                    continue
                except stopped:
                    raise
                except Exception as exc:  # e.g. an entity created while the wait set was built
                    self._slots.release()
                    failures += 1
                    if failures >= MAX_WAIT_FAILURES:
                        raise
                    logger.warning("ROS 2 wait failed (%r); waiting again", exc)
                    time.sleep(0.01)
                    continue
                failures = 0
                started = threading.Event()
                pool.submit(self._run_callback, handler, started)
                started.wait(1.0)
        except stopped:
            pass
        except Exception as exc:
            if not self._closed():
                logger.error("ROS 2 executor stopped: %r", exc)

    def _run_callback(self, handler: Any, started: threading.Event) -> None:
        """Pool thread: run one rclpy callback task; its exception is logged, not lost."""
        error: BaseException | None = None
        try:
            started.set()
            handler()  # an rclpy Task keeps its callback's exception
            error = handler.exception() if handler.done() else None
        except Exception as exc:
            error = exc
        finally:
            self._slots.release()
        if error is not None and not self._closed():
            logger.error("ROS 2 callback failed: %r", error)
