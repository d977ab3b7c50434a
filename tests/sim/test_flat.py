"""The flat scenario: its geometry, ground truth, site map and map (issue 40 item 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from tests.test_cli import run_cli

from loopact.maps import PlanError, inflate, plan, read_map
from loopact.robot.profile import load_site
from loopact.sim import flat
from loopact.sim.describe import describe_world
from loopact.sim.worldmap import world_map

RADIUS = 0.17


def test_the_flat_has_rooms_doorways_furniture_and_places_in_every_room() -> None:
    desc = describe_world("flat")
    rooms = {r["name"] for r in desc["rooms"]}
    assert rooms == {"hallway", "living_room", "bedroom", "kitchen", "bathroom"}
    assert all(0.8 <= d["width_m"] <= 1.0 for d in desc["doorways"])
    kinds = {o["kind"] for o in desc["obstacles"]}
    assert kinds == {"wall", "furniture"}
    assert desc["line"] is None and desc["scenario"]["name"] == "flat"
    site = load_site("flat")
    # the site map's places are the simulator's, and every room has one
    assert {k: (w.x_m, w.y_m) for k, w in site.waypoints.items()} == flat.WAYPOINTS
    assert {site.room_at(w.x_m, w.y_m) for w in site.waypoints.values()} == rooms
    assert {n: tuple(d.rooms) for n, d in site.doorways.items()} == {
        d.name: d.rooms for d in flat.DOORWAYS
    }
    # the blocked flat has one obstacle more, in the bedroom's doorway
    blocked = {o["name"] for o in describe_world("flat-blocked")["obstacles"]}
    assert blocked - {o["name"] for o in desc["obstacles"]} == {"blocking_box"}


def test_every_place_is_reachable_on_the_flats_map_and_the_blocked_bedroom_is_not() -> None:
    cm = inflate(world_map("flat"), RADIUS, 0.15)
    for name, (x, y) in flat.WAYPOINTS.items():
        assert cm.free_at(x, y), name
        p = plan(cm, (0.0, 0.0), (x, y))
        assert p.length_m >= math.dist((0.0, 0.0), (x, y)) - 1e-6
    for d in flat.DOORWAYS:
        assert cm.free_at(d.x_m, d.y_m), d.name
    blocked = inflate(world_map("flat-blocked"), RADIUS, 0.15)
    with pytest.raises(PlanError, match="no path"):
        plan(blocked, (0.0, 0.0), flat.WAYPOINTS["bedroom"])
    plan(blocked, (0.0, 0.0), flat.WAYPOINTS["kitchen"])


def test_the_map_marks_walls_and_furniture_where_the_world_has_them() -> None:
    grid = world_map("flat")
    for box in flat.solids():
        assert grid.value_at(box.x_m, box.y_m) == 100, box.name
    assert grid.value_at(0.0, 0.0) == 0  # the start, in the hallway
    assert grid.value_at(flat.FLAT_X_M[0] - 0.1, 0.0) == 100  # the outer wall
    for d in flat.DOORWAYS:
        assert grid.value_at(d.x_m, d.y_m) == 0, d.name


def test_write_map_cli_writes_map_server_files_that_read_back(tmp_path: Path) -> None:
    proc = run_cli(["sim", "--scenario", "flat", "--write-map", str(tmp_path / "m")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [
        str(tmp_path / "m" / "flat.yaml"),
        str(tmp_path / "m" / "flat.pgm"),
    ]
    back = read_map(tmp_path / "m" / "flat.yaml")
    assert np.array_equal(back.data, world_map("flat").data)
    proc = run_cli(["sim", "--scenario", "flat", "--describe"], tmp_path)
    assert json.loads(proc.stdout)["doorways"][1]["name"] == "bedroom_door"


def test_the_room_is_unchanged() -> None:
    """Today's room stays as it is: its description has no rooms, its map its own walls."""
    desc = describe_world("default")
    assert "rooms" not in desc and desc["line"]["colour"] == "purple"
    grid = world_map("default")
    assert grid.value_at(0.0, 0.0) == 0 and grid.value_at(3.0, -1.6) == 100  # the red cube
