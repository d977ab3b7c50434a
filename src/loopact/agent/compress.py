"""Context compression planning (SPEC E1): pure functions, no I/O and no model calls.

The agent calls these when the prompt passes its threshold::

    plan = plan_compression(history)
    if plan is not None:
        request = summary_request_messages(plan, goal=current_goal)   # send with NO tools
        ... one model request -> (message, finish_reason)
        new = accept_summary(plan, message, finish_reason, estimate_tokens)
        if new is not None:
            history = new                       # else the original history stays
    if estimate_tokens(history) > hard_limit:   # or the provider's usage
        history = hard_trim(history, hard_limit, estimate_tokens)

Rules every function keeps:

* Leading system messages are always kept, unchanged.
* A cut never separates an assistant message with ``tool_calls`` from any of its tool results
  (so parallel results are never split) and never leaves a tool result first in what is kept:
  compression creates no orphan results and loses no result of a kept call.
* A *turn* starts at a user message. The most recent ``keep_recent_turns`` turns are kept
  whole (the last one may still be in progress). When that leaves nothing to summarise (one
  very long task), the cut falls inside the latest turn: its opening user message (the goal)
  is kept verbatim, the middle rounds are summarised and the last ``keep_recent_rounds``
  rounds are kept (fewer, down to the last one, when the turn has no more rounds than that:
  big rounds are summarised, not only trimmed away).
* The summary is a ``user`` message marked with ``provider_data["loopact"]["summary"]``
  (see :func:`is_summary`); a later compression summarises it again (a rolling summary).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loopact.llm.messages import ImagePart, Message, TextPart
from loopact.llm.tokens import IMAGE_TOKENS as IMAGE_TOKENS  # re-exported
from loopact.llm.tokens import MESSAGE_OVERHEAD_TOKENS as MESSAGE_OVERHEAD_TOKENS
from loopact.llm.tokens import estimate_message_tokens

estimate_tokens = estimate_message_tokens
"""Rough token count of messages (:func:`loopact.llm.tokens.estimate_message_tokens`)."""

#: Characters of one tool result or message shown to the summariser (the rest is cut).
TRANSCRIPT_CHARS_PER_MESSAGE = 3000

SUMMARY_HEADER = "Summary of the earlier conversation (older turns were compressed):"

TokensOf = Callable[[Sequence[Message]], int]


@dataclass(frozen=True)
class CompressionPlan:
    """Which messages a compression replaces and which it keeps.

    The compressed history is ``system + pinned + [summary] + tail``.

    Attributes:
        system: The leading system messages (kept).
        head: The messages to summarise, oldest first.
        pinned: Kept verbatim before the summary: the latest turn's opening user message when
            the cut falls inside that turn, else empty.
        tail: The most recent messages, kept verbatim.
    """

    system: tuple[Message, ...]
    head: tuple[Message, ...]
    pinned: tuple[Message, ...]
    tail: tuple[Message, ...]


def is_summary(message: Message) -> bool:
    """True for a summary message made by :func:`accept_summary`."""
    marker = message.provider_data.get("loopact")
    return isinstance(marker, dict) and bool(marker.get("summary"))


def summary_message(text: str) -> Message:
    """The ``user`` message that carries a summary in the history (marked, see is_summary)."""
    return Message(
        role="user",
        content=(TextPart(f"{SUMMARY_HEADER}\n\n{text.strip()}"),),
        provider_data={"loopact": {"summary": True}},
    )


def _split_system(history: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    n = 0
    while n < len(history) and history[n].role == "system":
        n += 1
    return list(history[:n]), list(history[n:])


def _legal_cuts(body: Sequence[Message]) -> list[bool]:
    """``legal[i]``: cutting ``body[:i] | body[i:]`` separates no call from its result.

    Index 0 and ``len(body)`` are never legal (nothing cut / nothing kept). A legal cut also
    starts the kept part with a user or assistant message.
    """
    n = len(body)
    blocked = [0] * (n + 2)
    call_at: dict[str, int] = {}
    for i, m in enumerate(body):
        if m.role == "assistant":
            for c in m.tool_calls:
                call_at[c.id] = i
        elif m.role == "tool" and m.tool_call_id in call_at:
            c_idx = call_at[m.tool_call_id]
            # Cuts c_idx+1 .. i would put the call before and this result after the cut.
            blocked[c_idx + 1] += 1
            blocked[i + 1] -= 1
    legal = [False] * (n + 1)
    running = 0
    for i in range(n + 1):
        running += blocked[i]
        legal[i] = 0 < i < n and running == 0 and body[i].role in ("user", "assistant")
    return legal


def _turn_starts(body: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(body) if m.role == "user" and not is_summary(m)]


def _legal_at_or_before(legal: list[bool], target: int, lowest: int) -> int | None:
    for c in range(min(target, len(legal) - 1), lowest - 1, -1):
        if legal[c]:
            return c
    return None


def _substantial(head: Sequence[Message]) -> bool:
    return any(not is_summary(m) for m in head)


def plan_compression(
    history: Sequence[Message], keep_recent_turns: int = 2, *, keep_recent_rounds: int = 2
) -> CompressionPlan | None:
    """Decide what a compression summarises and what it keeps (SPEC E1).

    Candidate cuts, in order of preference: keep the last ``keep_recent_turns`` turns whole;
    keep fewer whole turns (down to the latest one); cut inside the latest turn, keeping its
    opening user message and its last ``keep_recent_rounds`` rounds (a round starts at an
    assistant message), or, when no other cut exists, fewer of them (down to the last one).
    A candidate must summarise something besides old summaries. The first candidate that
    summarises at least half of the non-system messages (by :func:`estimate_tokens`) wins;
    if none does, the one that summarises the most.

    Args:
        history: The full history, system messages first.
        keep_recent_turns: Whole turns to keep (at least 1).
        keep_recent_rounds: Rounds of the latest turn to keep when cutting inside it.

    Returns:
        The plan, or None when nothing can be cut without breaking a pair.
    """
    system, body = _split_system(history)
    if len(body) < 2:
        return None
    legal = _legal_cuts(body)
    starts = _turn_starts(body)
    candidates: list[CompressionPlan] = []
    for k in range(min(max(keep_recent_turns, 1), len(starts)), 0, -1):
        c = _legal_at_or_before(legal, starts[-k], 1)
        if c is not None and _substantial(body[:c]):
            candidates.append(CompressionPlan(tuple(system), tuple(body[:c]), (), tuple(body[c:])))
    u = starts[-1] if starts else -1
    rounds = [i for i in range(u + 1, len(body)) if body[i].role == "assistant"]
    keep = max(keep_recent_rounds, 1)
    if not candidates and 1 < len(rounds) <= keep:
        # Nothing else to cut: keep fewer of the latest turn's rounds (its rounds are big,
        # e.g. long tool results or images), rather than only ever trimming them away.
        keep = len(rounds) - 1
    if len(rounds) > keep:
        c = _legal_at_or_before(legal, rounds[-keep], u + 2)
        if c is not None:
            head = body[: max(u, 0)] + body[u + 1 : c]
            if _substantial(head):
                pinned = (body[u],) if u >= 0 else ()
                candidates.append(
                    CompressionPlan(tuple(system), tuple(head), pinned, tuple(body[c:]))
                )
    if not candidates:
        return None
    # Prefer keeping more whole turns, but only if that still summarises at least half of
    # the conversation; otherwise take the plan that summarises the most.
    total = estimate_tokens(body)
    for plan in candidates:
        if estimate_tokens(plan.head) * 2 >= total:
            return plan
    return max(candidates, key=lambda p: estimate_tokens(p.head))


def _clip(text: str, limit: int = TRANSCRIPT_CHARS_PER_MESSAGE) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more chars]"


def _image_notes(m: Message) -> str:
    notes = [
        f"[image {p.image.width_px}x{p.image.height_px} sha256:{p.image.sha256[:12]}]"
        for p in m.content
        if isinstance(p, ImagePart)
    ]
    notes += [f"[spoken {a.duration_s:.1f} s: {a.transcript!r}]" for a in m.audio]
    return (" " + " ".join(notes)) if notes else ""


def render_transcript(messages: Sequence[Message]) -> str:
    """Plain-text transcript of messages for the summariser (images as notes, long texts cut)."""
    lines: list[str] = []
    for m in messages:
        if is_summary(m):
            lines.append(f"[Earlier summary]\n{m.text}")
        elif m.role == "user":
            lines.append(f"User: {_clip(m.text)}{_image_notes(m)}")
        elif m.role == "assistant":
            text = f"Assistant: {_clip(m.text)}" if m.text else "Assistant:"
            lines.append(text)
            for c in m.tool_calls:
                args = json.dumps(c.arguments, ensure_ascii=False, default=str)
                lines.append(f"  -> called {c.name}({_clip(args, 500)}) [id {c.id}]")
        elif m.role == "tool":
            lines.append(
                f"Result of {m.name or 'tool'} [id {m.tool_call_id}]: "
                f"{_clip(m.text)}{_image_notes(m)}"
            )
        else:
            lines.append(f"System note: {_clip(m.text)}")
    return "\n".join(lines)


def summary_request_messages(plan: CompressionPlan, goal: str | None) -> list[Message]:
    """The messages of the summary request (send them with no tools).

    The request asks for a rolling summary that keeps the current goal, the progress made,
    facts learned and the open questions, from a plain-text transcript of ``plan.head``
    (so no tool-call structure is sent).

    Args:
        plan: The compression plan.
        goal: The current task's goal, or None to let the model take it from the
            conversation (the pinned opening message is shown for context when there is one).

    Returns:
        ``[system, user]`` messages.
    """
    instructions = (
        "You keep the working memory of a robot agent whose conversation has grown too long. "
        "Write a concise rolling summary of the conversation below, replacing it for the "
        "agent. Keep these sections:\n"
        "Goal: the current goal, word for word if it was stated.\n"
        "Progress: what was done and what came of it, with the numbers that matter "
        "(positions in metres, angles in degrees, objects and where they were seen).\n"
        "Facts: anything learned that later steps need (user preferences, names, places).\n"
        "Open questions: what is unresolved or still to do next.\n"
        "Include everything an earlier summary says that is still true. Answer with the "
        "summary text only, do not call tools, and keep it much shorter than the conversation."
    )
    parts = []
    if goal:
        parts.append(f"Current goal: {goal}")
    if plan.pinned:
        parts.append(f"The task's opening message (kept separately):\n{plan.pinned[0].text}")
    parts.append("Conversation to summarise:\n<conversation>\n")
    body = "\n\n".join(parts) + render_transcript(plan.head) + "\n</conversation>"
    return [Message.system(instructions), Message.user(body)]


def accept_summary(
    plan: CompressionPlan,
    response_message: Message,
    finish_reason: str,
    tokens_of: TokensOf,
) -> list[Message] | None:
    """The compressed history, or None when the summary must not be used (SPEC E1).

    A summary is used only if its request finished normally (``finish_reason == "stop"``),
    it has no tool calls, its text is not empty, and it is smaller (by ``tokens_of``) than
    the messages it replaces.

    Args:
        plan: The plan the summary was requested for.
        response_message: The assistant message the summary request returned.
        finish_reason: The response's finish reason.
        tokens_of: Token counter for a list of messages (e.g. :func:`estimate_tokens`).

    Returns:
        ``system + pinned + [summary] + tail``, or None (keep the original history).
    """
    if finish_reason != "stop" or response_message.tool_calls:
        return None
    text = response_message.text.strip()
    if not text:
        return None
    summary = summary_message(text)
    if tokens_of([summary]) >= tokens_of(list(plan.head)):
        return None
    return [*plan.system, *plan.pinned, summary, *plan.tail]


def hard_trim(history: Sequence[Message], max_tokens: int, tokens_of: TokensOf) -> list[Message]:
    """Drop the oldest messages until the history fits ``max_tokens`` (the hard limit).

    Drops whole turns first; if the latest turn alone is too large, keeps its opening user
    message and drops its oldest rounds. Cuts are only made where no call is separated from
    its results. If nothing fits, the smallest such history is returned (system messages, the
    opening message and the last complete round). Never adds or changes a message.

    Args:
        history: The full history.
        max_tokens: The limit, in tokens as counted by ``tokens_of``.
        tokens_of: Token counter for a list of messages.

    Returns:
        The trimmed history (the input itself, copied, if it already fits).
    """
    if tokens_of(history) <= max_tokens:
        return list(history)
    system, body = _split_system(history)
    legal = _legal_cuts(body)
    cuts = [i for i in range(len(body) + 1) if legal[i]]
    for c in cuts:
        if body[c].role == "user":
            candidate = [*system, *body[c:]]
            if tokens_of(candidate) <= max_tokens:
                return candidate
    starts = [i for i, m in enumerate(body) if m.role == "user"]
    u = starts[-1] if starts else -1
    pinned = [body[u]] if u >= 0 else []
    inner = [c for c in cuts if c > u + 1]
    for c in inner:
        candidate = [*system, *pinned, *body[c:]]
        if tokens_of(candidate) <= max_tokens:
            return candidate
    if inner:
        return [*system, *pinned, *body[inner[-1] :]]
    if u > 0 and legal[u]:
        return [*system, *body[u:]]
    return list(history)


def pairing_problems(history: Sequence[Message]) -> list[str]:
    """Describe broken tool pairs: results without an earlier call, calls without a result.

    Returns an empty list for a well-formed history (useful in tests and debug checks).
    """
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for i, m in enumerate(history):
        if m.role == "assistant":
            for c in m.tool_calls:
                open_calls[c.id] = c.name
        elif m.role == "tool":
            if m.tool_call_id not in open_calls:
                problems.append(f"message {i}: tool result {m.tool_call_id!r} has no call")
            else:
                del open_calls[m.tool_call_id]
    problems += [f"call {cid!r} ({name}) has no result" for cid, name in open_calls.items()]
    return problems


def checkpoint_text(history: Sequence[Message], task_id: str, goal: str) -> str:
    """A task's state for memory before its history is compressed (SPEC E1, E3): the goal,
    the summary so far (a plain trim may drop it), the last few tool results and the last
    thing the agent said, on one line."""
    recent = history[-12:]
    summaries = [m.text for m in history if is_summary(m)]
    done = [f"{m.name}: {m.text[:80]}" for m in recent if m.role == "tool"]
    said = [m.text[:160] for m in recent if m.role == "assistant" and m.text]
    parts = [f"checkpoint of task {task_id}: goal: {goal}"]
    if summaries:
        parts.append("summary so far: " + " ".join(summaries[-1].split())[:400])
    if done:
        parts.append("recent actions: " + "; ".join(done[-5:]))
    if said:
        parts.append("last said: " + said[-1])
    return " | ".join(parts)
