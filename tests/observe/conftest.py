"""Fixtures of the observe tests: the robot rig of tests/robot (real MuJoCo SimRobot)."""

from __future__ import annotations

from tests.robot.conftest import rig

__all__ = ["rig"]
