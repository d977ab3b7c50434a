"""The model interface: one streaming request that yields typed events.

A provider (``openai_chat``, ``anthropic``, ``dify``) implements :class:`Model`. It turns a
:class:`ModelRequest` in canonical messages (SPEC B4) into its wire protocol and yields
:data:`ModelEvent` values as the response streams. A non-streaming endpoint is the same path,
fed all at once. Providers never retry and never time out by themselves: the agent loop owns
retries (SPEC B6) and timeouts (SPEC A2), because only the loop knows whether a tool call was
already dispatched from a partial stream (SPEC X1: no action ever runs twice).

Event order within one response: any number of ``ReasoningDelta`` / ``TextDelta`` /
``ToolCallDelta`` / ``StreamProgress`` / ``ToolCallReady`` (a call is ready as soon as its
arguments are complete in the stream), then exactly one ``ResponseDone`` last. Every fragment
the model sends (text, reasoning, tool arguments) is yielded when it arrives, as a delta or,
when the provider holds it back, as ``StreamProgress``, so a consumer sees the stream is alive
(SPEC A2: the idle timeout counts silence, not slow arguments). A provider
raises :class:`~loopact.errors.ModelError` (retryable or not) instead of yielding
``ResponseDone`` when the response fails or is cut.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from loopact.llm.messages import Message, ToolCall, Usage


@dataclass(frozen=True)
class Capabilities:
    """What a model endpoint can do; the loop adapts to it (SPEC B4).

    Attributes:
        vision: Accepts images; when False the loop sends a text note instead (SPEC G2).
        native_tool_calls: Has a ``tools`` parameter; when False, calls are read from text.
        parallel_tool_calls: May return several calls in one response.
        constrained_decoding: Supports grammar / JSON-schema constrained output.
        context_tokens: Context window size in tokens; None when it is not the loop's
            business (a Dify app keeps the conversation itself): the loop's default
            compression threshold is a fraction of it (SPEC E1).
        stream_usage: Accepts ``stream_options: {include_usage: true}`` (OpenAI protocol).
        audio_input: Hears audio: a spoken command's clip goes to it as an ``input_audio``
            content part (OpenAI-compatible; gpt-4o-audio-preview, Qwen-Omni, vLLM's audio
            models); False: the clip's transcript is sent instead (SPEC B8).
        parallel_tool_calls_param: Accepts the ``parallel_tool_calls`` request parameter
            (OpenAI protocol): a request with native tools then says ``parallel_tool_calls``
            (the value of :attr:`parallel_tool_calls`); False leaves it out, for endpoints
            that refuse parameters they do not know.
    """

    vision: bool = True
    native_tool_calls: bool = True
    parallel_tool_calls: bool = True
    constrained_decoding: bool = False
    context_tokens: int | None = 128_000
    stream_usage: bool = True
    parallel_tool_calls_param: bool = True
    audio_input: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: the OpenAI function object's three fields, plus examples.

    Attributes:
        name: Tool name (``^[a-zA-Z0-9_-]{1,64}$``).
        description: One or two sentences for the model.
        parameters: JSON Schema (``type: object``) of the arguments.
        examples: ``(instruction, arguments)`` pairs showing when and how to call it. Shown to
            models that write calls as text (the compact catalogue of
            :mod:`loopact.llm.toolprompt`, issue 6); not part of the OpenAI function object.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    examples: tuple[tuple[str, dict[str, Any]], ...] = ()

    def openai(self) -> dict[str, Any]:
        """The OpenAI ``tools[]`` entry: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters or {"type": "object", "properties": {}},
            },
        }


ToolChoice = Literal["auto", "required", "none"]
"""Whether a response may answer in words (``"auto"``), must call a tool (``"required"``) or
must answer in words although tools are described (``"none"``)."""


@dataclass(frozen=True)
class ModelRequest:
    """One request to a model.

    Attributes:
        messages: The canonical history, system message first.
        tools: The tools offered; empty means a request without tools (final answer).
        max_output_tokens: Cap on the response length (``max_tokens``), None for the endpoint
            default.
        temperature: Sampling temperature, None for the endpoint default.
        task: The user's instruction of the task this request serves ("" when unknown): a
            provider that keeps the conversation on the server (Dify) repeats it when the
            server lost the conversation (issue 22).
        tool_choice: ``"required"``: the response must call one of ``tools`` (OpenAI's
            ``tool_choice: "required"``, Anthropic's ``{"type": "any"}``, a grammar that allows
            only calls of ``tools`` on constrained text-call endpoints); ``"auto"``: the model
            decides; ``"none"``: the response must be words, the tools stay described (the
            prompt stays the same, so a server's prompt cache still holds: OpenAI's and
            Anthropic's ``"none"``, an answer-only grammar on constrained endpoints). A
            provider that cannot force a call treats ``"required"`` as ``"auto"``.
        allowed_tools: The names of ``tools`` a response may call, or None for all of them;
            the others stay described, for the same reason (a grammar over the allowed ones
            on constrained endpoints; other providers offer only the allowed ones).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    task: str = ""
    tool_choice: ToolChoice = "auto"
    allowed_tools: tuple[str, ...] | None = None

    def callable_tools(self) -> tuple[ToolSpec, ...]:
        """The tools a response may call: ``tools`` within ``allowed_tools``, none for
        ``tool_choice="none"``."""
        if self.tool_choice == "none":
            return ()
        if self.allowed_tools is None:
            return self.tools
        return tuple(t for t in self.tools if t.name in self.allowed_tools)


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of reasoning text (``reasoning_content``, ``reasoning``, ``<think>``)."""

    text: str
    kind: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(frozen=True)
class TextDelta:
    """A piece of answer text, reasoning and tool-call markup already removed."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a tool call that is not complete yet (liveness and progress, SPEC A2).

    Attributes:
        index: The call's position in the response (0-based, the index its
            ``ToolCallReady`` will have).
        text: The fragment of argument text (or of a ``<tool_call>`` block) as it arrived.
        name: The tool name when known so far ("" otherwise).
    """

    index: int
    text: str
    name: str = ""
    kind: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True)
class StreamProgress:
    """Fragments arrived that are not passed on (yet): the stream is alive (SPEC A2).

    A provider yields it for what it receives but does not turn into a delta at once: the
    responses the OpenAI provider collects before it yields them (grammar-constrained text
    calls: a reply pseudo-tool call becomes answer text, a repeated call is asked again), the
    steps of a Dify agent app (``agent_thought``). The loop counts it as activity for the
    idle timeout (issue 21 item 8) and shows nothing; the deltas it stands for, if any, come
    later and are counted then.

    Attributes:
        chars: Characters of text, reasoning or tool arguments that arrived.
    """

    chars: int
    kind: Literal["stream_progress"] = "stream_progress"


@dataclass(frozen=True)
class ToolCallReady:
    """A tool call whose arguments are complete in the stream (SPEC X1).

    Attributes:
        index: The call's position in the response (0-based, call order).
        call: The call; ``call.error`` is set when its arguments could not be parsed.
    """

    index: int
    call: ToolCall
    kind: Literal["tool_call_ready"] = "tool_call_ready"


@dataclass(frozen=True)
class ResponseDone:
    """The response ended normally.

    Attributes:
        message: The complete assistant message; ``tool_calls`` holds every usable call in
            order (each was also yielded as ``ToolCallReady``).
        finish_reason: ``stop``, ``tool_calls``, ``length``, ``content_filter`` or ``""``
            when the endpoint sent none.
        usage: Token usage (zeros when the endpoint reported none).
        truncated_calls: Calls cut off by ``finish_reason: length``; never executed, the
            model is told its call was truncated.
    """

    message: Message
    finish_reason: str
    usage: Usage
    truncated_calls: tuple[ToolCall, ...] = ()
    kind: Literal["response_done"] = "response_done"


ModelEvent = (
    ReasoningDelta | TextDelta | ToolCallDelta | StreamProgress | ToolCallReady | ResponseDone
)


@runtime_checkable
class Model(Protocol):
    """A model endpoint speaking one wire protocol.

    Attributes:
        provider: Provider name (``openai``, ``anthropic``, ``dify``).
        model: The model name sent to the endpoint.
        capabilities: What the endpoint can do.
    """

    provider: str
    model: str
    capabilities: Capabilities

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` and yield events as the response streams.

        Raises:
            ModelRetryableError: connection error, 408/409/429/5xx, stream cut mid-way.
            ModelFatalError: any other failure.
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...

    def reset(self) -> None:
        """Forget server-side conversation state (Dify ``conversation_id``); may do nothing."""
        ...
