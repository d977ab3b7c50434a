"""What a link asks a live MCP server besides calls: its tool list (every page), whether it
is alive, and whether its list changed (SPEC C2, C8; issue 18).

- :func:`list_tools`: ``tools/list``, all pages (at most :data:`MAX_LIST_PAGES`).
- :func:`probe`: a liveness request (``ping`` on 2025-era connections, ``server/discover``
  on 2026-era ones, which have no ping).
- :func:`open_listener`: on a 2026-era connection, the ``subscriptions/listen`` stream that
  announces list changes; 2025-era servers send ``notifications/tools/list_changed``
  instead (:func:`is_list_changed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import mcp.types as mt
from mcp import Client
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from loopact._compat import wait_within

log = logging.getLogger(__name__)

MAX_LIST_PAGES = 50
"""Pages of ``tools/list`` read at most (a server whose cursor never ends cannot hang us)."""


async def list_tools(client: Client) -> list[mt.Tool]:
    """The server's tools, every page of ``tools/list`` (at most :data:`MAX_LIST_PAGES`)."""
    tools: list[mt.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def probe(client: Client) -> None:
    """A liveness request: ``ping`` (2025-era), ``server/discover`` (2026-era, no ping)."""
    version = client.protocol_version
    if version in MODERN_PROTOCOL_VERSIONS:
        await client.session.send_discover(version)
    else:
        await client.session.send_ping()


def is_list_changed(message: Any) -> bool:
    """Whether ``message`` is a 2025-era ``notifications/tools/list_changed``. The SDK also
    hands the message handler the events of a ``subscriptions/listen`` stream (stamped with
    its subscription id): :func:`open_listener` handles those."""
    if not isinstance(message, mt.ToolListChangedNotification):
        return False
    meta = message.params.meta if message.params is not None else None
    return not meta or SUBSCRIPTION_ID_META_KEY not in meta


async def open_listener(
    client: Client,
    *,
    server: str,
    on_change: Callable[[], None],
    listed: Callable[[], bool],
    ack_timeout_s: float,
) -> asyncio.Future[None] | None:
    """On a 2026-era connection, open the ``subscriptions/listen`` stream (no replay) before
    the first ``tools/list``, so no change between the two is lost; its ack is awaited for
    ``ack_timeout_s`` at most (a later ack re-reads the list).

    Args:
        client: The connected client.
        server: The server's name (for the log).
        on_change: Called for every list change (and for an ack after the first list).
        listed: Whether the first list of the connection has been read.
        ack_timeout_s: Seconds to wait for the server's acknowledgement.

    Returns:
        The listening task (to cancel before the session closes), None on a 2025-era
        connection (which announces changes with ``notifications/tools/list_changed``).
    """
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    ready = asyncio.Event()
    listener = asyncio.ensure_future(_listen(client, ready, server, on_change, listed))
    with contextlib.suppress(asyncio.TimeoutError):
        await wait_within(ready.wait(), ack_timeout_s)
    return listener


async def _listen(
    client: Client,
    ready: asyncio.Event,
    server: str,
    on_change: Callable[[], None],
    listed: Callable[[], bool],
) -> None:
    """2026-era servers announce list changes on a ``subscriptions/listen`` stream;
    ``ready`` is set once the server acknowledged it (or refused it)."""
    try:
        async with client.listen(tools_list_changed=True) as sub:
            ready.set()
            if listed():  # acknowledged after the first list
                on_change()
            async for _event in sub:
                on_change()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.info("MCP server %s: no list-change subscription (%r)", server, exc)
    finally:
        ready.set()


async def stop_listener(task: asyncio.Future[None]) -> None:
    """Cancel a listening task and wait for it."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
