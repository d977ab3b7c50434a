"""Steps that act on what perception finds, and steps that refer to an earlier one (issue 45).

Pure functions of an instruction's text, English and Chinese, for the small model's step
policy (:class:`~loopact.agent.step_policy.StepPolicy`; SPEC A4, D5, H4):

- :func:`grounding`: a step that finds, goes up to or faces an object the camera must find
  ("find the blue ball", "drive up to the green cylinder", "face it", 走到绿色的圆柱旁边,
  转向它) and the robot tool that does it in one call, searching when the object is out of
  view (``face`` for find and face, ``approach`` for going up to it);
- :func:`refers_back` and :func:`resolve`: a step whose object is a pronoun or a
  demonstrative (it, them, there, that one, 它, 那里, 那个, 走过去) and the same step with the
  earlier step's object named in its place ("go to it" -> "go to the blue ball");
- :func:`split_condition`: "if you see X, do A, otherwise B" (如果看到 X 就 A，否则 B) as the
  object to look for and the two branches, so that perception, not the model, decides which
  runs.

An object counts as one only when the words name a colour or a shape the detector knows
(:func:`loopact.vision.scene.parse_target`): "go to the kitchen" is a place (``navigation``),
"turn to the left" a direction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from loopact.agent.steps import EN_VERBS, ZH_VERBS
from loopact.vision.scene import COLOR_WORDS, OTHER_COLOR_WORDS, parse_target

__all__ = [
    "TOOLS",
    "Condition",
    "Grounding",
    "align_target",
    "colours_named",
    "grounding",
    "refers_back",
    "resolve",
    "split_condition",
]

Action = Literal["find", "approach", "face", "see"]

TOOLS: dict[Action, str] = {
    "find": "face",
    "approach": "approach",
    "face": "face",
    "see": "visual_positioning",
}
"""The robot tool of each action: ``face`` and ``approach`` look around (head first, then
turning in place) until the object is in view (:func:`loopact.robot.sighting.search`);
``visual_positioning`` looks once, at the view as it is (an "if you see" check)."""

_PLEASE = r"^\s*(?:please\s+|请)?"
_EN_VERBS: tuple[tuple[Action, str], ...] = (
    ("find", r"(?:find|locate|seek|(?:look|search|hunt)(?:\s+around)?\s+for)"),
    (
        "face",
        r"(?:face|turn\s+(?:around\s+)?to\s+face|(?:turn|rotate|spin)\s+(?:around\s+)?"
        r"(?:to(?:wards?)?|toward)|point\s+(?:at|to(?:wards?)?|toward))",
    ),
    (
        "approach",
        r"(?:approach|(?:go|drive|move|walk|head|come|roll|get|run)"
        r"(?:\s+(?:over|up|straight|right|back))?\s+(?:to(?:wards?)?|toward|near|close\s+to"
        r"|next\s+to|up\s+to))",
    ),
)
_EN: tuple[tuple[Action, re.Pattern[str]], ...] = tuple(
    (action, re.compile(_PLEASE + verb + r"\s+(?P<obj>\S.*)$", re.I | re.S))
    for action, verb in _EN_VERBS
)
#: "go there", "drive over there": an approach whose object is the word "there" itself.
_EN_THERE = re.compile(
    _PLEASE + r"(?P<verb>(?:go|drive|move|walk|head|come|roll|get|run)(?:\s+over)?)\s+"
    r"(?P<obj>there\b.*)$",
    re.I | re.S,
)
_ZH_VERBS: tuple[tuple[Action, str], ...] = (
    ("find", r"(?:去找|找到|找一下|找找|寻找|搜索|搜寻|找)"),
    ("face", r"(?:转身对着|转过去对着|面向|转向|朝向|面对|对着|朝着)"),
    ("approach", r"(?:(?:走|开|移动|跑|过)(?:到|向|去)|去|到|靠近|接近|走近|前往)"),
)
_ZH: tuple[tuple[Action, re.Pattern[str]], ...] = tuple(
    (action, re.compile(_PLEASE + verb + r"(?P<obj>\S.*)$", re.S)) for action, verb in _ZH_VERBS
)
#: 走过去, 开过去: go over (to the object named before).
_ZH_OVER = re.compile(_PLEASE + r"(?P<verb>走|开|移动|跑)过去(?P<rest>.*)$", re.S)

_EN_REF = re.compile(r"^(?:it|them|there|that one|this one|that|this|those|these)\b", re.I)
_ZH_REF = re.compile(r"^(?:它们|它|那里|那儿|那边|那个|这个|那)")
_ZH_PLACE = ("那里", "那儿", "那边")
#: Words after an object that say where by it, not which object (Chinese).
_ZH_TAIL = re.compile(r"(?:旁边|跟前|前面|面前|附近|那里|那儿|那边|边上|处|去|一下)+$")
#: Where an object phrase ends in English: what follows says how or when, not which object.
_EN_END = re.compile(
    r"\s*(?:,|;|\.|\band\b|\bthen\b|\bstop\b|\bwithin\b|\buntil\b|\bat\s+about\b)", re.I
)


@dataclass(frozen=True)
class Grounding:
    """A step that acts on an object perception must find.

    Attributes:
        action: ``find`` (look around until it is in view and face it), ``approach``,
            ``face``, or ``see`` (the check of "if you see ...").
        target: The user's words naming the object ("the blue ball", "蓝色的球"), or "" when
            the step names it by a reference to an earlier step (:func:`refers_back`).
    """

    action: Action
    target: str

    @property
    def tool(self) -> str:
        """The robot tool that does it in one call (:data:`TOOLS`)."""
        return TOOLS[self.action]


def _is_object(phrase: str) -> bool:
    query = parse_target(phrase)
    return bool(phrase.strip()) and (query.color is not None or query.shape is not None)


def _object_phrase(obj: str, zh: bool) -> str:
    """The words of ``obj`` that name the object ("the red box and stop ..." -> "the red
    box"; 绿色的圆柱旁边 -> 绿色的圆柱)."""
    if zh:
        head = re.split(r"[，,、；;。]|然后|再|并", obj, maxsplit=1)[0]
        return _ZH_TAIL.sub("", head.strip()).strip()
    m = _EN_END.search(obj)
    return (obj[: m.start()] if m else obj).strip(" ,.;!?")


def _match(clause: str) -> tuple[Action, str, int] | None:
    """``(action, object words, where they start)`` of a clause that finds, approaches or
    faces something, or None."""
    zh = bool(re.search(r"[\u4e00-\u9fff]", clause))
    over = (_ZH_OVER if zh else _EN_THERE).match(clause)
    if over is not None:
        start = over.start("rest") if zh else over.start("obj")
        return "approach", clause[start:] if not zh else "", start
    for action, pattern in _ZH if zh else _EN:
        m = pattern.match(clause)
        if m is not None:
            return action, m.group("obj"), m.start("obj")
    return None


def refers_back(clause: str) -> bool:
    """Whether the object of a find, approach or face clause is a reference to an earlier
    step's object: "go to it", "drive over there", "face that one", 走到它那里, 开过去, 对着它."""
    found = _match(clause)
    if found is None:
        return False
    _, obj, _ = found
    return not obj.strip() or bool(_EN_REF.match(obj.strip()) or _ZH_REF.match(obj.strip()))


def grounding(clause: str, tools: frozenset[str] | set[str] | None = None) -> Grounding | None:
    """The perception-grounded action of ``clause``, or None.

    Args:
        clause: One step of an instruction.
        tools: The names of the tools offered; a grounding whose tool is not among them is
            None. None: any.

    Returns:
        ``Grounding("approach", "the green cylinder")`` for "go to the green cylinder",
        ``Grounding("face", "")`` for "face it"; None for "go to the kitchen" (a place),
        "turn to the left" or a clause that is no find, approach or face.
    """
    found = _match(clause)
    if found is None:
        return None
    action, obj, _ = found
    zh = bool(re.search(r"[\u4e00-\u9fff]", clause))
    if refers_back(clause):
        result = Grounding(action, "")
    else:
        phrase = _object_phrase(obj, zh)
        if not _is_object(phrase):
            return None
        result = Grounding(action, phrase)
    if tools is not None and result.tool not in tools:
        return None
    return result


def resolve(clause: str, name: str) -> str:
    """``clause`` with its reference to an earlier object replaced by ``name``.

    "go to it" -> "go to the blue ball", "drive over there" -> "drive over to the blue
    ball", 走到它那里 -> 走到蓝色的球那里, 开过去 -> 开到蓝色的球旁边. A clause that does not
    refer back (:func:`refers_back`) is returned as it is.

    Args:
        clause: One step of an instruction.
        name: The object the earlier step found, in the user's words where there are any.
    """
    if not refers_back(clause) or not name.strip():
        return clause
    zh = bool(re.search(r"[\u4e00-\u9fff]", clause))
    over = (_ZH_OVER if zh else _EN_THERE).match(clause)
    if over is not None and zh:
        return f"{clause[: over.start('verb')]}{over.group('verb')}到{name}旁边{over.group('rest')}"
    if over is not None:
        rest = clause[over.start("obj") :][len("there") :]
        return f"{clause[: over.start('obj')]}to {_with_article(name)}{rest}"
    found = _match(clause)
    assert found is not None  # refers_back matched it
    _, obj, start = found
    ref = (_ZH_REF if zh else _EN_REF).match(obj.lstrip())
    cut = start + (len(obj) - len(obj.lstrip())) + (ref.end() if ref else 0)
    named = name if zh else _with_article(name)
    if zh and ref is not None and ref.group() in _ZH_PLACE:
        cut -= len(ref.group())  # 去那里 -> 去蓝色的球那里: the place by it
    return f"{clause[:start]}{named}{clause[cut:]}"


def _with_article(name: str) -> str:
    """``blue ball`` -> ``the blue ball``; a name with its own article, or Chinese, stays."""
    if re.search(r"[\u4e00-\u9fff]", name) or re.match(r"(?:the|a|an|this|that)\s", name, re.I):
        return name
    return f"the {name}"


@dataclass(frozen=True)
class Condition:
    """ "if you see X, do A, otherwise B".

    Attributes:
        target: The object to look for ("the red box", "红色的箱子").
        then: What to do when it is in view.
        otherwise: What to do when it is not ("" when nothing).
    """

    target: str
    then: str
    otherwise: str


_IF_EN = re.compile(
    r"^\s*(?:please\s+)?if\s+(?:you\s+)?(?:can\s+)?(?:see|spot|find|notice|detect)\s+"
    r"(?P<target>.+?)(?:\s*,\s*(?:then\s+)?|\s+then\s+)(?P<then>.+?)"
    r"(?:\s*[,;.]?\s+|\s*[,;.]\s*)(?:otherwise|else|or\s+else|if\s+not|if\s+you\s+(?:don't|do\s+not"
    r"|can't|cannot)(?:\s+see)?(?:\s+(?:it|one|them))?)\s*,?\s*(?P<otherwise>.+?)\s*[.!]?\s*$"
    r"|^\s*(?:please\s+)?if\s+(?:you\s+)?(?:can\s+)?(?:see|spot|find|notice|detect)\s+"
    r"(?P<target2>.+?)(?:\s*,\s*(?:then\s+)?|\s+then\s+)(?P<then2>.+?)\s*[.!]?\s*$",
    re.I | re.S,
)
_IF_ZH = re.compile(
    r"^\s*(?:请)?(?:如果|要是|假如|若是|若)(?:你)?(?:能)?(?:看到|看见|发现|见到)(?:了)?"
    r"(?P<target>.+?)(?:的话)?(?:[，,]\s*(?:就|那么|那就)?|就|那么)(?P<then>.+?)"
    r"(?:[，,；;。]\s*(?:否则|不然|要不然|要不|如果没有(?:看到)?(?:的话)?|没(?:有)?看到(?:的话)?"
    r"|看不到(?:的话)?)[，,]?(?:就)?(?P<otherwise>.+?))?[。！]?\s*$",
    re.S,
)


def split_condition(text: str) -> Condition | None:
    """The object and branches of "if you see X, A[, otherwise B]" (English) or
    如果看到 X 就 A[，否则 B] (Chinese), or None when ``text`` is no such check or X names
    no colour or shape (:func:`grounding`).

    "when" and "as soon as" wait for something to happen; they are not a check of the view
    now and are not split."""
    zh = bool(re.search(r"[\u4e00-\u9fff]", text))
    m = (_IF_ZH if zh else _IF_EN).match(text)
    if m is None or not _is_object(_groups(m).get("target", "")):
        m = (_IF_ZH if zh else _IF_EN).match(_separated(text, zh))
    if m is None:
        return None
    groups = _groups(m)
    target = groups.get("target", "").strip(" ,，")
    then = groups.get("then", "").strip(" ,，;；")
    otherwise = (groups.get("otherwise") or "").strip(" ,，;；。.")
    if not then or not _is_object(target):
        return None
    return Condition(target, then, otherwise)


def _groups(m: re.Match[str]) -> dict[str, str]:
    """The matched groups of :data:`_IF_EN` / :data:`_IF_ZH` under one name each (the English
    pattern's second form, without "otherwise", names them ``target2`` and ``then2``)."""
    out = {k.rstrip("2"): v for k, v in m.groupdict().items() if v is not None}
    return out


_SEE_EN = re.compile(r"\b(?:see|spot|find|notice|detect)\s+", re.I)
_SEE_ZH = re.compile(r"(?:看到|看见|发现|见到)(?:了)?")


def _separated(text: str, zh: bool) -> str:
    """``text`` with a comma put between the object and the action when none is there: "if
    you see the red box go to it" -> "if you see the red box, go to it" (the first action
    verb after words that name an object; :data:`~loopact.agent.steps.EN_VERBS`,
    :data:`~loopact.agent.steps.ZH_VERBS`)."""
    see = (_SEE_ZH if zh else _SEE_EN).search(text)
    if see is None:
        return text
    if zh:
        for i in range(see.end() + 1, len(text)):
            if text[i:].startswith(ZH_VERBS) and _is_object(text[see.end() : i]):
                return f"{text[:i]}，{text[i:]}"
        return text
    for word in re.finditer(r"[A-Za-z']+", text[see.end() :]):
        i = see.end() + word.start()
        if word.group().lower() in EN_VERBS and _is_object(text[see.end() : i]):
            return f"{text[:i].rstrip()}, {text[i:]}"
    return text


def _colour_words(text: str) -> list[tuple[str, str]]:
    """``(colour, the word for it in text)`` of every colour ``text`` names (English words,
    Chinese characters), the other colours first (粉红 is pink, not 红)."""
    found: list[tuple[str, str]] = []
    rest = text.lower()
    for table in (OTHER_COLOR_WORDS, COLOR_WORDS):
        for colour, words in table.items():
            for word in words:
                pattern = rf"\b{re.escape(word)}\b" if word.isascii() else re.escape(word)
                m = re.search(pattern, rest)
                if m is not None:
                    found.append((colour, text[m.start() : m.end()]))
                    rest = rest[: m.start()] + " " * len(word) + rest[m.end() :]
    return found


def colours_named(text: str) -> set[str]:
    """The colours ``text`` names, English or Chinese ("the cyan ball", 青色的球 -> {cyan})."""
    return {colour for colour, _ in _colour_words(text)}


def align_target(
    arguments: dict[str, object], instruction: str
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """A ``target`` argument's colour checked against the user's words (issue 45, SPEC B7).

    The 0.5B brain wrote ``face(target="red ball")`` for 找到青色的球 (it does not know 青 is
    cyan), and ``face`` found the red box. When the instruction names exactly one colour and
    the model's target names others but not it, the target's colour words become the user's
    ("red ball" -> "cyan ball"; in Chinese the user's own character: 红色的球 -> 青色的球).
    Nothing changes when the target names no colour, or the instruction none or several.

    Args:
        arguments: The call's arguments (not modified).
        instruction: The user's instruction for the task.

    Returns:
        ``(arguments, normalized)``: the arguments, and ``{"target": {"from", "to",
        "because"}}`` when the target was changed (empty otherwise).
    """
    value = arguments.get("target")
    if not isinstance(value, str) or not instruction:
        return dict(arguments), {}
    said = _colour_words(instruction)
    if len({c for c, _ in said}) != 1:
        return dict(arguments), {}
    colour, word = said[0]
    wrote = _colour_words(value)
    if not wrote or any(c == colour for c, _ in wrote):
        return dict(arguments), {}
    fixed = value
    for _, theirs in wrote:
        fixed = fixed.replace(theirs, colour if theirs.isascii() else word, 1)
    because = f"the instruction names {colour} ({word}), not {', '.join(c for c, _ in wrote)}"
    out = dict(arguments)
    out["target"] = fixed
    return out, {"target": {"from": value, "to": fixed, "because": because}}
