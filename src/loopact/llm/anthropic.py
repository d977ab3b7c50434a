"""Anthropic Messages provider on the official ``anthropic`` SDK (SPEC B2, B4, B5, B6, X1).

The request is built from canonical history by :mod:`loopact.llm.anthropic_messages`; the
streamed response is read by :mod:`loopact.llm.anthropic_stream` (:class:`AnthropicStreamState`).
This module sends one and reads the other, and maps failures to loopact errors.

Errors: connection failures, 408/409/429/5xx (``Retry-After`` honoured), an overloaded or
server error event inside the stream, and a stream cut before ``message_stop`` raise
:class:`~loopact.errors.ModelRetryableError`; anything else
:class:`~loopact.errors.ModelFatalError`. The SDK's own retries are off (``max_retries=0``):
the agent loop owns retries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.anthropic_messages import to_anthropic_messages, tools_used
from loopact.llm.anthropic_stream import (
    AnthropicStreamState,
    event_dict,
    message_events,
    stream_error,
)
from loopact.llm.base import Capabilities, ModelEvent, ModelRequest
from loopact.llm.httperrors import describe_body, masking_errors, status_error
from loopact.llm.wire import JSONBody, cap_error_body, drain, read_body
from loopact.redact import Redactor

__all__ = ["AnthropicModel", "AnthropicStreamState", "message_events", "to_anthropic_messages"]

logger = logging.getLogger(__name__)


class AnthropicModel:
    """A model behind the Anthropic Messages API (SPEC B2).

    Args:
        model: The model name (``claude-sonnet-4-5``, ...).
        base_url: The API root (the SDK appends ``/v1/messages``); a trailing ``/v1`` is
            tolerated and removed. None for the SDK default.
        api_key: The API key; None sends a placeholder (local gateways).
        capabilities: What the endpoint can do; ``vision=False`` turns images into a note.
        max_tokens: Output cap in tokens when the request sets none (the API requires one).
        thinking_budget_tokens: When set, extended thinking is enabled with this budget
            (tokens, must be below ``max_tokens``).
        request_timeout_s: Timeout in seconds for connecting and for each read.

    Raises:
        ValueError: ``max_tokens`` or ``thinking_budget_tokens`` is not positive, or the
            budget is not below ``max_tokens``.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        max_tokens: int = 2048,
        thinking_budget_tokens: int | None = None,
        request_timeout_s: float = 120.0,
    ) -> None:
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be > 0, got {max_tokens}")
        if thinking_budget_tokens is not None and not 0 < thinking_budget_tokens < max_tokens:
            raise ValueError(
                f"thinking_budget_tokens must be > 0 and < max_tokens ({max_tokens}), "
                f"got {thinking_budget_tokens}"
            )
        self.model = model
        self.capabilities = capabilities or Capabilities(stream_usage=False)
        self.max_tokens = max_tokens
        self.thinking_budget_tokens = thinking_budget_tokens
        root = base_url.rstrip("/") if base_url else None
        if root is not None and root.endswith("/v1"):
            root = root[: -len("/v1")]
        self.redactor = Redactor([api_key])
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "none",
            base_url=root,
            max_retries=0,
            timeout=request_timeout_s,
            http_client=anthropic.DefaultAsyncHttpxClient(
                event_hooks={"response": [cap_error_body]}  # error pages read up to 64 KB
            ),
        )

    def reset(self) -> None:
        """Nothing to forget: the Messages API keeps no conversation state."""

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request`` (without ``stream``).

        With extended thinking, a request whose ``max_tokens`` is not above the thinking
        budget (the final answer's 1024 under a budget of 2000) gets the budget on top: the
        API refuses ``max_tokens`` not greater than ``thinking.budget_tokens`` (HTTP 400).
        """
        system, messages = to_anthropic_messages(request.messages, self.capabilities.vision)
        max_tokens = request.max_output_tokens or self.max_tokens
        budget = self.thinking_budget_tokens
        if budget is not None and max_tokens <= budget:
            max_tokens += budget  # thinking counts in max_tokens: the answer keeps its cap
        params: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens}
        params["messages"] = messages
        if system:
            params["system"] = system
        params.update(_tool_params(request, messages, thinking=budget is not None))
        if request.temperature is not None and budget is None:
            params["temperature"] = request.temperature
        if budget is not None:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return params

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no error or event may show (the API key)."""
        return self.redactor.secrets

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` and yield model events as the response streams (SPEC B2, X1).

        Errors never show the API key (a 401 body may quote it, issue 21).

        Raises:
            ModelRetryableError: Connection error, 408/409/429/5xx, an overloaded/server
                error event, or a stream cut before ``message_stop``.
            ModelFatalError: Any other failure (400/401/403/404/422, malformed stream, a
                refusal: ``stop_reason: refusal``).

        A turn the API pauses (``stop_reason: pause_turn``) is sent back and continued, up to
        :data:`~loopact.llm.anthropic_stream.MAX_PAUSES` times, and streams as one response.
        """
        return masking_errors(self._stream(request), self.redactor)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        params = self.request_params(request)
        history = params["messages"]
        state = AnthropicStreamState()
        while True:
            async for event in self._response(params, state):
                yield event
            if state.done:
                return
            if not state.paused:
                raise ModelRetryableError("model stream was cut: it ended before message_stop")
            # pause_turn: the turn so far goes back as it is, to be continued (SPEC B2).
            content = state.paused_content()
            turn = [{"role": "assistant", "content": content}] if content else []
            params = {**params, "messages": [*history, *turn]}
            state.resume()

    async def _response(
        self, params: dict[str, Any], state: AnthropicStreamState
    ) -> AsyncIterator[ModelEvent]:
        """One streamed response into ``state``, until it is done or paused."""
        logger.debug("anthropic request: model=%s messages=%d", self.model, len(params["messages"]))
        try:
            async with self._client.messages.with_streaming_response.create(
                **params, stream=True
            ) as raw:
                items = read_body(raw.http_response, what="the Anthropic endpoint")
                async for item in items:
                    if isinstance(item, JSONBody):
                        events = message_events(item.value)  # a whole message (issue 22)
                    else:
                        events = [event_dict(item)]
                    for event in events:
                        outs = state.feed(event)
                        ended = state.done or state.paused
                        if ended:  # read the rest first: the consumer stops at the end
                            await drain(items)  # so that the connection is reused
                        for out in outs:
                            yield out
                        if ended:
                            return
        except ModelError:
            raise
        except anthropic.APIStatusError as exc:
            raise _status_error(exc) from None
        except anthropic.APIConnectionError as exc:
            raise ModelRetryableError(f"cannot reach the Anthropic endpoint: {exc}") from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise ModelRetryableError(f"model stream was cut: {exc}") from None
        except anthropic.AnthropicError as exc:
            raise ModelFatalError(f"Anthropic request failed: {exc}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelFatalError(f"malformed Anthropic stream: {exc}") from None


def _tool_params(
    request: ModelRequest, messages: list[dict[str, Any]], *, thinking: bool
) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` of a request (none when it needs neither)."""
    if request.tools:
        offered = request.tools if request.allowed_tools is None else request.callable_tools()
        params: dict[str, Any] = {
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters or {"type": "object", "properties": {}},
                }
                for t in offered or request.tools
            ]
        }
        if request.tool_choice == "required" and not thinking:
            params["tool_choice"] = {"type": "any"}  # not allowed with extended thinking
        elif request.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
        return params
    used = tools_used(messages)
    if not used:
        return {}
    # A history holding tool_use blocks must define those tools even when none is offered
    # (the final, tool-less request of SPEC A2): declare them, forbidden.
    declared = [
        {
            "name": name,
            "description": "Not available now.",
            "input_schema": {"type": "object", "properties": {}},
        }
        for name in used
    ]
    return {"tools": declared, "tool_choice": {"type": "none"}}


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    detail = _error_detail(exc)
    if status == 200:  # an error event inside a stream
        err = exc.body.get("error") if isinstance(exc.body, dict) else None
        return stream_error(err if err is not None else {"message": detail})
    message = f"Anthropic endpoint answered HTTP {status}: {detail}"
    return status_error(status, message, exc.response.headers)


def _error_detail(exc: anthropic.APIStatusError) -> str:
    """The server's words for an error: Anthropic's ``error.type: error.message``, another
    JSON body's ``message`` / ``detail`` / ``error`` text or the JSON itself (a gateway's
    ``{"detail": ...}``; the SDK's message would quote it as a Python dict), a text body
    told by :func:`describe_body`."""
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"
        for key in ("message", "detail", "error"):
            if isinstance(body.get(key), str) and body[key].strip():
                return describe_body(body[key])
        return describe_body(json.dumps(body, ensure_ascii=False))
    if isinstance(body, str) and body:
        return describe_body(body, exc.response.headers.get("content-type"))
    return str(exc.message)
