"""The ``skill`` tool: a skill's body on demand, or the catalogue (SPEC E3)."""

from __future__ import annotations

from loopact.skills.loader import SkillLibrary
from loopact.tools.base import Tool, ToolResult, tool


def make_skill_tool(library: SkillLibrary) -> Tool:
    """Build the read-only ``skill`` tool over ``library``.

    ``skill(name)`` returns the body of that skill; ``skill()`` (no name) returns the
    catalogue; an unknown name gives a failed result listing the known names.

    Args:
        library: The loaded skills (the tool sees later changes to the same object only if
            the library itself is replaced in a new tool).
    """

    @tool(safety="read_only", timeout_s=10, constant=True)  # a skill's text (SPEC A3)
    async def skill(name: str = "") -> ToolResult:
        """Read the step-by-step instructions of a skill before doing that kind of job.

        Call without a name to list the skills.

        Args:
            name: The skill's name, as listed in the catalogue.
        """
        if not name.strip():
            return ToolResult.success(library.catalogue_text() or "No skills are installed.")
        found = library.get(name)
        if found is None:
            known = ", ".join(library.names) or "none"
            return ToolResult.failure(f"unknown skill {name!r}; known skills: {known}")
        return ToolResult.success(found.body, skill=found.name)

    return skill
