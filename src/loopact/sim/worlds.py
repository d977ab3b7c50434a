"""Which world a scenario is built in: the room, the flat (SPEC D6, issue 40) or the arm scene
(the room with a table and an arm on the robot, issue 43).

The one place that turns a :class:`~loopact.sim.scenarios.Scenario` into MJCF and floor bounds,
so the simulator, the snapshot and the map all see the same world.
"""

from __future__ import annotations

from loopact.sim import arm_scene, flat, world
from loopact.sim.scenarios import Scenario


def bounds(scenario: Scenario) -> world.Bounds:
    """The floor's ``((x_min, x_max), (y_min, y_max))`` in metres."""
    if scenario.world == "flat":
        return flat.FLAT_X_M, flat.FLAT_Y_M
    return world.ROOM_X_M, world.ROOM_Y_M


def build_mjcf(scenario: Scenario, width: int = 640, height: int = 480) -> str:
    """The MJCF of ``scenario``'s world with the robot (see :func:`loopact.sim.world.build_mjcf`).

    Raises:
        ValueError: A size is not positive.
    """
    if scenario.arm:  # the room without its objects, the table and the arm (issue 43)
        room = world.build_mjcf(
            width,
            height,
            movers=scenario.movers,
            statics=world.room_statics(objects=False) + arm_scene.scene_mjcf(),
        )
        return arm_scene.build_mjcf(room)
    statics = flat.statics_mjcf(scenario.blocked) if scenario.world == "flat" else None
    return world.build_mjcf(
        width,
        height,
        movers=scenario.movers,
        bounds=bounds(scenario) if scenario.world == "flat" else None,
        statics=statics,
    )
