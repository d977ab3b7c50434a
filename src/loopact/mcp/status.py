"""What a supervised MCP server link reports: its state and one status record per change
(the ``mcp_server`` event; SPEC C8, H3; issue 18)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class LinkState(str, enum.Enum):
    """Where a link is: ``connecting``, ``connected``, ``restarting``, ``stopped``."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    RESTARTING = "restarting"
    STOPPED = "stopped"


@dataclass(frozen=True)
class LinkStatus:
    """One state change of a link (the ``mcp_server`` event).

    Attributes:
        name: The server's name in ``mcp.servers``.
        transport: ``stdio`` or ``http``.
        state: See :class:`LinkState`.
        detail: Why, in one line (why it dropped, what it said last on stderr, the log).
        restarts: Reconnects so far.
        delay_s: Seconds until the next attempt (``restarting`` only).
        protocol: The negotiated protocol version (``connected`` only).
    """

    name: str
    transport: str
    state: LinkState
    detail: str = ""
    restarts: int = 0
    delay_s: float | None = None
    protocol: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able fields for the event bus."""
        return {
            "name": self.name,
            "transport": self.transport,
            "state": self.state.value,
            "detail": self.detail,
            "restarts": self.restarts,
            "delay_s": self.delay_s,
            "protocol": self.protocol,
        }
