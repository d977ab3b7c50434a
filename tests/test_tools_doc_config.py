"""docs/tools.md names configuration keys that exist (issue 19 acceptance 5, "and configuration").

tests/test_tools_doc.py checks each tool's row and safety class; this checks the last column:
every ``section.key`` (or ``section.{a, b}``) it names is a key of :class:`loopact.config.Config`,
so a renamed or removed key fails here until the page follows.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pydantic

from loopact.config import Config

DOC = Path(__file__).resolve().parents[1] / "docs" / "tools.md"
_KEY = re.compile(r"`([a-z_]+(?:\.[a-z_]+)+)(?:\.\{([a-z_, ]+)\})?(?:\.\*)?`")


def _config_cells() -> list[str]:
    cells = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            cells.append(line.rstrip().rstrip("|").rsplit("|", 1)[-1])
    return cells


def _keys(cell: str) -> list[str]:
    keys = []
    for m in _KEY.finditer(cell):
        base, group = m.group(1), m.group(2)
        if base.split(".")[0] not in Config.model_fields:
            continue  # a file name such as boards/sim.yaml or a tool, not a key
        keys += [f"{base}.{g.strip()}" for g in group.split(",")] if group else [base]
    return keys


def _exists(key: str) -> bool:
    model: type[pydantic.BaseModel] | None = Config
    for part in key.split("."):
        if model is None or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
        model = next(
            (
                c
                for c in (annotation, *typing.get_args(annotation))
                if isinstance(c, type) and issubclass(c, pydantic.BaseModel)
            ),
            None,
        )
    return True


def test_every_configuration_key_in_the_tools_page_exists() -> None:
    keys = [k for cell in _config_cells() for k in _keys(cell)]
    assert len(keys) > 30  # the page's configuration column was read
    assert [k for k in keys if not _exists(k)] == []


def test_the_check_finds_a_key_that_does_not_exist() -> None:
    assert _keys("`tools.shell.{enabled, allow}`, `boards/sim.yaml`, `a.b`") == [
        "tools.shell.enabled",
        "tools.shell.allow",
    ]
    assert _exists("tools.shell.timeout_s") and _exists("messages.email.password_env")
    assert not _exists("tools.shell.timeout") and not _exists("messages.sms.to")
