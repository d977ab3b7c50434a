"""What the navigation tools share: the map, the costmap, obstacles seen, the last plan, and
the trail driven (issue 40).

The map comes from the configuration (``robot.map``), the site map (``map:``), the robot
(the ROS 2 ``map`` topic) or the simulator (its own geometry); without one, ``navigation`` is
the go-to-pose controller of :mod:`loopact.robot.navigation.direct`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopact.maps.costmap import Costmap, inflate, with_obstacles
from loopact.maps.grid import OccupancyGrid
from loopact.maps.plan import Plan

MARGIN_M = 0.15
"""Inflation margin beyond the footprint, metres (plans keep this far off walls where they can)."""
TRAIL_POINTS = 2000
"""How many driven poses the trail keeps (for ``show_map`` and ``--snapshot``)."""
SEEN_KEEP_S = 120.0
"""Obstacles the depth camera saw stay on the costmap this long (wall seconds)."""


@dataclass
class NavContext:
    """Navigation state of one robot session.

    Attributes:
        backend: ``planner`` (loopact plans and follows), ``nav2`` (goals to Nav2's
            ``navigate_to_pose``), ``auto`` (Nav2 when its action server is on the graph,
            else the planner) or ``direct`` (no map: the go-to-pose controller).
        static_map: The map, or None; ``map_source`` may replace it (the ROS 2 ``map`` topic).
        map_source: Called for the newest map (a robot's ``map`` topic), or None.
        radius_m: The robot's footprint radius, metres.
        margin_m: The inflation margin, metres.
        nav2: The Nav2 client when ``backend`` is ``nav2``.
        last_plan: The newest plan (map points), for ``show_map``.
        trail: Recently driven ``(x_m, y_m)`` map points.
    """

    backend: str = "direct"
    static_map: OccupancyGrid | None = None
    map_source: Callable[[], OccupancyGrid | None] | None = None
    radius_m: float = 0.17
    margin_m: float = MARGIN_M
    nav2: Any = None
    last_plan: Plan | None = None
    trail: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=TRAIL_POINTS))
    _seen: list[tuple[float, list[tuple[float, float]]]] = field(default_factory=list)
    _costmap: Costmap | None = None
    _costmap_key: tuple[int, int] = (0, 0)

    def grid(self) -> OccupancyGrid | None:
        """The newest map: the source's when it has one, else the static one."""
        if self.map_source is not None:
            got = self.map_source()
            if got is not None:
                return got
        return self.static_map

    def saw(self, points_m: list[tuple[float, float]]) -> None:
        """Add obstacle points the depth camera saw (map frame, metres) to the costmap."""
        if points_m:
            self._seen.append((time.monotonic(), points_m))

    def forget_seen(self) -> None:
        """Drop every seen obstacle (a new goal starts from the map)."""
        self._seen.clear()

    def costmap(self) -> Costmap | None:
        """The map inflated by the footprint and margin, with the seen obstacles; cached until
        the map or the seen obstacles change. None without a map."""
        grid = self.grid()
        if grid is None:
            return None
        now = time.monotonic()
        self._seen = [(t, pts) for t, pts in self._seen if now - t <= SEEN_KEEP_S]
        key = (id(grid), len(self._seen) and id(self._seen[-1][1]))
        if self._costmap is None or key != self._costmap_key:
            cm = inflate(grid, self.radius_m, self.margin_m)
            seen = [p for _, pts in self._seen for p in pts]
            self._costmap = with_obstacles(cm, seen) if seen else cm
            self._costmap_key = key
        return self._costmap
