"""Write PNG snapshots of the simulated world (``loopact sim --snapshot DIR``; SPEC D6, F6).

``camera.png`` (the start view), ``topdown.png`` (the world from above) and ``map.png`` (the
simulator's own map as ``show_map`` draws it: places, objects, the robot; issue 40). With
``--sim-log FILE`` it also draws the logged trajectory (the robot's path, and the paths of the
scenario's moving objects) over the top-down view as ``trajectory.png``, and the path driven on
``map.png``: pictures a person can look at after a run. Synchronous on purpose: the CLI calls
it outside any event loop.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from loopact.errors import RobotError
from loopact.sim import world, worlds
from loopact.sim.render import TOPDOWN_SIZE, RenderWorker
from loopact.sim.scenarios import get_scenario
from loopact.sim.simlog import read_sim_log
from loopact.sim.simulator import Simulator

logger = logging.getLogger(__name__)

SETTLE_S = 0.1  # simulated seconds to run before the snapshot
_WAIT_S = 30.0  # wall-clock limit for settling and each render
_PATH_RGB = (255, 120, 0)  # colours of the drawing (RGB)
_MOVER_RGB = (20, 20, 20)


def write_snapshot(
    directory: Path,
    speed: float = float("inf"),
    width: int = 640,
    height: int = 480,
    scenario: str = "default",
    sim_log: Path | None = None,
) -> list[Path]:
    """Start the simulator, let it settle, and write the start view, a top-down view and the map.

    Args:
        directory: Where to write; created if missing.
        speed: Simulator speed (simulated seconds per wall second) while settling.
        width: Camera width in pixels.
        height: Camera height in pixels.
        scenario: The scenario to show (``default``, ``moving-target``).
        sim_log: A ``--sim-log`` file whose trajectory to draw into ``trajectory.png``.

    Returns:
        ``[directory/"camera.png", directory/"topdown.png", directory/"map.png"]``: the robot's
        camera view at the start pose (head centred, looking a little down), the whole world
        from above and its map (with the path driven when ``sim_log`` is given); then
        ``directory/"trajectory.png"`` when ``sim_log`` is given.

    Raises:
        RobotError: MuJoCo or the GL context is unavailable, or rendering failed.
        ConfigError: Unknown scenario.
        OSError: The directory or files cannot be written, or the sim log cannot be read.
        ValueError: A line of the sim log is not a pose sample (a trace, say: named with
            its line), or the log holds none.
    """
    directory = Path(directory)
    samples = list(read_sim_log(sim_log)) if sim_log is not None else None  # checked poses
    if samples is not None and not samples:
        raise ValueError(f"{sim_log} holds no poses (JSON Lines with t_s, x_m, y_m, yaw_deg)")
    directory.mkdir(parents=True, exist_ok=True)
    sim = Simulator(speed=speed, width=width, height=height, scenario=scenario)
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
    paths = [directory / "camera.png", directory / "topdown.png", directory / "map.png"]
    Image.fromarray(camera).save(paths[0])
    Image.fromarray(top).save(paths[1])
    Image.fromarray(draw_map(scenario, samples)).save(paths[2])
    if samples is not None:
        paths.append(directory / "trajectory.png")
        bounds = worlds.bounds(get_scenario(scenario))
        Image.fromarray(draw_trajectory(top, samples, bounds)).save(paths[3])
    logger.debug("wrote simulator snapshots to %s", directory)
    return paths


def draw_map(scenario: str, samples: list[dict[str, Any]] | None) -> npt.NDArray[np.uint8]:
    """The scenario's map (:func:`loopact.sim.worldmap.world_map`) drawn as ``show_map`` draws
    it: the places, the objects, the robot at its last logged pose (else its start) and the
    path it drove (the logged poses) in orange."""
    import math

    from loopact.maps.draw import MapMark, render_map
    from loopact.robot.profile import load_site
    from loopact.sim.describe import describe_world
    from loopact.sim.worldmap import world_map

    sc = get_scenario(scenario)
    desc = describe_world(sc)
    site = load_site(sc.site)
    places = [MapMark(k, w.x_m, w.y_m) for k, w in site.waypoints.items()]
    objects = [
        MapMark(
            o["name"].replace("_", " "), o["position_m"]["x_m"], o["position_m"]["y_m"], o["colour"]
        )
        for o in desc["objects"]
    ]
    path = [(float(p["x_m"]), float(p["y_m"])) for p in samples or []]
    last = samples[-1] if samples else {"x_m": 0.0, "y_m": 0.0, "yaw_deg": 0.0}
    pose = (float(last["x_m"]), float(last["y_m"]), math.radians(float(last.get("yaw_deg", 0.0))))
    driven = sum(math.dist(a, b) for a, b in zip(path, path[1:], strict=False))
    caption = f"{sc.name}: {driven:.2f} m driven" if path else sc.name
    return render_map(world_map(sc), pose, path, places, objects, caption=caption)


def _pixels(
    points: list[tuple[float, float]], bounds: world.Bounds | None = None
) -> npt.NDArray[np.int32]:
    uv = [world.topdown_pixel(x, y, TOPDOWN_SIZE, bounds) for x, y in points]
    out: npt.NDArray[np.int32] = np.array(uv).round().astype(np.int32).reshape(-1, 1, 2)
    return out


def draw_trajectory(
    top: npt.NDArray[np.uint8],
    samples: list[dict[str, Any]],
    bounds: world.Bounds | None = None,
) -> npt.NDArray[np.uint8]:
    """The top-down image with the logged robot path and mover paths drawn on it.

    Args:
        top: The top-down render (RGB, :data:`~loopact.sim.render.TOPDOWN_SIZE`).
        samples: ``--sim-log`` lines as :func:`~loopact.sim.simlog.read_sim_log` checked
            them (``x_m``, ``y_m`` in m, ``yaw_deg``, ``objects``).
        bounds: The floor's bounds of the world (default: the room's).

    Returns:
        A new RGB image: the robot's path in orange with a green start dot and a red end
        arrow, each mover's path in dark grey, and a caption with the duration and length.
    """
    import math

    import cv2

    img = np.ascontiguousarray(top.copy())
    poses = [(float(s["x_m"]), float(s["y_m"])) for s in samples]
    movers: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        for name, p in (s.get("objects") or {}).items():
            movers.setdefault(name, []).append((float(p["x_m"]), float(p["y_m"])))
    for pts in movers.values():
        if len(pts) > 1:
            cv2.polylines(img, [_pixels(pts, bounds)], False, _MOVER_RGB, 1, cv2.LINE_AA)
    if len(poses) > 1:
        cv2.polylines(img, [_pixels(poses, bounds)], False, _PATH_RGB, 2, cv2.LINE_AA)
    if poses:
        start = tuple(int(v) for v in _pixels(poses[:1], bounds)[0, 0])
        cv2.circle(img, start, 6, (0, 170, 0), -1, cv2.LINE_AA)
        last = samples[-1]
        yaw = math.radians(float(last.get("yaw_deg", 0.0)))
        tip_m = (poses[-1][0] + 0.3 * math.cos(yaw), poses[-1][1] + 0.3 * math.sin(yaw))
        a, b = _pixels([poses[-1], tip_m], bounds)[:, 0]
        cv2.arrowedLine(
            img,
            tuple(int(v) for v in a),
            tuple(int(v) for v in b),
            (220, 0, 0),
            2,
            cv2.LINE_AA,
            tipLength=0.35,
        )
        length = sum(math.dist(p, q) for p, q in zip(poses, poses[1:], strict=False))
        t0, t1 = float(samples[0].get("t_s", 0.0)), float(samples[-1].get("t_s", 0.0))
        _caption(img, f"{t1 - t0:.1f} s, {length:.2f} m driven ({len(poses)} poses)")
    return img


_CAPTION_SCALE = 0.6  # of cv2's FONT_HERSHEY_SIMPLEX: about 13 px tall
_CAPTION_PAD_PX = 6
_CAPTION_AT_PX = (6, 4)  # top-left corner of the caption's box
_CAPTION_BOX_RGB = (32, 32, 32)


def _caption_box(text: str) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` pixels of the dark box :func:`draw_trajectory` writes
    its caption ``text`` in (top left of the image)."""
    import cv2

    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, _CAPTION_SCALE, 1)
    left, top = _CAPTION_AT_PX
    return left, top, left + w + 2 * _CAPTION_PAD_PX, top + h + base + 2 * _CAPTION_PAD_PX


def _caption(img: npt.NDArray[np.uint8], text: str) -> None:
    """White text on a dark box, legible over the light margin, the wall or the path (a
    thick black copy under a thin white one, on the light margin, read as a smudge)."""
    import cv2

    left, top, right, bottom = _caption_box(text)
    base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, _CAPTION_SCALE, 1)[1]
    cv2.rectangle(img, (left, top), (right, bottom), _CAPTION_BOX_RGB, -1)
    origin = (left + _CAPTION_PAD_PX, bottom - _CAPTION_PAD_PX - base)  # the text's baseline
    white = (255, 255, 255)
    cv2.putText(img, text, origin, cv2.FONT_HERSHEY_SIMPLEX, _CAPTION_SCALE, white, 1, cv2.LINE_AA)
