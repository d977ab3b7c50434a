"""The embedded MuJoCo simulator (SPEC D6): a diff-drive robot with a pan-tilt RGB-D head in a
room with coloured objects, a purple floor line and named waypoints.

Importing this package does not import MuJoCo; that happens when a simulator is built.
"""

from loopact.sim.robot import SimRobot
from loopact.sim.session import open_sim
from loopact.sim.simulator import SimClock, Simulator
from loopact.sim.snapshot import write_snapshot
from loopact.sim.state import SimState

__all__ = ["SimClock", "SimRobot", "SimState", "Simulator", "open_sim", "write_snapshot"]
