"""Confirmation of write tools (SPEC C5).

A write tool does not run until someone allows it: the broker emits a ``confirm_request``
event that any channel (terminal, web, ROS 2) can answer with :meth:`ConfirmationBroker.answer`.
No answer within the timeout means denied. ``--yes`` or the config allow-list pre-approve;
without an interactive channel (``--once``) a write is refused at once with a result that says
how to allow it, never a hang.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

from loopact._compat import wait_within
from loopact.events import EventBus
from loopact.i18n import t
from loopact.llm.messages import ToolCall


@dataclass(frozen=True)
class Decision:
    """A confirmation outcome.

    Attributes:
        allowed: Whether the call may run.
        reason: Why not, for the model (empty when allowed).
    """

    allowed: bool
    reason: str = ""


class ConfirmationBroker:
    """Asks channels to allow write tools and waits for the first answer.

    Args:
        bus: Where ``confirm_request`` / ``confirm_response`` events go.
        auto_approve: Allow every write (``--yes``).
        allow: Tool names allowed without asking.
        interactive: Whether any channel can answer; if not, writes are refused at once.
        timeout_s: Seconds to wait for an answer.
        lang: Language of the refusal texts.
    """

    def __init__(
        self,
        bus: EventBus,
        *,
        auto_approve: bool = False,
        allow: frozenset[str] = frozenset(),
        interactive: bool = True,
        timeout_s: float = 60.0,
        lang: str = "en",
    ) -> None:
        self.bus = bus
        self.auto_approve = auto_approve
        self.allow = allow
        self.interactive = interactive
        self.timeout_s = timeout_s
        self.lang = lang
        self._pending: dict[str, asyncio.Future[bool]] = {}
        self._ids = itertools.count(1)

    @property
    def pending(self) -> list[str]:
        """Ids of the requests waiting for an answer."""
        return list(self._pending)

    async def request(self, task_id: str, call: ToolCall) -> Decision:
        """Ask for ``call`` and wait for an answer or the timeout.

        Returns:
            The decision; a denial carries a reason for the model.
        """
        if self.auto_approve or call.name in self.allow:
            return Decision(True)
        if not self.interactive:
            return Decision(False, t("confirm.noninteractive", self.lang, name=call.name))
        request_id = f"confirm-{next(self._ids)}"
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        self.bus.emit(
            "confirm_request",
            task_id,
            id=request_id,
            name=call.name,
            arguments=call.arguments,
            call_id=call.id,
            timeout_s=self.timeout_s,
        )
        try:
            allowed = await wait_within(fut, self.timeout_s)
        except asyncio.TimeoutError:
            self.bus.emit("confirm_response", task_id, id=request_id, allowed=False, by="timeout")
            return Decision(
                False, t("confirm.timeout", self.lang, name=call.name, timeout_s=self.timeout_s)
            )
        finally:
            self._pending.pop(request_id, None)
        if allowed:
            return Decision(True)
        return Decision(False, t("confirm.denied", self.lang, name=call.name))

    def answer(self, request_id: str, allow: bool, source: str = "terminal") -> bool:
        """Answer a pending request; returns False if it is unknown or already answered."""
        fut = self._pending.get(request_id)
        if fut is None or fut.done():
            return False
        fut.set_result(allow)
        self.bus.emit("confirm_response", None, id=request_id, allowed=allow, by=source)
        return True
