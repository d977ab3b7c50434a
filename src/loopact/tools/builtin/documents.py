"""``write_document(format, title, content, filename)``: reports as txt, md, docx or pdf
(issue 19, SPEC C6, A4).

``content`` is light Markdown, one block per line group:

- ``# Heading``, ``## Sub-heading``, ``### ...`` (levels 1-3),
- ``- item`` / ``* item`` (bullets) and ``1. item`` (numbered),
- ``![caption](frames/seewhat.jpg)`` alone on a line: an image from the workspace,
- anything else: paragraphs, separated by blank lines.

Images may also be given as ``images=[...]`` (workspace paths, appended at the end), which is
how a plan passes a camera frame of an earlier step: ``"images":
["{{steps.1.outputs.metadata.image}}"]``. Every path, the document's and the images', is
confined to the workspace (:class:`~loopact.tools.builtin.files.Workspace`) and the file is
written atomically (:func:`~loopact.tools.builtin.files.write_text`). docx is made with
python-docx, pdf with reportlab; text that needs more than Latin-1 (Chinese, for one) is set
in a TrueType font that has every glyph (:func:`find_font`; ``scripts/system-deps.sh``
installs WenQuanYi Micro Hei), embedded in the PDF so that it shows the characters, never
boxes. The result's ``metadata.path`` is the file, so a plan's summary lists it (A4).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from loopact.errors import ToolError
from loopact.tools.base import SafetyClass, Tool, ToolResult, tool
from loopact.tools.builtin import document_render as r
from loopact.tools.builtin.document_render import Block, Document, needs_font
from loopact.tools.builtin.files import Workspace, write_text

FORMATS = ("txt", "md", "docx", "pdf")
"""The formats ``write_document`` writes."""

MAX_CONTENT_CHARS = 1_000_000
"""Longest ``content`` accepted, in characters (about 1 MB of text)."""

MAX_IMAGES = 20
"""Most images in one document."""

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Largest image file embedded, in bytes."""

MAX_DECODED_IMAGE_BYTES = 100_000_000
"""Largest decoded image (width x height x 4 bytes), checked from its header before it is
rendered: a 10 KB PNG of 9000x9000 pixels would take 324 MB (the image gate's limit, G1)."""

MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
"""A rendered document larger than this is not written."""

FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
)
"""TrueType fonts tried, in order, for text beyond Latin-1 (CFF-based OpenType such as Noto
CJK cannot be embedded by reportlab)."""

_IMAGE_LINE = re.compile(r"^!\[(?P<caption>[^\]]*)\]\((?P<path>[^)\s]+)\)$")
_HEADING = re.compile(r"^(?P<marks>#{1,3})\s+(?P<text>.+)$")
_BULLET = re.compile(r"^[-*•]\s+(?P<text>.+)$")
_NUMBERED = re.compile(r"^\d{1,3}[.)]\s+(?P<text>.+)$")
_UNSAFE_NAME = re.compile(r"[^\w\-]+", re.UNICODE)


def parse_content(content: str, ws: Workspace, extra_images: Sequence[str] = ()) -> list[Block]:
    """Split light Markdown into blocks (see the module docstring).

    Raises:
        ToolError: An image path is outside the workspace, missing, too large, not an image,
            or there are more than :data:`MAX_IMAGES`.
    """
    blocks: list[Block] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(Block("paragraph", " ".join(para)))
            para.clear()

    for raw in content.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if not line:
            flush()
            continue
        if m := _IMAGE_LINE.match(line):
            flush()
            blocks.append(_image_block(ws, m.group("path"), m.group("caption")))
        elif m := _HEADING.match(line):
            flush()
            blocks.append(Block("heading", m.group("text").strip(), level=len(m.group("marks"))))
        elif m := _BULLET.match(line):
            flush()
            blocks.append(Block("bullet", m.group("text").strip()))
        elif m := _NUMBERED.match(line):
            flush()
            blocks.append(Block("number", m.group("text").strip()))
        else:
            para.append(line)
    flush()
    for path in extra_images:
        blocks.append(_image_block(ws, path, ""))
    if sum(b.kind == "image" for b in blocks) > MAX_IMAGES:
        raise ToolError(f"a document holds at most {MAX_IMAGES} images")
    return blocks


def _image_block(ws: Workspace, path: str, caption: str) -> Block:
    if re.match(r"^[a-z]+://", path, re.IGNORECASE):
        raise ToolError(
            f"image {path!r} is a URL; images must be files in the workspace (e.g. the "
            "metadata.image of a seewhat or generate_image step)"
        )
    target = ws.resolve(path)
    if not target.is_file():
        raise ToolError(f"image '{path}' is not a file in the workspace")
    size = target.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"image '{path}' is {size / 1e6:.1f} MB; at most 20 MB per image")
    try:
        with PILImage.open(target) as img:
            width, height = img.size
            img.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ToolError(f"'{path}' is not a readable image: {exc}") from None
    need = width * height * 4  # Pillow's RGB pixel: what rendering it decodes (issue 21)
    if need > MAX_DECODED_IMAGE_BYTES:
        raise ToolError(
            f"image '{path}' is {width}x{height} pixels and would need {need / 1e6:.0f} MB to "
            f"decode; at most {MAX_DECODED_IMAGE_BYTES / 1e6:.0f} MB per image"
        )
    return Block("image", caption.strip(), image=(target, ws.relative(target)))


def _font_covers(path: Path, chars: set[str]) -> set[str]:
    """The characters of ``chars`` the TrueType font ``path`` has no glyph for."""
    from reportlab.pdfbase.ttfonts import TTFont

    try:
        face = TTFont("probe", str(path), subfontIndex=0).face
    except Exception:  # not a TrueType-outline font, unreadable
        return chars
    cmap = face.charToGlyph
    return {c for c in chars if ord(c) not in cmap}


def find_font(text: str, configured: Path | None = None) -> Path:
    """A TrueType font with a glyph for every visible character of ``text``.

    Args:
        text: The whole document text.
        configured: A font file the user chose (``documents.font``), tried first.

    Raises:
        ToolError: No installed font covers the text; the message names the characters
            and how to install a font.
    """
    chars = {c for c in text if not c.isspace() and unicodedata.category(c)[0] != "C"}
    best: tuple[int, Path | None, set[str]] = (len(chars) + 1, None, chars)
    candidates = [configured] if configured else []
    candidates += [Path(p) for p in FONT_CANDIDATES]
    for path in candidates:
        if path is None or not path.is_file():
            continue
        missing = _font_covers(path, chars)
        if not missing:
            return path
        if len(missing) < best[0]:
            best = (len(missing), path, missing)
    shown = "".join(sorted(best[2]))[:20]
    raise ToolError(
        f"no installed font has glyphs for {shown!r}, so the PDF would show boxes; install "
        "fonts-wqy-microhei (scripts/system-deps.sh does) or set documents.font to a "
        "TrueType file, or write the document as docx or md"
    )


def default_filename(title: str, fmt: str) -> str:
    """``reports/<title as a file name>.<fmt>`` (letters of any script are kept)."""
    stem = _UNSAFE_NAME.sub("-", title.strip()).strip("-_")[:60] or "document"
    return f"reports/{stem}.{fmt}"


def _check_filename(filename: str, fmt: str) -> str:
    suffix = Path(filename).suffix.lower().lstrip(".")
    if not suffix:
        return f"{filename}.{fmt}"
    if suffix != fmt:
        raise ToolError(
            f"filename {filename!r} ends in .{suffix} but format is {fmt!r}; use "
            f"'{Path(filename).with_suffix('.' + fmt).as_posix()}' or format {suffix!r}"
        )
    return filename


def render(doc: Document, fmt: str, target: Path) -> bytes:
    """The document's bytes in ``fmt``; ``target`` is where it will be written (relative
    image links in md are made from its folder)."""
    if fmt == "txt":
        return r.render_txt(doc).encode("utf-8")
    if fmt == "md":
        return r.render_md(doc, target.parent).encode("utf-8")
    if fmt == "docx":
        return r.render_docx(doc)
    return r.render_pdf(doc)


def write_document_file(
    ws: Workspace,
    fmt: str,
    title: str,
    content: str,
    filename: str | None = None,
    images: Sequence[str] = (),
    font: Path | None = None,
) -> ToolResult:
    """Build and atomically write one document (see the module docstring); blocking.

    Returns:
        ``data`` a one-line receipt; ``metadata`` ``path`` (workspace-relative), ``format``,
        ``bytes``, ``embedded`` (embedded image paths), ``font`` (PDF font file or None).

    Raises:
        ToolError: Unsupported format, empty or too long content, a path outside the
            workspace, a bad image, no font for the text, or the write failed.
    """
    fmt = fmt.strip().lower().lstrip(".")
    if fmt not in FORMATS:
        raise ToolError(f"format {fmt!r} is not supported; use one of: {', '.join(FORMATS)}")
    if len(content) > MAX_CONTENT_CHARS or len(title) > 1000:
        raise ToolError(
            f"the content is {len(content)} characters; write_document takes at most "
            f"{MAX_CONTENT_CHARS} (about 1 MB) and a title of at most 1000"
        )
    if not title.strip() and not content.strip() and not images:
        raise ToolError("the document is empty: give a title and some content")
    name = _check_filename(filename.strip(), fmt) if filename and filename.strip() else None
    name = name or default_filename(title, fmt)
    target = ws.resolve(name)
    blocks = parse_content(content, ws, images)
    doc = Document(title.strip(), tuple(blocks))
    if fmt == "pdf" and needs_font(doc.text):
        doc = Document(doc.title, doc.blocks, find_font(doc.text, font))
    data = render(doc, fmt, target)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ToolError(f"the rendered document is {len(data) / 1e6:.0f} MB; at most 50 MB")
    written = write_text(ws, name, data)
    path = str(written.metadata["path"])
    shown = [b.image[1] for b in blocks if b.image is not None]
    return ToolResult.success(
        f"wrote {path} ({fmt}, {_size(len(data))}"
        + (f", {len(shown)} image{'s' if len(shown) != 1 else ''}" if shown else "")
        + ")",
        path=path,
        format=fmt,
        bytes=len(data),
        embedded=shown,
        font=str(doc.font) if doc.font else None,
    )


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"


def make_document_tool(workspace: Path | Workspace, font: Path | None = None) -> Tool:
    """``write_document`` confined to ``workspace`` (write class).

    Args:
        workspace: The workspace folder or :class:`Workspace`.
        font: A TrueType font file to prefer for text beyond Latin-1 (``documents.font``).
    """
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    @tool(
        safety=SafetyClass.WRITE,
        timeout_s=120,
        description=(
            "Write a report into the workspace as txt, md, docx or pdf. content is light "
            "Markdown: '# Heading', '- item', '1. item', paragraphs, and "
            "'![caption](path)' for an image file in the workspace."
        ),
        examples=[
            (
                "save a note in notes.md that the charger is next to the window",
                {
                    "format": "md",
                    "title": "Note",
                    "content": "The charger is next to the window.",
                    "filename": "notes.md",
                },
            )
        ],
    )
    def write_document(
        format: str,
        title: str,
        content: str,
        filename: str | None = None,
        images: list[str] | None = None,
    ) -> ToolResult:
        """Write a document.

        Args:
            format: txt, md, docx or pdf.
            title: The document's title.
            content: The text, light Markdown.
            filename: Path relative to the workspace, e.g. 'reports/room.pdf'; default
                'reports/<title>.<format>'.
            images: Workspace paths of images to add at the end, e.g. a camera frame's
                metadata.image.
        """
        return write_document_file(ws, format, title, content, filename, images or (), font)

    return write_document
