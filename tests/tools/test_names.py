"""Named arguments checked against the user's words (loopact.tools.names; SPEC B7, issue 40).

The unit cases, then the whole loop: the real OpenAI provider against the scripted model
server answers 去卫生间 with ``navigation(waypoint="garage")`` (what the 0.5B brain wrote in
bench/local_brain.py); the dispatcher runs it as the bathroom, the simulated robot ends there
by ground truth, and the result's metadata says what was changed.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.sim import open_sim
from loopact.tools.names import align_names
from loopact.tools.registry import ToolRegistry

PLACES = {
    "bathroom": "bathroom",
    "卫生间": "bathroom",
    "living_room": "living_room",
    "living room": "living_room",
    "客厅": "living_room",
    "kitchen": "kitchen",
    "厨房": "kitchen",
}
NAMES = {"waypoint": PLACES}


@pytest.mark.parametrize(
    ("said", "wrote", "runs"),
    [
        ("去卫生间", "garage", "bathroom"),  # the brain's miss: the one place the user named
        ("go to the living room", "lounge", "living_room"),
        ("drive over to the Kitchen please", "kitchen_area", "kitchen"),
        ("去卫生间", "bathroom", "bathroom"),  # a known name: as it is
        ("去卫生间", "the Bathroom", "the Bathroom"),  # a known name, other case: the tool's
        ("go to the kitchen", "客厅", "客厅"),  # a known name the user did not say: kept
        ("go to the garage", "garage", "garage"),  # the user said it: the tool refuses it
        ("drive to the red box in the kitchen", "red box", "red box"),  # a located object
        ("go to the kitchen, then the bathroom", "garage", "garage"),  # two places named
        ("go somewhere nice", "garage", "garage"),  # none named
    ],
)
def test_a_name_the_user_did_not_say_becomes_the_one_they_did(
    said: str, wrote: str, runs: str
) -> None:
    out, normalized = align_names({"waypoint": wrote, "x_m": None}, NAMES, said)
    assert out["waypoint"] == runs
    assert out["x_m"] is None
    if runs == wrote:
        assert normalized == {}
    else:
        assert normalized == {
            "waypoint": {"from": wrote, "to": runs, "because": normalized["waypoint"]["because"]}
        }
        assert normalized["waypoint"]["because"].startswith("the instruction names ")


def test_other_arguments_and_non_strings_are_left_alone() -> None:
    args = {"waypoint": 3, "speed": "garage"}
    assert align_names(args, NAMES, "去卫生间") == (args, {})
    assert align_names({"waypoint": "garage"}, NAMES, "") == ({"waypoint": "garage"}, {})
    assert align_names({"waypoint": "garage"}, {"waypoint": {}}, "去卫生间")[1] == {}


@pytest.mark.sim
async def test_the_loop_drives_to_the_place_the_user_named(
    scripted_server: Any, tmp_path: Path
) -> None:
    session = await asyncio.wait_for(open_sim(scenario="flat", speed=8.0), 60)
    try:
        server = scripted_server(
            [
                {"tool_calls": [call("navigation", {"waypoint": "garage"})]},
                {"text": "我到卫生间了。"},
            ]
        )
        agent = Agent(
            OpenAIChatModel("scripted", server.base_url, "k"),
            ToolRegistry(session.tools),
            AgentOptions(
                bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
                workspace=tmp_path,
                stop_hooks=(session.stop,),
            ),
        )
        rec = Recorder()
        agent.bus.subscribe(rec)
        outcome = await asyncio.wait_for(agent.run_task("去卫生间"), 180)
        await agent.close()
        assert outcome.status == "completed", outcome
        (result,) = rec.of("tool_result")
        assert result.data["ok"], result.data
        assert result.data["metadata"]["normalized"]["waypoint"] == {
            "from": "garage",
            "to": "bathroom",
            "because": "the instruction names 卫生间",
        }
        wp = session.site.waypoints["bathroom"]
        st = session.robot.sim.state()  # type: ignore[attr-defined]
        assert math.hypot(st.x_m - wp.x_m, st.y_m - wp.y_m) < 0.3  # ground truth
    finally:
        await session.close()
