"""Inflation, the planner, smoothing and drawing on synthetic grids (issue 40)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loopact.maps import (
    FREE,
    MapMark,
    PlanError,
    empty_grid,
    inflate,
    plan,
    render_map,
    shortest_free_path_m,
    with_obstacles,
)
from loopact.maps.grid import OccupancyGrid
from loopact.maps.plan import line_cells
from loopact.maps.raster import fill_box

RADIUS = 0.17


def two_rooms(door_m: float = 0.9, blocked: bool = False) -> OccupancyGrid:
    """Two 3 x 3 m rooms side by side (x 0..3 and 3..6), a wall at x = 3 with a doorway
    centred at y = 1.5, walls round the outside."""
    g = empty_grid(6.0, 3.0, 0.05, (0.0, 0.0))
    for c, h in (
        ((3.0, 0.05), (3.0, 0.05)),
        ((3.0, 2.95), (3.0, 0.05)),
        ((0.05, 1.5), (0.05, 1.5)),
        ((5.95, 1.5), (0.05, 1.5)),
        ((3.0, 1.5), (0.05, 1.5)),
    ):
        g = fill_box(g, c, h)
    g = fill_box(g, (3.0, 1.5), (0.1, door_m / 2), value=FREE, pad_m=0.0)
    if blocked:
        g = fill_box(g, (3.0, 1.5), (0.2, 0.3))
    return g


def test_inflation_marks_the_footprint_and_grades_the_margin() -> None:
    cm = inflate(two_rooms(), RADIUS, 0.1)
    assert not cm.free_at(0.2, 1.5)  # 0.2 m from the west wall's inner face (0.1): 0.1 < r
    assert cm.free_at(0.4, 1.5)
    # cost rises towards obstacles inside the margin and is 1 in the open
    assert cm.cost[cm.grid.to_cell(1.5, 1.5)] == 1.0
    near = cm.cost[cm.grid.to_cell(0.1 + RADIUS + 0.05, 1.5)]
    assert 1.0 < near < math.inf
    assert cm.clearance_at(1.5, 1.5) == pytest.approx(1.33, abs=0.05)  # to the north wall


def test_plan_goes_through_the_doorway_and_keeps_clear_of_walls() -> None:
    cm = inflate(two_rooms(), RADIUS, 0.1)
    p = plan(cm, (1.0, 0.6), (5.0, 2.4))
    assert p.points_m[0] == (1.0, 0.6) and p.points_m[-1] == (5.0, 2.4)
    dense = _densify(p.points_m, 0.02)
    crossing = [pt for pt in dense if abs(pt[0] - 3.0) < 0.02]
    assert crossing and all(abs(y - 1.5) < 0.45 - RADIUS for _, y in crossing)
    assert min(cm.clearance_at(x, y) for x, y in dense) >= RADIUS - 0.03
    # smoothed: a handful of corners, close to the shortest collision-free path
    assert len(p.points_m) <= 6
    shortest = shortest_free_path_m(cm.grid, RADIUS, (1.0, 0.6), (5.0, 2.4))
    assert p.length_m <= 1.1 * shortest
    assert shortest >= math.dist((1.0, 0.6), (3.0, 1.5)) + math.dist((3.0, 1.5), (5.0, 2.4)) - 0.4


def test_a_blocked_doorway_is_no_path() -> None:
    cm = inflate(two_rooms(blocked=True), RADIUS, 0.1)
    with pytest.raises(PlanError) as info:
        plan(cm, (1.0, 1.5), (5.0, 1.5))
    assert info.value.reason == "no_path"


def test_a_doorway_narrower_than_the_robot_is_no_path() -> None:
    cm = inflate(two_rooms(door_m=0.3), RADIUS, 0.1)
    with pytest.raises(PlanError, match="no path"):
        plan(cm, (1.0, 1.5), (5.0, 1.5))


def test_bad_goals_are_named() -> None:
    cm = inflate(two_rooms(), RADIUS, 0.1)
    with pytest.raises(PlanError) as off:
        plan(cm, (1.0, 1.5), (9.0, 1.5))
    assert off.value.reason == "goal_off_map" and "outside the map" in str(off.value)
    with pytest.raises(PlanError) as wall:
        plan(cm, (1.0, 1.5), (3.0, 0.5))
    assert wall.value.reason == "goal_in_obstacle" and "inside a wall" in str(wall.value)
    # 0.1 m from a wall: moved to the nearest cell the robot fits (within 0.3 m)
    p = plan(cm, (1.0, 1.5), (0.2, 1.5))
    assert 0.1 + RADIUS - 0.03 <= p.points_m[-1][0] <= 0.6


def test_a_start_against_a_wall_escapes_first() -> None:
    cm = inflate(two_rooms(), RADIUS, 0.1)
    p = plan(cm, (0.2, 1.5), (2.0, 1.5))
    assert p.points_m[0] == (0.2, 1.5) and cm.free_at(*p.points_m[1])


def test_new_obstacles_cut_the_path() -> None:
    cm = inflate(two_rooms(), RADIUS, 0.1)
    plan(cm, (1.0, 1.5), (5.0, 1.5))
    seen = [(3.0, 1.5 + dy) for dy in np.arange(-0.45, 0.46, 0.05)]
    with pytest.raises(PlanError, match="no path"):
        plan(with_obstacles(cm, seen), (1.0, 1.5), (5.0, 1.5))


def test_line_cells_never_skip_a_diagonal() -> None:
    cells = line_cells((0, 0), (3, 3))
    assert {tuple(c) for c in cells} >= {(0, 0), (1, 1), (2, 2), (3, 3)}


def test_render_map_draws_everything_in_place() -> None:
    grid = two_rooms()
    img = render_map(
        grid,
        pose=(1.0, 1.5, 0.0),
        path=[(1.0, 1.5), (5.0, 1.5)],
        places=[MapMark("kitchen", 5.0, 2.4)],
        objects=[MapMark("red box", 2.0, 0.6, "red")],
        min_px=600,
    )
    k = img.shape[1] // grid.width
    assert img.shape[1] >= 600 and img.shape[0] == grid.height * k

    def at(x: float, y: float) -> tuple[int, int, int]:
        return tuple(int(v) for v in img[int((3.0 - y) / 0.05 * k), int(x / 0.05 * k)])

    assert at(1.0, 1.5) == (30, 90, 220)  # the robot
    assert at(4.5, 1.5) == (255, 120, 0)  # the path
    assert at(2.0, 0.6) == (220, 30, 30)  # the red object
    assert at(0.03, 0.03) == (60, 60, 64)  # a wall
    assert at(2.0, 2.5) == (255, 255, 255)  # free floor


def _densify(points: tuple[tuple[float, float], ...], step: float) -> list[tuple[float, float]]:
    out = []
    for a, b in zip(points, points[1:], strict=False):
        n = max(1, int(math.dist(a, b) / step))
        out += [(a[0] + (b[0] - a[0]) * i / n, a[1] + (b[1] - a[1]) * i / n) for i in range(n)]
    return [*out, points[-1]]
