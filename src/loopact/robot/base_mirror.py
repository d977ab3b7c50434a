"""The agent's side of a robot behind the base-side governor: its verdicts taken at once
(SPEC X3, D1; issue 41).

Over ROS 2 the agent's tools command an agent-side :class:`~loopact.robot.governor.SafetyGovernor`
whose "robot" sends requests to ``loopact base``; the base-side governor decides. Before issue
41 the agent side never heard the verdict: a foreign e-stop stopped the base, and
``move_forward`` waited for its deadline and reported ``stopped_by: "deadline"``.
:class:`BaseMirror` reads every status the base publishes (``/<agent>/base/status``: at once
on every halt, e-stop, reset, takeover and hand-back; 2 Hz otherwise) and makes the agent-side
governor agree:

- a halt of the agent's motion (``last_halt.cause``: obstacle, geofence, deadline, watchdog,
  emergency stop, taken over) ends the running tool's lease with that cause and what the base
  said (``last_halt.why``, a phrase rendered in the user's language);
- the e-stop latch follows the base's: latched by anyone on the graph, every motion is refused
  at once; released (by the operator's proof on the base), motion is allowed again;
- an operator's takeover and hand-back are mirrored, so the agent's motions are refused
  ``taken_over`` while the operator drives and the agent is told when they let go.

The statuses come from one publisher on one topic, in order, so the mirror never sees an old
state after a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from loopact.errors import StopCause
from loopact.i18n import Phrase, all_keys
from loopact.robot.governor import SafetyGovernor
from loopact.robot.lease import cause_phrase

logger = logging.getLogger(__name__)

_HALT_CAUSES = frozenset(
    {
        StopCause.OBSTACLE,
        StopCause.GEOFENCE,
        StopCause.DEADLINE,
        StopCause.WATCHDOG,
        StopCause.EMERGENCY_STOP,
        StopCause.TAKEN_OVER,
        StopCause.REPLACED,
    }
)


def phrase_of(data: Any, cause: StopCause) -> Phrase:
    """What the base said (a phrase's JSON from its status), or the cause's own phrase when
    it is missing or not one this side can render (another version's catalogue)."""
    if isinstance(data, dict):
        try:
            said = Phrase.from_json(data)
            if said.id in all_keys():
                said.text("en")  # its parameters fit the template
                return said
        except (ValueError, KeyError, TypeError, IndexError):
            pass
    return cause_phrase(cause)


class BaseMirror:
    """Keeps an agent-side governor in step with the base-side one (see the module docstring).

    Args:
        governor: The agent-side governor.
    """

    def __init__(self, governor: SafetyGovernor) -> None:
        self.governor = governor
        self.status: dict[str, Any] | None = None
        self.seq = 0
        self._recent: deque[tuple[int, dict[str, Any]]] = deque(maxlen=64)
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._tasks: set[asyncio.Future[None]] = set()
        self.changed = asyncio.Event()

    def on_status(self, status: dict[str, Any]) -> None:
        """One status from the base (the event loop's thread)."""
        self.status = status
        self.seq += 1
        self._recent.append((self.seq, status))
        estop = status.get("estop") if isinstance(status.get("estop"), dict) else {}
        assert isinstance(estop, dict)
        latched = bool(status.get("emergency_stop"))
        gov = self.governor
        if latched != gov.estop.latched:
            source = str(estop.get("source") or "the base governor")
            reason = str(estop.get("reason") or "")
            self._run(gov.mirror_estop(latched, source, reason))
        operator = status.get("operator") if isinstance(status.get("operator"), dict) else {}
        assert isinstance(operator, dict)
        held = operator.get("base")
        mirrored = gov.operator.holder("base")
        if isinstance(held, dict) and mirrored is None:
            gov.mirror_takeover(str(held.get("who") or "operator"), str(held.get("source") or ""))
        elif held is None and mirrored is not None and mirrored.lease is None:
            gov.mirror_handback(str(status.get("event") or "released"))
        if status.get("event") == "halt":
            self._halted(status.get("last_halt"))
        for listener in list(self.listeners):
            try:
                listener(status)
            except Exception:
                logger.exception("base status listener failed")
        self.changed.set()
        self.changed = asyncio.Event()

    def _halted(self, halt: Any) -> None:
        if not isinstance(halt, dict):
            return
        try:
            cause = StopCause(halt.get("cause"))
        except ValueError:
            return
        if cause in _HALT_CAUSES:
            self._run(self.governor.remote_halt(cause, phrase_of(halt.get("why"), cause)))

    def _run(self, coro: Any) -> None:
        fut = asyncio.ensure_future(coro)
        self._tasks.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut: asyncio.Future[None]) -> None:
        self._tasks.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            logger.error("base verdict not applied: %r", fut.exception())

    async def wait(
        self, pred: Callable[[dict[str, Any]], bool], timeout_s: float, after: int = -1
    ) -> dict[str, Any] | None:
        """Wait until a status numbered above ``after`` (:attr:`seq`) satisfies ``pred``;
        returns it, or None when ``timeout_s`` passed."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while True:
            for seq, status in list(self._recent):
                if seq > after and pred(status):
                    return status
            left = end - loop.time()
            if left <= 0:
                return None
            waiter = asyncio.ensure_future(self.changed.wait())
            done, _ = await asyncio.wait({waiter}, timeout=left)
            if not done:
                waiter.cancel()
                return None
