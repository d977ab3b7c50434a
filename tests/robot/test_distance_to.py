"""``distance_to(place)`` on the real MuJoCo SimRobot, graded by the simulator's ground truth
(SPEC D3, H4, issue 20)."""

from __future__ import annotations

import math

import pytest
from tests.robot.rig import Rig

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


async def test_unknown_place_lists_the_known_places(rig: Rig) -> None:
    res = await rig.call("distance_to", place="moon")
    assert not res.ok
    assert res.error == "unknown place 'moon'; known places: charger, door, kitchen, start, window"
    assert res.data == {"known_places": ["charger", "door", "kitchen", "start", "window"]}
    assert rig.tools["distance_to"].safety.value == "read_only"
