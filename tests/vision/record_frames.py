"""Record the frames in tests/vision/frames/ (``.venv/bin/python tests/vision/record_frames.py``).

Each ``.npz`` holds a 320x240 simulator frame (``rgb``), its depth in metres (``depth``,
float16), the ground-truth boxes of every object (``gt``, JSON) and the pose
``[x, y, yaw, pan, tilt]``. The pure vision tests run on them without a simulator.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np

from loopact.sim import SimRobot
from loopact.sim.describe import describe_world
from loopact.sim.groundtruth import object_bbox

SHOTS = {  # name: x, y, yaw (rad), tilt (deg)
    "start": (0.0, 0.0, 0.0, 15),
    "red_ahead": (1.5, -1.6, 0.0, 15),
    "line_ahead": (0.6, -1.1, 0.0, 20),
    "line_left": (1.0, -1.0, -0.25, 20),
    "corner": (3.2, -1.1, 0.0, 20),
}


async def main() -> None:
    out = Path(__file__).parent / "frames"
    robot = await SimRobot.create(speed=8.0, width=320, height=240)
    desc = describe_world()
    try:
        for name, (x, y, yaw, tilt) in SHOTS.items():
            await robot.set_head(0.0, math.radians(tilt))
            await robot.teleport(x, y, yaw)
            await robot.clock.sleep(1.0)
            frame, depth, st = await robot.get_frame(), await robot.get_depth(), robot.sim.state()
            gt = {
                o["name"]: object_bbox(
                    o, (st.x_m, st.y_m, st.yaw_rad), (st.pan_rad, st.tilt_rad), 320, 240
                )
                for o in desc["objects"]
            }
            np.savez_compressed(
                out / f"{name}.npz",
                rgb=frame.rgb,
                depth=depth.depth_m.astype(np.float16),
                gt=json.dumps(gt),
                pose=np.array([st.x_m, st.y_m, st.yaw_rad, st.pan_rad, st.tilt_rad]),
            )
    finally:
        await robot.close()


if __name__ == "__main__":
    asyncio.run(main())
