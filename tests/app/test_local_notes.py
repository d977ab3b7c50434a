"""What the offline brain tells a user about the modes they chose (H2, issue 13)."""

from __future__ import annotations

from loopact.app.local import local_brain_notes
from loopact.config import Config


def test_plan_mode_with_the_local_brain_is_told() -> None:
    plan = Config.model_validate({"agent": {"mode": "plan"}})
    (note,) = local_brain_notes(plan)
    assert note.startswith("--mode plan with the local brain")
    assert "one step at a time" in note and "hosted model" in note
    assert local_brain_notes(Config()) == []  # the default mode: nothing to say
