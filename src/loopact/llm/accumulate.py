"""Pure accumulation of an OpenAI chat-completions stream (SPEC B5, B7, X1).

The provider feeds each decoded SSE chunk (a dict) to :func:`accumulate_chunk` and calls
:func:`finish_stream` once the stream ended; both return the model events that the chunk made
certain. No I/O happens here, so tests drive it chunk by chunk.

What it handles:

* reasoning from ``delta.reasoning_content`` / ``delta.reasoning`` and inline ``<think>``
  blocks (tags split across chunks), kept apart from the answer text; a lone ``</think>``
  makes the text before it reasoning (the stream started inside a think block);
* ``delta.refusal`` (OpenAI's words when the model declines) as answer text;
* a surrogate pair cut between two deltas of the answer, the reasoning or one call's
  arguments (gateways that cut strings by UTF-16 unit) as its one character
  (:mod:`loopact.llm.surrogates`);
* tool-call deltas merged by ``index`` (by ``id`` when a server sends no index; with
  neither, a delta naming a tool after a complete call starts a new one); a new
  non-empty ``id`` on an index that already has a different id starts a new call when the
  delta names a tool, and continues the call when it names none (servers that send another id
  on every piece) or names the same tool again before any argument came; empty
  ``id`` / ``name`` count as absent; missing ids are generated; ``arguments`` may arrive as
  an object; in a whole ``message`` (a JSON body) each entry is its own call, indexed or not;
  the deprecated ``function_call`` (one call, streamed like a tool call) is a call too; a
  delta that carries no id, name or arguments is no call;
* ``<tool_call>`` blocks and the open models' own call markup in the text
  (:mod:`loopact.llm.markup`), and bare JSON calls for endpoints without native calls; markup
  left over that no block could read becomes a failed call and is cut from the answer text;
* stream-early readiness (X1): a call is yielded as :class:`ToolCallReady` as soon as its
  own arguments are a complete JSON object (parsed strictly, never a prefix that a repair
  would accept: a JSON object cannot be extended once it has closed), or when no further
  fragment can come for it (the stream ended, or its index was taken by a new call id). A
  later index starting proves nothing: servers interleave the fragments of parallel calls
  (issue 22 item 1). Each call exactly once, in call order;
* linear-time, bounded argument collection (:mod:`loopact.llm.arguments`): arguments past
  the size or nesting limit become one failed call (issue 21 items 7 and 9);
* a :class:`ToolCallDelta` for every argument fragment (and every piece of a ``<tool_call>``
  block), so the loop sees a stream that sends only arguments is alive (issue 21 item 8);
* a usage-only final chunk (``choices: []``); calls honoured whatever the finish reason;
  calls cut off by ``finish_reason: length`` returned as ``truncated_calls``, never as usable;
  ``finish_reason`` ``error`` (OpenRouter) or ``abort`` (vLLM) is a cut stream (retryable),
  and ``content_filter`` without a call a fatal error, never the cut-off start as an answer.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.llm.arguments import TOO_DEEP_ERROR, ArgumentBuffer
from loopact.llm.base import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.markup import cut_stray_markup
from loopact.llm.messages import Message, ToolCall, Usage
from loopact.llm.repair import parse_tool_arguments
from loopact.llm.surrogates import SurrogateJoiner
from loopact.llm.textcalls import ToolCallTagParser, find_bare_json_calls, new_call_id
from loopact.llm.think import ThinkSplitter

logger = logging.getLogger(__name__)

_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')

_LEGACY_INDEX = -(2**62)
"""The wire index of a ``function_call`` delta (the deprecated functions API), apart from
every ``tool_calls`` index."""
_FAILED_FINISH = frozenset({"error", "abort"})
"""Finish reasons of a generation that failed midway (OpenRouter ``error``, vLLM ``abort``)."""

TRUNCATED_ERROR = (
    "the tool call was cut off by the output token limit (finish_reason 'length'); "
    "its arguments are incomplete and it was not executed"
)


@dataclass
class _Slot:
    """One tool call being assembled."""

    wire_index: int | None
    id: str = ""
    name: str = ""
    args: ArgumentBuffer = field(default_factory=ArgumentBuffer)
    args_obj: dict[str, Any] | None = None
    parsed: dict[str, Any] | None = None
    complete: bool = False
    emitted: bool = False
    call: ToolCall | None = None
    joiner: SurrogateJoiner = field(default_factory=SurrogateJoiner)

    @property
    def args_text(self) -> str:
        """The arguments as text (an object sent as such, serialised)."""
        if self.args_obj is not None:
            return json.dumps(self.args_obj, ensure_ascii=False, default=str)
        return self.args.text


@dataclass
class StreamState:
    """The snapshot of one response being streamed. Create it with :func:`new_state`.

    Attributes:
        tool_names: Names of the tools offered in the request.
        native_tool_calls: The endpoint has native tool calls (bare JSON calls ignored).
        finish_reason: The last finish reason seen (``""`` while none).
        usage: The last usage seen.
        chunks: How many chunks were fed.
    """

    tool_names: tuple[str, ...] = ()
    native_tool_calls: bool = True
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    chunks: int = 0
    done: bool = False
    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    slots: list[_Slot] = field(default_factory=list)
    wire_to_slot: dict[int, int] = field(default_factory=dict)
    last_wire_index: int | None = None
    next_ready: int = 0
    held_parts: list[str] = field(default_factory=list)
    think: ThinkSplitter = field(default_factory=ThinkSplitter)
    tags: ToolCallTagParser = field(default_factory=ToolCallTagParser)
    text_joiner: SurrogateJoiner = field(default_factory=SurrogateJoiner)
    reasoning_joiner: SurrogateJoiner = field(default_factory=SurrogateJoiner)

    @property
    def text(self) -> str:
        """The answer text released so far."""
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        """The reasoning text released so far."""
        return "".join(self.reasoning_parts)


def new_state(tool_names: Sequence[str] = (), native_tool_calls: bool = True) -> StreamState:
    """A fresh snapshot for one response.

    Args:
        tool_names: Names of the tools offered in the request (for bare JSON calls).
        native_tool_calls: False when the endpoint has no native tool calls; only then are
            bare JSON objects naming a known tool read as calls.
    """
    return StreamState(tool_names=tuple(tool_names), native_tool_calls=native_tool_calls)


def accumulate_chunk(chunk: Mapping[str, Any], state: StreamState) -> list[ModelEvent]:
    """Fold one decoded stream chunk into ``state``; return the events it made certain.

    Args:
        chunk: One ``chat.completion.chunk`` as a dict (the SSE ``data`` payload).
        state: The snapshot from :func:`new_state`, updated in place.

    Returns:
        ``ReasoningDelta`` / ``TextDelta`` / ``ToolCallReady`` events in stream order.

    Raises:
        ModelRetryableError: ``chunk`` is malformed ("model stream was cut: ...").
    """
    if state.done:
        raise RuntimeError("accumulate_chunk called after finish_stream")
    if not isinstance(chunk, Mapping):
        raise _malformed("a chunk is not a JSON object")
    state.chunks += 1
    events: list[ModelEvent] = []
    usage = chunk.get("usage")
    if isinstance(usage, Mapping):
        state.usage = Usage(
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
        )
    choices = chunk.get("choices")
    if choices is None:
        return events
    if not isinstance(choices, list):
        raise _malformed("'choices' is not a list")
    for choice in choices:
        if not isinstance(choice, Mapping):
            raise _malformed("a choice is not an object")
        if _int(choice.get("index")) != 0:
            continue  # n > 1 is never requested; ignore extra choices
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, Mapping):
            raise _malformed("'delta' is not an object")
        _reasoning_field(delta, events, state)
        for key in ("content", "refusal"):  # a refusal is the model's answer to the user
            content = delta.get(key)
            if content:
                _content(state.text_joiner.feed(_content_text(content)), events, state)
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            if not isinstance(tool_calls, list):
                raise _malformed("'tool_calls' is not a list")
            whole = "delta" not in choice  # a complete message: each entry is one call
            for position, tc in enumerate(tool_calls):
                if whole and isinstance(tc, Mapping) and tc.get("index") is None:
                    tc = {**tc, "index": position}  # servers leave index (and id) out there
                _tool_call_delta(tc, events, state)
        legacy = delta.get("function_call")  # the deprecated functions API: one call
        if legacy is not None:
            _tool_call_delta({"index": _LEGACY_INDEX, "function": legacy}, events, state)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            state.finish_reason = reason
    _drain(events, state)
    return events


def finish_stream(state: StreamState) -> list[ModelEvent]:
    """End of stream: release held text, complete every call, and end with ResponseDone.

    Args:
        state: The snapshot that every chunk was fed to.

    Returns:
        The remaining events; the last one is always :class:`ResponseDone`.

    Raises:
        ModelRetryableError: The finish reason says the generation failed (``error``,
            ``abort``): "model stream was cut: ...".
        ModelFatalError: ``content_filter`` ended a response without a usable call.
    """
    if state.done:
        raise RuntimeError("finish_stream called twice")
    if state.finish_reason in _FAILED_FINISH:
        raise ModelRetryableError(
            "model stream was cut: the model endpoint ended the response with "
            f"finish_reason {state.finish_reason!r}"
        )
    events: list[ModelEvent] = []
    truncated_by_length = state.finish_reason == "length"
    for joiner, emit in ((state.text_joiner, _content), (state.reasoning_joiner, _emit_reasoning)):
        rest = joiner.flush()  # a high half no low half followed: U+FFFD
        if rest:
            emit(rest, events, state)
    for kind, text in state.think.flush():
        _segment(kind, text, events, state)
    truncated = _cut_tag_block(state) if truncated_by_length else []
    for item in state.tags.flush():
        _tag_item(item, events, state)
    if state.held_parts:
        held, state.held_parts = "".join(state.held_parts), []
        rest, calls = find_bare_json_calls(held, state.tool_names)
        _emit_text(rest, events, state)
        for call in calls:
            _add_text_call(call, state)
    kept, unreadable = cut_stray_markup(state.text)
    if unreadable is not None:  # raw tool markup is never the answer (issue 39 item 2)
        state.text_parts[:] = [kept] if kept else []
        _add_text_call(unreadable, state)
    truncated += _complete_slots(state, truncated_by_length)
    _drain(events, state)
    usable = tuple(s.call for s in state.slots if s.emitted and s.call is not None)
    if state.finish_reason == "content_filter" and not usable:
        # The answer was cut where a filter flagged it: its start is no answer (Azure, DeepSeek).
        raise ModelFatalError(
            "the model endpoint's content filter stopped the answer "
            "(finish_reason 'content_filter'); rephrase the request"
        )
    message = Message.assistant(
        text=state.text, tool_calls=usable, reasoning=state.reasoning or None
    )
    state.done = True
    events.append(
        ResponseDone(
            message=message,
            finish_reason=state.finish_reason,
            usage=state.usage,
            truncated_calls=tuple(truncated),
        )
    )
    return events


def _cut_tag_block(state: StreamState) -> list[ToolCall]:
    """A ``<tool_call>`` block the length limit cut off: dropped, returned as a failed call."""
    if not state.tags.in_block:
        return []
    body = state.tags.pending
    state.tags = ToolCallTagParser()  # drop the cut-off block
    name = _NAME_RE.search(body)
    return [
        ToolCall(
            id=new_call_id(),
            name=name.group(1) if name else "",
            raw_arguments=body,
            error=TRUNCATED_ERROR,
        )
    ]


def _complete_slots(state: StreamState, truncated_by_length: bool) -> list[ToolCall]:
    """Complete every open wire call; under a length cut each is a failed (truncated) call.

    Returns:
        The truncated calls (empty unless ``truncated_by_length``).
    """
    truncated: list[ToolCall] = []
    for slot in state.slots:
        if slot.complete:
            continue
        slot.args.feed(slot.joiner.flush())
        if truncated_by_length:
            slot.call = ToolCall(
                id=slot.id or new_call_id(),
                name=slot.name,
                raw_arguments=slot.args_text,
                error=TRUNCATED_ERROR,
            )
            truncated.append(slot.call)
        else:
            _complete(slot)
    return truncated


# --- text ------------------------------------------------------------------------------


def _reasoning_field(delta: Mapping[str, Any], events: list[ModelEvent], st: StreamState) -> None:
    for key in ("reasoning_content", "reasoning"):
        value = delta.get(key)
        if isinstance(value, str) and value:
            value = st.reasoning_joiner.feed(value)
            if value:
                _emit_reasoning(value, events, st)
            return


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers stream content parts
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    raise _malformed("'content' is neither text nor a list of parts")


def _content(text: str, events: list[ModelEvent], st: StreamState) -> None:
    for kind, piece in st.think.feed(text):
        _segment(kind, piece, events, st)


def _segment(kind: str, text: str, events: list[ModelEvent], st: StreamState) -> None:
    if kind == "retract":
        # A lone </think>: the answer so far was reasoning (issue 22 item 6). Its text deltas
        # were already yielded; the final message keeps the two apart.
        st.reasoning_parts.extend([*st.text_parts, *st.held_parts])
        st.text_parts.clear()
        st.held_parts.clear()
        return
    if kind == "reasoning":
        _emit_reasoning(text, events, st)
        return
    for item in st.tags.feed(text):
        _tag_item(item, events, st)
    if st.tags.in_block:  # a <tool_call> block is streaming: a call fragment
        events.append(ToolCallDelta(index=len(st.slots), text=text))


def _tag_item(item: str | ToolCall, events: list[ModelEvent], st: StreamState) -> None:
    if isinstance(item, ToolCall):
        _add_text_call(item, st)
        _drain(events, st)
        return
    if st.native_tool_calls or not st.tool_names:
        _emit_text(item, events, st)
        return
    # Without native calls the answer may be a bare JSON call: hold back from the first
    # character that could start one until the end of the response decides.
    if not st.held_parts:
        starts = [i for i in (item.find("{"), item.find("`")) if i >= 0]
        if not starts:
            _emit_text(item, events, st)
            return
        _emit_text(item[: min(starts)], events, st)
        item = item[min(starts) :]
    st.held_parts.append(item)
    events.append(ToolCallDelta(index=len(st.slots), text=item))  # held: maybe a call


def _emit_text(text: str, events: list[ModelEvent], st: StreamState) -> None:
    if not st.text_parts:
        text = text.lstrip()  # whitespace left between </think> and the answer
    if not text:
        return
    st.text_parts.append(text)
    events.append(TextDelta(text))


def _emit_reasoning(text: str, events: list[ModelEvent], st: StreamState) -> None:
    st.reasoning_parts.append(text)
    events.append(ReasoningDelta(text))


# --- tool calls --------------------------------------------------------------------------


def _tool_call_delta(tc: object, events: list[ModelEvent], st: StreamState) -> None:
    if not isinstance(tc, Mapping):
        raise _malformed("a tool call delta is not an object")
    fn = tc.get("function") or {}
    if not isinstance(fn, Mapping):
        raise _malformed("'function' in a tool call delta is not an object")
    raw_id, raw_name = tc.get("id"), fn.get("name")
    call_id: str = raw_id if isinstance(raw_id, str) else ""
    name: str = raw_name if isinstance(raw_name, str) else ""
    index = tc.get("index")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        raise _malformed("a tool call 'index' is not an integer")
    if not call_id and not name and fn.get("arguments") in (None, ""):
        return  # an empty placeholder (gateways send one in every chunk): no call
    if index is None:
        index = _guess_wire_index(call_id, name, bool(fn.get("arguments")), st)
    position = _slot_for(index, call_id, name, st)
    slot = st.slots[position]
    if slot.emitted:
        if fn.get("arguments") or name:
            logger.debug("ignoring a delta for tool call %d after it was dispatched", index)
        return
    if call_id and not slot.id:
        slot.id = call_id
    if name and not slot.name:
        slot.name = name
    args = fn.get("arguments")
    if isinstance(args, Mapping):
        slot.args_obj = dict(args)
    elif isinstance(args, str) and args:
        args = slot.joiner.feed(args)
        slot.args.feed(args)
        events.append(ToolCallDelta(index=position, text=args, name=slot.name))
    elif args not in (None, ""):
        raise _malformed("tool call 'arguments' is neither text nor an object")
    _check_complete(slot)


def _check_complete(slot: _Slot) -> None:
    """Mark ``slot`` complete when nothing that may still arrive can change its call."""
    if slot.complete or not slot.name:
        return
    if slot.args_obj is not None or (slot.args.closed and slot.args.failure() is not None):
        slot.complete = True
        return
    value = slot.args.complete_object()
    if value is not None:
        slot.parsed = value
        slot.complete = True


def _guess_wire_index(call_id: str, name: str, has_args: bool, st: StreamState) -> int:
    """The wire index of a delta without ``index``: the index of the call its ``id`` names
    (interleaved parallel calls told apart by id only, issue 22 item 1), a new index for a
    new id; without an id, a new index when the delta names a tool after the last call is
    complete (each call whole in a chunk of its own), unless it only repeats that call's name;
    else the index of the delta before it. A new id without a name continues the last call."""
    used = [s.wire_index for s in st.slots if s.wire_index is not None]
    last = st.last_wire_index
    if call_id:
        for slot in st.slots:
            if slot.id == call_id and slot.wire_index is not None:
                return slot.wire_index
        if name or last is None:
            return max(used) + 1 if used else 0
        # A new id that names no tool continues the last call: servers that send another
        # id on every piece of one call (a new call always names its tool).
        return last
    if last is None:
        return 0
    previous = st.slots[st.wire_to_slot[last]]
    if name and previous.complete and (name != previous.name or has_args):
        return max(used) + 1
    return last


def _slot_for(index: int, call_id: str, name: str, st: StreamState) -> int:
    """The position of the call a delta with this wire ``index``, ``call_id`` and ``name``
    belongs to."""
    st.last_wire_index = index
    pos = st.wire_to_slot.get(index)
    if pos is not None:
        slot = st.slots[pos]
        if not call_id or not slot.id or slot.id == call_id:
            return pos
        if not name:
            # A new id that names no tool continues the call (Poolside sends another id on
            # every piece of one call); a new call always names its tool.
            return pos
        if name == slot.name and not slot.emitted and not slot.args.text and slot.args_obj is None:
            # The same tool announced again under a new id before any argument came (Atlas):
            # one call, known by its last id.
            slot.id = call_id
            return pos
        # The same index with a new id naming a tool: a new call; nothing more can come for
        # the old one (servers that put every call on index 0). Other indexes are not affected.
        _complete(slot)
    st.slots.append(_Slot(wire_index=index))
    st.wire_to_slot[index] = len(st.slots) - 1
    return len(st.slots) - 1


def _add_text_call(call: ToolCall, st: StreamState) -> None:
    st.slots.append(_Slot(wire_index=None, complete=True, call=call))


def _complete(slot: _Slot) -> None:
    """Mark ``slot`` complete and build its final call (repairing arguments, SPEC B7)."""
    slot.complete = True
    if slot.call is not None:
        return
    error: str | None = None
    failure = slot.args.failure()
    if slot.args_obj is not None:
        args, error = parse_tool_arguments(slot.args_obj)
    elif failure is not None:
        args, error = {}, failure
    elif slot.parsed is not None:
        args = slot.parsed
    else:
        args, error = parse_tool_arguments(slot.args.text)
        if error is not None and error != TOO_DEEP_ERROR:
            error = f"could not parse the arguments as JSON: {error}"
    if not slot.name:
        error = "the tool call names no tool"
    slot.call = ToolCall(
        id=slot.id or new_call_id(),
        name=slot.name,
        arguments=args,
        raw_arguments=slot.args_text,
        error=error,
    )


def _drain(events: list[ModelEvent], st: StreamState) -> None:
    """Yield complete calls in order, stopping at the first incomplete one."""
    while st.next_ready < len(st.slots):
        slot = st.slots[st.next_ready]
        if not slot.complete:
            return
        _complete(slot)
        assert slot.call is not None
        slot.emitted = True
        events.append(ToolCallReady(index=st.next_ready, call=slot.call))
        st.next_ready += 1


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _malformed(what: str) -> ModelRetryableError:
    return ModelRetryableError(f"model stream was cut: malformed chunk: {what}")
