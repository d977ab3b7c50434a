"""The Dify chat-messages event stream as loopact model events (SPEC B3, B5).

The response side of :mod:`loopact.llm.dify`. :class:`DifyStreamState` turns Dify's
server-sent events into the model events of :mod:`loopact.llm.base`, one event at a time (a
pure accumulator tests can drive with dicts): ``message`` / ``agent_message`` carry answer
pieces, ``<think>`` text inside them is kept apart as reasoning, ``message_replace`` replaces
the answer (output moderation), ``message_end`` carries the usage and ends the response,
``error`` ends it with an error naming Dify's code and message (:func:`dify_error`: retryable
when a retry can help); ``agent_thought`` is progress;
``message_file`` is kept in the message's ``provider_data``; ``ping``, TTS and workflow events
(``workflow_started``, ``node_started``, ...) are read and ignored. :func:`payloads` reads a
response body into ``(event name, data)`` pairs, a blocking-mode JSON answer included.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.base import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    StreamProgress,
    TextDelta,
)
from loopact.llm.httperrors import RETRYABLE_STATUS
from loopact.llm.messages import Message, TextPart, Usage
from loopact.llm.think import Segment, ThinkSplitter
from loopact.llm.wire import JSONBody, decode_event_json, read_body

__all__ = ["DifyStreamState", "dify_error", "is_transient", "payloads"]

logger = logging.getLogger(__name__)

_ANSWER_EVENTS = frozenset({"message", "agent_message"})
_ID_KEYS = ("conversation_id", "message_id", "task_id")
_TRANSIENT_INVOKE_ERRORS = ("Rate Limit Error", "Server Unavailable Error", "Connection Error")
"""The descriptions of Dify's model-runtime errors a retry can fix (``InvokeRateLimitError``,
``InvokeServerUnavailableError``, ``InvokeConnectionError`` in
``core/model_runtime/errors/invoke.py``). Dify reports each as ``completion_request_error``
with status 400 and the message ``[<provider>] <description>, <the provider's error>``."""


def dify_error(prefix: str, body: Mapping[str, Any], status: int | None) -> ModelError:
    """The loopact error for a Dify error object (an ``error`` event or an HTTP error body).

    Args:
        prefix: How the message starts (``"Dify error"``, ``"Dify chat-messages answered
            HTTP 400:"``).
        body: ``{"code", "message", "status"}`` as Dify sends it (any of them may be missing).
        status: The HTTP status (or the event's ``status``), if known.

    Returns:
        :class:`ModelRetryableError` for 408/409/429/5xx, Dify's ``internal_server_error``
        and a ``completion_request_error`` of a rate limit, an unavailable or unreachable
        model provider (SPEC B6); else :class:`ModelFatalError`. The message is ``prefix``,
        the code and the message.
    """
    text = f"{prefix} {body.get('code') or 'unknown'}: {body.get('message') or 'no message'}"
    if is_transient(body) or (status is not None and (status in RETRYABLE_STATUS or status >= 500)):
        return ModelRetryableError(text, status=status)
    return ModelFatalError(text, status=status)


def is_transient(body: Mapping[str, Any]) -> bool:
    """Whether a Dify error object tells of a failure a retry can fix whatever its status:
    Dify's own ``internal_server_error``, or a ``completion_request_error`` of a rate limit,
    an unavailable or unreachable model provider (:data:`_TRANSIENT_INVOKE_ERRORS`)."""
    code = str(body.get("code") or "")
    message = str(body.get("message") or "")
    if code == "internal_server_error":
        return True
    return code == "completion_request_error" and any(
        description in message for description in _TRANSIENT_INVOKE_ERRORS
    )


@dataclass
class DifyStreamState:
    """Accumulates one streamed Dify answer, event by event (SPEC B3, B5).

    Feed each event's type and data to :meth:`feed`; it returns the model events to yield
    now. After ``message_end`` :attr:`done` is True, :meth:`feed` has returned the final
    :class:`ResponseDone` and :attr:`conversation_id` is the conversation to go on with.

    Raises:
        ModelError: An ``error`` event, naming Dify's code and message; retryable when a
            retry can help (:func:`dify_error`).
    """

    splitter: ThinkSplitter = field(default_factory=ThinkSplitter)
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    replaced: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False

    @property
    def conversation_id(self) -> str:
        """The conversation id the events named ("" when none did)."""
        return self.meta.get("conversation_id", "")

    def feed(self, kind: str, data: Mapping[str, Any]) -> list[ModelEvent]:
        """Apply one event (``kind``: its type; ``data``: its JSON object); return the model
        events it completes."""
        for key in _ID_KEYS:
            if data.get(key):
                self.meta[key] = str(data[key])
        if kind in _ANSWER_EVENTS:
            return self._emit(self.splitter.feed(str(data.get("answer") or "")))
        if kind == "agent_thought":
            # An agent app's step (its thought, tool and tool input) arrives while the
            # answer waits: progress, not silence (issue 21 item 8). Shown: nothing.
            step = (data.get("thought"), data.get("tool"), data.get("tool_input"))
            return [StreamProgress(sum(len(str(v)) for v in step if v))]
        if kind == "message_replace":
            self.replaced = str(data.get("answer") or "")
        elif kind == "message_file":
            self.files.append({k: data.get(k) for k in ("id", "type", "url", "belongs_to")})
        elif kind == "error":
            raise dify_error("Dify error", data, _int_or_none(data.get("status")))
        elif kind == "message_end":
            return self._end(data)
        else:
            logger.debug("dify event %s ignored", kind)
        return []

    def _emit(self, segments: Sequence[Segment]) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        for kind, piece in segments:
            if kind == "retract":  # a lone </think>: the answer so far was reasoning
                self.reasoning.extend(self.text)
                self.text.clear()
                continue
            if kind == "text" and not self.text:
                piece = piece.lstrip()  # whitespace left between </think> and the answer
            if not piece:
                continue
            if kind == "reasoning":
                self.reasoning.append(piece)
                out.append(ReasoningDelta(piece))
            else:
                self.text.append(piece)
                out.append(TextDelta(piece))
        return out

    def _end(self, data: Mapping[str, Any]) -> list[ModelEvent]:
        out = self._emit(self.splitter.flush())
        usage = _mapping(_mapping(data.get("metadata")).get("usage"))
        answer = self.replaced if self.replaced is not None else "".join(self.text)
        provider_data: dict[str, Any] = {"dify": dict(self.meta)}
        if self.files:
            provider_data["dify"]["files"] = self.files
        out.append(
            ResponseDone(
                message=Message(
                    role="assistant",
                    content=(TextPart(answer),) if answer else (),
                    reasoning="".join(self.reasoning) or None,
                    provider_data=provider_data,
                ),
                finish_reason="stop",
                usage=Usage(
                    _int_or_none(usage.get("prompt_tokens")) or 0,
                    _int_or_none(usage.get("completion_tokens")) or 0,
                ),
            )
        )
        self.done = True
        return out


async def payloads(response: httpx2.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` of each event of a 200 response, or of the events a blocking
    JSON answer stands for (a gateway answering a stream request with the whole answer,
    issue 22).

    Raises:
        ModelRetryableError: An event's data is not JSON ("Dify stream was cut: malformed
            chunk"); a JSON body that is neither an answer nor an error; a body without
            events (:func:`~loopact.llm.wire.read_body`).
    """
    async for item in read_body(response, what="Dify"):
        if isinstance(item, JSONBody):
            for data in _blocking_events(item.value):
                yield str(data.get("event") or "message"), data
            continue
        if not item.data.strip():
            continue  # keep-alive frames
        data = decode_event_json(item.data, "Dify")  # cut JSON: retryable, like a cut stream
        if isinstance(data, dict):
            yield item.event, data


def _blocking_events(body: Any) -> list[dict[str, Any]]:
    """The stream events equivalent to a blocking-mode answer (or error) JSON body.

    Raises:
        ModelRetryableError: ``body`` is neither an answer nor an error.
    """
    if isinstance(body, dict) and "answer" in body:
        ids = {k: body[k] for k in _ID_KEYS if k in body}
        return [
            {**ids, "event": "message", "answer": body.get("answer") or ""},
            {**ids, "event": "message_end", "metadata": body.get("metadata") or {}},
        ]
    if isinstance(body, dict) and (body.get("code") or body.get("event") == "error"):
        return [{**body, "event": "error"}]
    clip = json.dumps(body, ensure_ascii=False)[:200]
    raise ModelRetryableError(f"Dify answered HTTP 200 with JSON that is not an answer: {clip}")


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one (metadata of any shape)."""
    return value if isinstance(value, Mapping) else {}


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return None
