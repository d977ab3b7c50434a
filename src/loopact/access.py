"""Who may connect to loopact's servers: where they listen, the token rule and the
wrong-token lockout (issue 21 item 12; issue 38).

One mechanism for every server of loopact that listens and takes a token: the web console
(``web.host``, ``web.token``; :mod:`loopact.channels.web`) and ``loopact mcp --http``
(``--http``, ``--token``; :mod:`loopact.mcp.http`). Standard library only, so any layer can
use it.

- :func:`is_loopback`: whether a host only accepts connections from this machine (beyond
  it, both servers require a token).
- :func:`listen_socket`: the listening socket a server hands to uvicorn, bound before the
  server starts, so that a busy port is the caller's clear error rather than uvicorn's exit.
- :func:`check_token`: a token must be at least :data:`MIN_TOKEN_CHARS` characters without
  spaces (a short one can be guessed).
- :class:`LoginLimiter`: wrong tokens are counted per client address (the same wrong token
  again counts once); after :data:`FREE_FAILURES` different ones the address is locked out for
  1 s, then twice as long after every further failure, up to :data:`MAX_LOCKOUT_S`. The server
  answers 429 with ``Retry-After`` while locked out, even for the right token; a success
  clears the count.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Shortest token accepted (characters); see :func:`check_token`.
MIN_TOKEN_CHARS = 16
#: Wrong tokens an address may send before it is locked out.
FREE_FAILURES = 5
#: Longest lockout, seconds.
MAX_LOCKOUT_S = 300.0
#: Host names that are loopback whatever the resolver says.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """True if ``host`` (a name or an IPv4/IPv6 address) only accepts connections from this
    machine: ``localhost``, ``127.0.0.0/8``, ``::1``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_socket(host: str, port: int) -> socket.socket:
    """A non-blocking TCP socket bound to ``host``:``port`` and listening (backlog 128).

    ``SO_REUSEADDR`` is set, so a server restarted at once gets its port back.

    Args:
        host: Interface to bind (a name or an address; the first address it resolves to).
        port: TCP port; 0 picks a free one (read it from ``getsockname()``).

    Raises:
        socket.gaierror: ``host`` cannot be resolved.
        OSError: The address cannot be bound (a busy port, no permission); nothing is left
            open.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _type, _proto, _name, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def check_token(token: str | None, key: str) -> str | None:
    """Why ``token`` cannot protect a server, or None when it can (or there is none).

    Args:
        token: The configured token, or None for none.
        key: The setting the message names (``"web.token"``, ``"--token"``).

    Returns:
        None, or a message saying that ``key`` must be at least :data:`MIN_TOKEN_CHARS`
        characters without spaces, offering a freshly generated token.
    """
    if token is None:
        return None
    if len(token) >= MIN_TOKEN_CHARS and not any(c.isspace() for c in token):
        return None
    spaces = sum(c.isspace() for c in token)
    got = (
        f"it has {spaces} space{'s' * (spaces > 1)} or other blank characters"
        if spaces
        else f"got {len(token)}"
    )
    return (
        f"{key} must be at least {MIN_TOKEN_CHARS} characters without spaces ({got}); for "
        f"example this newly generated one: {secrets.token_urlsafe(24)}"
    )


@dataclass
class _Failures:
    count: int = 0
    locked_until: float = 0.0
    seen: set[bytes] = field(default_factory=set)


class LoginLimiter:
    """Counts wrong tokens per client address and locks an address out (issue 21).

    Args:
        free_failures: Failures allowed before the first lockout.
        max_lockout_s: Longest lockout in seconds (the lockout doubles per failure: 1, 2, 4...).
        clock: Monotonic time in seconds (tests pass their own).
    """

    def __init__(
        self,
        free_failures: int = FREE_FAILURES,
        max_lockout_s: float = MAX_LOCKOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free_failures = free_failures
        self.max_lockout_s = max_lockout_s
        self.clock = clock
        self._by_address: dict[str, _Failures] = {}

    def retry_after(self, address: str) -> float:
        """Seconds until ``address`` may try again; 0 when it is not locked out."""
        entry = self._by_address.get(address)
        if entry is None:
            return 0.0
        return max(0.0, entry.locked_until - self.clock())

    def failed(self, address: str, token: str) -> float:
        """Count a wrong ``token`` from ``address``; returns the lockout it starts (seconds).

        Only different wrong tokens count: a page that keeps sending the cookie of an old
        token is not a guesser, and is not locked out for it.
        """
        entry = self._by_address.setdefault(address, _Failures())
        digest = hashlib.sha256(token.encode()).digest()[:16]
        if digest in entry.seen:
            return 0.0
        if len(entry.seen) < 1000:
            entry.seen.add(digest)
        entry.count += 1
        over = entry.count - self.free_failures + 1  # the free_failures-th starts a lockout
        if over <= 0:
            return 0.0
        lockout = min(self.max_lockout_s, 2.0 ** (over - 1))
        entry.locked_until = self.clock() + lockout
        if len(self._by_address) > 10_000:  # many addresses: forget the oldest
            self._by_address.pop(next(iter(self._by_address)))
        return lockout

    def succeeded(self, address: str) -> None:
        """A right token: forget the address's failures."""
        self._by_address.pop(address, None)
