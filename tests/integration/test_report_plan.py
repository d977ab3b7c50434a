"""Issue 19 acceptance 1: "look around, then write what you see into a report" in plan mode.

The scripted model writes the plan; ``seewhat`` looks through the real simulator's camera and
keeps the frame in the workspace; ``write_document`` writes the caption and that frame (by
reference, ``{{steps.1.outputs.metadata.image}}``) into a PDF, a docx, and a PDF with a
Chinese title. The files are read back with pdftotext / pdfimages and python-docx, and the
plan summary names the file (A4).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docx
import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.session import RobotSession
from loopact.tools.builtin.documents import make_document_tool
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim

needs_poppler = pytest.mark.skipif(
    shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils, system-deps.sh)"
)


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        yield session
    finally:
        await session.close()


def _plan(fmt: str, title: str, filename: str) -> str:
    steps = [
        {"id": 1, "description": "look", "tool": "seewhat", "parameters": {}},
        {
            "id": 2,
            "description": "write the report",
            "tool": "write_document",
            "parameters": {
                "format": fmt,
                "title": title,
                "content": "# What I see\n\n{{steps.1.outputs.data.caption}}\n\n"
                "- view: {{steps.1.outputs.data.view}}",
                "filename": filename,
                "images": ["{{steps.1.outputs.metadata.image}}"],
            },
        },
    ]
    return "```json\n" + json.dumps({"steps": steps}, ensure_ascii=False) + "\n```"


async def _run(
    scripted_server: Any, robot: RobotSession, workspace: Path, fmt: str, title: str, name: str
) -> tuple[Any, Recorder, str]:
    server = scripted_server([{"text": _plan(fmt, title, name), "expect": {"no_tools": True}}])
    registry = ToolRegistry([*robot.tools, make_document_tool(workspace)])
    model = OpenAIChatModel("scripted", server.base_url, "k")
    options = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
        system_prompt="You are a robot.",
        workspace=workspace,
        mode="plan",
        allow=frozenset({"write_document"}),
    )
    agent = Agent(model, registry, options)
    rec = Recorder()
    agent.bus.subscribe(rec)
    outcome = await asyncio.wait_for(
        agent.run_task("look around, then write what you see into a report"), 120
    )
    await agent.close()
    assert outcome.status == "completed", outcome
    seen = next(e for e in rec.of("tool_result") if e.data["name"] == "seewhat")
    assert seen.data["ok"] and seen.data["n_images"] == 1
    frame = seen.data["metadata"]["image"]
    assert (workspace / frame).is_file() and frame.startswith("frames/seewhat-")
    return outcome, rec, str(seen.data["data"]["caption"])


def _pdftotext(path: Path) -> str:
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return " ".join(out.stdout.decode("utf-8").split())


def _pdf_images(path: Path) -> int:
    out = subprocess.run(["pdfimages", "-list", str(path)], capture_output=True, timeout=60)
    return len(out.stdout.decode().strip().splitlines()) - 2  # two header lines


@needs_poppler
async def test_look_then_pdf_report(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    outcome, rec, caption = await _run(
        scripted_server, robot, tmp_path, "pdf", "Room report", "reports/room.pdf"
    )
    pdf = tmp_path / "reports" / "room.pdf"
    assert pdf.read_bytes().startswith(b"%PDF-")
    text = _pdftotext(pdf)
    assert "Room report" in text and "What I see" in text
    assert " ".join(caption.split()) in text
    assert _pdf_images(pdf) == 1
    assert "Files written: reports/room.pdf." in outcome.reply
    result = next(e for e in rec.of("tool_result") if e.data["name"] == "write_document")
    assert result.data["metadata"]["path"] == "reports/room.pdf"


async def test_look_then_docx_report(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    outcome, _, caption = await _run(
        scripted_server, robot, tmp_path, "docx", "Room report", "reports/room.docx"
    )
    document = docx.Document(str(tmp_path / "reports" / "room.docx"))
    paragraphs = [p.text for p in document.paragraphs]
    assert paragraphs[0] == "Room report" and "What I see" in paragraphs
    assert caption in paragraphs
    assert "view: camera" in paragraphs
    assert len(document.inline_shapes) == 1  # the camera frame
    assert document.core_properties.title == "Room report"
    assert "Files written: reports/room.docx." in outcome.reply


@needs_poppler
async def test_look_then_reports_with_a_chinese_title(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    title = "房间观察报告"
    outcome, rec, caption = await _run(
        scripted_server, robot, tmp_path, "pdf", title, "reports/观察.pdf"
    )
    text = _pdftotext(tmp_path / "reports" / "观察.pdf")
    assert title in text and " ".join(caption.split()) in text  # characters, not boxes
    result = next(e for e in rec.of("tool_result") if e.data["name"] == "write_document")
    assert result.data["metadata"]["font"], "a CJK TrueType font was embedded"
    assert "Files written: reports/观察.pdf." in outcome.reply
    outcome, _, _ = await _run(scripted_server, robot, tmp_path, "docx", title, "reports/观察.docx")
    document = docx.Document(str(tmp_path / "reports" / "观察.docx"))
    assert document.paragraphs[0].text == title
    assert "Files written: reports/观察.docx." in outcome.reply
