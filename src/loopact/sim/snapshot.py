"""Write PNG snapshots of the simulated world (``loopact sim --snapshot DIR``; SPEC D6, F6).

Synchronous on purpose: the CLI calls it outside any event loop.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from PIL import Image

from loopact.errors import RobotError
from loopact.sim.render import RenderWorker
from loopact.sim.simulator import Simulator

logger = logging.getLogger(__name__)

SETTLE_S = 0.1  # simulated seconds to run before the snapshot
_WAIT_S = 30.0  # wall-clock limit for settling and each render


def write_snapshot(
    directory: Path, speed: float = float("inf"), width: int = 640, height: int = 480
) -> list[Path]:
    """Start the simulator, let it settle, and write the start view and a top-down view.

    Args:
        directory: Where to write; created if missing.
        speed: Simulator speed (simulated seconds per wall second) while settling.
        width: Camera width in pixels.
        height: Camera height in pixels.

    Returns:
        ``[directory/"camera.png", directory/"topdown.png"]``: the robot's camera view at the
        start pose (head centred, looking a little down) and the whole room from above.

    Raises:
        RobotError: MuJoCo or the GL context is unavailable, or rendering failed.
        OSError: The directory or files cannot be written.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sim = Simulator(speed=speed, width=width, height=height)
    renderer = RenderWorker(sim.model, width, height)
    try:
        renderer.start()
        sim.start()
        settled = threading.Event()
        while not settled.wait(0.005):
            if sim.now() >= SETTLE_S:
                settled.set()
            elif not sim.running:
                raise RobotError("simulator stopped before the snapshot")
        st = sim.state()
        camera = renderer.render_sync("rgb", st.qpos, st.stamp_s, _WAIT_S)
        top = renderer.render_sync("topdown", st.qpos, st.stamp_s, _WAIT_S)
    finally:
        sim.close()
        renderer.close()
    paths = [directory / "camera.png", directory / "topdown.png"]
    Image.fromarray(camera).save(paths[0])
    Image.fromarray(top).save(paths[1])
    logger.debug("wrote simulator snapshots to %s", directory)
    return paths
