"""The console in the reader's language (SPEC F2, F5; issue 42 items 4 and 6).

Every text the pages show comes from the one catalogue (:mod:`loopact.i18n`, the ``console.*``
and ``call.*`` keys of :mod:`loopact.i18n.console`):

- the templates name their texts ``{{console.key}}``; :func:`render_page` fills them in the
  page's language, so the page arrives translated;
- the scripts get the ``console.*`` templates of that language as a JSON block in the page
  (:func:`page_texts`) and fill ``{name}`` fields themselves;
- events get their sentences on the server (:func:`said`): a tool call as what it does
  (``call.move_forward``: "Moving forward 1.00 m"), a tool result as its typed outcome
  (:class:`~loopact.i18n.Phrase`, issue 38), both in every language, so each page shows its
  own without parsing text.

The language (:func:`choose_language`): the reader's choice on the settings page (the
``loopact_lang`` cookie), else ``web.language`` in the config, else the browser's
``Accept-Language``, else English.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from loopact.events import Event, EventType
from loopact.events.payloads import ToolCallPayload, ToolResultPayload
from loopact.i18n import LANGS, Phrase
from loopact.i18n.catalogue import CATALOGUE
from loopact.i18n.console import CONSOLE

log = logging.getLogger(__name__)

#: The cookie a reader's language choice is kept in (set by the settings page).
LANG_COOKIE = "loopact_lang"

_FIELD = re.compile(r"\{\{([a-z_]+\.[a-z0-9_.]+)\}\}")


def choose_language(cookie: str | None, configured: str | None, accept: str | None) -> str:
    """The page's language, one of :data:`~loopact.i18n.LANGS`.

    Args:
        cookie: The ``loopact_lang`` cookie (the reader's choice), or None.
        configured: ``web.language`` from the config, or None to follow the browser.
        accept: The request's ``Accept-Language`` header, or None.
    """
    for choice in (cookie, configured):
        if choice in LANGS:
            return str(choice)
    for part in (accept or "").split(","):
        tag = part.split(";")[0].strip().lower()
        primary = tag.split("-")[0]
        if primary in LANGS:
            return primary
    return "en"


def text(key: str, lang: str, **params: Any) -> str:
    """The catalogue text ``key`` in ``lang`` with ``{name}`` fields filled (no format specs).

    Raises:
        KeyError: ``key`` is not in the catalogue.
    """
    entry = CATALOGUE[key]
    out = entry.get(lang) or entry["en"]
    for name, value in params.items():
        out = out.replace("{" + name + "}", str(value))
    return out


def render_page(template: str, lang: str) -> str:
    """Fill every ``{{key}}`` of a page template with its text in ``lang``, HTML-escaped.

    Raises:
        KeyError: The template names a key that is not in the catalogue (a test checks all).
    """
    return _FIELD.sub(lambda m: html.escape(text(m.group(1), lang), quote=True), template)


def template_keys(template: str) -> set[str]:
    """The catalogue keys a page template names (for the missing-text test)."""
    return set(_FIELD.findall(template))


def page_texts(lang: str) -> str:
    """The ``console.*`` templates in ``lang`` as JSON safe inside a ``<script>`` block."""
    texts = {k: v.get(lang) or v["en"] for k, v in CONSOLE.items() if k.startswith("console.")}
    data = json.dumps({"lang": lang, "texts": texts}, ensure_ascii=False)
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def said(event: Event) -> dict[str, str] | None:
    """The event's sentence in every language, or None for events without one.

    A ``tool_call``: what the call does (``call.<tool>`` with the call's arguments, else
    ``call.any``). A ``tool_result`` with a typed outcome: the outcome's sentence (never the
    English text parsed).
    """
    if event.type == EventType.TOOL_CALL:
        call = event.payload(ToolCallPayload)
        return _call_sentence(str(call.get("name", "")), call.get("arguments"))
    if event.type == EventType.TOOL_RESULT:
        outcome = event.payload(ToolResultPayload).get("outcome")
        if isinstance(outcome, Mapping):
            try:
                phrase = Phrase.from_json(outcome)
                return {lang: phrase.text(lang) for lang in LANGS}
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                log.debug("an outcome the catalogue cannot render: %s", exc)
    return None


def _call_sentence(name: str, arguments: Any) -> dict[str, str]:
    args = dict(arguments) if isinstance(arguments, Mapping) else {}
    params = {k: v for k, v in args.items() if isinstance(v, (str, int, float, bool))}
    for key in (f"call.{name}", f"call.{name}_pose"):
        if key in CATALOGUE:
            try:
                phrase = Phrase(key, **params)
                return {lang: phrase.text(lang) for lang in LANGS}
            except (KeyError, ValueError, TypeError, IndexError):
                pass  # an argument missing or of another kind: the next, else the plain one
    phrase = Phrase("call.any", tool=name)
    return {lang: phrase.text(lang) for lang in LANGS}
