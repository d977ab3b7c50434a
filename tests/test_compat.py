"""loopact._compat.wait_within: the runtime's bounded await never swallows a cancellation.

Before Python 3.12 ``asyncio.wait_for`` returned the awaited result when its caller was
cancelled as that result arrived (CPython gh-86296): a stop or a preemption racing a tool, a
confirmation or a device answer was lost. ``wait_within`` replaces it everywhere in ``src/``
(ruff TID251 bans ``asyncio.wait_for`` there; see pyproject.toml). SPEC A3, A6.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

import pytest

from loopact._compat import wait_within
from loopact.agent.confirm import ConfirmationBroker
from loopact.events import Event, EventBus
from loopact.llm.messages import ToolCall

TURNS = range(6)


async def _race(bounded: Callable[[asyncio.Future[str]], Awaitable[str]], turns: int) -> str:
    """Cancel a waiter ``turns`` loop turns after its future got a result.

    Returns ``"cancelled"`` when the waiter ended cancelled, ``"finished"`` when it had
    already finished before the cancel (fair), ``"swallowed"`` when it was cancelled but
    returned the result anyway (the bug).
    """
    fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.ensure_future(bounded(fut))
    await asyncio.sleep(0)  # the waiter is waiting
    fut.set_result("answer")
    for _ in range(turns):
        await asyncio.sleep(0)
    if not waiter.cancel():
        return "finished"
    try:
        await waiter
    except asyncio.CancelledError:
        return "cancelled"
    return "swallowed"


@pytest.mark.parametrize("turns", TURNS)
async def test_a_cancel_racing_the_result_is_never_swallowed(turns: int) -> None:
    assert await _race(lambda fut: wait_within(fut, 60), turns) in {"cancelled", "finished"}


async def test_the_race_is_real_for_asyncio_wait_for_before_3_12() -> None:
    """The test above can fail: on this Python, wait_for loses the cancel in the same race."""
    outcomes = [await _race(lambda fut: asyncio.wait_for(fut, 60), n) for n in TURNS]
    if sys.version_info < (3, 12):
        assert "swallowed" in outcomes, outcomes
    else:
        assert "swallowed" not in outcomes, outcomes


async def test_the_time_runs_out_and_cancels_the_awaited_work() -> None:
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(asyncio.TimeoutError):
        await wait_within(never, 0.01)
    assert never.cancelled()
    assert await wait_within(asyncio.sleep(0, "done"), None) == "done"


@pytest.mark.parametrize("turns", TURNS)
async def test_a_stop_racing_an_allow_click_does_not_approve_the_write(turns: int) -> None:
    """The confirmation gate: a task stopped as the person clicks Allow ends cancelled."""
    bus = EventBus()
    asked: list[Event] = []
    bus.subscribe(lambda event: asked.append(event) if event.type == "confirm_request" else None)
    broker = ConfirmationBroker(bus, interactive=True, timeout_s=60)
    waiter = asyncio.ensure_future(broker.request("t1", ToolCall("c1", "file_write", {})))
    while not asked:
        await asyncio.sleep(0)
    assert broker.answer(asked[0].data["id"], True, source="web")
    for _ in range(turns):
        await asyncio.sleep(0)
    if waiter.cancel():
        with pytest.raises(asyncio.CancelledError):
            await waiter
    else:
        assert waiter.result().allowed
