"""Long calls over MQTT: request/response with correlation ids (SPEC C2, C4; docs/mqtt.md).

For a served endpoint ``/<agent>/output/<name>`` (MQTT ``<p>/<agent>/output/<name>``):

- ``.../request`` (QoS 1), JSON with an ``op``:
    - ``{"op": "call", "id", "input_json", "timeout_s", "instance"}`` runs the tool;
    - ``{"op": "cancel", "id", "instance"}`` cancels it;
    - ``{"op": "status", "id", "instance"}`` asks again for its state (after a reconnect).
  ``id`` is the correlation id (unique per call); ``instance`` the node instance from its
  heartbeat ("" for any). Cancel and status share the request topic so that they can never
  overtake the call they refer to.
- ``.../response`` (QoS 1; progress QoS 0), JSON with the same ``id`` and a ``state``:
    - ``accepted`` (for a call still running :data:`ACCEPT_AFTER_S` after its request; a
      quicker call gets only its ``done``, which the caller takes as acceptance too),
      ``progress`` (``text``), ``running`` / ``unknown`` (status answers), and ``done`` with
      ``output_json``, ``exit_code`` (0 = success) and ``cancelled``.

The server runs each ``id`` at most once: a duplicate request (a QoS 1 redelivery, a caller
retrying after a reconnect) gets the cached reply (``accepted`` while running, the ``done``
message after), and a cancel that arrives first marks the id so that its call never starts.
So a duplicate delivery never moves a robot twice. The client asks for the state of every
call in flight after a reconnect (when its request had reached the broker): a result the
broker lost comes again from the server's cache, and a call the server never saw fails with
a clear error instead of waiting for its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from loopact._compat import wait_within
from loopact.errors import NodeError
from loopact.nodes.connector import CallReply, Handler, ProgressFn
from loopact.nodes.mqtt.link import MqttLink

logger = logging.getLogger(__name__)

MAX_REMEMBERED = 1000
"""Call ids a server remembers (their replies are resent to duplicates)."""

RESULT_GRACE_S = 30.0
"""A caller waits at most the call's timeout plus this for its result."""

ACCEPT_AFTER_S = 0.02
"""A call still running this long after its request came gets an ``accepted`` message; one
that ends sooner gets only its ``done``, which the caller takes as acceptance too (one
message less each way for the quick calls that are most calls)."""


_JSON_TYPES = {dict: "object", list: "array", int: "number", float: "number", bool: "boolean"}


def _failure_json(error: str) -> str:
    return json.dumps({"ok": False, "error": error, "data": None, "metadata": {}, "images": []})


def _parse(payload: bytes, topic: str) -> dict[str, Any] | None:
    try:
        msg = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        logger.warning(
            "MQTT %s: dropped a message that is not JSON (%d bytes)", topic, len(payload)
        )
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("id"), str) or not msg["id"]:
        logger.warning('MQTT %s: dropped a message without a string "id"', topic)
        return None
    return msg


class MqttHost(Protocol):
    """What the call server and client need of their :class:`~loopact.nodes.mqtt.MqttConnector`."""

    link: MqttLink

    def to_mqtt(self, topic: str) -> str:
        """Neutral topic -> MQTT topic."""
        ...


# ---------------------------------------------------------------------------- server


@dataclass
class _Run:
    task: asyncio.Task[CallReply] | None = None
    final: bytes | None = None
    cancelled_early: bool = False
    accept_timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class _Endpoint:
    server: CallServer
    endpoint: str
    handler: Handler
    instance: str
    request_topic: str
    response_topic: str
    runs: OrderedDict[str, _Run] = field(default_factory=OrderedDict)
    link_sub: Any = None
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.link_sub is not None:
            self.link_sub.close()
        for run in self.runs.values():
            if run.task is not None and not run.task.done():
                run.task.cancel()
        with contextlib.suppress(ValueError):
            self.server.endpoints.remove(self)


class CallServer:
    """Serves endpoints for one :class:`~loopact.nodes.mqtt.MqttConnector`."""

    def __init__(self, connector: MqttHost) -> None:
        self.connector = connector
        self.endpoints: list[_Endpoint] = []

    def serve(self, endpoint: str, handler: Handler, instance: str) -> _Endpoint:
        """Subscribe to the endpoint's request topic and run calls with ``handler``."""
        base = self.connector.to_mqtt(endpoint)
        ep = _Endpoint(self, endpoint, handler, instance, base + "/request", base + "/response")

        def on_request(topic: str, payload: bytes, retained: bool) -> None:
            if not retained:
                self._on_request(ep, payload)

        ep.link_sub = self.connector.link.subscribe(ep.request_topic, on_request, depth=1000)
        self.endpoints.append(ep)
        return ep

    def _send(self, ep: _Endpoint, body: dict[str, Any], qos: int = 1) -> bytes:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            self.connector.link.publish(ep.response_topic, data, qos)
        except NodeError as exc:
            logger.warning("%s: reply not sent: %s", ep.endpoint, exc)
        return data

    def _on_request(self, ep: _Endpoint, payload: bytes) -> None:
        if ep.closed:
            return
        msg = _parse(payload, ep.request_topic)
        if msg is None:
            return
        target = str(msg.get("instance") or "")
        if target and ep.instance and target != ep.instance:
            return  # addressed to another node with the same tool name
        call_id: str = msg["id"]
        op = msg.get("op", "call")
        run = ep.runs.get(call_id)
        if op == "cancel":
            if run is None:
                self._remember(ep, call_id, _Run(cancelled_early=True))
            elif run.task is not None and not run.task.done():
                run.task.cancel()
            return
        if op == "status":
            if run is not None and run.final is not None:
                self.connector.link.publish(ep.response_topic, run.final, 1)
            else:
                state = "running" if run is not None else "unknown"
                self._send(ep, {"id": call_id, "state": state, "instance": ep.instance})
            return
        if op != "call":
            logger.warning("%s: unknown op %r dropped", ep.request_topic, op)
            return
        if run is not None:  # a duplicate: never run it twice
            if run.final is not None:
                self.connector.link.publish(ep.response_topic, run.final, 1)
            elif run.cancelled_early:
                run.final = self._done(ep, call_id, CallReply(_failure_json("cancelled"), 1, True))
            else:
                self._send(ep, {"id": call_id, "state": "accepted", "instance": ep.instance})
            return
        raw_input = msg.get("input_json")
        try:
            timeout_s = float(msg.get("timeout_s") or 0.0)
        except (TypeError, ValueError):
            timeout_s = -1.0
        run = _Run()
        self._remember(ep, call_id, run)
        problem = (
            "timeout_s must be a number"
            if timeout_s < 0
            else None
            if raw_input is None or isinstance(raw_input, str)
            else "input_json must be a string holding the JSON object of arguments, not a "
            f"JSON {_JSON_TYPES.get(type(raw_input), type(raw_input).__name__)}"
        )
        if problem is not None:
            run.final = self._done(ep, call_id, CallReply(_failure_json(problem), 1))
            return
        input_json = raw_input or ""

        def progress(text: str) -> None:
            self._send(ep, {"id": call_id, "state": "progress", "text": str(text)[:2000]}, qos=0)

        loop = asyncio.get_running_loop()
        run.task = loop.create_task(
            ep.handler(input_json, timeout_s, progress), name=f"loopact-mqtt-call-{call_id}"
        )
        run.task.add_done_callback(lambda t: self._finished(ep, call_id, run, t))
        run.accept_timer = loop.call_later(ACCEPT_AFTER_S, self._accept, ep, call_id, run)

    def _accept(self, ep: _Endpoint, call_id: str, run: _Run) -> None:
        """Say ``accepted`` for a call still running :data:`ACCEPT_AFTER_S` after it came."""
        run.accept_timer = None
        if run.final is None and not ep.closed:
            self._send(ep, {"id": call_id, "state": "accepted", "instance": ep.instance})

    def _finished(
        self, ep: _Endpoint, call_id: str, run: _Run, task: asyncio.Task[CallReply]
    ) -> None:
        if run.accept_timer is not None:  # done first: "done" is its acceptance too
            run.accept_timer.cancel()
            run.accept_timer = None
        if task.cancelled():
            reply = CallReply(_failure_json("cancelled"), 1, cancelled=True)
        elif task.exception() is not None:
            reply = CallReply(_failure_json(f"node failure: {task.exception()!r}"), 1)
        else:
            reply = task.result()
        if not ep.closed or not task.cancelled():
            run.final = self._done(ep, call_id, reply)

    def _done(self, ep: _Endpoint, call_id: str, reply: CallReply) -> bytes:
        return self._send(
            ep,
            {
                "id": call_id,
                "state": "done",
                "output_json": reply.output_json,
                "exit_code": int(reply.exit_code),
                "cancelled": bool(reply.cancelled),
                "instance": ep.instance,
            },
        )

    @staticmethod
    def _remember(ep: _Endpoint, call_id: str, run: _Run) -> None:
        ep.runs[call_id] = run
        while len(ep.runs) > MAX_REMEMBERED:
            old_id, old = next(iter(ep.runs.items()))
            if old.task is not None and not old.task.done():
                break  # never forget a running call
            ep.runs.pop(old_id)

    async def close(self) -> None:
        """Stop serving; cancel running calls and wait for them (bounded)."""
        tasks = [
            r.task
            for ep in self.endpoints
            for r in ep.runs.values()
            if r.task and not r.task.done()
        ]
        for ep in list(self.endpoints):
            ep.close()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)


# ---------------------------------------------------------------------------- client


class _Call:
    """A call in flight (the :class:`~loopact.nodes.connector.CallHandle`)."""

    def __init__(
        self,
        client: CallClient,
        endpoint: str,
        call_id: str,
        instance: str,
        timeout_s: float,
        progress: ProgressFn | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.client = client
        self._endpoint = endpoint
        self.id = call_id
        self.instance = instance
        self.timeout_s = timeout_s
        self.progress = progress
        self.accepted: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[CallReply] = loop.create_future()
        self.request_info: Any = None

    @property
    def endpoint(self) -> str:
        return self._endpoint

    async def result(self) -> CallReply:
        """Wait for the ``done`` message.

        Raises:
            NodeError: The server said it never got the call, or nothing came within the
                call's timeout plus :data:`RESULT_GRACE_S`.
        """
        try:
            return await wait_within(asyncio.shield(self.done), self.timeout_s + RESULT_GRACE_S)
        except asyncio.TimeoutError:
            raise NodeError(f"{self._endpoint}: no result within {self.timeout_s:g} s") from None
        finally:
            if self.done.done():
                self.client.pending.pop(self.id, None)

    async def cancel(self) -> None:
        """Send a cancel request (QoS 1, after the call on the same topic)."""
        self.client.send(self, "cancel")


class CallClient:
    """Sends calls for one :class:`~loopact.nodes.mqtt.MqttConnector` and routes replies."""

    def __init__(self, connector: MqttHost) -> None:
        self.connector = connector
        self.pending: dict[str, _Call] = {}
        self._subs: dict[str, Any] = {}

    async def _response_sub(self, base: str, wait_s: float) -> None:
        sub = self._subs.get(base)
        if sub is None:
            sub = self.connector.link.subscribe(base + "/response", self._on_response, depth=1000)
            self._subs[base] = sub
        await self.connector.link.acked(sub, wait_s)

    def send(self, call: _Call, op: str, **extra: Any) -> Any:
        body = {"op": op, "id": call.id, "instance": call.instance, **extra}
        topic = self.connector.to_mqtt(call.endpoint) + "/request"
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return self.connector.link.publish(topic, data, 1, False)

    async def start(
        self,
        endpoint: str,
        input_json: str,
        timeout_s: float,
        progress: ProgressFn | None,
        connect_timeout_s: float,
        instance: str,
    ) -> _Call:
        """Publish a call and wait for ``accepted`` (see :meth:`MqttConnector.start_call`)."""
        link = self.connector.link
        if not await link.wait_up(connect_timeout_s):
            raise NodeError(f"{endpoint}: the MQTT broker {link.address} is not reachable")
        base = self.connector.to_mqtt(endpoint)
        await self._response_sub(base, connect_timeout_s)
        call = _Call(self, endpoint, uuid.uuid4().hex, instance, timeout_s, progress)
        self.pending[call.id] = call
        call.request_info = self.send(call, "call", input_json=input_json, timeout_s=timeout_s)
        try:
            await wait_within(asyncio.shield(call.accepted), connect_timeout_s)
        except asyncio.TimeoutError:
            self.pending.pop(call.id, None)
            with contextlib.suppress(NodeError):
                self.send(call, "cancel")  # should the request still arrive, it never runs
            raise NodeError(
                f"no node serves {endpoint} (no answer within {connect_timeout_s:g} s)"
            ) from None
        except asyncio.CancelledError:
            self.pending.pop(call.id, None)
            with contextlib.suppress(NodeError):
                self.send(call, "cancel")
            raise
        return call

    def _on_response(self, topic: str, payload: bytes, retained: bool) -> None:
        if retained:
            return
        msg = _parse(payload, topic)
        if msg is None:
            return
        call = self.pending.get(msg["id"])
        if call is None:
            return  # another agent's call on a shared node, or a duplicate reply
        state = msg.get("state")
        if state in ("accepted", "running", "progress", "done") and not call.accepted.done():
            call.accepted.set_result(None)
        if state == "progress" and call.progress is not None:
            try:
                call.progress(str(msg.get("text", "")))
            except Exception:
                logger.exception("progress callback of %s failed", call.endpoint)
        elif state == "done" and not call.done.done():
            try:
                reply = CallReply(
                    str(msg.get("output_json", "")),
                    int(msg.get("exit_code", 1)),
                    bool(msg.get("cancelled", False)),
                )
            except (TypeError, ValueError):
                reply = CallReply(_failure_json("the node sent an invalid exit_code"), 1)
            call.done.set_result(reply)
            self.pending.pop(call.id, None)
        elif state == "unknown" and not call.done.done():
            call.done.set_exception(
                NodeError(
                    f"{call.endpoint}: the node never received the call (lost while the MQTT "
                    "link was down); it did not run"
                )
            )
            self.pending.pop(call.id, None)

    def after_reconnect(self) -> None:
        """Ask for the state of every call whose request had reached the broker."""
        for call in list(self.pending.values()):
            info = call.request_info
            if info is not None and info.is_published():
                with contextlib.suppress(NodeError):
                    self.send(call, "status")

    def close(self) -> None:
        """Fail every call in flight (the connector shuts down)."""
        for call in list(self.pending.values()):
            if not call.done.done():
                call.done.set_exception(NodeError(f"{call.endpoint}: the connector shut down"))
        self.pending.clear()
        for sub in self._subs.values():
            sub.close()
        self._subs.clear()
