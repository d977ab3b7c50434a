"""remember / recall tools (SPEC E4)."""

from __future__ import annotations

from pathlib import Path

from loopact.memory import GitMemory, make_memory_tools
from loopact.tools.base import SafetyClass, ToolContext


async def test_remember_and_recall_tools(tmp_path: Path) -> None:
    ctx = ToolContext(task_id="t1", call_id="c1", workspace=tmp_path)
    async with GitMemory(tmp_path / "mem", machine_id="r1") as mem:
        remember, recall = make_memory_tools(mem)
        assert (remember.name, remember.safety) == ("remember", SafetyClass.IDEMPOTENT)
        assert (recall.name, recall.safety) == ("recall", SafetyClass.READ_ONLY)
        assert remember.parameters["required"] == ["fact"]
        res = await remember.invoke(
            {"fact": "Carol likes the blinds open", "kind": "preference"}, ctx
        )
        assert res.ok and res.data == "remembered" and res.metadata["added"] is True
        again = await remember.invoke(
            {"fact": "Carol likes the blinds open", "kind": "preference"}, ctx
        )
        assert again.ok and again.metadata["added"] is False
        empty = await remember.invoke({"fact": "  "}, ctx)
        assert not empty.ok and "empty" in (empty.error or "")
        found = await recall.invoke({"query": "blinds"}, ctx)
        assert found.ok and found.data[0]["text"] == "Carol likes the blinds open"
        assert found.data[0]["kind"] == "preference" and found.metadata["found"] == 1
