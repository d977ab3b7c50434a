"""Offscreen rendering of the simulated camera and a top-down view (SPEC D6, F6).

GL contexts are bound to the thread that made them, so one dedicated render thread owns every
MuJoCo ``Renderer``. Callers hand it a consistent copy of the state (joint positions and the
simulated time, see :class:`~loopact.sim.simulator.SimState`); it renders into its own
``MjData`` so the physics thread is never touched. Results are cached by simulated timestamp:
two requests at the same sim time render once.

Rendering goes through Mesa llvmpipe on the CPU: ``MUJOCO_GL`` defaults to ``egl`` (``osmesa``
when EGL is missing) and ``LP_NUM_THREADS`` to 1, so the renderer leaves a core for the agent.
"""

from __future__ import annotations

import concurrent.futures
import ctypes.util
import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from loopact.errors import RobotError

logger = logging.getLogger(__name__)

RenderKind = Literal["rgb", "depth", "topdown"]

CAMERA_NAME = "head_camera"
TOPDOWN_NAME = "topdown"
TOPDOWN_SIZE = (880, 660)  # width, height in pixels


def _choose_gl_backend() -> str:
    """Pick ``egl`` if its library loads, else ``osmesa``; raise if neither is there."""
    for backend, lib in (("egl", "EGL"), ("osmesa", "OSMesa")):
        path = ctypes.util.find_library(lib)
        if path is None:
            continue
        try:
            ctypes.CDLL(path)
        except OSError:
            continue
        return backend
    raise RobotError(
        "no headless OpenGL backend for MuJoCo: install libegl1 + libegl-mesa0 (EGL) or "
        "libosmesa6 (OSMesa), or set MUJOCO_GL explicitly"
    )


def import_mujoco() -> Any:
    """Import MuJoCo after choosing a headless GL backend.

    Sets ``MUJOCO_GL`` (``egl``, falling back to ``osmesa``) and ``LP_NUM_THREADS=1`` only when
    they are unset; both must be decided before MuJoCo's rendering modules are imported.

    Returns:
        The ``mujoco`` module.

    Raises:
        RobotError: MuJoCo is not installed (the ``sim`` extra) or no GL backend is available.
    """
    if "MUJOCO_GL" not in os.environ:
        os.environ["MUJOCO_GL"] = _choose_gl_backend()
    os.environ.setdefault("LP_NUM_THREADS", "1")
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RobotError(
            f"MuJoCo is not importable ({exc}); install loopact[sim] (pip install mujoco)"
        ) from exc
    return mujoco


@dataclass
class _Request:
    kind: RenderKind
    qpos: npt.NDArray[np.float64]
    stamp_s: float
    future: concurrent.futures.Future[npt.NDArray[Any]]


class RenderWorker:
    """Owns the GL context and renders on one dedicated thread.

    Args:
        model: The ``mujoco.MjModel`` (shared read-only with the physics thread).
        width: Camera image width in pixels.
        height: Camera image height in pixels.
    """

    def __init__(self, model: Any, width: int, height: int) -> None:
        self._mujoco = import_mujoco()
        self._model = model
        self._width = width
        self._height = height
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: str | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.render_count = 0  # images actually rendered (cache hits excluded)

    def start(self, timeout_s: float = 30.0) -> None:
        """Start the render thread and create the GL contexts (blocking).

        Args:
            timeout_s: How long to wait for the GL contexts, in seconds.

        Raises:
            RobotError: The GL context could not be created.
        """
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="loopact-sim-render", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RobotError(f"simulator renderer did not start within {timeout_s:.0f} s")
        if self._error is not None:
            raise RobotError(self._error)

    def submit(
        self, kind: RenderKind, qpos: npt.NDArray[np.float64], stamp_s: float
    ) -> concurrent.futures.Future[npt.NDArray[Any]]:
        """Queue a render of the given state.

        Args:
            kind: ``rgb`` (HxWx3 uint8), ``depth`` (HxW float32 metres, NaN beyond the far
                plane) or ``topdown`` (RGB of the whole room from above).
            qpos: Joint positions to render (copied by the caller).
            stamp_s: Simulated time of that state, the cache key.

        Returns:
            A future with the image (a fresh array the caller may modify). It fails with
            :class:`RobotError` when rendering fails or the worker is closed.
        """
        fut: concurrent.futures.Future[npt.NDArray[Any]] = concurrent.futures.Future()
        with self._lock:
            if self._closed or self._thread is None:
                fut.set_exception(RobotError("simulator renderer is closed"))
                return fut
            self._queue.put(_Request(kind, qpos, stamp_s, fut))
        return fut

    def render_sync(
        self, kind: RenderKind, qpos: npt.NDArray[np.float64], stamp_s: float, timeout_s: float
    ) -> npt.NDArray[Any]:
        """Render and wait (for synchronous callers such as the snapshot writer).

        Raises:
            RobotError: Rendering failed or took longer than ``timeout_s`` seconds.
        """
        fut = self.submit(kind, qpos, stamp_s)
        try:
            return fut.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError as exc:
            raise RobotError(f"rendering {kind} took longer than {timeout_s} s") from exc

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the render thread and free the GL contexts; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("render thread did not stop within %.1f s", timeout_s)

    # -- render thread ------------------------------------------------------------------------

    def _run(self) -> None:
        mj = self._mujoco
        renderers: dict[str, Any] = {}
        try:
            data = mj.MjData(self._model)
            renderers["camera"] = mj.Renderer(self._model, self._height, self._width)
            renderers["depth"] = mj.Renderer(self._model, self._height, self._width)
            renderers["depth"].enable_depth_rendering()
            renderers["topdown"] = mj.Renderer(self._model, TOPDOWN_SIZE[1], TOPDOWN_SIZE[0])
        except Exception as exc:
            self._error = (
                f"cannot create the MuJoCo GL context (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): "
                f"{type(exc).__name__}: {exc}. Try MUJOCO_GL=osmesa with libosmesa6 installed."
            )
            for r in renderers.values():
                r.close()
            self._ready.set()
            return
        self._ready.set()
        cache: dict[str, tuple[float, npt.NDArray[Any]]] = {}
        far_m = float(self._model.vis.map.zfar * self._model.stat.extent)
        try:
            while True:
                req = self._queue.get()
                if req is None:
                    break
                if not req.future.set_running_or_notify_cancel():
                    continue
                try:
                    cached = cache.get(req.kind)
                    if cached is not None and cached[0] == req.stamp_s:
                        img = cached[1]
                    else:
                        img = self._render(mj, data, renderers, req, far_m)
                        cache[req.kind] = (req.stamp_s, img)
                        self.render_count += 1
                    req.future.set_result(img.copy())
                except Exception as exc:
                    req.future.set_exception(
                        RobotError(f"rendering {req.kind} failed: {type(exc).__name__}: {exc}")
                    )
        finally:
            for r in renderers.values():
                r.close()
            # Fail whatever is still queued.
            while True:
                try:
                    left = self._queue.get_nowait()
                except queue.Empty:
                    break
                if left is not None and left.future.set_running_or_notify_cancel():
                    left.future.set_exception(RobotError("simulator renderer is closed"))

    def _render(
        self,
        mj: Any,
        data: Any,
        renderers: dict[str, Any],
        req: _Request,
        far_m: float,
    ) -> npt.NDArray[Any]:
        data.qpos[:] = req.qpos
        data.time = req.stamp_s
        mj.mj_forward(self._model, data)
        if req.kind == "rgb":
            r = renderers["camera"]
            r.update_scene(data, CAMERA_NAME)
            rgb: npt.NDArray[np.uint8] = r.render()
            return rgb
        if req.kind == "depth":
            r = renderers["depth"]
            r.update_scene(data, CAMERA_NAME)
            depth = np.asarray(r.render(), dtype=np.float32)
            depth[depth >= far_m * 0.999] = np.nan
            return depth
        if req.kind == "topdown":
            r = renderers["topdown"]
            r.update_scene(data, TOPDOWN_NAME)
            top: npt.NDArray[np.uint8] = r.render()
            return top
        raise ValueError(f"unknown render kind {req.kind!r}")
