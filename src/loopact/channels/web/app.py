"""The web console app (SPEC F2, F6, A8, C5): chat, live camera, settings.

:func:`create_app` builds a FastAPI app around a running agent. Pages are server-rendered
HTML with a little vendored plain JavaScript (``static/``, no build step, nothing fetched from
the internet). Routes::

    GET  /                      chat page          GET  /settings          settings page
    GET  /favicon.ico           the icon (SVG)     (pages in the reader's language: texts.py)
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
    GET  /api/map, /api/map.png, /api/map/live   the live map (map_routes, issue 42)
    GET/POST /api/estop, POST /api/estop/reset, POST /api/teleop, POST /api/teleop/release:
                                the emergency stop and the drive pad (panel_routes, issue 41)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from importlib import resources
from string import Template
from typing import Any

from fastapi import APIRouter, FastAPI, File, HTTPException, Request, UploadFile
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles

from loopact.channels.agent_port import AgentPort
from loopact.channels.web.auth import RequestGuard
from loopact.channels.web.camera import BOUNDARY
from loopact.channels.web.chat import chat_routes
from loopact.channels.web.limits import (
    DEFAULT_BODY_BYTES,
    MULTIPART_OVERHEAD_BYTES,
    BodyLimit,
    json_body,
)
from loopact.channels.web.map_routes import map_routes
from loopact.channels.web.panel_routes import panel_routes
from loopact.channels.web.settings import DEFAULT_TITLE, WebSettings, validate_settings
from loopact.channels.web.state import ConsoleState
from loopact.channels.web.texts import LANG_COOKIE, choose_language, page_texts, render_page, text
from loopact.errors import RobotError

__all__ = ["ConsoleState", "create_app"]

log = logging.getLogger(__name__)

_WEB_DIR = resources.files("loopact.channels.web")


_PAGES = ("chat.html", "settings.html")


def _html_escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def create_app(
    agent: AgentPort, robot_session: Any = None, settings: WebSettings | None = None
) -> FastAPI:
    """Build the console app.

    Args:
        agent: The running agent (:class:`~loopact.channels.agent_port.AgentPort`: ``bus``,
            ``submit``, ``stop``, ``answer_confirmation``, ``reset``, ``status``,
            ``last_images``).
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
        _page_routes(state),
        chat_routes(state),
        _upload_routes(state),
        _image_routes(state),
        _camera_routes(state),
        _settings_routes(state),
        map_routes(state),  # issue 42: the live map
        panel_routes(state, json_body),  # issue 41: the e-stop and the drive pad
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


def _page_routes(state: ConsoleState) -> APIRouter:
    """``GET /`` (chat), ``GET /settings`` and ``GET /favicon.ico``: the server-rendered pages
    in the reader's language (:func:`~loopact.channels.web.texts.choose_language`)."""
    router = APIRouter()
    settings = state.settings
    templates = {name: (_WEB_DIR / "templates" / name).read_text("utf-8") for name in _PAGES}
    robot = "1" if state.robot_session is not None else "0"
    favicon = (_WEB_DIR / "static" / "favicon.svg").read_bytes()
    no_store = {"Cache-Control": "no-store"}

    def page(name: str, request: Request) -> HTMLResponse:
        lang = choose_language(
            request.cookies.get(LANG_COOKIE),
            settings.language,
            request.headers.get("accept-language"),
        )
        default = settings.title == DEFAULT_TITLE
        title = _html_escape(text("console.title", lang) if default else settings.title)
        values = {"title": title, "lang": lang, "texts": page_texts(lang), "robot": robot}
        body = render_page(Template(templates[name]).safe_substitute(values), lang)
        return HTMLResponse(body, headers=no_store)

    @router.get("/", response_class=HTMLResponse)
    async def chat_page(request: Request) -> HTMLResponse:
        return page("chat.html", request)

    @router.get("/settings", response_class=HTMLResponse)
    async def settings_page(request: Request) -> HTMLResponse:
        return page("settings.html", request)

    @router.get("/favicon.ico")
    async def favicon_icon() -> Response:
        return Response(favicon, media_type="image/svg+xml")

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
        form = await json_body(request)
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
