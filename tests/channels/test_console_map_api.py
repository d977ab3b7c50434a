"""The console's map endpoints on the simulated robot (issue 42 item 1; SPEC D3, F2): the
objects perception located are on the live map where the simulator's world has them; the
grid's picture is the map; no robot, no map."""

from __future__ import annotations

import importlib.util
import io
import math
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.agent.helpers import make_agent

from loopact.channels.web import serve_console

pytestmark = pytest.mark.sim


async def test_located_objects_are_on_the_live_map_where_the_world_has_them(
    scripted_server: Any, tmp_path: Path
) -> None:
    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("MuJoCo is missing: pip install -e '.[sim]'")
    from PIL import Image as PILImage

    from loopact.sim import open_sim
    from loopact.sim.describe import describe_world

    session = await open_sim(speed=4.0)
    agent, _rec = make_agent(scripted_server([]), tmp_path, tools=session.tools)
    web = await serve_console(agent, session, port=0)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=20) as c:
            live = (await c.get("/api/map/live")).json()
            assert live["objects"] == [] and live["pose"]["x_m"] == pytest.approx(0, abs=0.05)
            tools = {t.name: t for t in session.tools}
            seen = await tools["detect_objects"]()  # type: ignore[operator]
            assert seen.ok, seen.error
            live = (await c.get("/api/map/live")).json()
            world = {o["colour"]: o for o in describe_world()["objects"]}
            # graded: the coloured objects of the world (a brown table is furniture)
            graded = [o for o in live["objects"] if o["colour"] in world]
            assert graded, ("perception located none of the world's objects", live["objects"])
            for obj in graded:
                truth, size = world[obj["colour"]]["position_m"], world[obj["colour"]]["size_m"]
                # near the world's object (perception's own accuracy is issue 40's: here the
                # visible surface, up to 5 m away, 0.43 m short was measured)
                off = math.hypot(obj["x_m"] - truth["x_m"], obj["y_m"] - truth["y_m"])
                assert off < max(size["x_m"], size["y_m"]) / 2 + 0.4, (obj, truth, size)
            # exactly what the session's memory holds
            held = [(o.name, o.x_m, o.y_m) for o in session.located.all()]
            assert [(o["name"], o["x_m"], o["y_m"]) for o in live["objects"]] == held

            info = (await c.get("/api/map")).json()
            grid = info["map"]
            png = await c.get(grid["png"])
            picture = PILImage.open(io.BytesIO(png.content))
            assert picture.size == (grid["width"], grid["height"])
            # the robot's start cell is free (white); the top row is the largest y
            res, ox, oy = grid["resolution_m"], grid["origin_x_m"], grid["origin_y_m"]
            col, row = int((0 - ox) / res), grid["height"] - 1 - int((0 - oy) / res)
            assert picture.getpixel((col, row)) == 255
    finally:
        await web.stop()
        await agent.close()
        await session.close()

    bare, _ = make_agent(scripted_server([]), tmp_path / "bare")
    web = await serve_console(bare, None, port=0)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=20) as c:
            for path in ("/api/map", "/api/map.png", "/api/map/live"):
                got = await c.get(path)
                assert got.status_code == 404 and "no robot" in got.json()["detail"], path
    finally:
        await web.stop()
        await bare.close()
