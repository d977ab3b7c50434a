"""Fixtures for robot tests (real MuJoCo SimRobot)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.robot.rig import Rig, make_rig


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    r = await make_rig()
    try:
        yield r
    finally:
        await r.governor.close()
        await r.robot.close()
