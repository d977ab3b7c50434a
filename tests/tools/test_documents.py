"""write_document: formats, blocks, images, fonts and every bad input of issue 19 (SPEC C6)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import docx
import numpy as np
import pytest
from PIL import Image as PILImage
from tests.image_bombs import png_bomb

from loopact.errors import ToolError
from loopact.tools.base import SafetyClass, ToolContext
from loopact.tools.builtin import documents
from loopact.tools.builtin.documents import make_document_tool, write_document_file
from loopact.tools.builtin.files import Workspace

CONTENT = (
    "# Findings\n\nA red box, 1.2 m ahead.\nIt is open.\n\n"
    "- door closed\n- lights on\n\n1. first\n2. second"
)


def _frame(ws: Path, name: str = "frames/cam.jpg") -> str:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    PILImage.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)).save(path)
    return name


def _write(tmp_path: Path, fmt: str, **kw: object) -> documents.ToolResult:
    args: dict[str, object] = {"title": "Report", "content": CONTENT, "filename": None}
    args.update(kw)
    return write_document_file(Workspace(tmp_path), fmt, **args)  # type: ignore[arg-type]


def test_md_and_txt_keep_structure_and_link_images(tmp_path: Path) -> None:
    frame = _frame(tmp_path)
    md = _write(tmp_path, "md", content=CONTENT + f"\n\n![the camera]({frame})")
    assert md.metadata["path"] == "reports/Report.md" and md.metadata["embedded"] == [frame]
    text = (tmp_path / "reports" / "Report.md").read_text(encoding="utf-8")
    assert text.startswith("# Report\n")
    assert "## Findings" in text and "A red box, 1.2 m ahead. It is open." in text
    assert "- door closed\n- lights on" in text and "1. first\n2. second" in text
    assert "![the camera](../frames/cam.jpg)" in text  # relative to the document's folder
    txt = _write(tmp_path, "txt", filename="notes/r")
    assert txt.metadata["path"] == "notes/r.txt"
    body = (tmp_path / "notes" / "r.txt").read_text(encoding="utf-8")
    assert body.startswith("Report\n====") and "- lights on" in body and "2. second" in body


def test_docx_has_headings_lists_and_pictures(tmp_path: Path) -> None:
    frame = _frame(tmp_path)
    result = _write(tmp_path, "docx", images=[frame], filename="r.docx")
    d = docx.Document(str(tmp_path / "r.docx"))
    styled = [(p.style.name, p.text) for p in d.paragraphs if p.text]
    assert ("Title", "Report") in styled and ("Heading 1", "Findings") in styled
    assert ("List Bullet", "door closed") in styled and ("List Number", "second") in styled
    assert len(d.inline_shapes) == 1 and result.metadata["embedded"] == [frame]


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_pdf_in_chinese_embeds_a_font_that_has_the_glyphs(tmp_path: Path) -> None:
    result = _write(
        tmp_path,
        "pdf",
        title="巡逻报告",
        content="前方有一个红色的箱子，距离一点二米。\n\n- 门已关闭",
    )
    assert result.metadata["font"] is not None
    pdf = tmp_path / result.metadata["path"]
    text = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True
    ).stdout.decode()
    assert "巡逻报告" in text and "前方有一个红色的箱子" in text and "门已关闭" in text
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, check=True).stdout.decode()
    assert any(line.split()[-5:-2] == ["yes", "yes", "yes"] for line in fonts.splitlines()[2:])


def test_no_font_for_the_text_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        documents, "FONT_CANDIDATES", ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",)
    )
    with pytest.raises(ToolError, match="no installed font has glyphs for .*fonts-wqy-microhei"):
        _write(tmp_path, "pdf", title="报告")
    assert not (tmp_path / "reports").exists()


def test_paths_escaping_the_workspace_are_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.png").write_bytes(b"\x89PNG")
    for name in ("../out.txt", str(tmp_path / "out.txt"), "/etc/out.txt", "a/../../out"):
        with pytest.raises(ToolError, match="outside the workspace"):
            write_document_file(Workspace(ws), "txt", "t", "c", name)
    with pytest.raises(ToolError, match="outside the workspace"):
        write_document_file(Workspace(ws), "pdf", "t", "c", "a.pdf", images=["../secret.png"])
    with pytest.raises(ToolError, match="outside the workspace"):
        write_document_file(Workspace(ws), "pdf", "t", "![x](../secret.png)", "a.pdf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.png", "ws"]
    assert list(ws.iterdir()) == []


def test_an_image_bomb_is_refused_before_it_is_rendered(tmp_path: Path) -> None:
    """Issue 21 item 10 for workspace images: a 10 KB PNG of 9000x9000 pixels passed the
    20 MB file limit and was decoded (hundreds of MB) to render the PDF."""
    (tmp_path / "bomb.png").write_bytes(png_bomb())
    with pytest.raises(ToolError, match="would need 324 MB to decode; at most 100 MB"):
        _write(tmp_path, "pdf", images=["bomb.png"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.png"]


def test_a_100_mb_document_is_refused_and_nothing_written(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="at most 1000000"):
        _write(tmp_path, "pdf", content="x" * 100_000_000)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"fmt": "odt"}, "format 'odt' is not supported; use one of: txt, md, docx, pdf"),
        ({"filename": "r.pdf", "fmt": "docx"}, "ends in .pdf but format is 'docx'"),
        ({"images": ["frames/missing.jpg"]}, "'frames/missing.jpg' is not a file"),
        ({"images": ["bogus.png"]}, "'bogus.png' is not a readable image"),
        ({"images": ["https://example.com/a.png"]}, "is a URL"),
        ({"title": "", "content": " "}, "the document is empty"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path: Path, kw: dict[str, object], message: str) -> None:
    (tmp_path / "bogus.png").write_bytes(b"this is not a PNG")
    fmt = str(kw.pop("fmt", "pdf"))
    with pytest.raises(ToolError) as info:
        _write(tmp_path, fmt, **kw)
    assert message in str(info.value)
    assert not (tmp_path / "reports").exists() and not (tmp_path / "r.pdf").exists()


async def test_tool_is_write_class_and_reports_the_path(tmp_path: Path) -> None:
    tool = make_document_tool(tmp_path)
    assert tool.name == "write_document" and tool.safety is SafetyClass.WRITE
    assert list(tool.parameters["required"]) == ["format", "title", "content"]
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    result = await tool.invoke(
        {"format": "md", "title": "现场 report", "content": "ok", "filename": None}, ctx
    )
    assert result.ok and result.metadata["path"] == "reports/现场-report.md"
    assert result.data.startswith("wrote reports/现场-report.md (md, ")
    leftovers = [p.name for p in (tmp_path / "reports").iterdir() if p.name.startswith(".")]
    assert leftovers == []  # the atomic write left no temporary file
