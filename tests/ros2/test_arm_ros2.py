"""Issue 43 acceptance 2: the arm task through ros2_control's interfaces, each side in its own
process (SPEC D1, D6, X3).

``loopact sim --ros2 --scenario arm`` serves the arm's controllers
(``control_msgs/action/FollowJointTrajectory``, ``control_msgs/action/GripperCommand``,
``sensor_msgs/JointState``); ``loopact run --robot ros2 --profile sim_arm`` runs the agent,
whose arm is the ROS 2 client (robot/arm/ros2_client.py): no simulator in the agent's process.
The scripted model asks for ``pick`` and ``place``; ground truth (the simulator's sim log)
grades where the cube ends, and the simulator counts the goals that came over the actions.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.robot.arm.test_arm_sim import in_bin

from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.ros2_e2e  # also run alone by `make test-ros2-e2e`


def test_put_the_red_cube_in_the_bin_over_the_arm_controllers_actions(
    spawn: Any, scripted_server: Any, tmp_path: Path
) -> None:
    pytest.importorskip("control_msgs.action", reason="control_msgs: make ros2")
    log = tmp_path / "sim.jsonl"
    sim = spawn(
        *("sim", "--ros2", "--scenario", "arm", "--camera-hz", "10", "--sim-log", str(log)),
        log="sim",
    )
    sim.wait_output("arm controllers", timeout=90)
    server = scripted_server(
        [
            {"tool_calls": [call("pick", {"target": "red cube"})]},
            {"tool_calls": [call("place", {"target": "bin"})]},
            {"text": "The red cube is in the bin."},
        ]
    )
    agent = spawn(
        *("run", "--robot", "ros2", "--profile", "sim_arm", "--site", "arm_room"),
        *("--once", "put the red cube in the bin", "--yes", "--no-web", "--no-memory"),
        *("--base-url", server.base_url, "--model", "scripted", "--api-key", "sk-test"),
        *("--workspace", str(tmp_path / "ws")),
        log="agent",
    )
    try:
        code = agent.popen.wait(timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent did not finish in 240 s: {agent.output()[-3000:]}")
    assert code == 0, agent.output()[-3000:]
    sim.stop()
    out = sim.output()
    assert "arm goals received:" in out, out[-2000:]
    counts = out.split("arm goals received:")[1].split("\n")[0]
    trajectories = int(counts.split("FollowJointTrajectory")[0].strip())
    grips = int(counts.split(",")[1].split("GripperCommand")[0].strip())
    assert trajectories >= 4 and grips >= 2, (counts, agent.output()[-3000:])  # approach, lift,
    # carry, lower; close, open
    samples = list(read_sim_log(log))
    start, end = samples[0]["objects"]["red_cube"], samples[-1]["objects"]["red_cube"]
    assert not in_bin(start) and in_bin(end), (start, end, agent.output()[-2000:])
    heights = [s["objects"]["red_cube"]["z_m"] for s in samples]
    top = heights.index(max(heights))
    assert min(heights[top:]) > end["z_m"] - 0.005, "the cube fell below where it ended"


async def test_the_arm_client_says_what_is_missing_when_no_controller_answers(
    ros: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No joint states, no action server: each call is a RobotError naming what is missing
    (never a hang), and a non-finite gripper goal is refused before it is sent."""
    pytest.importorskip("control_msgs.action", reason="control_msgs: make ros2")
    from loopact.errors import RobotError
    from loopact.robot.arm import ros2_client
    from loopact.robot.arm.driver import JointTrajectory, TrajectoryPoint
    from loopact.robot.profile import load_profile
    from loopact.robot.ros2_robot import WallClock

    monkeypatch.setattr(ros2_client, "SERVER_WAIT_S", 0.5)
    cfg = load_profile("sim_arm").arm
    assert cfg is not None
    cfg = cfg.model_copy(
        update={
            "controllers": cfg.controllers.model_copy(
                update={
                    "trajectory_action": "nobody/follow_joint_trajectory",
                    "gripper_action": "nobody/gripper_cmd",
                    "joint_states": "nobody/joint_states",
                }
            )
        }
    )
    driver = await ros2_client.open_arm_client(ros, cfg, WallClock())
    try:
        with pytest.raises(RobotError, match="no joint state from 'nobody/joint_states'"):
            await driver.read()
        point = TrajectoryPoint(tuple(cfg.home_rad), None, 1.0)
        with pytest.raises(RobotError, match="nobody/follow_joint_trajectory' is not there"):
            await driver.follow(JointTrajectory(tuple(cfg.joints), (point,)))
        with pytest.raises(RobotError, match="finite"):
            await driver.grip(float("nan"), 5.0)
        with pytest.raises(RobotError, match="no arm goal 7"):
            await driver.outcome(7)
        await driver.cancel()  # nothing running: a no-op
    finally:
        driver.close()
