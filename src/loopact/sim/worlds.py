"""Which world a scenario is built in: the room or the flat (SPEC D6, issue 40).

The one place that turns a :class:`~loopact.sim.scenarios.Scenario` into MJCF and floor bounds,
so the simulator, the snapshot and the map all see the same world.
"""

from __future__ import annotations

from loopact.sim import flat, world
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
    statics = flat.statics_mjcf(scenario.blocked) if scenario.world == "flat" else None
    return world.build_mjcf(
        width,
        height,
        movers=scenario.movers,
        bounds=bounds(scenario) if scenario.world == "flat" else None,
        statics=statics,
    )
