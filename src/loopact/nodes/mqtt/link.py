"""One MQTT client connection, owned by loopact (SPEC C4, C7, H1; MQTT 3.1.1).

:class:`MqttLink` wraps a ``paho-mqtt`` 2.x client (``CallbackAPIVersion.VERSION2``) whose
network thread (``loop_start``) reads and writes the socket and reconnects on its own; every
message, connection change and subscribe acknowledgement is handed to the asyncio loop with
``call_soon_threadsafe`` (no polling). Around it, loopact adds what the broker protocol leaves
to the client:

- **reconnect with a persistent session**: ``clean_session=False`` and one client id for the
  life of the process, so the broker keeps subscriptions and queued QoS 1 messages across a
  link drop; when the broker lost the session (``session_present`` false after a broker restart
  without persistence) every subscription is sent again. The reconnect delay grows from
  :attr:`MqttSettings.reconnect_min_s` to :attr:`MqttSettings.reconnect_max_s`.
- **retained state kept locally**: the newest retained payload of every topic this link
  publishes retained is republished after each reconnect (heartbeats are not queued while the
  link is down, they are current again at once).
- **bounded delivery**: each subscription has a bounded queue (the oldest messages are dropped
  and counted under a flood) and one drain callback per batch on the event loop; a message
  larger than :attr:`MqttSettings.max_payload_bytes` is dropped with a log line.
- **credentials** (user name and password, TLS with a CA file and a client certificate) come
  from :class:`~loopact.nodes.mqtt.settings.MqttSettings`; the password is never logged or
  shown in a ``repr``, and a ``user:password@`` part of a broker URL is taken out of every
  message.

Why paho-mqtt rather than aiomqtt: paho 2.x already has what loopact needs of a client —
QoS 1 retransmission with the DUP flag after a reconnect, an outgoing queue while the link is
down, its own reconnect loop — and a network thread, the same shape as the ROS 2 connector
(transport thread, results handed to asyncio thread-safely). aiomqtt wraps the same paho client
but has no reconnect: its users rebuild the client in their own loop and lose the in-flight
state with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loopact._compat import wait_within
from loopact.errors import ConfigError, NodeError
from loopact.nodes.mqtt.settings import MqttSettings

logger = logging.getLogger(__name__)

LinkState = Literal["up", "down", "refused"]
MessageCallback = Callable[[str, bytes, bool], None]
"""``callback(topic, payload, retained)``, on the event loop."""
StateCallback = Callable[[LinkState, str], None]
"""``callback(state, detail)``, on the event loop, at each connection change."""

_REFUSED_HINTS = {
    "Bad user name or password": (
        "bad user name or password (mqtt.username and mqtt.password, or LOOPACT_MQTT_USERNAME "
        "and LOOPACT_MQTT_PASSWORD)"
    ),
    "Not authorized": (
        "not authorised: a wrong user name or password, or the broker does not let this "
        "client in (mqtt.username and mqtt.password, or LOOPACT_MQTT_USERNAME and "
        "LOOPACT_MQTT_PASSWORD)"
    ),
    "Client identifier not valid": "client id rejected (mqtt.client_id)",
    "Unsupported protocol version": "protocol version refused (loopact speaks MQTT 3.1.1)",
    "Server unavailable": "server unavailable",
}
_LOGIN_REFUSALS = ("Bad user name or password", "Not authorized")

_LOSSES = {
    # MQTT 3.1.1 has no DISCONNECT from the broker: paho reports a closed socket (the broker
    # shut down or restarted, the network dropped) as "Unspecified error" (issue 39 item 10)
    "Unspecified error": (
        "the connection was lost: the broker shut down or restarted, or the network dropped"
    ),
    "Keep alive timeout": "the broker stopped answering (nothing within the keep-alive time)",
    "Success": "disconnected",
    "Normal disconnection": "disconnected",
}
"""paho's disconnect reasons in words people can act on."""


def new_client_id(role: str) -> str:
    """A client id for one process run: ``loopact-<role>-<8 hex>`` (at most 64 characters)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in role)[:40]
    return f"loopact-{safe}-{uuid.uuid4().hex[:8]}"


@dataclass(eq=False)
class _Sub:
    """One subscription: a topic filter, its callback and its bounded queue."""

    link: MqttLink
    filter: str
    qos: int
    callback: MessageCallback
    depth: int
    queue: deque[tuple[str, bytes, bool]] = field(default_factory=deque)
    scheduled: bool = False
    closed: bool = False
    dropped: int = 0
    acked: asyncio.Future[None] | None = None

    def push(self, item: tuple[str, bytes, bool]) -> bool:
        """Queue one message (network thread); True when a drain must be scheduled."""
        with self.link._lock:
            if self.closed:
                return False
            if len(self.queue) >= self.depth:
                self.queue.popleft()
                self.dropped += 1
                if self.dropped in (1, 100) or self.dropped % 10_000 == 0:
                    logger.warning(
                        "MQTT %s: %d messages dropped (more than %d waiting: a flood)",
                        self.filter,
                        self.dropped,
                        self.depth,
                    )
            self.queue.append(item)
            if self.scheduled:
                return False
            self.scheduled = True
            return True

    def drain(self) -> None:
        """Run the callback for every queued message (event loop)."""
        with self.link._lock:
            items = list(self.queue)
            self.queue.clear()
            self.scheduled = False
        for topic, payload, retained in items:
            if self.closed:
                return
            try:
                self.callback(topic, payload, retained)
            except Exception:
                logger.exception("MQTT subscriber of %s failed", self.filter)

    def close(self) -> None:
        """Stop receiving (unsubscribes when no other subscription has the same filter)."""
        if not self.closed:
            self.closed = True
            self.link._remove(self)


class MqttLink:
    """One broker connection with reconnect, persistent session and bounded delivery.

    Args:
        settings: Broker address and credentials.
        client_id: The MQTT client id (stable for the life of this object).
        will: ``(topic, payload, qos, retain)`` the broker publishes when the link dies
            without a clean disconnect (presence, SPEC C4), or None.
        clean_session: False keeps the session (subscriptions, queued QoS 1 messages) across
            link drops.
        on_state: Called on the event loop at each connection change.
    """

    def __init__(
        self,
        settings: MqttSettings,
        client_id: str,
        *,
        will: tuple[str, bytes, int, bool] | None = None,
        clean_session: bool = False,
        on_state: StateCallback | None = None,
    ) -> None:
        self.settings = settings
        self.address = settings.address
        self.client_id = client_id
        self.will = will
        self.clean_session = clean_session
        self.on_state = on_state
        self.connected = False
        self.connects = 0
        """Successful connections so far (1 after the first, more after reconnects)."""
        self._lock = threading.Lock()
        self._subs: list[_Sub] = []
        self._retained: dict[str, tuple[bytes, int]] = {}
        self._pending_acks: dict[int, list[_Sub]] = {}
        self._early_acks: dict[int, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._first: asyncio.Future[None] | None = None
        self._up = asyncio.Event()
        self._closed = False
        self._refused = ""
        self._oversize_warned: set[str] = set()

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, require: bool = False) -> bool:
        """Connect in the background and wait up to ``connect_timeout_s`` for the broker.

        Args:
            require: Raise when the broker is not reachable in time (otherwise the link keeps
                trying in the background and this returns False).

        Returns:
            True when connected.

        Raises:
            ConfigError: The broker refused the login (wrong user name or password, not
                authorised) or the TLS files cannot be used.
            NodeError: ``require`` and the broker did not answer in time.
        """
        if self._client is None:
            self._loop = asyncio.get_running_loop()
            self._first = self._loop.create_future()
            self._client = self._make_client()
            try:
                self._client.connect_async(
                    self.address.host, self.address.port, keepalive=self.settings.keepalive_s
                )
            except (OSError, ValueError) as exc:
                raise NodeError(f"MQTT: cannot connect to {self.address}: {exc}") from None
            self._client.loop_start()
        assert self._first is not None
        try:
            await wait_within(
                asyncio.shield(self._first), max(0.1, self.settings.connect_timeout_s)
            )
        except asyncio.TimeoutError:
            if require:
                hint = " or the TLS handshake failed (mqtt.tls.*)" if self.address.tls else ""
                raise NodeError(
                    f"MQTT broker {self.address} is not reachable (no answer within "
                    f"{self.settings.connect_timeout_s:g} s){hint}"
                ) from None
            logger.warning(
                "MQTT broker %s is not reachable yet; retrying in the background", self.address
            )
            return False
        return True

    def _make_client(self) -> Any:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            clean_session=self.clean_session,
            protocol=mqtt.MQTTv311,
        )
        s = self.settings
        if s.username is not None:
            client.username_pw_set(s.username, s.password)
        if self.address.tls:
            try:
                client.tls_set(
                    ca_certs=str(s.ca_file) if s.ca_file else None,
                    certfile=str(s.cert_file) if s.cert_file else None,
                    keyfile=str(s.key_file) if s.key_file else None,
                    cert_reqs=ssl.CERT_REQUIRED,
                )
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise ConfigError(
                    f"mqtt.tls: the CA / certificate / key files cannot be used: {exc}",
                    key="mqtt.tls",
                ) from None
            if s.tls_insecure:
                client.tls_insecure_set(True)
        if self.will is not None:
            topic, payload, qos, retain = self.will
            client.will_set(topic, payload, qos, retain)
        client.reconnect_delay_set(s.reconnect_min_s, s.reconnect_max_s)  # type: ignore[arg-type]
        client.max_queued_messages_set(s.max_queued)
        client.max_inflight_messages_set(100)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        return client

    async def stop(self, final: list[tuple[str, bytes, int, bool]] | None = None) -> None:
        """Publish ``final`` messages (if connected), disconnect cleanly, end the thread.

        A clean disconnect does not fire the last will; publish what it would say in
        ``final``. Bounded: gives up after 2 s.
        """
        if self._closed:
            return
        self._closed = True
        client = self._client
        if client is None:
            return
        if self.connected and final:
            infos = [client.publish(t, p, q, r) for t, p, q, r in final]
            for info in infos:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(info.wait_for_publish, 1.0)
        with contextlib.suppress(Exception):
            client.disconnect()
        try:
            await wait_within(asyncio.to_thread(client.loop_stop), 2.0)
        except (asyncio.TimeoutError, Exception) as exc:  # daemon thread: never blocks exit
            logger.debug("MQTT network thread did not stop in time: %r", exc)
        self.connected = False

    # ------------------------------------------------------------------ paho callbacks
    # (network thread: only hand over to the event loop)
    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn, *args)

    def _on_connect(self, client: Any, _u: Any, flags: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            name = str(getattr(reason, "getName", lambda: reason)())
            detail = _REFUSED_HINTS.get(name, name)
            if self.connects == 0 and name in _LOGIN_REFUSALS:
                # A wrong password will not get better by retrying: stop and say so.
                self._refused = detail
                with contextlib.suppress(Exception):
                    client.disconnect()
            self._post(self._set_state, "refused", detail)
            return
        _no_delay(client)
        session = bool(getattr(flags, "session_present", False))
        with self._lock:
            subs = [s for s in self._subs if not s.closed]
            retained = list(self._retained.items())
        if not session or self.clean_session:
            self._send_subscribe(client, subs)
        for topic, (payload, qos) in retained:
            client.publish(topic, payload, qos, True)
        self._post(self._set_state, "up", "session kept" if session else "new session")

    def _on_disconnect(self, _c: Any, _u: Any, flags: Any, reason: Any, _p: Any) -> None:
        text = str(reason)
        from_broker = bool(getattr(flags, "is_disconnect_packet_from_server", False))
        detail = f"the broker closed the session: {text}" if from_broker else None
        self._post(self._set_state, "down", detail or _LOSSES.get(text, text))

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        topic = str(msg.topic)
        payload = bytes(msg.payload)
        if len(payload) > self.settings.max_payload_bytes:
            if topic not in self._oversize_warned and len(self._oversize_warned) < 1000:
                self._oversize_warned.add(topic)
                logger.warning(
                    "MQTT %s: dropped a message of %d bytes (larger than the %d bytes a "
                    "message may have; later ones on this topic are dropped without a line)",
                    topic,
                    len(payload),
                    self.settings.max_payload_bytes,
                )
            return
        import paho.mqtt.client as mqtt

        item = (topic, payload, bool(msg.retain))
        with self._lock:
            subs = [s for s in self._subs if mqtt.topic_matches_sub(s.filter, topic)]
        for sub in subs:
            if sub.push(item):
                self._post(sub.drain)

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, codes: Any, _p: Any) -> None:
        failed = [c for c in codes if getattr(c, "is_failure", False)]
        error = str(failed[0]) if failed else ""
        with self._lock:
            subs = self._pending_acks.pop(mid, None)
            if subs is None:  # the SUBACK came before subscribe() returned its mid
                self._early_acks[mid] = error
                return
        self._post(self._acked, subs, error)

    # ------------------------------------------------------------------ event loop side
    def _set_state(self, state: LinkState, detail: str) -> None:
        was = self.connected
        self.connected = state == "up"
        if state == "up":
            self.connects += 1
            self._up.set()
            if self._first is not None and not self._first.done():
                self._first.set_result(None)
            if self.connects > 1:
                logger.info("MQTT reconnected to %s (%s)", self.address, detail)
        else:
            self._up.clear()
            if state == "refused":
                if self._refused and self._first is not None and not self._first.done():
                    # the caller reports it (loopact: ... and exit 2): no second line here
                    self._first.set_exception(
                        ConfigError(
                            f"MQTT broker {self.address} refused the connection: {detail}",
                            key="mqtt.password",
                        )
                    )
                else:
                    logger.error("MQTT broker %s refused the connection: %s", self.address, detail)
            elif was and not self._closed:
                logger.warning("MQTT link to %s lost (%s); reconnecting", self.address, detail)
        if self.on_state is not None and (state != "down" or was) and not self._closed:
            try:
                self.on_state(state, detail)
            except Exception:
                logger.exception("MQTT link state listener failed")

    def _acked(self, subs: list[_Sub], error: str) -> None:
        for sub in subs:
            fut = sub.acked
            if fut is not None and not fut.done():
                if error:
                    fut.set_exception(NodeError(f"MQTT broker refused {sub.filter}: {error}"))
                else:
                    fut.set_result(None)

    async def wait_up(self, timeout_s: float) -> bool:
        """Wait until the link is up (True) or ``timeout_s`` passed (False)."""
        if self.connected:
            return True
        try:
            await wait_within(self._up.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ verbs
    def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> Any:
        """Publish (thread-safe, never blocks). QoS 1 messages wait in the outgoing queue while
        the link is down; a retained message is also kept here and republished on reconnect
        (an empty retained payload clears it).

        Returns:
            paho's ``MQTTMessageInfo`` (``is_published()`` once the broker acknowledged a
            QoS 1 message), or None when nothing was sent now.

        Raises:
            NodeError: The outgoing queue is full (the link has been down a long time).
        """
        if self._client is None or self._closed:
            return None
        if retain:
            with self._lock:
                if payload:
                    self._retained[topic] = (payload, qos)
                else:
                    self._retained.pop(topic, None)
            if not self.connected:
                return None  # republished on reconnect
        import paho.mqtt.client as mqtt

        info = self._client.publish(topic, payload, qos, retain)
        if info.rc == mqtt.MQTT_ERR_QUEUE_SIZE:
            raise NodeError(
                f"MQTT: {self.settings.max_queued} messages wait for the broker "
                f"{self.address}; {topic} not sent"
            )
        return info

    def subscribe(
        self, topic_filter: str, callback: MessageCallback, *, qos: int = 1, depth: int = 100
    ) -> _Sub:
        """Subscribe; ``callback(topic, payload, retained)`` runs on the event loop.

        The subscription is sent now (or on connect) and again after a reconnect that lost
        the session. Await :meth:`acked` to know the broker has it.
        """
        sub = _Sub(self, topic_filter, qos, callback, max(1, depth))
        if self._loop is not None:
            sub.acked = self._loop.create_future()
        with self._lock:
            self._subs.append(sub)
        if self._client is not None and self.connected:
            self._send_subscribe(self._client, [sub])
        return sub

    async def acked(self, sub: _Sub, timeout_s: float) -> None:
        """Wait for the broker's SUBACK of ``sub``.

        Raises:
            NodeError: Not acknowledged within ``timeout_s`` or refused by the broker.
        """
        if sub.acked is None:
            return
        try:
            await wait_within(asyncio.shield(sub.acked), timeout_s)
        except asyncio.TimeoutError:
            raise NodeError(
                f"MQTT broker {self.address} did not confirm the subscription to {sub.filter} "
                f"within {timeout_s:g} s"
            ) from None

    def _send_subscribe(self, client: Any, subs: list[_Sub]) -> None:
        if not subs:
            return
        pairs: dict[str, int] = {}
        for s in subs:
            pairs[s.filter] = max(pairs.get(s.filter, 0), s.qos)
        rc, mid = client.subscribe(list(pairs.items()))
        if rc != 0 or mid is None:
            return  # not connected: sent again on connect
        with self._lock:
            if mid in self._early_acks:
                error = self._early_acks.pop(mid)
            else:
                self._pending_acks[mid] = subs
                return
        self._post(self._acked, subs, error)

    def _remove(self, sub: _Sub) -> None:
        with self._lock:
            with contextlib.suppress(ValueError):
                self._subs.remove(sub)
            still = any(s.filter == sub.filter for s in self._subs)
            sub.queue.clear()
        if not still and self._client is not None and self.connected and not self._closed:
            with contextlib.suppress(Exception):
                self._client.unsubscribe(sub.filter)

    def forget_retained(self, topic: str) -> None:
        """Stop republishing ``topic`` after reconnects."""
        with self._lock:
            self._retained.pop(topic, None)


def _no_delay(client: Any) -> None:
    """Switch Nagle's algorithm off: a QoS 1 publish waits for its PUBACK, and with Nagle on
    one side and delayed ACKs on the other every call stalled ~40 ms per message on loopback."""
    with contextlib.suppress(Exception):
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
