"""Navigation (SPEC D3; issue 40): ``navigation``, ``distance_to`` and ``show_map``.

- :mod:`~loopact.robot.navigation.tools`: the tools and the one backend seam;
- :mod:`~loopact.robot.navigation.goals`: a place, a map pose or a located object as a goal;
- :mod:`~loopact.robot.navigation.planner`: plan on the map, follow, replan, "no path";
- :mod:`~loopact.robot.navigation.follower`: pure pursuit through the governor;
- :mod:`~loopact.robot.navigation.direct`: the go-to-pose controller when there is no map;
- :mod:`~loopact.robot.navigation.localization`: the map pose from TF;
- :mod:`~loopact.robot.navigation.nav2`: Nav2's ``navigate_to_pose`` as the backend;
- :mod:`~loopact.robot.navigation.show_map`: the map for the model and for people;
- :mod:`~loopact.robot.navigation.texts`: every sentence the tools return.
"""

from loopact.robot.navigation.context import NavContext
from loopact.robot.navigation.places import chinese_name, find_place
from loopact.robot.navigation.tools import make_navigation_tools

__all__ = ["NavContext", "chinese_name", "find_place", "make_navigation_tools"]
