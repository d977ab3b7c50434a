"""Skills (SPEC E3): Markdown instructions the agent loads on demand with the ``skill`` tool."""

from loopact.errors import SkillFileError
from loopact.skills.loader import Skill, SkillLibrary, builtin_dir, parse_skill
from loopact.skills.tool import make_skill_tool

__all__ = [
    "Skill",
    "SkillFileError",
    "SkillLibrary",
    "builtin_dir",
    "make_skill_tool",
    "parse_skill",
]
