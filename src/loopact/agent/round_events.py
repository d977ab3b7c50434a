"""The payloads of the ``model_request`` and ``model_response`` events of a round (SPEC A1;
docs/trace.md names their fields, a contract)."""

from __future__ import annotations

from loopact.events.payloads import ModelRequestPayload, ModelResponsePayload
from loopact.llm.base import ModelRequest, ResponseDone
from loopact.llm.messages import Usage, history_summary


def request_event(round_no: int, request: ModelRequest, trace_full: bool) -> ModelRequestPayload:
    """``model_request``: the round, how many messages, the tools offered; with
    ``trace_full`` (``--trace-full``) a summary of every message too."""
    fields: ModelRequestPayload = {
        "round": round_no,
        "n_messages": len(request.messages),
        "tools": [s.name for s in request.tools],
    }
    if trace_full:
        fields["messages"] = history_summary(request.messages)
    return fields


def response_event(round_no: int, done: ResponseDone, usage: Usage) -> ModelResponsePayload:
    """``model_response``: the text, reasoning, tool calls (truncated ones included), finish
    reason and token usage of one response."""
    return {
        "round": round_no,
        "text": done.message.text,
        "reasoning": done.message.reasoning or "",
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments}
            for c in (*done.message.tool_calls, *done.truncated_calls)
        ],
        "finish_reason": done.finish_reason,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }
