"""HTTP and WebSocket tests of the web console (SPEC F2, F6, A8, C5).

The console runs for real (uvicorn on a free port, in the test's event loop) around a stand-in
for the agent that implements the documented agent API and records what the console asked of
it; the browser tests drive the real Agent with the scripted model server.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import numpy as np
import pytest
from PIL import Image as PILImage
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from loopact.channels.web import WebSettings, serve_console
from loopact.channels.web.hub import ClientQueue
from loopact.errors import ConfigError
from loopact.events import EventBus
from loopact.llm.messages import Image
from loopact.robot.interface import CameraFrame

API_KEY = "sk-test-SECRET-key-0123456789"
TOKEN = "tok-123-long-enough-x"
NEW_KEY = "sk-new-SECRET-key-9876543210"
WAIT_S = 10.0


class StandInAgent:
    """Implements what the channels use of the agent (loopact.channels.agent_port.AgentPort)
    and records the calls."""

    def __init__(self) -> None:
        self.bus = EventBus()
        self.submitted: list[tuple[str, tuple[Image, ...], str]] = []
        self.stops: list[str] = []
        self.answers: list[tuple[str, bool, str]] = []
        self.open_confirmations: set[str] = set()
        self.images: dict[str, list[Image]] = {}
        self.resets = 0

    def submit(self, text: str, images: Any = (), source: str = "terminal") -> str | None:
        if text.strip().lower() in ("stop", "/stop"):
            self.stop(source)
            return None
        self.submitted.append((text, tuple(images), source))
        task_id = f"t{len(self.submitted)}"
        self.bus.emit("task_start", task_id, text=text, source=source)
        return task_id

    def stop(self, source: str = "terminal") -> None:
        self.stops.append(source)
        self.bus.emit("stop", None, source=source)

    def answer_confirmation(self, request_id: str, allow: bool, source: str = "terminal") -> bool:
        if request_id not in self.open_confirmations:
            return False
        self.open_confirmations.discard(request_id)
        self.answers.append((request_id, allow, source))
        return True

    def reset(self) -> None:
        self.resets += 1

    def status(self) -> dict[str, Any]:
        return {
            "busy": False,
            "task_id": None,
            "provider": "openai",
            "model": "m1",
            "n_messages": 0,
            "tools": ["move_forward"],
        }

    def last_images(self, call_id: str) -> list[Image]:
        return list(self.images.get(call_id, []))


class CountingRobot:
    """A camera whose every frame differs (frame k is filled with value k)."""

    def __init__(self) -> None:
        self.frames = 0

    async def get_frame(self) -> CameraFrame:
        self.frames += 1
        rgb = np.full((48, 64, 3), self.frames % 256, dtype=np.uint8)
        return CameraFrame(rgb=rgb, stamp_s=self.frames * 0.1)


class StandInSession:
    def __init__(self) -> None:
        self.robot = CountingRobot()

    async def state(self) -> dict[str, Any]:
        return {"x_m": 1.5, "y_m": -0.25, "yaw_rad": 0.5, "frame": "odom"}


class Recorder:
    """Every response body the tests saw, to scan for the API key."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def hook(self, response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").startswith("multipart/x-mixed-replace"):
            return  # an endless stream of JPEG frames: read by the test itself
        await response.aread()
        self.bodies.append(response.content)
        self.bodies.append(str(response.headers).encode())


@pytest.fixture
async def console() -> AsyncIterator[Any]:
    agent = StandInAgent()
    applied: list[dict[str, Any]] = []

    def on_settings(new: dict[str, Any]) -> str | None:
        if new["model"] == "refuse-me":
            return f"provider refused the model (key {new.get('api_key', API_KEY)})"
        applied.append(new)
        return None

    settings = WebSettings(
        provider="openai",
        model="m1",
        base_url="http://127.0.0.1:9/v1",
        api_key=API_KEY,
        robot_profile="sim",
        on_settings=on_settings,
        camera_fps=20,
    )
    session = StandInSession()
    web = await serve_console(agent, session, port=0, settings=settings)
    recorder = Recorder()
    client = httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{web.port}",
        timeout=WAIT_S,
        event_hooks={"response": [recorder.hook]},
    )
    ns = type("NS", (), {})()
    ns.agent, ns.web, ns.client, ns.applied, ns.session, ns.recorder = (
        agent,
        web,
        client,
        applied,
        session,
        recorder,
    )
    try:
        yield ns
    finally:
        await client.aclose()
        await web.stop()
    for body in recorder.bodies:
        assert API_KEY.encode() not in body
        assert NEW_KEY.encode() not in body


def _png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    rng = np.random.default_rng(0)
    arr = np.zeros((size[1], size[0], 3), dtype=np.uint8)
    arr[:] = color
    arr[::4] = rng.integers(0, 255, size=(len(arr[::4]), size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


async def _recv(ws: Any) -> dict[str, Any]:
    msg = await asyncio.wait_for(ws.recv(), WAIT_S)
    data: dict[str, Any] = json.loads(msg)
    return data


async def test_pages_and_status(console: Any) -> None:
    page = await console.client.get("/")
    assert page.status_code == 200
    assert 'id="input"' in page.text and "/static/app.js" in page.text
    assert (await console.client.get("/static/app.js")).status_code == 200
    assert (await console.client.get("/settings")).status_code == 200
    status = (await console.client.get("/api/status")).json()
    assert status["model"] == "m1" and status["tools"] == ["move_forward"]
    assert status["pose"] == {"x_m": 1.5, "y_m": -0.25, "yaw_rad": 0.5, "frame": "odom"}
    assert status["camera"] is True
    assert console.web.url == f"http://localhost:{console.web.port}"


async def test_message_reaches_agent_and_events_stream(console: Any) -> None:
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        await _wait_for(lambda: console.web.state.hub.n_clients == 1)
        r = await console.client.post("/api/message", json={"text": "  go to the kitchen "})
        assert r.json() == {"task_id": "t1", "stopped": False}
        assert console.agent.submitted == [("go to the kitchen", (), "web")]
        start = await _recv(ws)
        assert start["type"] == "task_start" and start["text"] == "go to the kitchen"
        assert start["source"] == "web" and start["task_id"] == "t1"
        bus = console.agent.bus
        bus.emit("reasoning_delta", "t1", text="hidden")  # live-only, not a trace event
        sent = [
            bus.emit("text_delta", "t1", text="On my"),
            bus.emit("tool_call", "t1", id="c1", name="navigation", arguments={"waypoint": "k"}),
            bus.emit(
                "tool_result",
                "t1",
                id="c1",
                name="navigation",
                ok=True,
                data="ok",
                metadata={},
                error=None,
                n_images=0,
                images=[],
            ),
            bus.emit("reply", "t1", text="On my way"),
            bus.emit("task_end", "t1", status="completed", rounds=2),
        ]
        got = [await _recv(ws) for _ in sent]
        want = [json.loads(json.dumps(e.to_json())) for e in sent]
        # a tool call comes with what it does in every language (issue 42 item 4)
        want[1]["said"] = {"en": "Going to k", "zh": "前往k"}
        assert got == want


async def test_bad_message_names_the_field(console: Any) -> None:
    r = await console.client.post("/api/message", json={"text": "   "})
    assert r.status_code == 400 and "text" in r.json()["detail"]
    r = await console.client.post("/api/message", json={"text": "hi", "image_ids": ["nope"]})
    assert r.status_code == 400 and "image_ids" in r.json()["detail"]
    r = await console.client.post("/api/message", content=b"not json")
    assert r.status_code == 400 and "body" in r.json()["detail"]
    assert console.agent.submitted == []


async def test_stop_reset_and_confirmation(console: Any) -> None:
    assert (await console.client.post("/api/stop")).json() == {"ok": True}
    assert console.agent.stops == ["web"]
    await console.client.post("/api/reset")
    assert console.agent.resets == 1
    console.agent.open_confirmations.add("cf1")
    r = await console.client.post("/api/confirm", json={"id": "cf1", "allow": True})
    assert r.status_code == 200
    assert console.agent.answers == [("cf1", True, "web")]
    r = await console.client.post("/api/confirm", json={"id": "cf1", "allow": False})
    assert r.status_code == 409 and "unknown or expired" in r.json()["detail"]
    r = await console.client.post("/api/confirm", json={"id": "cf2", "allow": "yes"})
    assert r.status_code == 400 and "allow" in r.json()["detail"]


async def test_upload_goes_through_gate_to_next_message(console: Any) -> None:
    r = await console.client.post(
        "/api/upload", files={"file": ("photo.png", _png((200, 30, 30)), "image/png")}
    )
    assert r.status_code == 200, r.text
    up = r.json()
    assert up["width_px"] == 64 and up["height_px"] == 48
    r = await console.client.post(
        "/api/message", json={"text": "what is this?", "image_ids": [up["id"]]}
    )
    assert r.status_code == 200
    ((text, images, source),) = console.agent.submitted
    assert text == "what is this?" and source == "web"
    assert len(images) == 1 and images[0].media_type == "image/jpeg"
    assert images[0].data[:2] == b"\xff\xd8"  # the gate re-encoded it as JPEG
    # an upload is used once
    r = await console.client.post("/api/message", json={"text": "x", "image_ids": [up["id"]]})
    assert r.status_code == 400


async def test_corrupt_upload_shows_gate_error(console: Any) -> None:
    r = await console.client.post(
        "/api/upload", files={"file": ("bad.png", b"\x89PNG\r\n\x1a\nbroken", "image/png")}
    )
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail.startswith("image rejected: ") and len(detail) > len("image rejected: ")


async def test_tool_images_are_served(console: Any) -> None:
    jpeg = Image(data=b"\xff\xd8fake-jpeg", media_type="image/jpeg", width_px=4, height_px=3)
    console.agent.images["c7"] = [jpeg]
    r = await console.client.get("/images/c7/0.jpg")
    assert r.status_code == 200 and r.content == jpeg.data
    assert r.headers["content-type"] == "image/jpeg"
    assert (await console.client.get("/images/c7/1.jpg")).status_code == 404
    assert (await console.client.get("/images/other/0.jpg")).status_code == 404


async def test_camera_renders_only_on_request_and_updates(console: Any) -> None:
    robot = console.session.robot
    assert robot.frames == 0  # nothing rendered while no page asks
    first = await console.client.get("/api/camera/frame.jpg")
    assert first.status_code == 200 and first.content[:2] == b"\xff\xd8"
    await _wait_for_frame_change(console.client, first)
    assert robot.frames >= 2


async def _wait_for_frame_change(client: httpx2.AsyncClient, first: httpx2.Response) -> None:
    async def changed() -> bool:
        again = await client.get("/api/camera/frame.jpg")
        return again.headers["x-frame-seq"] != first.headers["x-frame-seq"] and (
            again.content != first.content
        )

    async def loop() -> None:
        while not await changed():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(loop(), WAIT_S)


async def test_mjpeg_stream_sends_distinct_frames(console: Any) -> None:
    parts: list[bytes] = []
    async with console.client.stream("GET", "/camera.mjpg") as r:
        assert r.headers["content-type"].startswith("multipart/x-mixed-replace")
        buf = b""

        async def read_two() -> None:
            nonlocal buf
            async for chunk in r.aiter_bytes():
                buf += chunk
                if buf.count(b"--loopactframe") >= 3:
                    return

        await asyncio.wait_for(read_two(), WAIT_S)
    for part in buf.split(b"--loopactframe")[1:3]:
        head, _, body = part.partition(b"\r\n\r\n")
        assert b"Content-Type: image/jpeg" in head
        parts.append(body)
    assert len(parts) == 2 and parts[0] != parts[1]


async def test_settings_are_validated_and_key_is_write_only(console: Any) -> None:
    view = (await console.client.get("/api/settings")).json()
    assert view["api_key"] == "set" and view["model"] == "m1" and view["editable"] is True
    page = await console.client.get("/settings")
    assert API_KEY not in page.text
    bad = await console.client.post(
        "/api/settings",
        json={"provider": "nope", "model": "", "base_url": "ftp://x", "robot_profile": "x"},
    )
    assert bad.status_code == 422
    errors = bad.json()["errors"]
    assert set(errors) == {"provider", "model", "base_url", "robot_profile"}
    assert "openai" in errors["provider"] and "sim" in errors["robot_profile"]
    assert console.applied == []
    refused = await console.client.post(
        "/api/settings",
        json={
            "provider": "openai",
            "model": "refuse-me",
            "base_url": "",
            "api_key": NEW_KEY,
            "robot_profile": "sim",
        },
    )
    assert refused.status_code == 422 and "refused" in refused.json()["errors"]["form"]
    ok = await console.client.post(
        "/api/settings",
        json={
            "provider": "anthropic",
            "model": "claude-x",
            "base_url": "https://a.example/v1",
            "api_key": NEW_KEY,
            "robot_profile": "turtlebot4",
        },
    )
    assert ok.status_code == 200
    assert console.applied == [
        {
            "provider": "anthropic",
            "model": "claude-x",
            "base_url": "https://a.example/v1",
            "api_key": NEW_KEY,
            "robot_profile": "turtlebot4",
        }
    ]
    view = (await console.client.get("/api/settings")).json()
    assert view["model"] == "claude-x" and view["api_key"] == "set"


async def test_slow_client_queue_drops_oldest_deltas_first() -> None:
    q = ClientQueue(maxlen=3)
    q.put("task_start", "a")
    q.put("text_delta", "d1")
    q.put("text_delta", "d2")
    q.put("tool_call", "b")  # full: drops d1
    q.put("reply", "c")  # full: drops d2
    assert [q.get_nowait() for _ in range(3)] == ["a", "b", "c"]
    assert q.take_dropped() == 2
    for i in range(5):
        q.put("tool_call", str(i))  # no deltas left: the oldest events go
    assert [q.get_nowait() for _ in range(3)] == ["2", "3", "4"]
    assert q.get_nowait() is None


async def test_lagging_websocket_never_blocks_the_agent(console: Any) -> None:
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        await _wait_for(lambda: console.web.state.hub.n_clients == 1)
        for i in range(5000):  # emitted synchronously: the page cannot keep up
            console.agent.bus.emit("text_delta", "t1", text=str(i))
        console.agent.bus.emit("reply", "t1", text="done")
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["type"] != "reply":
            seen.append(await _recv(ws))
        assert any(m["type"] == "dropped" for m in seen)
        assert len(seen) < 5000


async def test_late_page_gets_open_confirmations(console: Any) -> None:
    bus = console.agent.bus
    asked = bus.emit("confirm_request", "t1", id="cf9", name="save", arguments={}, timeout_s=60)
    bus.emit("confirm_request", "t1", id="cf10", name="save", arguments={}, timeout_s=60)
    bus.emit("confirm_response", "t1", id="cf10", allowed=False, by="terminal")
    assert console.web.state.hub.open_confirmations == ["cf9"]
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        assert await _recv(ws) == json.loads(json.dumps(asked.to_json()))
    bus.emit("task_end", "t1", status="preempted", rounds=1)
    assert console.web.state.hub.open_confirmations == []


async def test_reloaded_page_gets_the_recent_history(console: Any) -> None:
    bus = console.agent.bus
    bus.emit("task_start", "t7", text="look around", source="web")
    bus.emit("text_delta", "t7", text="Loo")  # live only: not replayed
    bus.emit("tool_call", "t7", id="c7", name="seewhat", arguments={})
    bus.emit("reply", "t7", text="I see a red cube.")
    asked = bus.emit("confirm_request", "t7", id="cf7", name="save", arguments={}, timeout_s=60)
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        got = [await _recv(ws) for _ in range(4)]
    assert [m["type"] for m in got] == ["task_start", "tool_call", "reply", "confirm_request"]
    assert got[2]["text"] == "I see a red cube."
    assert got[3] == json.loads(json.dumps(asked.to_json()))


async def test_tool_image_is_served_for_the_perception_panel(console: Any) -> None:
    import base64

    buf = io.BytesIO()
    PILImage.new("RGB", (32, 24), (200, 10, 10)).save(buf, format="JPEG")
    jpeg = buf.getvalue()
    bus = console.agent.bus
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        await _wait_for(lambda: console.web.state.hub.n_clients == 1)
        bus.emit(
            "tool_image",
            "t1",
            id="c5",
            name="visual_positioning",
            n=0,
            caption="red box [1, 2, 3, 4]",
            data_b64=base64.b64encode(jpeg).decode(),
        )
        got = await _recv(ws)
        assert got["type"] == "tool_image" and got["caption"] == "red box [1, 2, 3, 4]"
    r = await console.client.get("/images/c5/shown/0.jpg")
    assert r.status_code == 200 and r.content == jpeg
    assert r.headers["content-type"] == "image/jpeg"
    assert (await console.client.get("/images/c5/shown/1.jpg")).status_code == 404
    bus.emit("tool_image", "t1", id="c6", name="x", n=0, caption="", data_b64="%%not base64")
    assert (await console.client.get("/images/c6/shown/0.jpg")).status_code == 404


async def test_event_from_a_worker_thread_reaches_the_page(console: Any) -> None:
    async with ws_connect(f"ws://127.0.0.1:{console.web.port}/ws") as ws:
        await _wait_for(lambda: console.web.state.hub.n_clients == 1)
        await asyncio.to_thread(
            console.agent.bus.emit, "tool_progress", "t1", id="c1", name="drive", text="half"
        )
        got = await _recv(ws)
        assert got["type"] == "tool_progress" and got["text"] == "half"


async def test_cross_origin_post_and_websocket_are_refused(console: Any) -> None:
    r = await console.client.post("/api/stop", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert console.agent.stops == []
    async with ws_connect(
        f"ws://127.0.0.1:{console.web.port}/ws", origin="http://evil.example"
    ) as ws:
        with pytest.raises(ConnectionClosed) as info:
            await asyncio.wait_for(ws.recv(), WAIT_S)
    assert info.value.rcvd is not None and info.value.rcvd.code == 4403


async def test_foreign_host_header_is_refused_on_loopback(console: Any) -> None:
    r = await console.client.post("/api/stop", headers={"Host": "rebound.example:8080"})
    assert r.status_code == 403 and console.agent.stops == []
    r = await console.client.get("/api/status", headers={"Host": f"localhost:{console.web.port}"})
    assert r.status_code == 200


async def test_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="web.token is required") as info:
        await serve_console(StandInAgent(), None, host="0.0.0.0", port=0)
    assert info.value.key == "web.token"


async def test_token_is_checked_on_every_request() -> None:
    agent = StandInAgent()
    web = await serve_console(agent, None, host="0.0.0.0", port=0, token=TOKEN)
    base = f"http://127.0.0.1:{web.port}"
    try:
        async with httpx2.AsyncClient(base_url=base, timeout=WAIT_S) as c:
            for path in ("/", "/settings", "/api/status", "/static/app.js", "/camera.mjpg"):
                r = await c.get(path)
                assert r.status_code == 401, path
            assert (await c.post("/api/stop")).status_code == 401
            assert agent.stops == []
            r = await c.get("/api/status", headers={"Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200
            r = await c.get("/api/status", headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401
            r = await c.get(f"/?token={TOKEN}")
            assert r.status_code == 303 and r.headers["location"] == "/"
            assert "HttpOnly" in r.headers["set-cookie"]
            r = await c.get("/")  # the cookie the redirect set
            assert r.status_code == 200 and TOKEN not in r.text
        with pytest.raises(ConnectionClosed) as info:
            async with ws_connect(f"ws://127.0.0.1:{web.port}/ws") as ws:
                await asyncio.wait_for(ws.recv(), WAIT_S)
        assert info.value.rcvd is not None and info.value.rcvd.code == 4401
        async with ws_connect(f"ws://127.0.0.1:{web.port}/ws?token={TOKEN}") as ws:
            await _wait_for(lambda: web.state.hub.n_clients == 1)
            agent.bus.emit("reply", "t1", text="hello")
            assert (await _recv(ws))["text"] == "hello"
    finally:
        await web.stop()


async def test_busy_port_is_a_config_error(console: Any) -> None:
    with pytest.raises(ConfigError, match="web-port") as info:
        await serve_console(StandInAgent(), None, port=console.web.port)
    assert info.value.key == "web.port"


async def test_stop_closes_open_streams() -> None:
    web = await serve_console(StandInAgent(), StandInSession(), port=0)
    async with ws_connect(f"ws://127.0.0.1:{web.port}/ws") as ws:
        await _wait_for(lambda: web.state.hub.n_clients == 1)
        client = httpx2.AsyncClient(timeout=WAIT_S)
        async with client.stream("GET", f"http://127.0.0.1:{web.port}/camera.mjpg") as stream:
            it = stream.aiter_bytes()
            await asyncio.wait_for(it.__anext__(), WAIT_S)
            await asyncio.wait_for(web.stop(), WAIT_S)
            assert not web.running
        await client.aclose()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), WAIT_S)


async def _wait_for(cond: Any) -> None:
    async def loop() -> None:
        while not cond():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(loop(), WAIT_S)


def test_settings_from_config() -> None:
    from loopact.channels.web import settings_from_config
    from loopact.config import Config

    cfg = Config.model_validate(
        {
            "model": {"provider": "anthropic", "model": "claude-x", "api_key": API_KEY},
            "robot": {"profile": "turtlebot4"},
        }
    )
    s = settings_from_config(cfg, token="tok")
    assert (s.provider, s.model, s.base_url, s.robot_profile) == (
        "anthropic",
        "claude-x",
        "",
        "turtlebot4",
    )
    assert s.api_key == API_KEY and API_KEY not in repr(s)
    assert {"sim", "turtlebot4", "mecanum_ptz"} <= set(s.profiles)
    assert s.providers == ("openai", "anthropic", "dify") and s.token == "tok"
