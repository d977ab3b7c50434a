"""The console's live map in a real browser (issue 42 item 1, acceptance 2; SPEC F2, D3): the
robot is drawn where the simulator's ground truth has it while it moves, and a click on the
kitchen takes it there (an instruction the navigation tool carries out), graded by ground
truth. Headless Debian chromium, Playwright, a real Agent on the scripted model server, the
MuJoCo robot.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.agent.helpers import call, make_agent
from tests.channels.conftest import ARTIFACTS, NEEDS_BROWSER, open_console

from loopact.channels.web import serve_console

pytestmark = [*NEEDS_BROWSER, pytest.mark.asyncio(loop_scope="module")]

#: Where the page drew the robot (canvas pixels) and the map image (its rectangle on the
#: canvas), and the wall-clock window in which the server read that pose.
DRAWN = """() => {
  const m = window.loopactConsole.map;
  if (!m || !m.drawn || !m.drawn.robot || !m.drawn.image || !m.liveWindow) { return null; }
  return {robot: m.drawn.robot, image: m.drawn.image, window: m.liveWindow,
          updates: m.updates, path: (m.live.path || []).length};
}"""


def _on_the_map(drawn: dict[str, Any], grid: dict[str, Any]) -> tuple[float, float]:
    """The map point under the drawn robot, read off the drawn map image: its cell's place
    in the picture, so the robot is checked against the map as the operator sees it."""
    (px, py), img, res = drawn["robot"], drawn["image"], grid["resolution_m"]
    col = (px - img["left"]) / img["width"] * grid["width"]
    row = (img["top"] + img["height"] - py) / img["height"] * grid["height"]
    return grid["origin_x_m"] + col * res, grid["origin_y_m"] + row * res


@pytest_asyncio.fixture(loop_scope="module")
async def sim() -> AsyncIterator[Any]:
    sim_mod = pytest.importorskip("loopact.sim", reason="the simulator (loopact.sim) is missing")
    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("MuJoCo is missing: pip install -e '.[sim]'")
    session = await sim_mod.open_sim(speed=1.0, scenario="flat")  # rooms, doorways, a map
    try:
        yield session
    finally:
        await session.close()


class Truth:
    """The simulator's own base pose, sampled every 10 ms with the wall time (ms)."""

    def __init__(self, session: Any) -> None:
        robot = session.robot
        self.sim = getattr(robot, "sim", None) or robot.inner.sim
        self.samples: list[tuple[float, float, float]] = []
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            st = self.sim.state()
            self.samples.append((time.time() * 1000.0, st.x_m, st.y_m))
            await asyncio.sleep(0.01)

    def now(self) -> tuple[float, float]:
        st = self.sim.state()
        return st.x_m, st.y_m

    def nearest(self, x: float, y: float, window: list[float]) -> float:
        """The distance (m) from (x, y) to the truth in the window (± 50 ms)."""
        lo, hi = window[0] - 50.0, window[1] + 50.0
        near = [math.hypot(x - tx, y - ty) for t, tx, ty in self.samples if lo <= t <= hi]
        assert near, ("no ground truth sampled in the window", window)
        return min(near)

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def test_the_map_follows_the_robot_and_a_click_on_the_kitchen_takes_it_there(
    browser: Any, sim: Any, scripted_server: Any, tmp_path: Path
) -> None:
    kitchen = sim.site.waypoints["kitchen"]
    server = scripted_server(
        [
            {
                "tool_calls": [call("navigation", {"waypoint": "kitchen"}, "nav1")],
                "expect": {"last_user_contains": "kitchen"},
            },
            {"text": "I am in the kitchen."},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=sim.tools, stop_hooks=(sim.stop,))
    runner = asyncio.ensure_future(agent.run())
    web = await serve_console(agent, sim, port=0)
    truth = Truth(sim)
    try:
        page = await open_console(browser, web.port)
        info = await (await page.request.get(f"http://127.0.0.1:{web.port}/api/map")).json()
        grid = info["map"]
        assert grid is not None and grid["width"] > 50, info  # the flat's occupancy map
        cell_m = grid["resolution_m"]
        png = await page.request.get(f"http://127.0.0.1:{web.port}{grid['png']}")
        assert png.status == 200 and (await png.body())[:4] == b"\x89PNG"
        kitchen_zh = [p["zh"] for p in info["places"] if p["key"] == "kitchen"]
        assert kitchen_zh == ["厨房"] and info["fence"] and info["rooms"]
        await page.wait_for_function("window.loopactConsole.map.drawn && "
                                     "window.loopactConsole.map.drawn.places.kitchen")  # fmt: skip
        start = truth.now()

        # a click on the kitchen as drawn: the instruction appears in the chat as the user's
        at = await page.evaluate("window.loopactConsole.map.drawn.places.kitchen")
        box = await page.locator("#map").bounding_box()
        assert box is not None
        await page.mouse.click(box["x"] + at[0], box["y"] + at[1])
        await page.locator(".msg.user", has_text="Go to the kitchen.").wait_for()
        first = await rec.wait_for(lambda e: e.type == "task_start")
        assert first.data == {"text": "Go to the kitchen.", "source": "web"}

        # while it drives: the drawn robot is where the simulator has it, within one cell
        checked, last_updates, planned = 0, -1, 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not rec.of("tool_result"):
            drawn = await page.evaluate(DRAWN)
            moved = math.hypot(truth.now()[0] - start[0], truth.now()[1] - start[1])
            if drawn and drawn["updates"] != last_updates and moved > 0.1:
                last_updates = drawn["updates"]
                x, y = _on_the_map(drawn, grid)
                off = truth.nearest(x, y, drawn["window"])
                assert off <= cell_m, (drawn, off, cell_m)
                checked += 1
                planned = max(planned, drawn["path"])
            await asyncio.sleep(0.05)
        assert checked >= 5 and planned >= 2, (checked, planned)  # the planned path drawn
        # the call's card: what it does, and how far it has come as a live figure
        card = page.locator('.event.tool-call[data-tool="navigation"]')
        await card.locator(".tool-said", has_text="Going to kitchen").wait_for()
        result = await rec.wait_for(lambda e: e.type == "tool_result", timeout=60)
        assert result.data["ok"], result.data
        await page.locator(".event.end.completed").wait_for(timeout=60_000)
        assert float(await card.get_attribute("data-fraction") or 0) > 0.5  # the bar moved
        x, y = truth.now()
        assert math.hypot(x - kitchen.x_m, y - kitchen.y_m) < 0.35, (x, y, kitchen)
        assert y < -0.85  # in the kitchen, through its doorway (the flat's rooms)
        await page.wait_for_function(
            "window.loopactConsole.map.trail.length > 10"
        )  # the trajectory is drawn
        # zoom in, then drag: the view changes, the robot stays on its cell, and a drag is
        # not a click (no new instruction)
        scale = await page.evaluate("window.loopactConsole.map.view.scale")
        await page.click("#zoom-in")
        zoomed = await page.evaluate("window.loopactConsole.map.view.scale")
        assert zoomed > scale * 1.3
        cx = await page.evaluate("window.loopactConsole.map.view.cx")
        await page.mouse.move(box["x"] + 100, box["y"] + 100)
        await page.mouse.down()
        await page.mouse.move(box["x"] + 160, box["y"] + 120, steps=5)
        await page.mouse.up()
        assert await page.evaluate("window.loopactConsole.map.view.cx") < cx - 0.1
        seen = await page.evaluate("window.loopactConsole.map.updates")
        await page.wait_for_function("u => window.loopactConsole.map.updates > u + 1", arg=seen)
        drawn = await page.evaluate(DRAWN)
        x, y = _on_the_map(drawn, grid)
        assert math.hypot(x - truth.now()[0], y - truth.now()[1]) <= cell_m, (drawn, truth.now())
        assert await page.locator(".msg.user").count() == 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await page.locator("#panel-map").screenshot(path=str(ARTIFACTS / "console-map.png"))
        await page.close()
    finally:
        await truth.close()
        await web.stop()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
