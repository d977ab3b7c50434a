"""A sentence for people as a typed value: a catalogue key and its parameters (SPEC F5).

A robot tool says what happened as a :class:`Phrase` (``Phrase("motion.moved_forward",
distance_m=0.5)``), not as an English sentence: each place that shows it renders it in its
reader's language from the one catalogue (:mod:`loopact.i18n.catalogue`): the model's tool
result, the terminal, the web console, a reply composed from results (and so the voice that
speaks it); a trace keeps the key and the parameters (:meth:`Phrase.to_json`).

A parameter is a number, a string, a bool or None (the units in the name: ``distance_m``,
``angle_deg``; the catalogue's template formats it, ``{distance_m:.2f}``), a :class:`Name` (a
place or a colour with its name in each language), another :class:`Phrase` (rendered in the
same language: the cause of a stop, where the camera looks) or a tuple of those. A tuple's
field says how its items are joined, per language:

- ``{x:items}``: ``a; b; and c`` in English, ``a；b；c`` in Chinese;
- ``{x:comma}``: ``a, b, c`` / ``a、b、c``;
- ``{x:semi}``: ``a; b; c`` / ``a；b；c``;
- ``{x:lines}``: sentences one after another, ``A. B.`` / ``甲。乙。``.

Chinese text has no space between two Chinese characters: a template's space before a name
(``到达 {place}``) stays before a Latin name (``到达 door``) and goes before a Chinese one
(``到达门``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Union

from loopact.i18n.catalogue import LANGS, template

ParamValue = Union[str, int, float, bool, None, "Phrase", "Name", tuple[Any, ...]]
"""What a :class:`Phrase` parameter may be (a tuple holds values of the same kinds)."""

_SCALARS = (str, int, float, bool, type(None))
_HAN_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")


@dataclass(frozen=True)
class Name:
    """A proper name in the languages it has: ``Name("kitchen", zh="厨房")``.

    Attributes:
        en: The name in English (the key a site map or a colour table uses).
        zh: The name in Chinese, "" when it has none (then the English one is used).
    """

    en: str
    zh: str = ""

    def text(self, lang: str = "en") -> str:
        """The name in ``lang``, or in English when it has none in ``lang``."""
        return self.zh if lang == "zh" and self.zh else self.en

    def to_json(self) -> dict[str, str]:
        """``{"en": ..., "zh": ...}`` (only the languages it has)."""
        return {"en": self.en, **({"zh": self.zh} if self.zh else {})}


@dataclass(frozen=True, init=False)
class Phrase:
    """A catalogue key and its parameters: a sentence for people, typed (SPEC F5).

    Args:
        id: The catalogue key, e.g. ``"motion.moved_forward"``.
        **params: The template's parameters (see the module docstring for the kinds).

    Raises:
        TypeError: A parameter of another kind (it must survive a trace as JSON).

    Attributes:
        id: The catalogue key.
        params: The parameters, read-only.
    """

    id: str
    params: Mapping[str, ParamValue]

    def __init__(self, id: str, /, **params: ParamValue) -> None:
        for key, value in params.items():
            _check(key, value)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "params", MappingProxyType(dict(params)))

    def text(self, lang: str = "en") -> str:
        """The sentence in ``lang`` (English when ``lang`` is not one of :data:`LANGS`).

        Raises:
            KeyError: The id is not in the catalogue, or its template names a parameter the
                phrase lacks (programming errors; ``tests/test_i18n.py`` renders every id).
        """
        lang = lang if lang in LANGS else "en"
        text = _Formatter(lang).vformat(template(self.id, lang), (), dict(self.params))
        return _HAN_SPACE.sub("", text) if lang == "zh" else text

    def to_json(self) -> dict[str, Any]:
        """``{"id": ..., "params": {...}}`` with nested phrases and names as JSON objects
        (a :class:`Name` as ``{"en", "zh"}``) and tuples as lists: what a trace keeps."""
        return {"id": self.id, "params": {k: _encode(v) for k, v in self.params.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Phrase:
        """The phrase :meth:`to_json` wrote (a trace's ``outcome``).

        Raises:
            ValueError: Not a phrase's JSON form.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            raise ValueError(f"not a phrase: {data!r}")
        params = data.get("params") or {}
        if not isinstance(params, Mapping):
            raise ValueError(f"a phrase's params must be an object, got {params!r}")
        return cls(data["id"], **{str(k): _decode(v) for k, v in params.items()})

    def __str__(self) -> str:
        return self.text("en")


def _check(key: str, value: Any) -> None:
    if isinstance(value, tuple):
        for item in value:
            _check(key, item)
    elif not isinstance(value, (*_SCALARS, Phrase, Name)):
        raise TypeError(
            f"phrase parameter {key!r} must be a number, a string, a bool, None, a Phrase, "
            f"a Name or a tuple of them, got {type(value).__name__}"
        )


def _encode(value: ParamValue) -> Any:
    if isinstance(value, (Phrase, Name)):
        return value.to_json()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> ParamValue:
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if isinstance(value, Mapping):
        if "id" in value:
            return Phrase.from_json(value)
        return Name(str(value.get("en", "")), str(value.get("zh", "")))
    if isinstance(value, _SCALARS):
        return value
    raise ValueError(f"not a phrase parameter: {value!r}")


#: How a tuple parameter is joined, per join style and language: (between items, before the
#: last item when there are more than one).
_JOINS: Mapping[str, Mapping[str, tuple[str, str]]] = {
    "items": {"en": ("; ", "; and "), "zh": ("；", "；")},
    "comma": {"en": (", ", ", "), "zh": ("、", "、")},
    "semi": {"en": ("; ", "; "), "zh": ("；", "；")},
    "lines": {"en": (" ", " "), "zh": ("", "")},
}


class _Formatter(string.Formatter):
    """:meth:`str.format` that renders phrases, names and tuples in one language."""

    def __init__(self, lang: str) -> None:
        super().__init__()
        self.lang = lang

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "r" and isinstance(value, (Phrase, Name)):
            return repr(value.text(self.lang))  # "{name!r}" of a name: 'kitchen' / '厨房'
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, (Phrase, Name)):
            return value.text(self.lang)
        if isinstance(value, tuple):
            return self._join(value, format_spec)
        return str(super().format_field(value, format_spec))

    def _join(self, items: Sequence[Any], style: str) -> str:
        if style not in _JOINS:
            raise ValueError(f"a tuple needs a join style, one of {sorted(_JOINS)}: {style!r}")
        between, last = _JOINS[style][self.lang]
        texts = [self.format_field(v, "") for v in items]
        if len(texts) < 2:
            return "".join(texts)
        return between.join(texts[:-1]) + last + texts[-1]
