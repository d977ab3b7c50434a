"""The OpenAI-compatible chat-completions provider (SPEC B1, B4, B5, B6, B7, B8, X1).

One module per wire protocol: this one speaks ``POST /chat/completions`` with SSE streaming
through the official ``openai`` SDK, which covers OpenAI, Qwen/DashScope, DeepSeek, OpenRouter,
vLLM, Ollama, llama.cpp server and LM Studio. The SDK never retries (``max_retries=0``): the
agent loop owns retries because only it knows whether a call was already dispatched (X1).

The SDK sends the request and maps HTTP errors; the response body is read by
:mod:`loopact.llm.wire` (server-sent events per the specification, or one JSON
``chat.completion`` when a gateway answers a stream request with a whole response) and parsed
by :mod:`loopact.llm.accumulate` (pure, chunk by chunk); the messages are converted by
:mod:`loopact.llm.openai_messages`. This module builds the request body, drives the reading and
parsing, and maps errors onto the loopact exception tree.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import httpx2
import openai

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.accumulate import accumulate_chunk, finish_stream, new_state
from loopact.llm.arguments import loads_bounded
from loopact.llm.base import (
    Capabilities,
    ModelEvent,
    ModelRequest,
)
from loopact.llm.httperrors import (
    body_error,
    error_codes,
    error_message,
    masking_errors,
    status_error,
)
from loopact.llm.messages import current_task
from loopact.llm.openai_messages import to_openai_messages
from loopact.llm.tokens import estimate_message_tokens, estimate_tool_tokens
from loopact.llm.toolprompt import (
    answer_only_grammar,
    tool_call_grammar,
)
from loopact.llm.wire import (
    SSEData,
    cap_error_body,
    decode_event_json,
    drain,
    error_text,
    read_body,
)
from loopact.redact import Redactor, public_url

logger = logging.getLogger(__name__)

_PLACEHOLDER_KEY = "none"


class OpenAIChatModel:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint (SPEC B1).

    Args:
        model: Model name sent to the endpoint (``"gpt-4o-mini"``, ``"qwen3:8b"``).
        base_url: Endpoint base URL including ``/v1``; None for api.openai.com.
        api_key: API key; None for local servers (a placeholder is sent). Never logged.
        capabilities: What the endpoint can do (vision, native tool calls, stream usage).
        extra_body: Extra JSON fields merged into every request body (e.g.
            ``{"enable_thinking": False}`` for Qwen on DashScope).
        request_timeout_s: Timeout in seconds for connecting and for each read of the stream.
        current_task_only: Send only the system message(s) and the messages from the last
            user message on, not the earlier tasks of the conversation. For small models,
            which copy earlier answers instead of acting on the new instruction (issue 6).
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        capabilities: Capabilities = Capabilities(),
        extra_body: dict[str, Any] | None = None,
        request_timeout_s: float = 60.0,
        current_task_only: bool = False,
    ) -> None:
        if not model:
            raise ValueError("OpenAIChatModel needs a model name")
        if request_timeout_s <= 0:
            raise ValueError(f"request_timeout_s must be > 0, got {request_timeout_s}")
        self.model = model
        self.base_url = base_url
        self.capabilities = capabilities
        self.extra_body = dict(extra_body or {})
        self.request_timeout_s = request_timeout_s
        self.current_task_only = current_task_only
        self._api_key = api_key or _PLACEHOLDER_KEY
        self.redactor = Redactor([api_key])
        self._official = base_url is None or "//api.openai.com" in base_url
        # learnt per endpoint: it refused the parallel_tool_calls parameter (HTTP 400)
        self._parallel_param = capabilities.parallel_tool_calls_param
        # OpenAI's own chat completions (also on Azure) have no reasoning_content field.
        self._reasoning_back = not self._official and ".openai.azure.com" not in (base_url or "")
        self._client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=base_url,
            max_retries=0,
            timeout=request_timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(
                event_hooks={"response": [cap_error_body]}  # error pages read up to 64 KB
            ),
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The request body (minus ``stream``) this model would send for ``request``.

        Args:
            request: Canonical messages and tools.

        Returns:
            A JSON-able dict: ``model``, ``messages``, and ``tools`` with
            ``parallel_tool_calls`` (when the endpoint accepts it:
            ``Capabilities.parallel_tool_calls_param``), ``grammar`` (text tool calls with
            ``constrained_decoding``), ``stream_options``, ``max_tokens``
            (``max_completion_tokens`` for api.openai.com), ``temperature`` when they apply.
        """
        caps = self.capabilities
        callable_tools = request.callable_tools()
        forced = request.tool_choice == "required" and bool(callable_tools)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(
                current_task(request.messages) if self.current_task_only else request.messages,
                vision=caps.vision,
                native_tool_calls=caps.native_tool_calls,
                tools=request.tools,
                reasoning_back=self._reasoning_back,
                audio=caps.audio_input,
            ),
        }
        if request.tools and caps.native_tool_calls:
            offered = request.tools if request.allowed_tools is None else callable_tools
            body["tools"] = [t.openai() for t in offered or request.tools]
            if self._parallel_param:  # SPEC B4: the capability descriptor on the wire
                body["parallel_tool_calls"] = caps.parallel_tool_calls
            if forced:
                body["tool_choice"] = "required"
            elif request.tool_choice == "none":
                body["tool_choice"] = "none"
        elif request.tools and caps.constrained_decoding:
            # llama.cpp-style servers accept a GBNF ``grammar``: only answer text or
            # well-formed calls of the callable tools can be generated (issue 6, SPEC B7); the
            # catalogue describes all of ``tools`` whatever may be called, so the prompt
            # cache holds (the small-model policy relies on it, loopact.llm.small_model).
            body["grammar"] = (
                answer_only_grammar()
                if request.tool_choice == "none"
                else tool_call_grammar(
                    callable_tools,
                    max_calls=3 if caps.parallel_tool_calls else 1,
                    require_call=forced,
                )
            )
        if caps.stream_usage:
            body["stream_options"] = {"include_usage": True}
        if request.max_output_tokens is not None:
            # api.openai.com's reasoning models refuse max_tokens; compatible servers (vLLM,
            # Ollama, llama.cpp, DeepSeek, ...) know max_tokens, not always the new name.
            key = "max_completion_tokens" if self._official else "max_tokens"
            body[key] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def estimate_prompt_tokens(self, request: ModelRequest) -> int:
        """About how many tokens the prompt of ``request`` has as sent (SPEC E1): the
        messages it sends (only the current task with ``current_task_only``) and its tools,
        as the ``tools`` list or as the catalogue in the system message
        (:mod:`loopact.llm.tokens`)."""
        messages = current_task(request.messages) if self.current_task_only else request.messages
        vision = self.capabilities.vision
        return estimate_message_tokens(messages, vision) + estimate_tool_tokens(request.tools)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no error or event may show (the API key)."""
        return self.redactor.secrets

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` and yield events as the response streams (SPEC B5, X1).

        With grammar-constrained text calls (``constrained_decoding`` without native tool
        calls) the request's ``tool_choice`` and ``allowed_tools`` become the GBNF grammar;
        the small-model policy for such endpoints (the reply pseudo-tool, a call first, no
        echo of a finished call) is the wrapper :class:`~loopact.llm.small_model.SmallModelPolicy`.

        Yields:
            ``ReasoningDelta``, ``TextDelta``, ``ToolCallDelta`` and ``ToolCallReady``
            events, then one ``ResponseDone``; a collected response yields a
            ``StreamProgress`` per fragment as it arrives, and its events at its end.

        Raises:
            ModelRetryableError: connection error or timeout, HTTP 408/409/429/5xx (with
                ``retry_after_s`` from ``Retry-After``), a stream cut mid-way or a malformed
                chunk ("model stream was cut: ..."), an error object in the stream, a 200
                response with neither completion chunks nor a JSON completion.
            ModelFatalError: any other HTTP error (400, 401, 403, 404, 422, ...).
        """
        return masking_errors(self._stream_body(request, self.build_body(request)), self.redactor)

    async def _stream_body(
        self, request: ModelRequest, body: dict[str, Any]
    ) -> AsyncGenerator[ModelEvent, None]:
        # Everything but the model name goes in as ``extra_body``, which the SDK merges into
        # the JSON as it is. Passed as typed parameters, the SDK's request transformation
        # (``openai._utils._transform``) walks every message against its TypedDicts: about
        # 0.2 ms of CPU per message, 4.5 ms for a 20-round history, growing with it, for
        # nothing, since these are plain JSON values already (bench/peers.py, issue 20).
        extra = {k: v for k, v in body.items() if k != "model"}
        extra.update(self.extra_body)
        state = new_state(
            tool_names=[t.name for t in request.tools],
            native_tool_calls=self.capabilities.native_tool_calls,
        )
        completions = 0  # chunks that are chat completions (have "choices")
        logger.debug(
            "chat completion request: model=%s messages=%d tools=%d",
            self.model,
            len(body["messages"]),
            len(request.tools),
        )
        try:
            async with self._client.chat.completions.with_streaming_response.create(
                model=self.model,
                messages=[],  # the real ones are in ``extra``, which takes precedence
                stream=True,
                extra_body=extra,
            ) as raw:
                items = read_body(raw.http_response, what="the model endpoint")
                first = ""  # the first payload, for the error when none is a completion
                async for item in items:
                    if isinstance(item, SSEData):
                        if item.data.strip().startswith("[DONE]"):
                            await drain(items)  # so that the connection is reused
                            break
                        if item.event == "error":  # whatever its data (gateways, proxies)
                            raise _stream_error(item.data)
                        chunk = decode_event_json(item.data, "model")
                        first = first or item.data
                    else:
                        chunk = _completion_body(item.value)  # a whole chat.completion
                    _raise_error_object(chunk)
                    completions += isinstance(chunk, Mapping) and "choices" in chunk
                    for event in accumulate_chunk(chunk, state):
                        yield event
        except ModelError:
            raise
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APIConnectionError as exc:
            raise ModelRetryableError(
                f"cannot reach {public_url(str(self._client.base_url))}: {_describe(exc)}"
            ) from None
        except httpx2.TimeoutException as exc:
            raise ModelRetryableError(
                f"model stream was cut: timed out reading it ({_describe(exc)})"
            ) from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise ModelRetryableError(f"model stream was cut: {_describe(exc)}") from None
        except openai.OpenAIError as exc:
            raise ModelFatalError(f"model request failed: {exc}") from None
        if completions == 0:
            raise ModelRetryableError(
                "the model endpoint answered HTTP 200 without any completion chunk"
                + (f" (its first event: {first[:120]})" if first else "")
            )
        for event in finish_stream(state):
            yield event

    async def aclose(self) -> None:
        """Release the HTTP connections."""
        await self._client.close()

    def reset(self) -> None:
        """Nothing to forget: chat completions keep no server-side conversation."""

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        message = _server_message(exc)
        status = exc.status_code
        if status in (400, 422) and self._parallel_param and "parallel_tool_calls" in message:
            # An endpoint that refuses the parameter (Azure's older API versions: "Unrecognized
            # request argument supplied: parallel_tool_calls", some reasoning models): it is
            # left out from now on and the request is worth another try (nothing ran yet).
            self._parallel_param = False
            logger.warning(
                "%s refused parallel_tool_calls; sending requests without it (set "
                "model.capabilities.parallel_tool_calls_param: false to skip the first try)",
                public_url(str(self._client.base_url)),
            )
            return ModelRetryableError(
                f"model endpoint refused the parallel_tool_calls parameter (HTTP {status}: "
                f"{message}); trying again without it",
                status=status,
                retry_after_s=0.0,
            )
        asked = ""
        if status in (404, 405):  # mostly a base URL without /v1 or a model name typo
            request = exc.response.request
            asked = f" for {request.method} {public_url(str(request.url))}"
        return status_error(
            status,
            f"model endpoint returned HTTP {status}{asked}: {message}",
            exc.response.headers,
            error_codes(exc.body),
        )


# --- request conversion -----------------------------------------------------------------


# --- responses and errors ---------------------------------------------------------------


def _completion_body(value: object) -> object:
    """A whole JSON body sent for a stream request: a ``chat.completion`` (its ``message`` is
    read like one big delta, issue 22) or an error object.

    Raises:
        ModelRetryableError: The JSON is neither.
    """
    if isinstance(value, Mapping) and ("choices" in value or _is_error_object(value)):
        return value
    text = json.dumps(value, ensure_ascii=False)[:200]
    raise ModelRetryableError(
        f"the model endpoint answered HTTP 200 with JSON that is not a chat completion: {text}"
    )


def _raise_error_object(chunk: object) -> None:
    """An error object sent with status 200 (in the stream, or as the whole body): an
    ``error`` member (OpenAI-style, OpenRouter mid-stream), or instead of a chunk a non-zero
    ``code`` with a ``message`` (iFlytek Spark) or an ``error_code`` (Baidu Qianfan).

    Raises:
        ModelError: ``chunk`` is one ("model stream reported an error: ..."), fatal when its
            code says no retry can succeed (:func:`~loopact.llm.httperrors.body_error`).
    """
    if isinstance(chunk, Mapping) and _is_error_object(chunk):
        raise _stream_error(chunk)


def _is_error_object(value: Mapping[str, Any]) -> bool:
    if value.get("error"):
        return True
    if "choices" in value:
        return False
    code = value.get("code", value.get("error_code"))
    words = value.get("message", value.get("error_msg"))
    return code not in (None, 0, "0", "", "success") and isinstance(words, str)


def _stream_error(value: object) -> ModelError:
    """The error of an error document in a 200 response (JSON, or the text of an event)."""
    decoded: object = value
    if isinstance(value, str):
        try:
            decoded = loads_bounded(value)
        except ValueError:
            decoded = value
    return body_error(decoded, f"model stream reported an error: {error_text(value)}")


def _server_message(exc: openai.APIStatusError) -> str:
    return error_message(exc.body, exc.response.headers.get("content-type"), exc.message)


def _describe(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause):
        return f"{type(cause).__name__}: {cause}"
    return f"{type(exc).__name__}: {exc}"
