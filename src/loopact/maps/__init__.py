"""Maps and planning as pure functions of data (SPEC D3, issue 40).

- :mod:`~loopact.maps.grid`: the occupancy grid (``nav_msgs/OccupancyGrid``);
- :mod:`~loopact.maps.mapfile`: Nav2 map_server files (image + YAML), read and written;
- :mod:`~loopact.maps.raster`: shapes onto a grid (a map from known geometry);
- :mod:`~loopact.maps.costmap`: inflation by the robot's footprint and a margin;
- :mod:`~loopact.maps.plan`: the global planner (scikit-image's minimum-cost path) and smoothing;
- :mod:`~loopact.maps.draw`: the map as a picture with pose, path, places and objects.

Nothing here talks to a robot, a simulator or ROS 2; everything is tested on arrays.
"""

from loopact.maps.costmap import Costmap, inflate, with_obstacles
from loopact.maps.draw import MapMark, render_map
from loopact.maps.grid import FREE, OCCUPIED, UNKNOWN, OccupancyGrid, empty_grid
from loopact.maps.mapfile import read_map, write_map
from loopact.maps.plan import Plan, PlanError, plan, polyline_length, shortest_free_path_m

__all__ = [
    "FREE",
    "OCCUPIED",
    "UNKNOWN",
    "Costmap",
    "MapMark",
    "OccupancyGrid",
    "Plan",
    "PlanError",
    "empty_grid",
    "inflate",
    "plan",
    "polyline_length",
    "read_map",
    "render_map",
    "shortest_free_path_m",
    "with_obstacles",
    "write_map",
]
