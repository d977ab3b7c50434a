"""What the arm tools need from an arm's controllers: :class:`ArmDriver` (issue 43, SPEC D1).

The shape of ros2_control's standard arm interfaces, without ROS: a joint trajectory
controller (``control_msgs/action/FollowJointTrajectory``: :meth:`ArmDriver.follow`,
:meth:`ArmDriver.cancel`), a parallel gripper controller
(``control_msgs/action/GripperCommand``: :meth:`ArmDriver.grip`) and the joint states
(``sensor_msgs/JointState``: :meth:`ArmDriver.read`). The simulator implements it
(:class:`loopact.sim.arm_driver.SimArmDriver`), and so does the ROS 2 client of a real arm's
controllers (:class:`loopact.robot.arm.ros2_client.Ros2ArmDriver`). A robot with an arm has
it as its ``arm`` attribute. Only the arm's governor (:class:`loopact.robot.arm.guard.ArmGuard`)
calls it.

Units: radians, rad/s, metres, seconds, newtons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class TrajectoryPoint:
    """One point of a joint trajectory (``trajectory_msgs/JointTrajectoryPoint``).

    Attributes:
        positions_rad: Joint positions, in the trajectory's joint order.
        velocities_radps: Joint speeds at the point, or None (the controller interpolates
            linearly).
        time_s: Time from the trajectory's start, seconds.
    """

    positions_rad: tuple[float, ...]
    velocities_radps: tuple[float, ...] | None
    time_s: float


@dataclass(frozen=True)
class JointTrajectory:
    """A joint trajectory (``trajectory_msgs/JointTrajectory``) for the arm controller.

    Attributes:
        joint_names: The joints, in the order of every point's values.
        points: The points, by increasing time.
    """

    joint_names: tuple[str, ...]
    points: tuple[TrajectoryPoint, ...]

    @property
    def duration_s(self) -> float:
        """Time of the last point, seconds (0 without points)."""
        return self.points[-1].time_s if self.points else 0.0


@dataclass(frozen=True)
class ArmReading:
    """The arm's joint states at one instant (``sensor_msgs/JointState``).

    Attributes:
        positions_rad: Arm joint positions, in the driver's :attr:`ArmDriver.joint_names`.
        velocities_radps: Their speeds.
        gap_m: Gap between the finger pads, metres.
        grip_effort_n: Force of the finger motors, newtons (0 when unknown).
        stamp_s: When it was measured, on the robot's clock.
        touching: Objects both fingers touch, when the arm can tell (the simulator's contact
            sensing); None when it cannot (a real gripper reports only its gap and effort).
    """

    positions_rad: tuple[float, ...]
    velocities_radps: tuple[float, ...]
    gap_m: float
    grip_effort_n: float
    stamp_s: float
    touching: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GoalOutcome:
    """Where a trajectory or gripper goal is (the action's result, once it ended).

    Attributes:
        done: Whether it ended.
        ok: It ended as asked (a trajectory: ``SUCCESSFUL``; a gripper goal: reached or
            stalled on something).
        code: FollowJointTrajectory's ``error_code`` (0 success, -4 path tolerance, ...).
        text: Its ``error_string``, or why it was cancelled.
        stalled: A gripper goal: the fingers stopped on something before the goal.
        reached: A gripper goal: the gap reached the goal.
    """

    done: bool
    ok: bool = False
    code: int = 0
    text: str = ""
    stalled: bool = False
    reached: bool = False


@runtime_checkable
class ArmDriver(Protocol):
    """An arm's controllers (see the module docstring).

    Attributes:
        joint_names: The arm controller's joints, base to tip.
    """

    joint_names: tuple[str, ...]

    async def follow(self, trajectory: JointTrajectory) -> int:
        """Send a trajectory goal (it replaces a running one); returns its id.

        Raises:
            RobotError: The controller refused the goal (the text says why) or is not there.
        """
        ...

    async def cancel(self) -> None:
        """Stop the running trajectory: the arm holds where it is (never raises for none)."""
        ...

    async def grip(self, gap_m: float, max_effort_n: float) -> int:
        """Send a gripper goal: the gap between the pads (metres), the largest force (N).

        Raises:
            RobotError: The controller refused it or is not there.
        """
        ...

    async def outcome(self, goal_id: int) -> GoalOutcome:
        """Where goal ``goal_id`` is (not done while it runs).

        Raises:
            RobotError: Unknown goal, or the controller is gone.
        """
        ...

    async def read(self) -> ArmReading:
        """The latest joint states.

        Raises:
            RobotError: No joint state has arrived.
        """
        ...
