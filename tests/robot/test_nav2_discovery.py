"""Nav2's action server found by a goal sent right after start-up (issue 40 item 5).

DDS discovery of an action server takes seconds on a busy machine (CI failed on it: the first
goal, 1 s after start, went to loopact's planner while Nav2 was running). The client here is a
stand-in for rclpy's ``ActionClient`` whose server is discovered on its n-th poll, so the
window is tested without timing the machine.
"""

from __future__ import annotations

import time

from loopact.robot.navigation.nav2 import DISCOVERY_S, Nav2Backend


class LateServer:
    """``server_is_ready()`` turns True on poll ``found_on`` (never when it is 0)."""

    def __init__(self, found_on: int) -> None:
        self.found_on = found_on
        self.polls = 0

    def server_is_ready(self) -> bool:
        self.polls += 1
        return self.found_on > 0 and self.polls >= self.found_on


def backend(client: LateServer, created_ago_s: float) -> Nav2Backend:
    nav2 = Nav2Backend(connector=None)
    nav2._client = client
    nav2._created_s = time.monotonic() - created_ago_s
    return nav2


async def test_a_goal_right_after_start_up_waits_for_discovery() -> None:
    client = LateServer(found_on=30)  # 30 polls of 20 ms: past a 0 s probe
    assert await backend(client, created_ago_s=0.0).server_ready(0.0)
    assert client.polls == 30


async def test_after_the_window_the_probe_alone_decides() -> None:
    client = LateServer(found_on=0)
    assert not await backend(client, created_ago_s=DISCOVERY_S + 1).server_ready(0.0)
    assert client.polls == 1  # no waiting: the window is over and the probe is 0 s
