"""Markdown skills with front matter, and the library that holds them (SPEC E3).

A skill is a Markdown file::

    ---
    name: patrol
    description: Visit every waypoint of the site in turn and report what was seen.
    ---
    1. ...

Only the catalogue (names and one-line descriptions) goes into the system prompt; the body is
fetched on demand with the ``skill`` tool, so bodies never sit in the context unasked.

Built-in skills ship in ``loopact/skills/builtin/``; the user's live in ``<memory>/skills/``.
:meth:`SkillLibrary.load` reads folders in order and a later folder's skill replaces an
earlier one with the same name, so pass ``[builtin_dir(), memory / "skills"]`` to let user
skills override built-in ones. A file with bad front matter is skipped with a warning naming
it; loading never raises for a bad skill file. Conflict copies left by a memory merge
(``*.conflict-<sha7>.md``) are ignored until a person resolves them.

Only what a skill folder really holds is read: a FIFO, socket or device (opening a FIFO
blocks for good), a link that leads outside the folder, a file over
:data:`MAX_SKILL_BYTES` and a file that is not UTF-8 are skipped, each with a warning that
names it and says why. Two files of one folder with the same ``name`` are both named in a
warning, and the first (by file name) is used.
"""

from __future__ import annotations

import logging
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from loopact.errors import SkillFileError

log = logging.getLogger(__name__)

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)
_MAX_DESCRIPTION = 200
#: Largest skill file read, in bytes (a body past the tool-result size is cut for the model
#: anyway; a huge file in the memory folder must not be read into memory at every start).
MAX_SKILL_BYTES = 256 * 1024


@dataclass(frozen=True)
class Skill:
    """One skill.

    Attributes:
        name: Unique name (letters, digits, ``_``, ``-``).
        description: One line saying when to use it.
        body: The instructions, Markdown.
        path: The file it came from.
    """

    name: str
    description: str
    body: str
    path: Path


def builtin_dir() -> Path:
    """The folder of the skills shipped with loopact."""
    return Path(__file__).resolve().parent / "builtin"


def parse_skill(text: str, path: Path) -> Skill:
    """Parse one skill file's text.

    Args:
        text: The file content.
        path: Where it came from (for messages and :attr:`Skill.path`).

    Raises:
        SkillFileError: No front matter, front matter that is not a YAML mapping, a missing
            or malformed ``name`` or ``description``, or an empty body.
    """
    m = _FRONT_RE.match(text.lstrip("\ufeff"))
    if not m:
        raise SkillFileError(f"{path}: no front matter (expected '---' lines around it)")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        # People write "description: Patrol: visit ..." (not valid YAML): read such front
        # matter as plain "key: value" lines instead of refusing it.
        meta = _simple_front_matter(m.group(1))
        if meta is None:
            raise SkillFileError(
                f"{path}: front matter is neither YAML nor 'key: value' lines"
            ) from None
    if not isinstance(meta, dict):
        raise SkillFileError(f"{path}: front matter must be a mapping with name and description")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME_RE.match(name.strip()):
        raise SkillFileError(
            f"{path}: 'name' must be 1-64 letters, digits, '_' or '-', got {name!r}"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError(f"{path}: 'description' must be a non-empty string")
    description = " ".join(description.split())
    if len(description) > _MAX_DESCRIPTION:
        description = description[: _MAX_DESCRIPTION - 3].rstrip() + "..."
    body = m.group(2).strip()
    if not body:
        raise SkillFileError(f"{path}: the skill has no body")
    return Skill(name.strip(), description, body, path)


def _simple_front_matter(text: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or line[:1].isspace():
            return None
        out[key.strip()] = value.strip().strip("'\"")
    return out


class SkillLibrary:
    """The skills available to the agent, by name (SPEC E3).

    Args:
        skills: The skills; a later one replaces an earlier one with the same name.
    """

    def __init__(self, skills: Iterable[Skill] = ()) -> None:
        self._skills: dict[str, Skill] = {}
        for s in skills:
            self._skills[s.name] = s

    @classmethod
    def load(cls, dirs: Iterable[Path]) -> SkillLibrary:
        """Read every ``*.md`` file of each folder, in order (later folders override).

        Missing folders are ignored; bad files are skipped with a warning naming the file.
        Blocking (reads files): call it at start-up or through ``asyncio.to_thread``.

        Args:
            dirs: Skill folders, lowest priority first.
        """
        skills: list[Skill] = []
        for folder in dirs:
            folder = Path(folder).expanduser()
            if folder.is_dir():
                skills += _load_folder(folder)
        return cls(skills)

    @property
    def names(self) -> list[str]:
        """The skill names, sorted."""
        return sorted(self._skills)

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (exact, then case-insensitive), or None."""
        key = name.strip()
        if key in self._skills:
            return self._skills[key]
        lowered = {k.lower(): v for k, v in self._skills.items()}
        return lowered.get(key.lower())

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def catalogue_text(self) -> str:
        """Names and one-line descriptions for the system prompt (never the bodies).

        Returns ``""`` when there are no skills.
        """
        if not self._skills:
            return ""
        lines = ["Skills (call the `skill` tool with a name to read one before using it):"]
        lines += [f"- {n}: {self._skills[n].description}" for n in self.names]
        return "\n".join(lines)


def _load_folder(folder: Path) -> list[Skill]:
    """The usable skills of one folder, one per name (the first file by name wins)."""
    found: dict[str, Skill] = {}
    for path in sorted(folder.glob("*.md")):
        if ".conflict-" in path.name:
            # The other robot's version kept beside a merge conflict (memory.merge).
            log.warning("ignoring unresolved skill conflict copy %s", path)
            continue
        try:
            skill = parse_skill(_read_skill(path, folder), path)
        except (SkillFileError, OSError) as exc:
            log.warning(
                "skipping skill file: %s",
                exc if isinstance(exc, SkillFileError) else f"{path}: {exc}",
            )
            continue
        first = found.get(skill.name)
        if first is not None:
            log.warning(
                "skill name %r is used by both %s and %s; using %s",
                skill.name,
                first.path.name,
                path.name,
                first.path.name,
            )
            continue
        found[skill.name] = skill
    return list(found.values())


def _read_skill(path: Path, folder: Path) -> str:
    """A skill file's text, if it is a regular UTF-8 file inside ``folder`` (SPEC E3).

    Raises:
        SkillFileError: It is not a regular file, it leads outside the folder, it is larger
            than :data:`MAX_SKILL_BYTES`, or it is not UTF-8 (the message names it and why).
        OSError: It cannot be read.
    """
    real = path.resolve()
    if not real.is_relative_to(folder.resolve()):
        raise SkillFileError(f"{path}: a link to outside the skill folder ({folder}); not read")
    info = real.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SkillFileError(f"{path}: not a regular file (a FIFO, socket or device); not read")
    if info.st_size > MAX_SKILL_BYTES:
        raise SkillFileError(
            f"{path}: {info.st_size // 1024} KiB, larger than the {MAX_SKILL_BYTES // 1024} "
            "KiB a skill may have; not read"
        )
    with open(real, "rb") as f:  # a regular file: opening cannot block
        data = f.read(MAX_SKILL_BYTES + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFileError(
            f"{path}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
