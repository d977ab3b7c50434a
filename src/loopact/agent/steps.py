"""Split a "do A, then B" instruction into one clause per step, and tell what ran (issue 13).

Small local models carry out the first action of a sequence and then answer, claiming the
rest. With ``split_steps`` on (the local brain's default), the task loop runs each clause of
the instruction as its own single-step task, in order
(:class:`~loopact.agent.step_policy.StepPolicy`), and the reply is built from the results of
the steps that actually ran (:func:`compose_reply`), never from the model's claims about the
others.

:func:`split_clauses` is a pure function of the text. It splits on sequencing words and
punctuation between actions, in English and Chinese:

- English: ``then``, ``and then``, ``after that``, ``afterwards``, ``next``, ``finally``,
  ``first ... then``, a semicolon, and a comma or ``and`` when an action verb follows it
  ("move backward 0.5 meters and nod", "move forward 1 m, turn left 45 degrees"), or a piece
  that only says where to after a motion ("go to the kitchen, then to the bedroom": the second
  step is "go to the bedroom");
- Chinese: 然后, 接着, 之后, 随后, 最后, 并且, ``先 ... 再`` (再, 再次), with or without a comma
  before them ("先前进一米再左转90度"), and a comma (，、；) when a sequencing word or an action
  verb follows it ("先前进一米，再左转90度", "后退一米，接着左转30度").

A route written with arrows ("patrol charger -> window -> door", "巡逻 充电桩 → 窗户 → 门")
is one clause per stop: the first keeps its verb, each later stop without a verb of its own
becomes "go to <stop>" (去<stop>), and whatever follows the last stop is split as usual
("... -> door and come back").

A clause that uses what the robot sees without being a look or a question itself ("write what
you see into report.md", "把你看到的东西写进 report.md") gets a look step before it
("what do you see in front of you?", 你看到了什么？), unless the step before it already looks.

It does not split a condition ("if you see a ball, stop": the step policy makes that a look
whose result picks the branch, :mod:`loopact.agent.grounding`), a pair of directions ("look
left and right") or a stop that says where or when the motion before it ends ("drive to the
box and stop within half a meter of it"); a clause with no action verb stays with the
previous one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from loopact.i18n import Phrase

#: Imperative verbs that start a robot action or a request for information (English).
EN_VERBS = frozenset((
    "move", "go", "drive", "turn", "rotate", "spin", "look", "nod", "shake", "stop", "halt",
    "come", "return", "navigate", "head", "back", "reverse", "center", "centre", "tell", "say",
    "describe", "report", "find", "follow", "track", "take", "write", "wait", "face", "point",
    "pan", "tilt", "observe", "check", "show", "read", "search", "explore", "patrol", "dock",
    "charge", "walk", "roll", "lift", "lower", "open", "close", "grab", "pick", "put", "place",
    "drop", "bring", "fetch", "give", "photograph", "snap", "record", "play", "speak",
    "announce", "send",
))  # fmt: skip

#: Chinese words that start an action or a request (matched at the start of a clause).
ZH_VERBS = (
    "前进", "后退", "左转", "右转", "向", "往", "去", "到", "走", "转", "看", "点头", "摇头",
    "告诉", "停", "回", "摄像头", "环顾", "抬头", "低头", "拍", "找", "跟", "说", "写", "等",
    "移动", "开", "关", "旋转", "掉头", "导航", "巡逻", "报告", "描述", "检查",
    "对着", "面向", "面对", "朝", "靠近", "接近", "寻找", "搜索", "前往",
)  # fmt: skip

_ZH_SEQ = ("然后再", "然后", "接着", "之后", "随后", "最后", "再次", "再", "并且", "并")
_EN_SEQ = (
    "and then", "and after that", "after that", "afterwards", "and finally", "finally",
    "then", "next", "and",
)  # fmt: skip
_CONDITION = re.compile(r"^\s*(if|when|whenever|unless|once|as soon as|如果|要是|假如|当)\b", re.I)
_EN_BOUNDARY = re.compile(
    r"\s*(?:;|,?\s+and\s+then\s+|,?\s+and\s+after\s+that,?\s+|,?\s+after\s+that,?\s+"
    r"|,?\s+afterwards,?\s+|,\s*then\s+|\s+then\s+|,\s*next,?\s+|,?\s+and\s+finally,?\s+"
    r"|,\s*finally,?\s+|,\s+|\s+and\s+)\s*",
    re.I,
)
#: A comma, or the place before a sequencing word with no comma ("先前进一米再左转90度"): the
#: piece that follows is a step of its own only when it starts an action once the word is
#: stripped (so "再见" and "再次" stay where they are).
_ZH_BOUNDARY = re.compile(r"\s*[，,、；;。]\s*|(?=然后|接着|之后|随后|最后|并且)|(?<!然后)(?=再)")
#: Arrows between the stops of a route: ASCII ``->``, ``=>``, ``-->`` and Unicode ``→``, ``⟶``.
_ARROW = re.compile(r"\s*(?:-+>|=>|→|⟶)\s*")


def is_chinese(text: str) -> bool:
    """True when ``text`` contains a CJK ideograph (the instruction is Chinese)."""
    return re.search(r"[\u4e00-\u9fff]", text) is not None


#: "stop" with where or when: how the previous motion ends, not a step of its own.
_STOP_QUALIFIER = re.compile(
    r"^\s*(?:please\s+)?(?:stop|halt)\s+(?:within|at|when|before|once|if|as soon as|short of"
    r"|next to|near|in front of|about|around|\d)",
    re.I,
)


def _starts_with_en_verb(text: str) -> bool:
    if _STOP_QUALIFIER.match(text):
        return False
    words = re.findall(r"[a-zA-Z']+", text.lower())
    if words and words[0] == "please":
        words = words[1:]
    return bool(words) and words[0] in EN_VERBS


def _starts_with_zh_verb(text: str) -> bool:
    return text.startswith(ZH_VERBS)


_EN_LEAD = re.compile(
    r"^\s*(?:first(?:ly)?|then|next|and|finally|afterwards|after that)[,\s]+", re.I
)


def _strip_en_lead(text: str) -> str:
    while True:
        stripped = _EN_LEAD.sub("", text, count=1)
        if stripped == text:
            return text.strip(" ,.;")
        text = stripped


def _strip_zh_lead(text: str) -> str:
    text = text.strip(" ，,、；;。")
    for word in ("首先", "先", *_ZH_SEQ):
        if text.startswith(word) and len(text) > len(word):
            return text[len(word) :].strip(" ，,、；;。")
    return text


#: A piece that only says where to ("to the bedroom", "back to the charger") after a clause that
#: starts with a motion verb: a step of its own with that verb.
_EN_WHERE = re.compile(r"^(?:back\s+|over\s+|on\s+)?(?:to|into|onto|towards?)\s+\S", re.I)
_EN_MOTION = frozenset(("go", "drive", "move", "walk", "navigate", "head", "return", "roll"))


def _en_carry(previous: str, piece: str) -> str:
    """The verb ``piece`` takes from ``previous`` ("go to the kitchen", "to the bedroom" ->
    "go"), or "" when it takes none."""
    words = previous.split()
    if words and words[0].lower() == "please":
        words = words[1:]
    verb = words[0] if words else ""
    return verb if verb.lower() in _EN_MOTION and _EN_WHERE.match(piece) else ""


def _split(
    text: str,
    boundary: re.Pattern[str],
    strip: Callable[[str], str],
    is_action: Callable[[str], bool],
    carry: Callable[[str, str], str] = lambda _previous, _piece: "",
) -> list[str]:
    """Cut at every boundary, then glue back each piece that does not start an action, unless
    it takes the previous clause's verb (``carry``)."""
    cuts = [
        (m.start(), m.end()) for m in boundary.finditer(text) if m.end() > m.start() or m.start()
    ]
    clauses: list[tuple[str, list[int]]] = []  # (verb taken, [start, end] of the raw text)
    pos = 0
    for start, end in [*cuts, (len(text), len(text))]:
        if start <= pos and clauses:
            continue
        piece = strip(text[pos:start])
        verb = carry(strip(text[slice(*clauses[-1][1])]), piece) if piece and clauses else ""
        if piece and (not clauses or is_action(piece) or verb):
            clauses.append((verb, [pos, start]))
        elif clauses:
            clauses[-1][1][1] = start  # no action of its own: part of the previous clause
        pos = end
    out = ((verb, strip(text[a:b])) for verb, (a, b) in clauses)
    return [f"{verb} {c}" if verb else c for verb, c in out if c]


def split_clauses(text: str) -> list[str]:
    """The steps of a sequencing instruction, in order (one item when it is not one).

    Args:
        text: The user's instruction.

    Returns:
        The clauses with their sequencing words removed (``["move forward half a meter",
        "turn right 90 degrees"]``), or ``[text]`` unchanged when it has one step, is a
        condition, or a piece would have no action of its own.
    """
    stripped = text.strip()
    if not stripped or _CONDITION.match(stripped) or "\n" in stripped:
        return [text]
    zh = is_chinese(stripped)
    stripped = _route(stripped, zh)
    if zh:
        clauses = _split(stripped, _ZH_BOUNDARY, _strip_zh_lead, _starts_with_zh_verb)
    else:
        clauses = _split(stripped, _EN_BOUNDARY, _strip_en_lead, _starts_with_en_verb, _en_carry)
    clauses = _look_first(clauses or [stripped], zh)
    if len(clauses) < 2:
        return [text]
    return clauses


#: What the robot sees, referred to by a clause that is not itself a look or a question.
_SEEN = re.compile(
    r"\bwhat (?:you|u) (?:can )?see\b|\bwhat(?:'s| is) in front of you\b"
    r"|你看到的东西|你看见的东西|你看到的|你看见的|看到的东西",
    re.I,
)
_LOOKING = re.compile(
    r"^\s*(?:please\s+)?(?:tell|say|describe|look|see|what|show|observe|report)\b"
    r"|^\s*(?:请)?(?:告诉|说|描述|看|你看|观察)",
    re.I,
)
#: The step put before such a clause: questions the 0.5B model answers with ``seewhat``.
#: 你前面有什么？ (seewhat's own example) became ``get_current_pose`` once the server ran with
#: ``--logits_all false`` (a near tie; eval report_md_zh, 2026-12-05); 你看到了什么？ does not.
LOOK_EN, LOOK_ZH = "what do you see in front of you?", "你看到了什么？"


def _look_first(clauses: list[str], zh: bool) -> list[str]:
    """Put a look step before a clause that uses "what you see" without looking itself.

    "write what you see into report.md" -> ["what do you see in front of you?", "write what
    you see into report.md"]: a small model asked for the file at once writes it from nothing.
    """
    out: list[str] = []
    for clause in clauses:
        looked = bool(out) and _LOOKING.match(out[-1]) is not None
        if _SEEN.search(clause) and not _LOOKING.match(clause) and not looked:
            out.append(LOOK_ZH if zh else LOOK_EN)
        out.append(clause)
    return out


def with_seen(clause: str, previous: ClauseResult | None) -> str:
    """``clause`` with "what you see" replaced by what the look step put before it saw.

    "write what you see into report.md" after the look step (:func:`_look_first`) returned
    "I see a red box ..." -> 'write "I see a red box ..." into report.md': asked to copy a
    result from two messages back, the 0.5B model wrote "What you see?" into the file (eval,
    2026-12-02); words in the clause itself it copies. Any other clause is returned as it is.

    Args:
        clause: One clause of a split instruction.
        previous: The clause that ran before it, if any.
    """
    if previous is None or previous.text not in (LOOK_EN, LOOK_ZH):
        return clause
    seen = " ".join(previous.sentence().split())
    if not seen or _LOOKING.match(clause):
        return clause
    quoted = f"“{seen}”" if is_chinese(clause) else f'"{seen}"'
    return _SEEN.sub(lambda _: quoted, clause, count=1)


def _route(text: str, zh: bool) -> str:
    """``patrol a -> b -> c and come back`` -> ``patrol a; go to b; go to c and come back``."""
    stops = [s.strip() for s in _ARROW.split(text)]
    is_action = _starts_with_zh_verb if zh else _starts_with_en_verb
    if len(stops) < 2 or not all(stops) or not is_action(stops[0]):
        return text
    go, sep = ("去", "；") if zh else ("go to ", "; ")
    return sep.join([stops[0], *(s if is_action(s) else go + s for s in stops[1:])])


_SPEECH = re.compile(
    r"^\s*(tell|say|speak|announce|answer|explain)\b|^\s*(告诉|说|讲|回答|解释)", re.I
)


def is_speech(clause: str) -> bool:
    """Whether ``clause`` only asks to be told something ("tell me ...", "告诉我 ...").

    Such a clause may be answered from what earlier steps returned; every other clause of a
    split instruction is an action and must call a tool
    (:class:`~loopact.agent.step_policy.StepPolicy`).
    """
    return bool(_SPEECH.match(clause))


class Ran(NamedTuple):
    """One call a clause ran: the tool's name and what its result says.

    Attributes:
        name: The tool's name.
        ok: Whether it succeeded.
        data: Its ``data``.
        error: Its ``error`` (the model's text of a failure).
        outcome: What happened as a typed phrase (a robot tool's), rendered in the reply's
            language; None for a tool that says nothing typed.
    """

    name: str
    ok: bool
    data: Any
    error: str | None
    outcome: Phrase | None = None

    def said(self, lang: str) -> str:
        """What the call did, in ``lang``: its outcome, else its ``data.result`` sentence as
        written (a tool of the user's, never a guessed translation), else ""."""
        if self.outcome is not None:
            return self.outcome.text(lang)
        if isinstance(self.data, dict) and isinstance(self.data.get("result"), str):
            return str(self.data["result"]).strip()
        return ""


@dataclass
class ClauseResult:
    """What one clause of a split instruction did.

    Attributes:
        text: The clause.
        answer: The model's answer text for the clause.
        results: Every call the clause ran, in order (:class:`Ran`; a plain ``(tool name,
            ok, data, error)`` tuple is taken for one with no outcome).
        perceived: True when the runtime wrote :attr:`answer` from what the step perceived
            ("I do not see the green cylinder", issue 45); it is then the clause's sentence.
    """

    text: str
    answer: str = ""
    results: list[Ran] = field(default_factory=list)
    perceived: bool = False

    def __post_init__(self) -> None:
        self.results = [Ran(*r) for r in self.results]

    @classmethod
    def of(cls, text: str, answer: str, ran: Sequence[tuple[Any, Any]]) -> ClauseResult:
        """The clause ``text`` with its answer and its ``(ToolCall, ToolResult)`` pairs."""
        return cls(text, answer, [Ran(c.name, r.ok, r.data, r.error, r.outcome) for c, r in ran])

    @property
    def failed(self) -> str | None:
        """The first failed call's error when the clause's last call failed, else None.

        A failed call followed by a retry that ran is a success ("drive at 50 m/s" refused,
        then ``move_forward(0.2)``).
        """
        return self.failure("en")

    def failure(self, lang: str) -> str | None:
        """:attr:`failed` in ``lang``: ``name: error``, the error rendered from the call's
        typed outcome when it has one."""
        if not self.results or self.results[-1].ok:
            return None
        for r in self.results:
            if not r.ok:
                error = r.outcome.text(lang) if r.outcome is not None else r.error
                return f"{r.name}: {error or 'failed'}"
        return None

    def sentence(self, zh: bool = False) -> str:
        """What the clause did, from the results the runtime wrote when there are any.

        Robot tools say what happened as a typed outcome (issue 6, issue 38): it is
        rendered in Chinese with ``zh``, else in English (:meth:`Ran.said`). Otherwise (a
        look-up, a description) the model's answer, which it wrote from the tool's result.
        """
        if self.perceived:
            return self.answer.strip()
        lang = "zh" if zh else "en"
        said = (r.said(lang) for r in self.results if r.ok)
        sep = "；" if zh else "; "
        return sep.join(s for s in said if s) or self.answer.strip()


def _decapitalise(text: str) -> str:
    """``The camera ...`` -> ``the camera ...``; ``I``, acronyms and names in quotes stay."""
    first = text.split(" ", 1)[0]
    if first == "I" or first.isupper() or not first[:1].isalpha():
        return text
    return text[:1].lower() + text[1:]


def compose_reply(done: Sequence[ClauseResult], skipped: Sequence[str], zh: bool = False) -> str:
    """The reply of a split instruction: what each step that ran did, and what did not run.

    Each sentence keeps its own language (a robot tool's typed outcome is rendered in the
    instruction's language; a sentence a tool wrote itself and a model's answer stay as
    written, in either), and so do the words joining it to the one before.

    Args:
        done: The clauses that ran, in order.
        skipped: The clauses not run (after a failed step).
        zh: The instruction was Chinese (the "did not do" sentence is then Chinese).
    """
    parts: list[str] = []
    for i, clause in enumerate(done):
        failed = clause.failure("zh" if zh else "en")
        if failed:
            failed = failed.rstrip(".。")  # it goes inside brackets
            text = (
                f"“{clause.text}”没有完成（{failed}）"
                if zh
                else f"“{clause.text}” did not succeed ({failed})"
            )
        else:
            text = clause.sentence(zh) or (f"“{clause.text}”完成" if zh else f"Did “{clause.text}”")
        chinese = is_chinese(text.strip("“”" + clause.text)) or (zh and text.startswith("“"))
        if not i:
            text = text[:1].upper() + text[1:]
        elif chinese:
            text = "然后" + (" " if text[:1].isascii() and text[:1].isalnum() else "") + text
        else:
            text = "Then " + _decapitalise(text)
        parts.append(text.rstrip(".。") + ("。" if chinese else ". "))
    if skipped:
        rest = "、".join(f"“{s}”" for s in skipped) if zh else ", ".join(f"“{s}”" for s in skipped)
        parts.append(f"因此没有执行：{rest}。" if zh else f"So I did not do: {rest}.")
    return "".join(parts).strip()


def bounded_reply(
    ran: Sequence[tuple[Any, Any]],
    marks: Sequence[tuple[str, int]],
    clauses: Sequence[str],
    zh: bool = False,
) -> str:
    """What ran, for the reply after a bound (SPEC A2): never the model's words (issue 13).

    A bound ends a task the model did not finish; the final answer a small model then writes
    without tools retells its tool catalogue ("The robot visited the site's named waypoints
    one after another ..." after a ``turn_left`` that did not even parse, 2026-12-05). So the
    reply is :func:`compose_reply` of what each started clause's calls did: the runtime's
    sentences of the calls that succeeded (a call without a sentence of its own is named,
    "Ran file_read.", never taken for the clause done), then, when its last call failed,
    what failed and why; a clause that ran no call is among the ones not done.

    Args:
        ran: The task's ``(ToolCall, ToolResult)`` pairs, in call order.
        marks: ``(clause, index in ran)`` where each started clause began.
        clauses: Every clause of the instruction (those after the started ones never ran).
        zh: The instruction was Chinese.

    Returns:
        The sentences, or "" when no call ran at all (the caller says that nothing ran).
    """
    ends = [*(start for _, start in marks[1:]), len(ran)]
    done = [ClauseResult.of(c, "", ran[a:b]) for (c, a), b in zip(marks, ends, strict=True)]
    skipped = clauses[len(marks) :]
    told: list[ClauseResult] = []
    for clause in done:
        succeeded = [r for r in clause.results if r.ok]
        if succeeded:
            told.append(ClauseResult(clause.text, _tools_ran(succeeded, zh), succeeded))
        if clause.failed is not None:
            told.append(clause)
    if not told:
        return ""
    not_run = [c.text for c in done if not c.results]
    return compose_reply(told, [*not_run, *skipped], zh=zh)


def _tools_ran(results: Sequence[Ran], zh: bool) -> str:
    """``ran file_read, wait`` (``执行了 file_read、wait``): the tools of ``results``, said
    when none of them wrote a sentence of what it did."""
    names = list(dict.fromkeys(r.name for r in results))
    return f"执行了 {'、'.join(names)}" if zh else f"ran {', '.join(names)}"


def answered_from_results(ran: Sequence[tuple[Any, Any]], acted: bool) -> bool:
    """Whether a single instruction's reply is built from what ran, not the model's words.

    With ``split_steps`` (the local brain, issue 13): when its last call failed, or when
    ``acted`` (a motion or a write was dispatched; the runtime's result sentences say what
    happened, :meth:`ClauseResult.sentence`). ``ran`` holds ``(ToolCall, ToolResult)`` pairs.
    """
    return bool(ran) and (not ran[-1][1].ok or acted)


def chinese_from_results(text: str, reply: str, ran: Sequence[tuple[Any, Any]]) -> bool:
    """Whether a Chinese instruction's English reply is better said by the runtime's own
    sentences in Chinese (the tools' typed outcomes, :meth:`ClauseResult.sentence`): the
    local brain often answers 离门多远？ in English ("The door is 5.43 meters away ..."),
    while ``distance_to``'s outcome renders as 门在 5.43 米外 ... (issue 13). ``ran`` holds
    ``(ToolCall, ToolResult)`` pairs; False when the last call failed or no result has a
    sentence that renders."""
    if not ran or not ran[-1][1].ok or not is_chinese(text) or is_chinese(reply):
        return False
    return is_chinese(ClauseResult.of(text, reply, ran).sentence(zh=True))
