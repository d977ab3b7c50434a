"""The console's texts come from the one catalogue in English and Chinese (SPEC F5; issue 42
item 6, acceptance 5): every text the pages and scripts name has both; no template carries a
text of its own; a tool call and a typed outcome get their sentence in every language."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import resources

from loopact.channels.web.texts import (
    choose_language,
    page_texts,
    render_page,
    said,
    template_keys,
)
from loopact.events import Event, EventType
from loopact.i18n import LANGS, Phrase
from loopact.i18n.catalogue import CATALOGUE

WEB = resources.files("loopact.channels.web")
PAGES = ("chat.html", "settings.html")
SCRIPTS = ("app.js", "panels.js", "map.js", "settings.js", "voice.js", "texts.js")
#: Words a page may show as they are in every language: the language's own name in the
#: language menu.
OWN_NAMES = {"English"}


def _named_keys() -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for name in PAGES:
        named[name] = template_keys((WEB / "templates" / name).read_text("utf-8"))
    for name in SCRIPTS:
        source = (WEB / "static" / name).read_text("utf-8")
        named[name] = set(re.findall(r"\"(console\.[a-z0-9_]+)\"", source))
    return named


def test_every_text_the_console_names_has_english_and_chinese() -> None:
    named = _named_keys()
    assert named["chat.html"] and named["app.js"] and named["panels.js"]
    missing = sorted(
        f"{where}: {key}"
        for where, keys in named.items()
        for key in keys
        if not all(CATALOGUE.get(key, {}).get(lang) for lang in LANGS)
    )
    assert missing == []


class _Texts(HTMLParser):
    """The texts a template shows on its own: text nodes and the attributes people read."""

    SHOWN_ATTRS = ("placeholder", "title", "aria-label", "alt")

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        self.found += [v for k, v in attrs if k in self.SHOWN_ATTRS and v]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.found.append(data)


def test_no_template_shows_a_text_of_its_own() -> None:
    """A text typed into a template would be shown in English to a Chinese reader."""
    own: list[str] = []
    for name in PAGES:
        parser = _Texts()
        parser.feed((WEB / "templates" / name).read_text("utf-8"))
        for found in parser.found:
            rest = re.sub(r"\{\{[a-z_.0-9]+\}\}|\$[a-z]+", "", found).strip()
            words = [w for w in re.findall(r"[A-Za-z]{2,}", rest) if w not in OWN_NAMES]
            if words:
                own.append(f"{name}: {found.strip()!r}")
    assert own == []


def test_a_page_is_rendered_in_its_language() -> None:
    chat = (WEB / "templates" / "chat.html").read_text("utf-8")
    zh = render_page(chat, "zh")
    assert "{{" not in zh and "急停" in zh and "停止" in zh and "E-STOP" not in zh
    assert "E-STOP" in render_page(chat, "en")
    data = page_texts("zh")
    assert "</script" not in data.lower() and '"lang": "zh"' in data


def test_the_language_is_the_readers_then_the_configs_then_the_browsers() -> None:
    assert choose_language("zh", "en", "en-US") == "zh"
    assert choose_language(None, "zh", "en-US,en;q=0.9") == "zh"
    assert choose_language(None, None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert choose_language(None, None, "fr-FR,en;q=0.5") == "en"
    assert choose_language("xx", None, None) == "en"


def test_tool_calls_and_typed_outcomes_are_sentences_in_every_language() -> None:
    call = Event(
        EventType.TOOL_CALL, "t1", {"id": "c1", "name": "move_forward",
                                    "arguments": {"distance_m": 1.0}},
    )  # fmt: skip
    assert said(call) == {"en": "Moving forward 1.00 m", "zh": "向前移动 1.00 米"}
    odd = Event(EventType.TOOL_CALL, "t1", {"id": "c2", "name": "lidar_scan", "arguments": {}})
    assert said(odd) == {"en": "Running lidar_scan", "zh": "正在执行 lidar_scan"}
    bad = Event(EventType.TOOL_CALL, "t1", {"id": "c3", "name": "move_forward", "arguments": {}})
    assert said(bad) == {"en": "Running move_forward", "zh": "正在执行 move_forward"}
    outcome = Phrase("motion.moved_forward", distance_m=0.998)
    result = Event(
        EventType.TOOL_RESULT, "t1", {"id": "c1", "name": "move_forward", "ok": True,
                                      "outcome": outcome.to_json(), "outcome_text": "x"},
    )  # fmt: skip
    assert said(result) == {lang: outcome.text(lang) for lang in LANGS}
    assert said(result)["en"] == "moved forward 1.00 m and reached the target"  # type: ignore[index]
    to_pose = Event(
        EventType.TOOL_CALL, "t1", {"id": "c4", "name": "navigation",
                                    "arguments": {"x_m": 1.5, "y_m": -0.25}},
    )  # fmt: skip
    assert said(to_pose) == {
        "en": "Going to x=1.50 m, y=-0.25 m",
        "zh": "前往 x=1.50 米，y=-0.25 米",
    }
    plain = Event(EventType.TOOL_RESULT, "t1", {"id": "c9", "name": "x", "ok": True})
    assert said(plain) is None
