"""Skills: loading, overriding, the catalogue and the ``skill`` tool (SPEC E3)."""

from __future__ import annotations

import logging
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
