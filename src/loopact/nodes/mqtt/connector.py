"""The MQTT connector: the node protocol over a broker, for fleets (SPEC C4, X4; docs/mqtt.md).

:class:`MqttConnector` implements the transport-neutral
:class:`~loopact.nodes.connector.Connector` verbs over one
:class:`~loopact.nodes.mqtt.link.MqttLink` (paho-mqtt 2.x, MQTT 3.1.1, persistent session),
so every loopact node (``@loopact.tool`` files run by ``loopact node``, input nodes, the
robot's tools) runs over MQTT unchanged.

Mapping of the neutral verbs (``<p>`` is the topic prefix, ``mqtt.prefix``, default
``loopact``; a neutral topic ``/a/b`` is the MQTT topic ``<p>/a/b``):

- **publish / subscribe**: string payloads are UTF-8 text; images are a JSON object
  ``{"encoding": "jpeg"|"png"|"rgb8", "width", "height", "stamp_s", "frame_id", "data": base64}``.
  Text goes with QoS 1, images with QoS 0. A *latched* topic is a retained message; a
  subscriber that is not latched ignores retained messages. An empty retained message on a
  latched topic means "gone" (it also clears the broker's copy).
- **subscribe_pattern**: the ``+`` wildcard, ``<p>/<prefix>+<suffix>`` (QoS 0 when latched:
  heartbeats repeat, so the agent sends no PUBACK for each).
- **long calls** (served endpoint ``/<agent>/output/<name>``): see :mod:`loopact.nodes.mqtt.calls`
  (``.../request`` and ``.../response`` with correlation ids, QoS 1, cancel, exit code,
  duplicate requests answered from a cache and never run twice).
- **presence**: the connection's last will is a retained ``{"state": "offline"}`` on
  ``<p>/_presence/<client id>``; on connect it publishes ``{"state": "online"}`` there and the
  list of its retained topics on ``<p>/_presence/<client id>/topics``. When a client goes
  offline without clearing its retained topics (a crash, a killed process, a cut cable), every
  connector hands its subscribers of those topics an empty message at once — the agent drops
  that node in well under a second instead of after the 3 s heartbeat timeout — and ignores
  stale retained copies of them from then on.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopact.errors import ConfigError, NodeError
from loopact.nodes.connector import (
    Callback,
    CallHandle,
    Connector,
    Handler,
    ImageData,
    Payload,
    PayloadKind,
    ProgressFn,
    Subscription,
    TopicCallback,
)
from loopact.nodes.mqtt.calls import CallClient, CallServer
from loopact.nodes.mqtt.link import LinkState, MqttLink, new_client_id
from loopact.nodes.mqtt.settings import MqttSettings

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "loopact"
OFFLINE_GRACE_S = 0.2
"""Seconds a last will waits before the client's retained topics are dropped."""
RECONNECT_SETTLE_S = 2.5
"""Right after our own reconnect, wills wait this long (the others reconnect too). Not after
the first connect: a will then is news (a node that died while the agent was starting)."""
PRESENCE = "_presence"
"""The presence segment under the prefix (agent names start with a letter: no clash)."""


def check_prefix(prefix: str) -> str:
    """Validate a topic prefix (``loopact``, ``site1/loopact`` or ``""``).

    Raises:
        ConfigError: It has wildcards, a leading or trailing ``/``, an empty level or ``$``.
    """
    if prefix == "":
        return prefix
    bad = any(c in prefix for c in "+#$\0") or prefix.startswith("/") or prefix.endswith("/")
    if bad or "//" in prefix:
        raise ConfigError(
            f"mqtt.prefix {prefix!r} must be topic levels without wildcards, $, or a leading "
            "or trailing '/' (e.g. loopact or site1/loopact)",
            key="mqtt.prefix",
        )
    return prefix


def encode_image(img: ImageData, quality: int = 90) -> bytes:
    """An image as loopact's MQTT image JSON (JPEG inside, base64)."""
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(img.rgb, dtype=np.uint8), "RGB").save(
        buf, format="JPEG", quality=quality
    )
    h, w = img.rgb.shape[:2]
    return json.dumps(
        {
            "encoding": "jpeg",
            "width": int(w),
            "height": int(h),
            "stamp_s": float(img.stamp_s),
            "frame_id": img.frame_id,
            "data": base64.b64encode(buf.getvalue()).decode("ascii"),
        }
    ).encode()


def decode_image(payload: bytes) -> ImageData:
    """Parse loopact's MQTT image JSON (``jpeg``, ``png`` or raw ``rgb8``).

    Raises:
        ValueError: Not that JSON, an unknown encoding, data that does not decode, or an
            image whose decoded pixels would pass the image gate's 100 MB (from its header,
            before decoding; issue 21 item 10).
    """
    try:
        obj = json.loads(payload)
        data = base64.b64decode(obj["data"], validate=True)
        encoding = str(obj.get("encoding", "jpeg"))
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ValueError(f"not an image message ({exc})") from None
    stamp = float(obj.get("stamp_s", 0.0) or 0.0)
    frame = str(obj.get("frame_id", "camera"))
    if encoding == "rgb8":
        w, h = int(obj["width"]), int(obj["height"])
        if len(data) != w * h * 3:
            raise ValueError(f"rgb8 data of {len(data)} bytes does not fit {w}x{h}")
        rgb = np.frombuffer(data, np.uint8).reshape(h, w, 3).copy()
        return ImageData(rgb, stamp, frame)
    if encoding not in ("jpeg", "png"):
        raise ValueError(f"unknown image encoding {encoding!r} (jpeg, png or rgb8)")
    from PIL import Image as PILImage

    from loopact.vision.gate import DEFAULT_MAX_DECODED_BYTES

    try:
        pil = PILImage.open(io.BytesIO(data))
    except Exception as exc:
        raise ValueError(f"{encoding} data does not decode: {exc}") from None
    with pil:
        # Bounded from the header, before any pixel is decoded, as the image gate does
        # (issue 21 item 10): a 10 KB 1-bit PNG of 9000x9000 pixels would take 324 MB.
        need = pil.width * pil.height * 4  # Pillow's RGB pixel
        if need > DEFAULT_MAX_DECODED_BYTES:
            raise ValueError(
                f"{encoding} image of {pil.width}x{pil.height} pixels would need "
                f"{need / 1e6:.0f} MB to decode; the limit is "
                f"{DEFAULT_MAX_DECODED_BYTES / 1e6:.0f} MB"
            )
        try:
            rgb = np.asarray(pil.convert("RGB"), dtype=np.uint8)
        except Exception as exc:
            raise ValueError(f"{encoding} data does not decode: {exc}") from None
    return ImageData(np.ascontiguousarray(rgb), stamp, frame)


@dataclass(eq=False)
class _TopicSub:
    """A neutral subscription (one topic or a ``+`` pattern) over one link subscription."""

    owner: MqttConnector
    kind: PayloadKind
    latched: bool
    on_topic: Callable[[str, Payload], None]
    link_sub: Any = None
    closed: bool = False
    warned: bool = False

    def deliver(self, topic: str, payload: bytes, retained: bool) -> None:
        if self.closed:
            return
        owner = self.owner
        if retained and (not self.latched or owner._is_stale(topic)):
            return
        neutral = owner.to_neutral(topic)
        value: Payload
        if self.kind == "image":
            if not payload:
                return
            try:
                value = decode_image(payload)
            except ValueError as exc:
                if not self.warned:
                    self.warned = True
                    logger.warning("dropping messages on %s: %s", topic, exc)
                return
        else:
            value = payload.decode("utf-8", errors="replace")
        if self.latched and self.kind == "string":
            owner._delivered.add(topic)
        self.on_topic(neutral, value)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.link_sub is not None:
                self.link_sub.close()
            with contextlib.suppress(ValueError):
                self.owner._subs.remove(self)


@dataclass
class _Peer:
    """What the presence topics say of one client."""

    online: bool = True
    topics: set[str] = field(default_factory=set)


class MqttConnector(Connector):
    """MQTT transport (see the module docstring).

    Args:
        settings: Broker address and credentials.
        prefix: Topic prefix of the node protocol (``mqtt.prefix``).
        role: Part of the client id (``agent-robot1``, ``node-my_tool``).
        client_id: The MQTT client id (default: :func:`~loopact.nodes.mqtt.link.new_client_id`).
        on_link: Called on the event loop with ``(state, detail)`` at each connection change
            (``up``, ``down``, ``refused``) — the app turns it into ``mqtt_link`` trace events.
        require_broker: :meth:`start` raises when the broker does not answer in time
            (otherwise it logs a warning and keeps trying in the background).
    """

    transport = "mqtt"

    def __init__(
        self,
        settings: MqttSettings,
        *,
        prefix: str = DEFAULT_PREFIX,
        role: str = "agent",
        client_id: str | None = None,
        on_link: Callable[[LinkState, str], None] | None = None,
        require_broker: bool = False,
    ) -> None:
        self.settings = settings
        self.prefix = check_prefix(prefix)
        self.client_id = client_id or new_client_id(role)
        self.on_link = on_link
        self.require_broker = require_broker
        self.presence_topic = self.to_mqtt(f"/{PRESENCE}/{self.client_id}")
        self.link = MqttLink(
            settings,
            self.client_id,
            will=(self.presence_topic, json.dumps({"state": "offline"}).encode(), 1, True),
            on_state=self._on_state,
        )
        self._subs: list[_TopicSub] = []
        self._peers: dict[str, _Peer] = {}
        self._own_retained: set[str] = set()
        self._delivered: set[str] = set()
        self._presence_sub: Any = None
        self._link_epoch = 0
        self._last_up_s = 0.0
        self._started = False
        self._closed = False
        self.calls = CallClient(self)
        self.server = CallServer(self)

    # ------------------------------------------------------------------ topics
    def to_mqtt(self, topic: str) -> str:
        """Neutral ``/a/b`` -> MQTT ``<prefix>/a/b``."""
        path = topic.lstrip("/")
        return f"{self.prefix}/{path}" if self.prefix else path

    def wire_topic(self, topic: str) -> str:
        """The MQTT topic of neutral ``topic`` (:meth:`to_mqtt`), for log lines and events."""
        return self.to_mqtt(topic)

    def to_neutral(self, topic: str) -> str:
        """MQTT ``<prefix>/a/b`` -> neutral ``/a/b``."""
        if self.prefix and topic.startswith(self.prefix + "/"):
            topic = topic[len(self.prefix) + 1 :]
        return "/" + topic

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Connect (idempotent); subscribes to presence first.

        Raises:
            ConfigError: The broker refused the login, or a TLS file cannot be used.
            NodeError: ``require_broker`` and the broker did not answer in time.
        """
        if self._closed:
            raise NodeError("the MQTT connector was shut down")
        if self._started:
            return
        self._started = True
        self._presence_sub = self.link.subscribe(
            self.to_mqtt(f"/{PRESENCE}/#"), self._on_presence, depth=10_000
        )
        up = await self.link.start(require=self.require_broker)
        if up:
            with contextlib.suppress(NodeError):
                await self.link.acked(self._presence_sub, 2.0)
        logger.info("MQTT connector %s started (broker %s)", self.client_id, self.link.address)

    def _on_state(self, state: LinkState, detail: str) -> None:
        self._link_epoch += 1
        if state == "up":
            self._announce()
            if self.link.connects > 1:  # wills settle only after a reconnect, not at start
                self._last_up_s = asyncio.get_running_loop().time()
                self.calls.after_reconnect()
        if self.on_link is not None:
            try:
                self.on_link(state, detail)
            except Exception:
                logger.exception("MQTT link listener failed")

    def _announce(self) -> None:
        """Presence: online, and the list of our retained topics."""
        with contextlib.suppress(NodeError):
            self.link.publish(
                self.presence_topic, json.dumps({"state": "online"}).encode(), 1, True
            )
            self._publish_topic_list()

    def _publish_topic_list(self) -> None:
        body = json.dumps({"topics": sorted(self._own_retained)}).encode()
        self.link.publish(self.presence_topic + "/topics", body, 1, True)

    async def shutdown(self) -> None:
        """Clear our retained topics and presence (a clean exit fires no last will), stop."""
        if self._closed:
            return
        self._closed = True
        await self.server.close()
        self.calls.close()
        for sub in list(self._subs):
            sub.close()
        final = [(t, b"", 1, True) for t in sorted(self._own_retained)]
        final += [
            (self.presence_topic + "/topics", b"", 1, True),
            (self.presence_topic, b"", 1, True),
        ]
        await self.link.stop(final if self._started else None)

    # ------------------------------------------------------------------ presence
    def _on_presence(self, topic: str, payload: bytes, _retained: bool) -> None:
        rest = topic[len(self.to_mqtt(f"/{PRESENCE}/")) :]
        client, _, what = rest.partition("/")
        if not client or client == self.client_id:
            return
        peer = self._peers.setdefault(client, _Peer())
        if what == "topics":
            try:
                topics = json.loads(payload)["topics"] if payload else []
                peer.topics = {str(t) for t in topics}
            except (ValueError, KeyError, TypeError):
                logger.warning("MQTT presence of %s: the topic list is not valid JSON", client)
                return
            if not peer.online:
                self._schedule_offline(client)
            if not payload and not peer.online:
                self._peers.pop(client, None)
            return
        if what:
            return
        if not payload:  # a clean exit cleared its presence
            self._peers.pop(client, None)
            return
        try:
            state = json.loads(payload).get("state")
        except (ValueError, AttributeError):
            logger.warning("MQTT presence of %s is not valid JSON", client)
            return
        was = peer.online
        peer.online = state == "online"
        if was and not peer.online:
            self._schedule_offline(client)

    def _schedule_offline(self, client: str) -> None:
        """Act on a last will after a short grace, unless it was the broker going down.

        A broker that shuts down publishes the wills of every client it still has, and after a
        restart queued wills arrive just before the clients' new "online"; so a will counts
        only if our own link stayed up for :data:`OFFLINE_GRACE_S` (longer right after a
        reconnect, while the others reconnect too) and the client did not come back.
        """
        loop = asyncio.get_running_loop()
        recent = loop.time() - self._last_up_s < RECONNECT_SETTLE_S
        grace = RECONNECT_SETTLE_S if recent else OFFLINE_GRACE_S
        epoch = self._link_epoch
        loop.call_later(grace, self._confirm_offline, client, epoch)

    def _confirm_offline(self, client: str, epoch: int) -> None:
        peer = self._peers.get(client)
        if self._closed or peer is None or peer.online or epoch != self._link_epoch:
            return
        logger.info("MQTT client %s went offline (last will)", client)
        self._went_offline(client, peer)

    def _owned_by_online(self, topic: str) -> bool:
        return topic in self._own_retained or any(
            p.online and topic in p.topics for p in self._peers.values()
        )

    def _is_stale(self, topic: str) -> bool:
        """A retained topic whose only publishers are offline (its retained copy is stale)."""
        owners = [p for p in self._peers.values() if topic in p.topics]
        return bool(owners) and not self._owned_by_online(topic)

    def _went_offline(self, client: str, peer: _Peer) -> None:
        """Hand an empty message to the subscribers of a dead client's retained topics."""
        for topic in sorted(peer.topics):
            if self._owned_by_online(topic) or topic not in self._delivered:
                continue
            self._delivered.discard(topic)
            for sub in list(self._subs):
                if sub.latched and sub.kind == "string" and _matches(sub.link_sub, topic):
                    sub.on_topic(self.to_neutral(topic), "")

    # ------------------------------------------------------------------ neutral verbs
    async def publish(self, topic: str, payload: Payload, *, latched: bool = False) -> None:
        """See :meth:`Connector.publish` (text QoS 1, images QoS 0, latched = retained).

        Raises:
            NodeError: The outgoing queue is full (the broker has been unreachable long).
        """
        if self._closed:
            return
        mqtt_topic = self.to_mqtt(topic)
        if isinstance(payload, ImageData):
            data, qos = encode_image(payload), 0
        else:
            data, qos = payload.encode("utf-8"), 1
        if latched and mqtt_topic not in self._own_retained and data:
            self._own_retained.add(mqtt_topic)
            if self.link.connected:
                self._publish_topic_list()
        self.link.publish(mqtt_topic, data, qos, latched)

    def subscribe(
        self,
        topic: str,
        kind: PayloadKind,
        callback: Callback,
        *,
        latched: bool = False,
        depth: int = 10,
    ) -> Subscription:
        """See :meth:`Connector.subscribe` (QoS 1).

        Text is buffered up to ``max(depth, 1000)`` messages between two turns of the event
        loop (a broker hands over bursts; the subscriber's own bound, e.g. the input hub's 50,
        then drops and counts the oldest); images up to ``depth``.
        """
        buffered = max(depth, 1) if kind == "image" else max(depth, 1000)
        return self._subscribe(
            self.to_mqtt(topic), kind, lambda _t, p: callback(p), latched, buffered
        )

    def subscribe_pattern(
        self,
        prefix: str,
        suffix: str,
        kind: PayloadKind,
        callback: TopicCallback,
        *,
        latched: bool = False,
    ) -> Subscription:
        """See :meth:`Connector.subscribe_pattern` (an MQTT ``+`` wildcard)."""
        if not prefix.endswith("/") or (suffix and not suffix.startswith("/")):
            raise NodeError(f"pattern {prefix}*{suffix}: the wildcard must be one topic level")
        # a latched pattern is a heartbeat watch: QoS 0 spares a PUBACK per heartbeat (they
        # repeat every 0.5 s; over TCP one is lost only with the link, which reconnects)
        return self._subscribe(
            self.to_mqtt(prefix) + "+" + suffix,
            kind,
            callback,
            latched,
            1000,
            qos=0 if latched else 1,
        )

    def _subscribe(
        self,
        topic_filter: str,
        kind: PayloadKind,
        on_topic: Callable[[str, Payload], None],
        latched: bool,
        depth: int,
        qos: int = 1,
    ) -> _TopicSub:
        sub = _TopicSub(self, kind, latched, on_topic)
        sub.link_sub = self.link.subscribe(topic_filter, sub.deliver, qos=qos, depth=depth)
        self._subs.append(sub)
        return sub

    def subscriber_count(self, topic: str) -> int | None:
        """MQTT cannot tell (None)."""
        return None

    # ------------------------------------------------------------------ long calls
    def serve(self, endpoint: str, handler: Handler, *, instance: str = "") -> Subscription:
        """Serve calls on ``endpoint`` (see :mod:`loopact.nodes.mqtt.calls`).

        Args:
            endpoint: Neutral endpoint ``/<agent>/output/<name>``.
            handler: The call handler.
            instance: The node instance it serves; requests addressed to another instance
                (a second node with the same tool name) are ignored.
        """
        return self.server.serve(endpoint, handler, instance)

    async def start_call(
        self,
        endpoint: str,
        input_json: str,
        timeout_s: float,
        progress: ProgressFn | None = None,
        *,
        connect_timeout_s: float = 2.0,
        instance: str = "",
    ) -> CallHandle:
        """Send a call request (see :meth:`Connector.start_call`).

        Raises:
            NodeError: The link is down, or no node accepted within ``connect_timeout_s``.
        """
        return await self.calls.start(
            endpoint, input_json, timeout_s, progress, connect_timeout_s, instance
        )


def _matches(link_sub: Any, topic: str) -> bool:
    import paho.mqtt.client as mqtt

    return link_sub is not None and bool(mqtt.topic_matches_sub(link_sub.filter, topic))
