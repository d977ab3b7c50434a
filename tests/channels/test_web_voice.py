"""The web console's microphone and speaker in a real browser (issue 16 acceptance 4).

Headless Debian chromium with a fake microphone that plays an espeak-ng recording
(``--use-file-for-fake-audio-capture``), the console's WebSocket carrying it to the real
pipeline (VAD, the scripted server's transcription endpoint, the real agent and provider,
espeak-ng), and the spoken reply coming back to the page as audio.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
from tests.agent.helpers import make_agent
from tests.channels.conftest import CHROMIUM, NEEDS_BROWSER
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.channels.web import WebSettings, serve_console
from loopact.channels.web.voice import WebVoice
from loopact.voice.audio import wav_bytes
from loopact.voice.stt import OpenAISTT
from loopact.voice.tts import EspeakTTS

WAIT_MS = 30_000

pytestmark = [*NEEDS_BROWSER, needs_espeak]


@pytest_asyncio.fixture
async def voice_browser(tmp_path: Path) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    wav = tmp_path / "mic.wav"
    wav.write_bytes(wav_bytes(silence(0.7) + speak("move forward one meter") + silence(30)))
    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}%noloop",
        "--autoplay-policy=no-user-gesture-required",
    ]
    with tempfile.TemporaryDirectory(prefix="loopact-chromium-") as profile:
        async with async_playwright() as pw:
            ctx = await pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=args, headless=True
            )
            ctx.set_default_timeout(WAIT_MS)
            try:
                yield ctx
            finally:
                await ctx.close()


async def test_spoken_command_from_the_page_and_spoken_reply_back(
    voice_browser: Any, scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        {
            "turns": [
                {
                    "text": "Moving forward one meter. Done.",
                    "expect": {"last_user_contains": "forward"},
                }
            ],
            "lanes": {"transcriptions": [{"text": "Move forward one meter."}]},
        }
    )
    agent, rec = make_agent(server, tmp_path)
    runner = asyncio.ensure_future(agent.run())
    voice = WebVoice(
        agent,
        agent.bus,
        lambda: OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=10),
        lambda: EspeakTTS(),
    )
    web = await serve_console(agent, port=0, settings=WebSettings(voice=voice))
    try:
        page = await voice_browser.new_page()
        await page.goto(f"http://127.0.0.1:{web.port}/")
        await page.wait_for_selector("#conn.on")
        await page.check("#handsfree")  # hands-free: the server's VAD ends the utterance
        start = await rec.wait_for(lambda e: e.type == "task_start", timeout=60)
        assert start.data == {"text": "Move forward one meter.", "source": "web"}
        # the page's audio reached the transcription endpoint as a WAV of the utterance
        upload = next(r for r in server.requests if r.path == "/v1/audio/transcriptions")
        assert b"RIFF" in upload.raw_body and len(upload.raw_body) > 16000 * 2
        await rec.wait_for(
            lambda e: e.type == "speech_out" and e.data["state"] == "playing", timeout=60
        )
        await rec.wait_for(lambda e: e.type == "task_end", timeout=60)
        await asyncio.wait_for(voice.player.wait_idle(), 30)  # type: ignore[union-attr]
        spoken = [e.data["text"] for e in rec.of("speech_out") if e.data["state"] == "playing"]
        assert spoken == ["Moving forward one meter.", "Done."]
        # the spoken reply came back to the page as audio: about as long as it was played
        await page.wait_for_function(
            "window.loopactVoice.receivedBytes >= 32000 * 1.0", timeout=WAIT_MS
        )
        received = await page.evaluate("window.loopactVoice.receivedBytes")
        played = sum(e.data["duration_s"] for e in rec.of("speech_out") if "duration_s" in e.data)
        assert abs(received / 32000 - played) < 0.3, (received, played)
        # and in the chat: what was heard, the command, each spoken sentence
        await page.locator(".event.heard", has_text="heard: Move forward one meter.").wait_for()
        await page.locator(".msg.user", has_text="Move forward one meter.").wait_for()
        for sentence in spoken:
            await page.locator(".event.progress", has_text="\U0001f50a " + sentence).wait_for()
        sent = await page.evaluate("window.loopactVoice.sentBytes")
        assert sent > 32000 * 1.5  # the microphone streamed the command and more
        await page.uncheck("#handsfree")
    finally:
        await web.stop()
        await voice.close()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
