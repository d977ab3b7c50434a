"""The Foxglove layout shipped in the docs is the one loopact builds, and names only topics
loopact writes (issue 44: "a layout file for Foxglove in the docs")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from loopact.observe import topics as tp
from loopact.observe.layout import LAYOUT_TOPICS, layout_json
from loopact.observe.recorder import SIM_LOG

LAYOUT = Path(__file__).resolve().parents[2] / "docs" / "foxglove-layout.json"


def _panels(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node] if node.get("type") == "panel" else []
        return found + [p for v in node.values() for p in _panels(v)]
    if isinstance(node, list):
        return [p for v in node for p in _panels(v)]
    return []


def test_the_docs_layout_is_the_built_one() -> None:
    assert LAYOUT.read_text(encoding="utf-8") == layout_json(), (
        "regenerate: python -m loopact.observe.layout > docs/foxglove-layout.json"
    )


def test_the_layout_shows_only_loopacts_topics_in_the_standard_panels() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    named = set(re.findall(r'"(/[a-z_/]+)', text))
    ours = set(tp.SCHEMAS) | {SIM_LOG}
    assert {n.split(".")[0] for n in named} <= ours, named - ours
    assert set(LAYOUT_TOPICS) <= named
    kinds = {p["panelType"] for p in _panels(json.loads(text))}
    assert kinds == {"ThreeDee", "Image", "Log", "RawMessages", "Plot"}
