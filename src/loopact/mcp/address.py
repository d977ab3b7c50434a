"""Where ``loopact mcp --http`` listens, and who may connect (issue 18).

No SDK imports here: the CLI checks ``--http`` and ``--token`` before anything starts.
"""

from __future__ import annotations

from loopact.access import check_token, is_loopback
from loopact.errors import ConfigError

__all__ = ["check_access", "is_loopback", "parse_address"]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6, or just ``PORT`` for 127.0.0.1) as a pair.

    Raises:
        ConfigError: Not an address with a port 0-65535 (key ``--http``).
    """
    host, sep, port_text = text.strip().rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text.strip()
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ConfigError(
            f"--http {text!r} is not HOST:PORT (e.g. 127.0.0.1:8765)", key="--http"
        ) from None
    return host, port


def check_access(host: str, token: str | None) -> None:
    """Refuse an empty or weak token, and serving beyond loopback without one (issue 18).

    A token must be at least :data:`loopact.access.MIN_TOKEN_CHARS` characters without spaces
    (issue 21 item 12, :func:`loopact.access.check_token`).

    Raises:
        ConfigError: Key ``--token``.
    """
    if token is not None and not token.strip():
        raise ConfigError("--token is empty; give a non-empty token or none.", key="--token")
    weak = check_token(token, "--token")  # a short token can be guessed
    if weak is not None:
        raise ConfigError(f"{weak}.", key="--token")
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"loopact mcp --http {host}:PORT listens beyond loopback: give --token SECRET "
            "(or LOOPACT_MCP_TOKEN), which every client must send as a bearer token.",
            key="--token",
        )
