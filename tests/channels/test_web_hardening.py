"""Console hardening against other sites and token guessing (issue 21 items 4 and 12, F2).

A real HTTP client against the real console app on a free port; the browser tests in
test_web_browser.py show the same from Chromium.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from tests.channels.test_web_api import StandInAgent

from loopact.access import LoginLimiter
from loopact.channels.web import WebSettings, serve_console
from loopact.errors import ConfigError

TOKEN = "tok-hardening-0123456789"
WAIT_S = 10.0
FRAMING = {"x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'"}


def _framing(r: httpx2.Response) -> dict[str, str]:
    return {k: r.headers.get(k, "") for k in FRAMING}


async def test_every_response_forbids_framing() -> None:
    web = await serve_console(StandInAgent(), None, port=0)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            responses = [
                await c.get("/"),
                await c.get("/settings"),
                await c.get("/api/status"),
                await c.get("/static/app.js"),
                await c.get("/no/such/page"),
                await c.get("/api/camera/frame.jpg"),  # 404: no camera
                await c.post("/api/stop", headers={"Origin": "http://evil.example"}),  # 403
                await c.get("/", headers={"Host": "evil.example"}),  # 403: DNS rebinding
            ]
        assert [r.status_code for r in responses] == [200, 200, 200, 200, 404, 404, 403, 403]
        for r in responses:
            assert _framing(r) == FRAMING, (r.request.url, r.headers)
            assert r.headers["x-content-type-options"] == "nosniff"
    finally:
        await web.stop()
    tokened = await serve_console(StandInAgent(), None, port=0, token=TOKEN)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{tokened.port}") as c:
            refused = await c.get("/")
            redirect = await c.get(f"/?token={TOKEN}")
        assert (refused.status_code, redirect.status_code) == (401, 303)
        assert _framing(refused) == FRAMING and _framing(redirect) == FRAMING
    finally:
        await tokened.stop()


async def test_other_sites_cannot_embed_or_fetch_the_console() -> None:
    """A page elsewhere may link to the console, never load it as an image, frame or fetch."""
    agent = StandInAgent()
    web = await serve_console(agent, None, port=0)
    cross = {"Sec-Fetch-Site": "cross-site"}
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            img = await c.get("/camera.mjpg", headers={**cross, "Sec-Fetch-Dest": "image"})
            frame = await c.get(
                "/", headers={**cross, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
            )
            fetched = await c.get("/api/status", headers={**cross, "Sec-Fetch-Mode": "cors"})
            link = await c.get(
                "/", headers={**cross, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
            )
        assert [r.status_code for r in (img, frame, fetched)] == [403, 403, 403]
        assert link.status_code == 200
    finally:
        await web.stop()


async def test_short_tokens_are_refused_with_a_generated_suggestion() -> None:
    for weak in ("a", "short-token", "with spaces in the token"):
        with pytest.raises(ConfigError) as info:
            await serve_console(StandInAgent(), None, host="0.0.0.0", port=0, token=weak)
        assert info.value.key == "web.token"
        assert "at least 16 characters" in str(info.value)
        suggestion = str(info.value).rsplit(": ", 1)[1]
        assert len(suggestion) >= 16 and " " not in suggestion


async def test_repeated_wrong_tokens_lock_the_address_out() -> None:
    agent = StandInAgent()
    frozen = LoginLimiter(clock=lambda: 1000.0)  # the lockout cannot end during the test
    settings = WebSettings(login_limiter=frozen)
    web = await serve_console(agent, None, host="0.0.0.0", port=0, token=TOKEN, settings=settings)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            statuses = []
            for i in range(62):
                r = await c.get("/api/status", headers={"Authorization": f"Bearer guess-{i}"})
                statuses.append(r.status_code)
            assert statuses[:5] == [401] * 5, statuses
            assert set(statuses[5:]) == {429}, statuses
            locked = await c.get("/api/status", headers={"Authorization": f"Bearer {TOKEN}"})
            assert locked.status_code == 429  # even the right token, while locked out
            assert int(locked.headers["retry-after"]) >= 1
            assert "too many wrong tokens" in locked.text
            assert (await c.post("/api/stop", params={"token": TOKEN})).status_code == 429
            assert agent.stops == []
    finally:
        await web.stop()


async def test_a_stale_cookie_is_not_a_guesser() -> None:
    """The page of an old session keeps sending its old cookie: that is one wrong token."""
    web = await serve_console(StandInAgent(), None, host="0.0.0.0", port=0, token=TOKEN)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            stale = {"Cookie": "loopact_token=the-token-of-yesterday-000"}
            for _ in range(20):
                assert (await c.get("/api/status", headers=stale)).status_code == 401
            ok = await c.get("/", params={"token": TOKEN}, headers=stale)
            assert ok.status_code == 303
    finally:
        await web.stop()


def test_lockout_doubles_and_ends() -> None:
    now = [100.0]
    limiter = LoginLimiter(free_failures=2, max_lockout_s=8.0, clock=lambda: now[0])
    assert limiter.failed("1.2.3.4", "t0") == 0.0
    assert limiter.retry_after("1.2.3.4") == 0.0
    assert limiter.failed("1.2.3.4", "t0") == 0.0  # the same wrong token again: not counted
    assert [limiter.failed("1.2.3.4", f"u{i}") for i in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert limiter.retry_after("1.2.3.4") == 8.0
    assert limiter.retry_after("5.6.7.8") == 0.0  # per address
    now[0] += 8.0
    assert limiter.retry_after("1.2.3.4") == 0.0
    limiter.succeeded("1.2.3.4")
    assert limiter.failed("1.2.3.4", "v") == 0.0  # a success starts the count again


@pytest.fixture
def settings_console() -> Any:
    applied: list[dict[str, Any]] = []

    async def start() -> tuple[Any, list[dict[str, Any]]]:
        settings = WebSettings(
            provider="openai",
            model="m",
            base_url="https://api.configured.example/v1",
            api_key="sk-env-SECRET-1234",
            robot_profile="sim",
            on_settings=lambda new: applied.append(dict(new)) and None,
        )
        return await serve_console(StandInAgent(), None, port=0, settings=settings), applied

    return start


async def test_a_new_endpoint_needs_its_key_or_an_explicit_keep(settings_console: Any) -> None:
    web, applied = await settings_console()
    form = {
        "provider": "openai",
        "model": "m",
        "base_url": "https://attacker.example/v1",
        "robot_profile": "sim",
    }
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            refused = await c.post("/api/settings", json=form)
            assert refused.status_code == 422
            error = refused.json()["errors"]["api_key"]
            assert "keep the current key" in error and "sk-env" not in error
            other_provider = {**form, "base_url": "", "provider": "anthropic"}
            assert (await c.post("/api/settings", json=other_provider)).status_code == 422
            assert applied == []
            # the same endpoint, another model: the current key goes with it, explicitly
            same = {**form, "base_url": "https://api.configured.example/v1", "model": "m2"}
            assert (await c.post("/api/settings", json=same)).status_code == 200
            assert applied[-1]["api_key"] == "sk-env-SECRET-1234"
            kept = await c.post("/api/settings", json={**form, "keep_api_key": True})
            assert kept.status_code == 200
            assert applied[-1]["api_key"] == "sk-env-SECRET-1234"
            assert applied[-1]["base_url"] == "https://attacker.example/v1"
            assert "keep_api_key" not in applied[-1]
            bad = await c.post("/api/settings", json={**form, "keep_api_key": "yes"})
            assert bad.status_code == 422 and "keep_api_key" in bad.json()["errors"]
    finally:
        await web.stop()
    await asyncio.sleep(0)


async def test_a_deeply_nested_body_is_a_clean_400_on_every_json_endpoint(
    settings_console: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Audit B finding 6: '[' * 100000 (under the 1 MB limit) hit Python's recursion limit in
    the JSON decoder: HTTP 500 and an 80-line traceback in the terminal. 65 levels, which
    the decoder can read, is refused the same way; 64 levels reaches the endpoint."""
    web, applied = await settings_console()
    deep = "[" * 100_000 + "]" * 100_000
    bodies = [deep, '{"text": ' + deep + "}", '{"text": ' + "[" * 64 + "]" * 64 + "}"]
    headers = {"content-type": "application/json"}
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            for path in ("/api/message", "/api/settings", "/api/confirm"):
                for body in bodies:
                    r = await c.post(path, content=body, headers=headers)
                    assert r.status_code == 400, (path, len(body), r.text[:200])
                    detail = r.json()["detail"]
                    assert detail == "body: nested too deeply (more than 64 levels)", path
            r = await c.post("/api/message", content='{"text": ' + "[" * 63 + "]" * 63 + "}")
            assert r.status_code == 400 and r.json()["detail"].startswith("text:")
            r = await c.post("/api/message", content=b"\xff\xfe{}", headers=headers)
            assert r.status_code == 400
            assert r.json()["detail"] == "body: not UTF-8 text; expected a JSON object"
            alive = await c.get("/api/status")
            assert alive.status_code == 200
    finally:
        await web.stop()
    assert applied == []
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text


def test_a_deeply_nested_voice_control_message_is_not_a_control() -> None:
    """The WebSocket's JSON text messages go through ``parse_control``: a RecursionError
    there would have ended the page's connection."""
    from loopact.channels.web.voice import parse_control

    assert parse_control("[" * 100_000 + "]" * 100_000) is None
    assert parse_control('{"mic": "on"}') == {"mic": "on"}


async def test_the_settings_page_never_shows_the_base_urls_credentials() -> None:
    """A base URL with user info and a query (``http://alice:pw@host/v1?key=...``) is shown as
    ``http://***@host/v1?***`` (SPEC B6); sending the page's form back unchanged keeps the real
    URL and its key, and a refusal never quotes the password."""
    real = "http://alice:PlainPw99@127.0.0.1:9/v1?key=QueryTok123"
    applied: list[dict[str, Any]] = []
    settings = WebSettings(
        provider="openai",
        model="m",
        base_url=real,
        api_key="sk-env-SECRET-1234",
        robot_profile="sim",
        on_settings=lambda new: applied.append(dict(new)) and None,
    )
    web = await serve_console(StandInAgent(), None, port=0, settings=settings)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}") as c:
            shown = (await c.get("/api/settings")).json()
            assert shown["base_url"] == "http://***@127.0.0.1:9/v1?***"
            form = {k: shown[k] for k in ("provider", "model", "base_url", "robot_profile")}
            same = await c.post("/api/settings", json={**form, "model": "m2"})
            assert same.status_code == 200, same.text
            assert applied[-1]["base_url"] == real
            assert applied[-1]["api_key"] == "sk-env-SECRET-1234"
            after = same.json()["settings"]["base_url"]
            assert after == "http://***@127.0.0.1:9/v1?***"
            moved = await c.post("/api/settings", json={**form, "base_url": "http://other/v1"})
            assert moved.status_code == 422
            assert "PlainPw99" not in moved.text and "QueryTok123" not in moved.text
            assert "***@127.0.0.1:9" in moved.json()["errors"]["api_key"]
    finally:
        await web.stop()
