"""docs/tools.md lists every built-in tool with its safety class (issue 19 acceptance 5).

The tools are built by the same factories a run uses (with every optional one switched on),
so a new tool, or a changed class, fails this test until the page says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopact.agent.tools import AgentCallTool
from loopact.app.general import general_tools
from loopact.app.robot import open_robot
from loopact.config import load_config
from loopact.devices import open_board
from loopact.devices.tools import make_device_tools
from loopact.events import EventBus
from loopact.memory import GitMemory, make_memory_tools
from loopact.nodes.inputs import InputHub, make_input_tools
from loopact.nodes.local import LocalConnector
from loopact.nodes.mqtt.tools import MqttTools, ToolsPolicy, make_mqtt_tools
from loopact.skills.loader import SkillLibrary
from loopact.skills.tool import make_skill_tool
from loopact.tools.base import SafetyClass, Tool
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.builtin.messages import ConsoleChannel, make_send_message_tool

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.sim


def _rows() -> dict[str, set[str]]:
    """Tool name -> classes named on its table rows (a row may list several tools)."""
    rows: dict[str, set[str]] = {}
    for line in (ROOT / "docs" / "tools.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`([a-z_]+)`", cells[0])
        classes = set(re.findall(r"`([a-z_]+)`", cells[1])) & {s.value for s in SafetyClass}
        for name in names:
            rows.setdefault(name, set()).update(classes)
    return rows


async def _all_tools(tmp_path: Path) -> list[Tool]:
    overrides = {
        "tools": {"shell": {"enabled": True, "allow": {"uptime": []}}},
        "images": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }
    cfg, _ = load_config(None, env={}, cwd=tmp_path, overrides=overrides)
    tools: list[Tool] = [*make_builtin_tools(tmp_path), *general_tools(cfg, tmp_path)]
    tools += make_device_tools(open_board())
    tools.append(make_send_message_tool([ConsoleChannel(EventBus())]))
    tools += make_memory_tools(GitMemory(tmp_path / "memory", "test"))
    tools.append(make_skill_tool(SkillLibrary()))
    tools += make_mqtt_tools(MqttTools(ToolsPolicy(), settings=lambda _url: None))  # type: ignore[arg-type, return-value]
    tools += make_input_tools(InputHub(LocalConnector(), "loopact"), seewhat=True)
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        tools += session.tools
    finally:
        await session.close()
    return tools


async def test_every_built_in_tool_is_listed_with_its_class(tmp_path: Path) -> None:
    rows = _rows()
    tools = await _all_tools(tmp_path)
    missing = sorted({t.name for t in tools} - set(rows))
    assert not missing, f"docs/tools.md does not list: {missing}"
    wrong = sorted(
        f"{t.name}: {t.safety.value}" for t in tools if t.safety.value not in rows[t.name]
    )
    assert not wrong, f"docs/tools.md gives another safety class for: {wrong}"
    agent_call_class = AgentCallTool.safety.value
    assert agent_call_class in rows["agent_call"]
