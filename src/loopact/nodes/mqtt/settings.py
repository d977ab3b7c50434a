"""Where an MQTT broker is and how to log in to it (SPEC C4, H1; config ``mqtt.*``).

:class:`MqttSettings` holds the broker URL, credentials and TLS files and the link's limits;
:func:`parse_broker` reads ``mqtt://host:port`` forms. A ``user:password@`` part of a URL is
never used and never shown: credentials come from the settings, and the password is not in
``repr``. :class:`~loopact.nodes.mqtt.link.MqttLink` is the connection itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from loopact.errors import ConfigError

DEFAULT_PORT = 1883
DEFAULT_TLS_PORT = 8883


@dataclass(frozen=True)
class BrokerAddress:
    """Where the broker listens.

    Attributes:
        host: Host name or address.
        port: TCP port.
        tls: Whether the connection uses TLS (``mqtts://``).
    """

    host: str
    port: int
    tls: bool = False

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker(url: str, key: str = "mqtt.broker") -> BrokerAddress:
    """Parse ``mqtt://host[:port]`` (also ``tcp://``, ``mqtts://``, ``ssl://`` or ``host:port``).

    A ``user:password@`` part is accepted and ignored here (credentials come from
    :class:`MqttSettings`, never from a URL that may end up in a log line).

    Raises:
        ConfigError: Not a broker URL (the message names ``key`` and shows the form).
    """
    text = (url or "").strip()
    if not text:
        raise ConfigError(f"{key} is empty; give a broker such as mqtt://127.0.0.1:1883", key=key)
    if "://" not in text:
        text = "mqtt://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{key} {_redact(url)!r} is not a broker URL: {exc}", key=key) from None
    scheme = parts.scheme.lower()
    if scheme not in ("mqtt", "tcp", "mqtts", "ssl", "tls"):
        raise ConfigError(
            f"{key} {_redact(url)!r}: scheme must be mqtt:// or mqtts:// (got {scheme}://)",
            key=key,
        )
    if not parts.hostname or parts.path not in ("", "/"):
        raise ConfigError(
            f"{key} {_redact(url)!r} must look like mqtt://host:1883 (no path)", key=key
        )
    tls = scheme in ("mqtts", "ssl", "tls")
    return BrokerAddress(parts.hostname, port or (DEFAULT_TLS_PORT if tls else DEFAULT_PORT), tls)


def _redact(url: str) -> str:
    """The URL without a ``user:password@`` part."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.rpartition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}"


@dataclass(frozen=True)
class MqttSettings:
    """How to reach and log in to a broker (config ``mqtt.*``, docs/mqtt.md).

    Attributes:
        broker: ``mqtt://host:port`` or ``mqtts://host:port`` (TLS).
        username: Login name, or None.
        password: Password, or None (never logged, not in ``repr``).
        ca_file: CA certificate file (PEM) to verify the broker; TLS on when set.
        cert_file: Client certificate (PEM) for mutual TLS.
        key_file: The client certificate's key (PEM).
        tls_insecure: Do not check the broker's host name against its certificate.
        keepalive_s: MQTT keep-alive, seconds (the broker fires the last will after 1.5x).
        connect_timeout_s: How long :meth:`MqttLink.start` waits for the first connection.
        reconnect_min_s: First delay before reconnecting, seconds (doubles up to the max).
        reconnect_max_s: Longest delay between two reconnect attempts, seconds.
        max_payload_bytes: Incoming messages larger than this are dropped with a log line.
        max_queued: QoS 1 messages kept while the link is down (beyond: refused).
    """

    broker: str = "mqtt://127.0.0.1:1883"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    tls_insecure: bool = False
    keepalive_s: int = 10
    connect_timeout_s: float = 5.0
    reconnect_min_s: float = 0.1
    reconnect_max_s: float = 1.0
    max_payload_bytes: int = 9_000_000
    max_queued: int = 2000

    @property
    def address(self) -> BrokerAddress:
        """The parsed broker address (TLS also when a CA file is given).

        Raises:
            ConfigError: ``broker`` is not a broker URL.
        """
        addr = parse_broker(self.broker)
        if self.ca_file is not None and not addr.tls:
            addr = BrokerAddress(addr.host, addr.port, True)
        return addr
