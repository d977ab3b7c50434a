"""The simulated arm's controllers behind :class:`~loopact.robot.arm.driver.ArmDriver`.

:class:`SimArmDriver` hands goals to :class:`~loopact.sim.arm_sim.ArmPhysics` (the physics
thread's joint trajectory and gripper controllers) and reads the joint states and the contact
sensing of the fingers from the simulator's state (issue 43, SPEC D1, D6). Units: radians,
metres, seconds, newtons.
"""

from __future__ import annotations

from loopact.errors import RobotError
from loopact.robot.arm.driver import ArmReading, GoalOutcome, JointTrajectory
from loopact.sim.arm_sim import ARM_JOINTS, ArmPhysics, GoalRefused
from loopact.sim.simulator import Simulator


class SimArmDriver:
    """The arm of a :class:`Simulator` in the arm scene (see the module docstring).

    Args:
        sim: The simulator (its :attr:`Simulator.arm` must be set).

    Raises:
        RobotError: The scenario has no arm.
    """

    joint_names: tuple[str, ...] = ARM_JOINTS

    def __init__(self, sim: Simulator) -> None:
        if sim.arm is None:
            raise RobotError("this simulated scenario has no arm (--scenario arm)")
        self._sim = sim
        self._arm: ArmPhysics = sim.arm

    async def follow(self, trajectory: JointTrajectory) -> int:
        """Send a trajectory goal (``FollowJointTrajectory``); returns its id.

        Raises:
            RobotError: The controller refused it (its error string says why).
        """
        pts = trajectory.points
        vels = [list(p.velocities_radps) for p in pts if p.velocities_radps is not None]
        try:
            return self._arm.follow(
                list(trajectory.joint_names),
                [p.time_s for p in pts],
                [list(p.positions_rad) for p in pts],
                vels if len(vels) == len(pts) else None,
            )
        except GoalRefused as exc:
            raise RobotError(f"the arm controller refused the trajectory: {exc}") from None

    async def cancel(self) -> None:
        """Stop the running trajectory: the arm holds where it is."""
        self._arm.cancel()

    async def grip(self, gap_m: float, max_effort_n: float) -> int:
        """Send a gripper goal (``GripperCommand``: gap in metres, largest force in newtons).

        Raises:
            RobotError: A value is not finite or the effort not positive.
        """
        try:
            return self._arm.gripper(gap_m, max_effort_n)
        except ValueError as exc:
            raise RobotError(str(exc)) from None

    async def outcome(self, goal_id: int) -> GoalOutcome:
        """Where goal ``goal_id`` is.

        Raises:
            RobotError: Unknown goal.
        """
        try:
            s = self._arm.status(goal_id)
        except KeyError:
            raise RobotError(f"no arm goal {goal_id}") from None
        ok = s.state == "succeeded"
        return GoalOutcome(s.done, ok, s.code, s.text, s.stalled, s.reached)

    async def read(self) -> ArmReading:
        """The latest joint states (and which objects both fingers touch)."""
        st = self._sim.state()
        truth = st.arm
        if truth is None:
            raise RobotError("the simulated arm has no state yet")
        return ArmReading(
            truth.positions_rad,
            truth.velocities_radps,
            truth.gap_m,
            truth.grip_force_n,
            st.stamp_s,
            truth.held,
        )
