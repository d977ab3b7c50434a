"""Skills: loading, overriding, the catalogue and the ``skill`` tool (SPEC E3)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopact.skills import SkillLibrary, builtin_dir, make_skill_tool
from loopact.tools.base import SafetyClass, ToolContext


def write_skill(folder: Path, fname: str, name: str, description: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / fname
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def test_builtin_skills_load_with_catalogue_only_in_prompt_text() -> None:
    lib = SkillLibrary.load([builtin_dir()])
    assert lib.names == ["find_and_approach", "patrol", "report_surroundings"]
    text = lib.catalogue_text()
    for name in lib.names:
        skill = lib.get(name)
        assert skill is not None
        assert f"- {name}: {skill.description}" in text
        assert "\n" not in skill.description and len(skill.description) <= 200
        # No part of any body sits in the catalogue.
        for line in skill.body.splitlines():
            if len(line.strip()) > 20:
                assert line.strip() not in text
    assert len(text.splitlines()) == 1 + len(lib)


async def test_skill_tool_returns_catalogue_body_and_lists_names_on_unknown(
    tmp_path: Path,
) -> None:
    lib = SkillLibrary.load([builtin_dir()])
    tool = make_skill_tool(lib)
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    assert tool.name == "skill" and tool.safety == SafetyClass.READ_ONLY
    assert "required" not in tool.parameters or tool.parameters["required"] == []

    catalogue = await tool.invoke({}, ctx)
    assert catalogue.ok and catalogue.data == lib.catalogue_text()

    body = await tool.invoke({"name": "patrol"}, ctx)
    patrol = lib.get("patrol")
    assert patrol is not None
    assert body.ok and body.data == patrol.body and body.metadata["skill"] == "patrol"
    assert "navigation" in body.data and "---" not in body.data.splitlines()[0]

    unknown = await tool.invoke({"name": "dance"}, ctx)
    assert not unknown.ok
    assert "dance" in (unknown.error or "")
    for name in lib.names:
        assert name in (unknown.error or "")


def test_user_skills_override_builtin_and_bad_files_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    user = tmp_path / "memory" / "skills"
    write_skill(user, "patrol.md", "patrol", "Our own patrol: only the kitchen.", "Go to kitchen.")
    write_skill(user, "wave.md", "wave", "Wave at people.", "Nod the head twice.")
    (user / "broken.md").write_text("no front matter here\n")
    (user / "badyaml.md").write_text("---\nname: [unclosed\n---\nbody\n")
    write_skill(user, "badname.md", "bad name!", "x", "body")
    write_skill(user, "nobody.md", "nobody", "Has no body.", "")
    (user / "notes.txt").write_text("ignored: not markdown")
    with caplog.at_level(logging.WARNING, logger="loopact.skills.loader"):
        lib = SkillLibrary.load([builtin_dir(), user, tmp_path / "missing"])
    assert lib.names == ["find_and_approach", "patrol", "report_surroundings", "wave"]
    patrol = lib.get("patrol")
    assert patrol is not None and patrol.body == "Go to kitchen."
    assert patrol.path == user / "patrol.md"
    warned = " ".join(r.getMessage() for r in caplog.records)
    for bad in ("broken.md", "badyaml.md", "badname.md", "nobody.md"):
        assert bad in warned
    assert lib.get("WAVE") is not None and "wave" in lib


def test_empty_library() -> None:
    lib = SkillLibrary.load([])
    assert lib.catalogue_text() == "" and lib.names == [] and len(lib) == 0


def test_description_with_colon_is_accepted(tmp_path: Path) -> None:
    write_skill(tmp_path, "dock.md", "dock", "Charging: drive to the charger and dock.", "Steps.")
    lib = SkillLibrary.load([tmp_path])
    dock = lib.get("dock")
    assert dock is not None and dock.description == "Charging: drive to the charger and dock."


def test_merge_conflict_copies_are_not_loaded(tmp_path: Path) -> None:
    write_skill(tmp_path, "dock.md", "dock", "Local version.", "Local body.")
    write_skill(tmp_path, "dock.conflict-abc1234.md", "dock", "Remote version.", "Remote body.")
    lib = SkillLibrary.load([tmp_path])
    dock = lib.get("dock")
    assert lib.names == ["dock"] and dock is not None and dock.body == "Local body."


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_two_skills_with_one_name_in_a_folder_are_named_and_the_first_is_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path, "dock_a.md", "dock", "First version.", "First body.")
    write_skill(tmp_path, "dock_b.md", "dock", "Second version.", "Second body.")
    with caplog.at_level(logging.WARNING, logger="loopact.skills.loader"):
        lib = SkillLibrary.load([tmp_path])
    dock = lib.get("dock")
    assert lib.names == ["dock"] and dock is not None and dock.body == "First body."
    [warning] = warnings_of(caplog)
    assert "'dock'" in warning and "dock_a.md" in warning and "dock_b.md" in warning


def test_a_skill_file_that_links_outside_its_folder_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = write_skill(tmp_path / "elsewhere", "secret.md", "secret", "Outside.", "Private.")
    folder = tmp_path / "skills"
    inside = write_skill(folder / "shared", "wave.md", "wave", "Wave at people.", "Nod twice.")
    (folder / "secret.md").symlink_to(outside)
    (folder / "wave.md").symlink_to(inside)  # a link that stays inside the folder is fine
    (folder / "passwd.md").symlink_to("/etc/passwd")
    with caplog.at_level(logging.WARNING, logger="loopact.skills.loader"):
        lib = SkillLibrary.load([folder])
    assert lib.names == ["wave"]
    warned = warnings_of(caplog)
    assert len(warned) == 2
    for name in ("secret.md", "passwd.md"):
        assert any(name in w and "outside" in w for w in warned), warned


def test_a_huge_skill_file_is_skipped_with_its_size(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path, "huge.md", "huge", "Very long.", "x" * 2_000_000)
    write_skill(tmp_path, "small.md", "small", "Short.", "Do it.")
    with caplog.at_level(logging.WARNING, logger="loopact.skills.loader"):
        lib = SkillLibrary.load([tmp_path])
    assert lib.names == ["small"]
    [warning] = warnings_of(caplog)
    assert "huge.md" in warning and "1953 KiB" in warning and "256 KiB" in warning


def test_a_skill_file_that_is_not_utf8_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "latin.md").write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\nbody\n")
    with caplog.at_level(logging.WARNING, logger="loopact.skills.loader"):
        lib = SkillLibrary.load([tmp_path])
    assert lib.names == []
    [warning] = warnings_of(caplog)
    assert "latin.md" in warning and "not UTF-8" in warning


def test_a_skill_that_is_a_fifo_does_not_block_loading(tmp_path: Path) -> None:
    write_skill(tmp_path, "wave.md", "wave", "Wave at people.", "Nod twice.")
    os.mkfifo(tmp_path / "pipe.md")
    code = (
        "import sys; from pathlib import Path; from loopact.skills import SkillLibrary; "
        "print(SkillLibrary.load([Path(sys.argv[1])]).names)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['wave']"
    assert "pipe.md" in proc.stderr and "not a regular file" in proc.stderr
