"""The parsed document (:class:`Document`, :class:`Block`) and its renderers: txt, md, docx
(python-docx, MIT) and pdf (reportlab, BSD), for ``write_document``
(:mod:`loopact.tools.builtin.documents`). Pure functions from a document to bytes or text;
blocking."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape

from PIL import Image as PILImage

BlockKind = Literal["heading", "paragraph", "bullet", "number", "image"]


@dataclass(frozen=True)
class Block:
    """One block of a document.

    Attributes:
        kind: ``heading``, ``paragraph``, ``bullet``, ``number`` or ``image``.
        text: The text (the caption for an image).
        level: Heading level 1-3 (0 otherwise).
        image: For images: the resolved file and its workspace-relative path.
    """

    kind: BlockKind
    text: str = ""
    level: int = 0
    image: tuple[Path, str] | None = None


@dataclass(frozen=True)
class Document:
    """A parsed document, ready to render.

    Attributes:
        title: The title.
        blocks: The blocks in order.
        font: A TrueType font file with glyphs for every character, or None when Latin-1
            (the PDF's built-in Helvetica) is enough.
    """

    title: str
    blocks: tuple[Block, ...]
    font: Path | None = None

    @property
    def text(self) -> str:
        """All text of the document (title first)."""
        return "\n".join([self.title, *(b.text for b in self.blocks)])


def needs_font(text: str) -> bool:
    """True when ``text`` has characters outside cp1252 (Helvetica's encoding in a PDF)."""
    try:
        text.encode("cp1252")
    except UnicodeEncodeError:
        return True
    return False


def has_cjk(text: str) -> bool:
    """True when ``text`` holds CJK ideographs, kana or hangul (wrapped without spaces)."""
    return any(
        "\u3040" <= ch <= "\u30ff" or "\u3400" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af"
        for ch in text
    )


EAST_ASIAN_FONT = "Microsoft YaHei"
"""The East Asian font a docx asks for; a reader without it substitutes its own CJK font."""

_PDF_FONT_NAME = "LoopactText"


def render_txt(doc: Document) -> str:
    """Plain text: the title underlined, headings in capitals-free form, ``- `` bullets."""
    lines: list[str] = []
    if doc.title:
        lines += [doc.title, "=" * max(4, min(len(doc.title) * 2, 72)), ""]
    n = 0
    for b in doc.blocks:
        n = n + 1 if b.kind == "number" else 0
        if b.kind == "heading":
            lines += ["", b.text, ("-" if b.level > 1 else "=") * max(4, min(len(b.text) * 2, 72))]
        elif b.kind == "bullet":
            lines.append(f"- {b.text}")
        elif b.kind == "number":
            lines.append(f"{n}. {b.text}")
        elif b.kind == "image" and b.image is not None:
            lines += ["", f"[image: {b.image[1]}{' - ' + b.text if b.text else ''}]", ""]
        else:
            lines += [b.text, ""]
    return "\n".join(lines).strip() + "\n"


def render_md(doc: Document, folder: Path) -> str:
    """Markdown; image links are relative to the document's ``folder``."""
    lines: list[str] = [f"# {doc.title}", ""] if doc.title else []
    n = 0
    for b in doc.blocks:
        n = n + 1 if b.kind == "number" else 0
        if b.kind == "heading":
            lines += ["", "#" * min(b.level + 1, 6) + " " + b.text, ""]
        elif b.kind == "bullet":
            lines.append(f"- {b.text}")
        elif b.kind == "number":
            lines.append(f"{n}. {b.text}")
        elif b.kind == "image" and b.image is not None:
            rel = Path(os.path.relpath(b.image[0], folder)).as_posix()
            lines += ["", f"![{b.text}]({rel})", ""]
        else:
            lines += [b.text, ""]
    return "\n".join(lines).strip() + "\n"


def render_docx(doc: Document) -> bytes:
    """A Word document: title, headings 1-3, bullet and numbered lists, pictures 15 cm wide
    (or narrower), East Asian text set in :data:`EAST_ASIAN_FONT`."""
    import docx
    from docx.oxml.ns import qn
    from docx.shared import Cm

    d = docx.Document()
    d.core_properties.title = doc.title
    cjk = has_cjk(doc.text)
    for style_name in ("Normal", "Title", "Heading 1", "Heading 2", "Heading 3"):
        style = d.styles[style_name]
        rpr = style.element.get_or_add_rPr()
        fonts = rpr.find(qn("w:rFonts"))
        if fonts is None:
            fonts = rpr.makeelement(qn("w:rFonts"), {})
            rpr.append(fonts)
        fonts.set(qn("w:eastAsia"), EAST_ASIAN_FONT)
        if cjk:
            lang = rpr.find(qn("w:lang"))
            if lang is None:
                lang = rpr.makeelement(qn("w:lang"), {})
                rpr.append(lang)
            lang.set(qn("w:eastAsia"), "zh-CN")
    if doc.title:
        d.add_heading(doc.title, level=0)
    for b in doc.blocks:
        if b.kind == "heading":
            d.add_heading(b.text, level=b.level)
        elif b.kind == "bullet":
            d.add_paragraph(b.text, style="List Bullet")
        elif b.kind == "number":
            d.add_paragraph(b.text, style="List Number")
        elif b.kind == "image" and b.image is not None:
            d.add_picture(_docx_image(b.image[0]), width=Cm(_width_cm(b.image[0], 15.0)))
            if b.text:
                d.add_paragraph(b.text, style="Caption")
        else:
            d.add_paragraph(b.text)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def _docx_image(path: Path) -> io.BytesIO | str:
    """python-docx reads JPEG, PNG, GIF, BMP and TIFF; anything else goes in as PNG."""
    with PILImage.open(path) as img:
        if img.format in ("JPEG", "PNG", "GIF", "BMP", "TIFF"):
            return str(path)
        buf = io.BytesIO()
        img.convert("RGB").save(buf, "PNG")
    buf.seek(0)
    return buf


def _width_cm(path: Path, max_cm: float) -> float:
    with PILImage.open(path) as img:
        width_px = img.size[0]
    return min(max_cm, max(2.0, float(width_px) / 96 * 2.54))  # 96 dpi, never wider than the page


def render_pdf(doc: Document) -> bytes:
    """An A4 PDF (reportlab platypus): title, headings, paragraphs, lists and images scaled
    to the text width. With ``doc.font`` set, all text is in that TrueType font, embedded
    (subset), and CJK lines wrap between characters."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import (
        Image,
        ListFlowable,
        ListItem,
        Paragraph,
        SimpleDocTemplate,
        Spacer,
    )

    font = _register_font(doc.font)
    wrap = "CJK" if has_cjk(doc.text) else None
    base = getSampleStyleSheet()

    def style(name: str, parent: str, **kw: object) -> ParagraphStyle:
        s = ParagraphStyle(name, parent=base[parent], **kw)  # type: ignore[arg-type]
        if font:
            s.fontName = font
        if wrap:
            s.wordWrap = wrap
        return s

    styles = {
        "title": style("DocTitle", "Title"),
        1: style("H1", "Heading1"),
        2: style("H2", "Heading2"),
        3: style("H3", "Heading3"),
        "body": style("Body", "BodyText", leading=15),
        "caption": style("Caption", "Italic", textColor=colors.grey),
    }
    buf = io.BytesIO()
    page = SimpleDocTemplate(
        buf, pagesize=A4, title=doc.title, leftMargin=20 * mm, rightMargin=20 * mm,
        topMargin=20 * mm, bottomMargin=20 * mm,
    )  # fmt: skip
    story: list[object] = []
    if doc.title:
        story.append(Paragraph(escape(doc.title), styles["title"]))
    items: list[Block] = []

    def flush_list() -> None:
        if items:
            kind = "bullet" if items[0].kind == "bullet" else "1"
            story.append(
                ListFlowable(
                    [ListItem(Paragraph(escape(i.text), styles["body"])) for i in items],
                    bulletType=kind,
                    bulletFormat=None if kind == "bullet" else "%s.",
                    bulletFontName=font or "Helvetica",
                )
            )
            items.clear()

    for b in doc.blocks:
        if b.kind in ("bullet", "number"):
            if items and items[0].kind != b.kind:
                flush_list()
            items.append(b)
            continue
        flush_list()
        if b.kind == "heading":
            story.append(Paragraph(escape(b.text), styles[min(b.level, 3)]))
        elif b.kind == "image" and b.image is not None:
            w, h = _fit(b.image[0], page.width, page.height * 0.6)
            story += [Spacer(1, 3 * mm), Image(str(b.image[0]), width=w, height=h)]
            if b.text:
                story.append(Paragraph(escape(b.text), styles["caption"]))
        else:
            story.append(Paragraph(escape(b.text), styles["body"]))
    flush_list()
    page.build(story)
    return buf.getvalue()


def _fit(path: Path, max_w: float, max_h: float) -> tuple[float, float]:
    with PILImage.open(path) as img:
        w, h = img.size
    scale = min(max_w / w, max_h / h, 1.0 if w > 400 else max_w / w)
    return w * scale, h * scale


def _register_font(path: Path | None) -> str | None:
    """Register ``path`` with reportlab once per file; returns the font name (None: none)."""
    if path is None:
        return None
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    name = f"{_PDF_FONT_NAME}-{abs(hash(str(path))) % 10**8}"
    if name not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont(name, str(path), subfontIndex=0))
    return name
