"""The console's chat (SPEC F2, A8, C5): status, messages, stop, reset, confirmations, and the
event web socket that also carries the page's microphone and the robot's voice (issue 16)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request, WebSocket
from starlette.websockets import WebSocketDisconnect

from loopact.channels.web.hub import dropped_notice
from loopact.channels.web.limits import json_body
from loopact.channels.web.state import ConsoleState
from loopact.errors import LoopactError


def chat_routes(state: ConsoleState) -> APIRouter:
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
        body = await json_body(request)
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
        body = await json_body(request)
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
