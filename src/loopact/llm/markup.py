"""Tool calls in open models' own chat-template markup (SPEC B5, B7; issue 39 item 2).

Open models served without a tool parser put the call in the answer text, in the markup of
their chat template. Besides the Hermes JSON form (:mod:`loopact.llm.textcalls`) three are read:

* Qwen3-Coder: ``<tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function>
  </tool_call>`` (also without the ``<tool_call>`` wrapper);
* GLM-4.5/4.6: ``<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...
  </tool_call>``;
* Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
  <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>``.

Parameter values of the first two are text, as the model wrote them (one newline on each side
removed, as the templates put them there); the registry turns them into the numbers, booleans,
objects or arrays the tool's schema asks for (:meth:`loopact.tools.registry.ToolRegistry.check`).
A block is read only when it is unambiguous: every character of it belongs to the form, no
element is left open, no parameter is given twice. Otherwise it is one failed call whose error
says the block could not be read (the name left empty), so that the model is told and no tool
runs. :func:`find_stray_markup` finds what is left of such markup in an answer, so that it is
never taken for the answer itself.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping

from loopact.llm.messages import ToolCall
from loopact.llm.repair import parse_tool_arguments

KIMI_SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
KIMI_CALL = ("<|tool_call_begin|>", "<|tool_call_end|>")
KIMI_ARGS = "<|tool_call_argument_begin|>"
QWEN_FUNCTION = ("<function=", "</function>")

_QWEN_FUNCTION_RE = re.compile(r"<function=([^>\s]*)>(.*?)</function>", re.DOTALL)
_QWEN_PARAM_RE = re.compile(r"<parameter=([^>\n]*)>(.*?)</parameter>", re.DOTALL)
_GLM_PAIR_RE = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
_KIMI_CALL_RE = re.compile(
    r"<\|tool_call_begin\|>(.*?)<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>", re.DOTALL
)
_KIMI_ID_RE = re.compile(r"^(?:functions\.)?([A-Za-z0-9_.\-]+?)(?::\d+)?$")
_BARE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_STRAY_RE = re.compile(
    r"</?tool_call>|</?function(?:=|>)|</?parameter(?:=|>)|</?arg_(?:key|value)>"
    r"|<\|tool_calls?_[a-z_]+\|>"
)
_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.DOTALL)

UNREADABLE = "your tool call could not be read ({why}); no tool was run"
"""The error of a block that is not unambiguous, for the model."""


def new_call_id() -> str:
    """A fresh tool-call id, ``call_<24 hex digits>``, for calls that arrived without one."""
    return "call_" + uuid.uuid4().hex[:24]


def _value(text: str) -> str:
    """A parameter value as the template wrote it, minus one newline on each side."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def _failed(raw: str, why: str, name: str = "") -> ToolCall:
    return ToolCall(
        id=new_call_id(), name=name, raw_arguments=raw.strip(), error=UNREADABLE.format(why=why)
    )


def _pairs(body: str, pattern: re.Pattern[str], what: str) -> tuple[dict[str, str], str | None]:
    """``{key: value}`` of ``pattern``'s matches that make up all of ``body`` (whitespace
    between them), or an error saying what is ambiguous."""
    args: dict[str, str] = {}
    pos = 0
    for m in pattern.finditer(body):
        if body[pos : m.start()].strip():
            return {}, f"text outside the {what} elements: {body[pos : m.start()].strip()[:40]!r}"
        key = m.group(1).strip()
        if not key:
            return {}, f"a {what} without a name"
        if key in args:
            return {}, f"the {what} {key!r} is given twice"
        args[key] = _value(m.group(2))
        pos = m.end()
    if body[pos:].strip():
        return {}, f"an unclosed or malformed {what}: {body[pos:].strip()[:40]!r}"
    return args, None


def parse_qwen_function(body: str) -> ToolCall:
    """One Qwen3-Coder ``<function=NAME>...</function>`` element (``body`` is all of it,
    whitespace around it allowed) as a call; a failed call when it is not unambiguous."""
    text = body.strip()
    m = _QWEN_FUNCTION_RE.fullmatch(text)
    if m is None:
        return _failed(body, "a <function=...> element must hold <parameter=...> and be closed")
    name = m.group(1).strip()
    if not _BARE_NAME_RE.match(name):
        return _failed(body, f"the function name {name!r} is not a tool name")
    args, error = _pairs(m.group(2), _QWEN_PARAM_RE, "<parameter=...>")
    if error is not None:
        return _failed(body, error)
    return _call(name, args)


def parse_glm_call(body: str) -> ToolCall | None:
    """A GLM ``NAME<arg_key>K</arg_key><arg_value>V</arg_value>...`` body as a call, a failed
    call when it is GLM markup but not unambiguous, or None when it is not GLM markup at all
    (a bare tool name with no arguments is read as a call without arguments)."""
    text = body.strip()
    head, sep, _ = text.partition("<arg_")
    name = head.strip()
    if not sep:
        return _call(name, {}) if _BARE_NAME_RE.match(name) else None
    if not _BARE_NAME_RE.match(name):
        return _failed(body, f"the text before <arg_key> is not a tool name: {name[:40]!r}")
    args, why = _pairs(text[len(head) :], _GLM_PAIR_RE, "<arg_key>/<arg_value>")
    if why is not None:
        return _failed(body, why)
    return _call(name, args)


def parse_kimi_calls(body: str) -> list[ToolCall]:
    """The calls in a Kimi K2 section (``body``: the text between the section tags, or one
    ``<|tool_call_begin|>...<|tool_call_end|>`` element); one failed call when any part of it
    is not unambiguous."""
    calls: list[ToolCall] = []
    pos = 0
    for m in _KIMI_CALL_RE.finditer(body):
        if body[pos : m.start()].strip():
            return [_failed(body, "text between the <|tool_call_begin|> elements")]
        ident = _KIMI_ID_RE.match(m.group(1).strip())
        if ident is None:
            return [_failed(body, f"the call id {m.group(1).strip()[:40]!r} names no tool")]
        args, err = parse_tool_arguments(m.group(2))
        if err is not None:
            why = f"the arguments of {ident.group(1)} are not a JSON object: {err}"
            return [_failed(body, why, ident.group(1))]
        calls.append(_call(ident.group(1), args, m.group(2).strip()))
        pos = m.end()
    if body[pos:].strip() or not calls:
        return [_failed(body, "an unclosed or malformed <|tool_call_begin|> element")]
    return calls


def _call(name: str, args: Mapping[str, object], raw: str | None = None) -> ToolCall:
    text = raw if raw is not None else json.dumps(args, ensure_ascii=False)
    return ToolCall(id=new_call_id(), name=name, arguments=dict(args), raw_arguments=text)


def _first_stray(text: str) -> re.Match[str] | None:
    """The first tool-call tag in ``text`` outside ```` ``` ```` code fences."""
    fences = [(m.start(), m.end()) for m in _FENCE_RE.finditer(text)]
    for m in _STRAY_RE.finditer(text):
        if not any(a <= m.start() < b for a, b in fences):
            return m
    return None


def find_stray_markup(text: str) -> str | None:
    """The first piece of tool-call markup left in an answer outside code fences (a tag of
    the forms above that no complete block used), or None."""
    m = _first_stray(text)
    return m.group(0) if m else None


def cut_stray_markup(text: str) -> tuple[str, ToolCall | None]:
    """An answer without the tool-call markup no block could read, and the failed call that
    tells the model (issue 39 item 2: raw markup is never the answer).

    The answer is kept up to the line where the first stray tag is (that line holds the call's
    start, e.g. GLM's tool name before ``<arg_key>``); the rest is the call that could not be
    read.

    Args:
        text: The whole answer text, the blocks that could be read already cut out.

    Returns:
        ``(text, None)`` when there is no stray markup outside code fences, else
        ``(text_before, failed_call)``.
    """
    m = _first_stray(text)
    if m is None:
        return text, None
    start = text.rfind("\n", 0, m.start()) + 1
    why = f"the answer holds tool-call markup ({m.group(0)}) that is not a complete call block"
    return text[:start].rstrip(), _failed(text[start:], why)
