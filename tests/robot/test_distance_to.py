"""``distance_to(place)`` on the real MuJoCo SimRobot, graded by the simulator's ground truth
(SPEC D3, H4, issue 20), and the catalogue's examples a small model copies its calls from."""

from __future__ import annotations

import math
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from tests.robot.rig import Rig

from loopact.app.run import open_agent
from loopact.config import MessagesConfig, TopicMessagesConfig, load_config
from loopact.events import EventBus
from loopact.llm.toolprompt import (
    MAX_EXAMPLES,
    REPLY_TOOL,
    describe_tools_compact,
    pick_examples,
)

pytestmark = pytest.mark.sim


def _truth(rig: Rig, place: str) -> tuple[float, float]:
    """Distance (m) and bearing (degrees, left positive) from the simulator's own base pose
    to the site map's ``place``."""
    st = rig.robot.inner.sim.state()
    wp = rig.site.waypoints[place]
    dx, dy = wp.x_m - st.x_m, wp.y_m - st.y_m
    bearing = math.degrees(math.atan2(dy, dx) - st.yaw_rad)
    return math.hypot(dx, dy), (bearing + 180.0) % 360.0 - 180.0


async def test_distance_to_matches_ground_truth_before_and_after_a_move(rig: Rig) -> None:
    for place in ("door", "kitchen", "window"):
        res = await rig.call("distance_to", place=place)
        assert res.ok, res.error
        dist, bearing = _truth(rig, place)
        assert abs(res.data["distance_m"] - dist) <= 0.03, (place, res.data, dist)
        assert abs(res.data["bearing_deg"] - bearing) <= 2.0, (place, res.data, bearing)
        wp = rig.site.waypoints[place]
        assert (res.data["x_m"], res.data["y_m"]) == (wp.x_m, wp.y_m)
        assert res.data["result"].startswith(f"the {place} is {res.data['distance_m']:.2f} m away")
    assert all(t.is_zero for _, t in rig.robot.twists)  # asking moves nothing

    # drive 1 m forward and turn left 90 degrees: the door is now behind-right of the robot
    assert (await rig.call("move_forward", distance_m=1.0)).ok
    assert (await rig.call("turn_left", angle_deg=90)).ok
    res = await rig.call("distance_to", place="The Door")  # the site's name, any case
    assert res.ok, res.error
    assert res.data["place"] == "door"
    dist, bearing = _truth(rig, "door")
    assert abs(dist - math.hypot(5.4, 0.6)) > 0.5  # the robot really moved
    assert abs(res.data["distance_m"] - dist) <= 0.03
    assert abs(res.data["bearing_deg"] - bearing) <= 2.0
    assert res.data["bearing_deg"] < -90  # behind, to the right
    assert "degrees to the right" in res.data["result"]


async def test_a_place_answers_to_its_other_names(rig: Rig) -> None:
    """sim_room.yaml's ``names``: Chinese and English aliases find the place, and the result
    carries the Chinese name for a Chinese reply."""
    for name, place, zh in (("门", "door", "门"), ("Charging Dock", "charger", "充电桩")):
        res = await rig.call("distance_to", place=name)
        assert res.ok, res.error
        assert (res.data["place"], res.data["place_zh"]) == (place, zh)
        assert abs(res.data["distance_m"] - _truth(rig, place)[0]) <= 0.03


async def test_unknown_place_lists_the_known_places(rig: Rig) -> None:
    res = await rig.call("distance_to", place="moon")
    assert not res.ok
    assert res.error == "unknown place 'moon'; known places: charger, door, kitchen, start, window"
    assert res.data == {"known_places": ["charger", "door", "kitchen", "start", "window"]}
    assert rig.tools["distance_to"].safety.value == "read_only"


async def test_the_site_places_are_named_in_the_arguments_but_not_forced(rig: Rig) -> None:
    """The names reach every catalogue; an unknown one stays writable and fails clearly."""
    places = ["charger", "door", "kitchen", "start", "window"]
    nav = rig.tools["navigation"].spec()
    dist = rig.tools["distance_to"].spec()
    for spec, arg in ((nav, "waypoint"), (dist, "place")):
        prop = spec.parameters["properties"][arg]
        assert prop["description"] == "One of: " + ", ".join(places) + "."
        assert "enum" not in prop
        assert prop["description"] in describe_tools_compact([spec])
    assert ("go back to the start", {"waypoint": "start"}) in nav.examples
    res = await rig.call("navigation", waypoint="moon")
    assert not res.ok and "known waypoints: charger, door" in res.error
    assert rig.robot.inner.sim.state().x_m == pytest.approx(0.0, abs=0.01)


async def test_sim_catalogue_shows_the_u_turn_laps_distance_and_message_examples(
    tmp_path: Path,
) -> None:
    """The tools a sim run with an MQTT message channel offers the local brain, composed as
    ``loopact run`` composes them: the compact catalogue (at most MAX_EXAMPLES, each tool's
    first before any second) keeps these first-rank examples, so a new example elsewhere
    cannot silently push them out, and names the allowed topic (issue 20)."""
    cfg, _ = load_config(
        None,
        env={},
        cwd=tmp_path,
        overrides={
            "model": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
            "robot": {"kind": "sim"},
            "agent": {"workspace": str(tmp_path / "ws")},
            "memory": {"enabled": False},
            "web": {"enabled": False},
        },
    )
    cfg = cfg.model_copy(
        update={
            "messages": MessagesConfig(mqtt=TopicMessagesConfig(allow_to=["robots/status"])),
            "mqtt": cfg.mqtt.model_copy(update={"broker": "mqtt://127.0.0.1:9"}),
        }
    )
    async with AsyncExitStack() as stack:
        _, opened = await open_agent(
            cfg,
            stack,
            EventBus(),
            once=None,
            config_source=None,
            interactive=False,
            local_brain=False,
            mcp_servers=False,
        )
        specs = (*opened.agent.registry.specs(), REPLY_TOOL)  # as the local brain gets them
    text = describe_tools_compact(specs)
    wanted = [
        ("掉个头", '{"name": "turn_left", "arguments": {"angle_deg": 180}}'),
        (
            "how far away is the charger?",
            '{"name": "distance_to", "arguments": {"place": "charger"}}',
        ),
        (
            "drive two laps along the purple line",
            '{"name": "follow_line", "arguments": {"color": "purple", "laps": 2}}',
        ),
        (
            "tell the fleet on the MQTT topic robots/status that the battery is low",
            '{"name": "send_message", "arguments": {"text": "Battery low: I need to recharge '
            'soon.", "channel": "mqtt", "to": "robots/status"}}',
        ),
    ]
    for instruction, call in wanted:
        assert f"User: {instruction}\n{call}\n" in text + "\n", instruction
    picked = pick_examples(specs)
    assert len(picked) <= MAX_EXAMPLES
    # every tool's first example is shown, the reply tool's included
    assert {c["name"] for _, c in picked} == {s.name for s in specs if s.examples}
    laps = next(s for s in specs if s.name == "follow_line").parameters["properties"]["laps"]
    assert '"one lap" or "一圈": 1' in laps["description"]
    # and the allowed topics are in send_message's own compact schema
    to = next(s for s in specs if s.name == "send_message").parameters["properties"]["to"]
    assert '"to": {"type": "string", "description": "' + to["description"] + '"}' in text
    assert to["description"].endswith("mqtt: one of robots/status.")
