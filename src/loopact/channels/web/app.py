"""The web console app (SPEC F2, F6, A8, C5): chat, live camera, settings.

:func:`create_app` builds a FastAPI app around a running agent. Pages are server-rendered
HTML with a little vendored plain JavaScript (``static/``, no build step, nothing fetched from
the internet). Routes::

    GET  /                      chat page          GET  /settings          settings page
    WS   /ws                    events (trace events + text_delta, Event.to_json())
    POST /api/message           {text, image_ids} -> agent.submit(text, images, source="web")
    POST /api/stop              agent.stop(source="web")       POST /api/reset   agent.reset()
    POST /api/confirm           {id, allow} -> agent.answer_confirmation(id, allow, source="web")
    POST /api/upload            multipart "file" -> image gate -> {id, ...} or 422 {detail};
                                413 before reading a body over the limit (limits.BodyLimit)
    GET  /api/status            agent.status() + robot pose
    GET  /api/settings          settings with the API key as "set"/"not set"
    POST /api/settings          validate -> on_settings(new) -> 200 or 422 {errors: {field: msg}}
    GET  /api/camera/frame.jpg  newest camera frame (rendered on demand)
    GET  /camera.mjpg           multipart MJPEG stream
    GET  /images/{call_id}/{n}.jpg   the n-th image a tool call returned (agent.last_images)
    GET  /images/{call_id}/shown/{n}.jpg   the n-th image a tool showed people (tool_image)
    GET/POST /api/estop, POST /api/estop/reset, POST /api/teleop, POST /api/teleop/release:
                                the emergency stop and the drive pad (panel_routes, issue 41)
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
from collections import OrderedDict
from importlib import resources
from string import Template
from typing import Any

from fastapi import APIRouter, FastAPI, File, HTTPException, Request, UploadFile, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.websockets import WebSocketDisconnect

from loopact._compat import wait_within
from loopact.channels.web.auth import RequestGuard
from loopact.channels.web.camera import BOUNDARY, CameraFeed
from loopact.channels.web.hub import EventHub, ShownImages, dropped_notice
from loopact.channels.web.limits import DEFAULT_BODY_BYTES, MULTIPART_OVERHEAD_BYTES, BodyLimit
from loopact.channels.web.panel_routes import panel_routes
from loopact.channels.web.settings import (
    GateLike,
    SettingsStore,
    WebSettings,
    validate_settings,
)
from loopact.errors import LoopactError, RobotError
from loopact.llm.arguments import MAX_ARGUMENT_DEPTH, nesting_depth
from loopact.llm.messages import Image

log = logging.getLogger(__name__)

_MAX_PENDING_UPLOADS = 20
_POSE_TIMEOUT_S = 2.0
_WEB_DIR = resources.files("loopact.channels.web")


def _page(name: str, **values: str) -> str:
    text = (_WEB_DIR / "templates" / name).read_text(encoding="utf-8")
    return Template(text).safe_substitute(values)


def _html_escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _default_gate() -> GateLike | None:
    try:
        from loopact.vision.gate import ImageGate
    except ImportError:
        log.warning("image uploads disabled: loopact.vision.gate is not available")
        return None
    gate: GateLike = ImageGate()
    return gate


class ConsoleState:
    """What the routes share: the agent, the robot, the hub, the settings and uploads.

    Args:
        agent: The running agent (see :func:`create_app`).
        robot_session: The robot session or None.
        settings: The console options.
    """

    def __init__(self, agent: Any, robot_session: Any, settings: WebSettings) -> None:
        self.agent = agent
        self.robot_session = robot_session
        self.settings = settings
        self.store = SettingsStore(settings)
        self.hub = EventHub(agent.bus, settings.queue_size)
        robot = getattr(robot_session, "robot", None)
        self.camera = (
            CameraFeed(robot, settings.camera_fps, settings.jpeg_quality) if robot else None
        )
        self.gate: GateLike | None = settings.gate
        self.gate_loaded = settings.gate is not None
        self.uploads: OrderedDict[str, Image] = OrderedDict()
        self.shown = ShownImages(agent.bus)
        self._upload_ids = itertools.count(1)
        self.shutdown = asyncio.Event()

    def get_gate(self) -> GateLike | None:
        """The image gate, built on first use."""
        if not self.gate_loaded:
            self.gate = _default_gate()
            self.gate_loaded = True
        return self.gate

    def add_upload(self, image: Image) -> str:
        """Keep an accepted upload until a message takes it; returns its id."""
        upload_id = f"img{next(self._upload_ids)}"
        self.uploads[upload_id] = image
        while len(self.uploads) > _MAX_PENDING_UPLOADS:
            self.uploads.popitem(last=False)
        return upload_id

    async def pose(self) -> dict[str, Any] | None:
        """The robot pose from ``robot_session.state()``, or None without a robot/pose."""
        if self.robot_session is None:
            return None
        try:
            state = await wait_within(self.robot_session.state(), _POSE_TIMEOUT_S)
        except (RobotError, asyncio.TimeoutError) as exc:
            log.debug("no pose for the console: %s", exc)
            return None
        return dict(state) if state is not None else None

    def scrub(self, text: str, *extra: str | None) -> str:
        """Remove secrets (the API keys, current and ``extra``) from a text for a response."""
        for secret in [*self.store.secrets(), *(e for e in extra if e)]:
            text = text.replace(secret, "***")
        return text


def create_app(
    agent: Any, robot_session: Any = None, settings: WebSettings | None = None
) -> FastAPI:
    """Build the console app.

    Args:
        agent: The running agent: ``bus`` (EventBus), ``submit(text, images=(), source=)``,
            ``stop(source=)``, ``answer_confirmation(id, allow, source=)``, ``reset()``,
            ``status() -> dict`` and ``last_images(call_id) -> list[Image]``.
        robot_session: A ``loopact.robot.session.RobotSession`` (``.robot.get_frame()``,
            ``await .state()``) or None for a console without camera and pose.
        settings: Console options; None for the defaults (no token).

    Returns:
        The FastAPI app; ``app.state.console`` is its :class:`ConsoleState`.
    """
    settings = settings or WebSettings()
    state = ConsoleState(agent, robot_session, settings)
    app = FastAPI(title=settings.title, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.console = state
    app.mount("/static", StaticFiles(directory=str(_WEB_DIR / "static")), name="static")
    for router in (
        _page_routes(settings),
        _chat_routes(state),
        _upload_routes(state),
        _image_routes(state),
        _camera_routes(state),
        _settings_routes(state),
        panel_routes(state, _json_body),  # issue 41: the e-stop and the drive pad
    ):
        app.include_router(router)
    upload_limit = settings.max_upload_bytes + MULTIPART_OVERHEAD_BYTES
    app.add_middleware(
        BodyLimit,
        limit_for=lambda path: upload_limit if path == "/api/upload" else DEFAULT_BODY_BYTES,
    )
    # Added last, so it runs first: refused requests never get to the body limit.
    app.add_middleware(RequestGuard, token=settings.token, limiter=settings.login_limiter)
    return app


def _page_routes(settings: WebSettings) -> APIRouter:
    """``GET /`` (chat) and ``GET /settings``: the two server-rendered pages."""
    router = APIRouter()
    title = _html_escape(settings.title)
    chat_html = _page("chat.html", title=title)
    settings_html = _page("settings.html", title=title)
    no_store = {"Cache-Control": "no-store"}

    @router.get("/", response_class=HTMLResponse)
    async def chat_page() -> HTMLResponse:
        return HTMLResponse(chat_html, headers=no_store)

    @router.get("/settings", response_class=HTMLResponse)
    async def settings_page() -> HTMLResponse:
        return HTMLResponse(settings_html, headers=no_store)

    return router


def _chat_routes(state: ConsoleState) -> APIRouter:
    """Status, messages, stop, reset, confirmations and the event web socket."""
    router = APIRouter()
    agent = state.agent

    @router.get("/api/status")
    async def status() -> dict[str, Any]:
        info = dict(agent.status())
        info["pose"] = await state.pose()
        info["camera"] = state.camera is not None
        voice = state.settings.voice
        info["voice"] = voice is not None and voice.refusal is None
        return info

    @router.post("/api/message")
    async def message(request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise HTTPException(400, "text: type an instruction (non-empty text)")
        ids = body.get("image_ids", [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise HTTPException(400, "image_ids: expected a list of upload ids")
        missing = [i for i in ids if i not in state.uploads]
        if missing:
            raise HTTPException(
                400, f"image_ids: unknown upload id(s) {', '.join(missing)}; upload again"
            )
        images = tuple(state.uploads.pop(i) for i in ids)
        try:
            task_id = agent.submit(text.strip(), images=images, source="web")
        except (LoopactError, ValueError) as exc:
            raise HTTPException(400, state.scrub(str(exc))) from exc
        return {"task_id": task_id, "stopped": task_id is None}

    @router.post("/api/stop")
    async def stop() -> dict[str, Any]:
        agent.stop(source="web")
        return {"ok": True}

    @router.post("/api/reset")
    async def reset() -> dict[str, Any]:
        agent.reset()
        return {"ok": True}

    @router.post("/api/confirm")
    async def confirm(request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        request_id, allow = body.get("id"), body.get("allow")
        if not isinstance(request_id, str) or not request_id:
            raise HTTPException(400, "id: the confirmation request id is required")
        if not isinstance(allow, bool):
            raise HTTPException(400, "allow: expected true or false")
        if not agent.answer_confirmation(request_id, allow, source="web"):
            raise HTTPException(409, f"confirmation {request_id} is unknown or expired")
        return {"ok": True, "id": request_id, "allow": allow}

    @router.websocket("/ws")
    async def events(ws: WebSocket) -> None:
        await ws.accept()
        queue = state.hub.connect()
        try:
            await _pump(ws, queue, state)
        finally:
            state.hub.disconnect(queue)

    return router


def _upload_routes(state: ConsoleState) -> APIRouter:
    """``POST /api/upload``: a picture from the user, through the image gate (G3)."""
    router = APIRouter()
    settings = state.settings

    @router.post("/api/upload")
    async def upload(file: UploadFile = File(...)) -> dict[str, Any]:  # noqa: B008
        if settings.modality in ("text", "voice+text"):  # G3, issue 16
            raise HTTPException(
                415,
                f"images are refused: agent.modality is {settings.modality!r} "
                "(set image+text or any to send pictures)",
            )
        gate = state.get_gate()
        if gate is None:
            raise HTTPException(503, "image uploads are unavailable (no image gate)")
        data = await file.read(settings.max_upload_bytes + 1)
        if len(data) > settings.max_upload_bytes:
            raise HTTPException(
                413, f"file: larger than the {settings.max_upload_bytes} byte upload limit"
            )
        result = await asyncio.to_thread(gate.process, data)
        image = getattr(result, "image", None)
        if image is None:
            error = getattr(result, "error", None) or "the image gate rejected the image"
            raise HTTPException(422, f"image rejected: {error}")
        upload_id = state.add_upload(image)
        return {
            "id": upload_id,
            "width_px": image.width_px,
            "height_px": image.height_px,
            "bytes": len(image.data),
            "blurry": bool(getattr(result, "blurry", False)),
            "laplacian_var": float(getattr(result, "laplacian_var", 0.0)),
        }

    return router


_NOT_KEPT = {"Cache-Control": "no-store"}
"""Tool images are named by call id, and servers reuse ids (``call_1`` in every task of
llama.cpp and scripted runs): a cached image would show an old frame under a new caption."""


def _image_routes(state: ConsoleState) -> APIRouter:
    """The images tools returned, and the annotated images the console was shown."""
    router = APIRouter()
    agent = state.agent

    @router.get("/images/{call_id}/{n}.jpg")
    async def tool_image(call_id: str, n: int) -> Response:
        images = list(agent.last_images(call_id) or [])
        if not 0 <= n < len(images):
            raise HTTPException(404, f"no image {n} for tool call {call_id}")
        img = images[n]
        return Response(img.data, media_type=img.media_type, headers=_NOT_KEPT)

    @router.get("/images/{call_id}/shown/{n}.jpg")
    async def shown_image(call_id: str, n: int) -> Response:
        data = state.shown.get(call_id, n)
        if data is None:
            raise HTTPException(404, f"no shown image {n} for tool call {call_id}")
        return Response(data, media_type="image/jpeg", headers=_NOT_KEPT)

    return router


def _camera_routes(state: ConsoleState) -> APIRouter:
    """The robot's live camera: one frame as JPEG, or an MJPEG stream (404 without a robot)."""
    router = APIRouter()

    @router.get("/api/camera/frame.jpg")
    async def camera_frame() -> Response:
        if state.camera is None:
            raise HTTPException(404, "no camera: the console runs without a robot")
        try:
            f = await state.camera.frame()
        except RobotError as exc:
            raise HTTPException(503, f"camera: {exc}") from exc
        return Response(
            f.jpeg,
            media_type="image/jpeg",
            headers={
                "Cache-Control": "no-store",
                "X-Frame-Stamp": f"{f.stamp_s:.3f}",
                "X-Frame-Seq": str(f.seq),
            },
        )

    @router.get("/camera.mjpg")
    async def camera_stream() -> StreamingResponse:
        if state.camera is None:
            raise HTTPException(404, "no camera: the console runs without a robot")
        return StreamingResponse(
            state.camera.mjpeg(state.shutdown),
            media_type=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
            headers={"Cache-Control": "no-store"},
        )

    return router


def _settings_routes(state: ConsoleState) -> APIRouter:
    """``GET`` and ``POST /api/settings`` (the API key is write-only)."""
    router = APIRouter()
    settings = state.settings

    @router.get("/api/settings")
    async def get_settings() -> dict[str, Any]:
        return {
            **state.store.public(),
            "providers": list(settings.providers),
            "profiles": list(settings.profiles),
            "editable": settings.on_settings is not None,
        }

    @router.post("/api/settings")
    async def post_settings(request: Request) -> JSONResponse:
        form = await _json_body(request)
        clean, errors = validate_settings(form, settings.providers, settings.profiles)
        if errors:
            return JSONResponse({"errors": errors}, status_code=422)
        if settings.on_settings is None:
            return JSONResponse(
                {"errors": {"form": "settings cannot be changed in this console"}},
                status_code=409,
            )
        state.store.unmask(clean)  # the page shows the URL's credentials masked
        key, refusal = state.store.key_for(clean)  # a key belongs to its endpoint (issue 21)
        if refusal is not None:
            return JSONResponse({"errors": {"api_key": refusal}}, status_code=422)
        new = {k: v for k, v in clean.items() if k not in ("api_key", "keep_api_key")}
        if key:
            new["api_key"] = key
        try:
            outcome = settings.on_settings(new)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception as exc:
            log.warning("on_settings failed: %s", type(exc).__name__)
            outcome = f"applying the settings failed: {exc}"
        if outcome:
            error = state.scrub(str(outcome), clean.get("api_key"))
            return JSONResponse({"errors": {"form": error}}, status_code=422)
        state.store.apply(clean)
        return JSONResponse({"ok": True, "settings": state.store.public()})

    return router


_MAX_BODY_DEPTH = MAX_ARGUMENT_DEPTH
"""Deepest nesting of objects and arrays accepted in a JSON body (the console's are flat)."""


async def _json_body(request: Request) -> dict[str, Any]:
    """The JSON object of a request body: the one place every JSON endpoint reads it.

    Raises:
        HTTPException: 400 when the body is not UTF-8, not JSON, not an object, or nests
            deeper than :data:`_MAX_BODY_DEPTH` (checked before decoding: Python's decoder
            recurses once per level and a ``RecursionError`` was a 500 with a traceback).
    """
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(400, "body: not UTF-8 text; expected a JSON object") from exc
    if nesting_depth(text) > _MAX_BODY_DEPTH:
        raise HTTPException(400, f"body: nested too deeply (more than {_MAX_BODY_DEPTH} levels)")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HTTPException(400, "body: expected a JSON object") from exc
    if not isinstance(body, dict):
        raise HTTPException(400, "body: expected a JSON object")
    return body


async def _pump(ws: WebSocket, queue: Any, state: ConsoleState) -> None:
    """Send queued events to one page until it leaves or the console stops; with voice
    (issue 16), also the page's microphone in and the robot's voice out (binary messages)."""
    receiver = asyncio.ensure_future(ws.receive())
    stopper = asyncio.ensure_future(state.shutdown.wait())
    getter: asyncio.Future[str] | None = None
    voice = state.settings.voice
    link = voice.connect() if voice is not None else None
    audio: asyncio.Future[bytes] | None = None
    try:
        while True:
            if getter is None:
                getter = asyncio.ensure_future(queue.get())
            if link is not None and audio is None:
                audio = asyncio.ensure_future(link.outgoing.get())
            waits = {getter, receiver, stopper} | ({audio} if audio is not None else set())
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if stopper in done:
                await ws.close(code=1001)
                return
            if receiver in done:
                message = receiver.result()
                if message.get("type") == "websocket.disconnect":
                    return
                receiver = asyncio.ensure_future(ws.receive())
                if link is not None:
                    await _from_page(ws, link, message)
            if audio is not None and audio in done:
                chunk = audio.result()
                audio = None
                await ws.send_bytes(chunk)
            if getter in done:
                text = getter.result()
                getter = None
                dropped = queue.take_dropped()
                if dropped:
                    await ws.send_text(dropped_notice(dropped))
                await ws.send_text(text)
    except (WebSocketDisconnect, RuntimeError):
        return
    finally:
        if link is not None:
            link.close()
        pending = [t for t in (receiver, stopper, getter, audio) if t is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def _from_page(ws: WebSocket, link: Any, message: Any) -> None:
    """A message from the page: microphone audio (bytes) or a ``mic`` control (JSON)."""
    from loopact.channels.web.voice import parse_control

    error = None
    if message.get("bytes") is not None:
        error = link.receive(message["bytes"])
    elif message.get("text") is not None:
        control = parse_control(message["text"])
        if control is not None:
            error = link.control(control)
    if error:
        await ws.send_text(json.dumps({"type": "voice", "task_id": None, "error": error}))
