"""The live view: a recorder's channels over Foxglove's WebSocket protocol (issue 44).

``loopact run --foxglove`` serves what ``--record`` writes, live, with foxglove-sdk's server
(sub-protocol ``foxglove.sdk.v1`` in foxglove-sdk 0.30). The protocol carries no token, so the
web console's rule (beyond loopback only with a token) leaves one choice: loopback only. From
another machine, forward the port over SSH (``ssh -L 8765:127.0.0.1:8765 robot``),
docs/observability.md.
"""

from __future__ import annotations

from typing import Any

from loopact.access import is_loopback  # the rule of every server loopact runs (issue 38)
from loopact.errors import ConfigError


def check_live_host(host: str) -> None:
    """Refuse a live-view address beyond loopback.

    Raises:
        ConfigError: ``host`` is not a loopback address (key ``foxglove.host``).
    """
    if not is_loopback(host):
        raise ConfigError(
            f"foxglove.host {host!r} is beyond loopback: Foxglove's WebSocket protocol has no "
            "token, so the live view binds to loopback only (127.0.0.1, ::1 or localhost); from "
            "another machine use an SSH tunnel: ssh -L 8765:127.0.0.1:8765 <robot>",
            key="foxglove.host",
        )


def start_live(context: Any, host: str, port: int) -> tuple[Any, str]:
    """Start foxglove-sdk's WebSocket server on ``context``; returns it and its ``ws://`` URL.

    Args:
        context: The recorder's ``foxglove.Context`` (its channels are served).
        host: A loopback address.
        port: TCP port; 0 picks a free one.

    Raises:
        ConfigError: ``host`` is beyond loopback (``foxglove.host``) or the port cannot be
            bound (``foxglove.port``).
    """
    import foxglove

    check_live_host(host)
    try:
        server = foxglove.start_server(name="loopact", host=host, port=port, context=context)
    except Exception as exc:  # the SDK's own error type for a failed bind
        raise ConfigError(
            f"cannot serve the Foxglove live view on {host}:{port}: {exc}; choose another "
            "port with foxglove.port or stop the other program",
            key="foxglove.port",
        ) from None
    shown = f"[{host}]" if ":" in host else host
    return server, f"ws://{shown}:{server.port}"
