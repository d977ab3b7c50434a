"""Build the arm's kinematics, rules, guard and tools for a session (issue 43)."""

from __future__ import annotations

from loopact.robot.arm.driver import ArmDriver
from loopact.robot.arm.guard import ArmGuard
from loopact.robot.arm.kinematics import ArmKinematics, read_description
from loopact.robot.arm.planner import Planner
from loopact.robot.arm.rules import ArmRules
from loopact.robot.arm.tools import ArmTools, make_arm_tools
from loopact.robot.motion import RobotEnv
from loopact.tools.base import Tool
from loopact.vision.detect import ColorRanges


def arm_tools(env: RobotEnv, driver: ArmDriver, colours: ColorRanges) -> list[Tool]:
    """The arm tools of a robot whose profile has an ``arm`` (kinematics from its description).

    Raises:
        ConfigError: The description cannot be read or lacks what the profile names.
    """
    cfg = env.profile.arm
    assert cfg is not None
    kin = ArmKinematics(read_description(cfg.description), cfg)
    rules = ArmRules(kin, cfg)
    guard = ArmGuard(driver, rules, env.governor)
    return make_arm_tools(ArmTools(env, guard, Planner(kin, rules), colours))
