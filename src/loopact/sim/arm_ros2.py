"""``loopact sim --ros2 --scenario arm``: the simulated arm's controllers on ROS 2 (issue 43).

The arm scene's arm speaks what a real arm's ros2_control controllers speak, with the names of
the hardware profile's ``arm.controllers``:

- ``control_msgs/action/FollowJointTrajectory`` (``arm_controller/follow_joint_trajectory``),
  like a ``joint_trajectory_controller``: a new goal replaces the running one (which aborts,
  "replaced by a new goal"), a cancel holds the arm where it is, a goal the controller cannot
  run aborts ``INVALID_GOAL`` / ``INVALID_JOINTS`` with the reason in ``error_string``, a
  goal that leaves its path aborts ``PATH_TOLERANCE_VIOLATED``;
- ``control_msgs/action/GripperCommand`` (``gripper_controller/gripper_cmd``), like a
  ``gripper_action_controller``: ends when the gap is reached or the fingers stall on
  something (``stalled``), with the gap and the effort;
- ``sensor_msgs/JointState`` (``joint_states``) with the arm's joints and the two fingers'
  (each finger at half the gap).

The goals go to the simulator's controllers (:class:`~loopact.sim.arm_sim.ArmPhysics`), which
are thread-safe: each goal's ``execute`` runs on an executor thread and follows its goal.
:attr:`SimArmRos2Server.goals` counts the goals that arrived, by action.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from loopact.nodes.ros2.connector import Ros2Connector
from loopact.nodes.ros2.convert import set_stamp
from loopact.nodes.ros2.interfaces import ros_types
from loopact.robot.profile import ArmConfig
from loopact.sim.arm_sim import ARM_JOINTS, FINGER_JOINTS, ArmPhysics, GoalRefused

logger = logging.getLogger(__name__)

POLL_S = 0.01
"""Wall-clock seconds between two looks at a running goal."""
INVALID_GOAL = -1


class SimArmRos2Server:
    """Serve the simulated arm's controllers (see the module docstring).

    Args:
        robot: The simulated robot (``loopact.sim.SimRobot``) of the arm scene.
        connector: The simulator's ROS 2 connector (started).
        cfg: The profile's arm (the controllers' names).
        joint_hz: Joint-state publishing rate, Hz.
    """

    def __init__(
        self, robot: Any, connector: Ros2Connector, cfg: ArmConfig, joint_hz: float = 50.0
    ) -> None:
        arm = robot.sim.arm
        if arm is None:
            raise ValueError("the simulated scenario has no arm (--scenario arm)")
        self.robot = robot
        self.arm: ArmPhysics = arm
        self.connector = connector
        self.cfg = cfg
        self.joint_hz = joint_hz
        self.goals = {"trajectory": 0, "gripper": 0}
        self._servers: list[Any] = []
        self._task: asyncio.Task[None] | None = None
        self._pub: Any = None

    async def start(self) -> None:
        """Create the two action servers and start publishing the joint states."""
        FJT, GC = ros_types("control_msgs.action", "FollowJointTrajectory", "GripperCommand")
        JointState = ros_types("sensor_msgs.msg", "JointState")
        c, names = self.connector, self.cfg.controllers
        self._servers = [
            c.action_server(FJT, names.trajectory_action, self._execute_trajectory),
            c.action_server(GC, names.gripper_action, self._execute_gripper),
        ]
        self._pub = c.publisher(JointState, names.joint_states, c.qos(depth=20))
        self._task = asyncio.get_running_loop().create_task(
            self._joint_loop(), name="loopact-sim-arm-joints"
        )
        logger.info(
            "arm controllers on ROS 2: %s, %s", names.trajectory_action, names.gripper_action
        )

    async def close(self) -> None:
        """Stop publishing, destroy the servers and hold the arm where it is."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for server in self._servers:
            self.connector.destroy_action(server)
        self.arm.cancel()

    # ---- FollowJointTrajectory --------------------------------------------------------------

    def _execute_trajectory(self, goal_handle: Any) -> Any:
        FJT = ros_types("control_msgs.action", "FollowJointTrajectory")
        self.goals["trajectory"] += 1
        traj = goal_handle.request.trajectory
        names = [str(n) for n in traj.joint_names]
        times = [p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in traj.points]
        positions = [list(p.positions) for p in traj.points]
        vels = [list(p.velocities) for p in traj.points]
        velocities = vels if vels and all(len(v) == len(names) for v in vels) else None
        try:
            goal_id = self.arm.follow(names, times, positions, velocities)
        except GoalRefused as exc:
            goal_handle.abort()
            return FJT.Result(error_code=exc.code, error_string=str(exc))
        except (ValueError, TypeError) as exc:
            goal_handle.abort()
            return FJT.Result(error_code=INVALID_GOAL, error_string=str(exc))
        status = self._wait(goal_handle, goal_id)
        if status is None:  # cancelled by the client: the arm holds where it is
            goal_handle.canceled()
            return FJT.Result(error_code=0, error_string="cancelled")
        if status.state == "succeeded":
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return FJT.Result(error_code=int(status.code), error_string=status.text)

    # ---- GripperCommand ---------------------------------------------------------------------

    def _execute_gripper(self, goal_handle: Any) -> Any:
        GC = ros_types("control_msgs.action", "GripperCommand")
        self.goals["gripper"] += 1
        cmd = goal_handle.request.command
        try:
            goal_id = self.arm.gripper(float(cmd.position), float(cmd.max_effort))
        except ValueError:
            goal_handle.abort()
            return self._gripper_result(GC, False, False)
        status = self._wait(goal_handle, goal_id)
        if status is None:
            goal_handle.canceled()
            return self._gripper_result(GC, False, False)
        if status.state == "succeeded":
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return self._gripper_result(GC, status.stalled, status.reached)

    def _gripper_result(self, GC: Any, stalled: bool, reached: bool) -> Any:
        st = self.robot.sim.state().arm
        res = GC.Result()
        res.position = float(st.gap_m) if st is not None else 0.0
        res.effort = float(st.grip_force_n) if st is not None else 0.0
        res.stalled, res.reached_goal = bool(stalled), bool(reached)
        return res

    def _wait(self, goal_handle: Any, goal_id: int) -> Any:
        """Follow goal ``goal_id`` to its end; None when the client cancelled it."""
        while True:
            status = self.arm.status(goal_id)
            if status.done:
                return status
            if goal_handle.is_cancel_requested:
                self.arm.cancel(goal_id)
                return None
            if not goal_handle.is_active:
                return status
            time.sleep(POLL_S)

    # ---- JointState -------------------------------------------------------------------------

    async def _joint_loop(self) -> None:
        JointState = ros_types("sensor_msgs.msg", "JointState")
        period = 1.0 / self.joint_hz
        while True:
            st = self.robot.sim.state().arm
            if st is not None:
                js = JointState()
                set_stamp(js.header, time.time())
                js.name = [*ARM_JOINTS, *FINGER_JOINTS]
                half = float(st.gap_m) / 2
                js.position = [*(float(q) for q in st.positions_rad), half, half]
                js.velocity = [*(float(v) for v in st.velocities_radps), 0.0, 0.0]
                force = float(st.grip_force_n)
                js.effort = [0.0] * len(ARM_JOINTS) + [force, force]
                self._pub.publish(js)
            await asyncio.sleep(period)
