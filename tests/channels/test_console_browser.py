"""The operator's console in a real browser (issue 42; SPEC F2, F5, X3): the layout from a
phone to a wide screen with Stop and E-STOP always in view, the console in Chinese, the camera
panel without a robot, the favicon. Headless Debian chromium driven by Playwright, a real
Agent on the real OpenAI provider talking to the scripted model server, the MuJoCo robot.

Screenshots are kept in ``tests/artifacts/`` (``console-phone-*.png``, ``console-desktop.png``,
``console-zh.png``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent
from tests.channels.conftest import ARTIFACTS, NEEDS_BROWSER, open_console

from loopact.channels.web import WebSettings, serve_console

pytestmark = [*NEEDS_BROWSER, pytest.mark.asyncio(loop_scope="module")]

#: Where a button is, and whether it is the element on top at its centre (not covered).
IN_VIEW = """sel => {
  const b = document.querySelector(sel), r = b.getBoundingClientRect();
  const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
          w: innerWidth, h: innerHeight, onTop: top === b || b.contains(top)};
}"""
OVERFLOW = "() => [document.documentElement.scrollWidth, innerWidth, document.body.scrollWidth]"

#: Visible texts with a Latin word and no Chinese one (a file name or a tool's name inside a
#: Chinese sentence is data), outside what the reader typed and the model's name.
LATIN_VISIBLE = r"""() => {
  const out = [], HAN = /[\u4e00-\u9fff]/;
  const skip = el => el.closest('pre, #model, .msg.user, .confirm-args, script, style, [hidden]');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || skip(el) || !el.getClientRects().length) { continue; }
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') { continue; }
    const words = (n.textContent.match(/[A-Za-z]{2,}/g) || []).filter(w => w !== 'loopact');
    if (words.length && !HAN.test(n.textContent)) { out.push(n.textContent.trim()); }
  }
  document.querySelectorAll('[placeholder], [title], [aria-label]').forEach(el => {
    if (skip(el)) { return; }
    ['placeholder', 'title', 'aria-label'].forEach(a => {
      const v = el.getAttribute(a);
      const latin = /[A-Za-z]{2,}/.test(v ? v.replace(/loopact/g, '') : '');
      if (latin && !HAN.test(v)) { out.push(a + ': ' + v); }
    });
  });
  return out;
}"""


async def _check_fits(page: Any, label: str) -> None:
    scroll_w, inner_w, body_w = await page.evaluate(OVERFLOW)
    assert scroll_w <= inner_w and body_w <= inner_w, (label, scroll_w, body_w, inner_w)
    for sel in ("#stop", "#estop"):
        box = await page.evaluate(IN_VIEW, sel)
        inside = box["left"] >= 0 and box["top"] >= 0
        inside = inside and box["right"] <= box["w"] and box["bottom"] <= box["h"]
        assert inside and box["onTop"], (label, sel, box)


async def test_stop_and_estop_stay_in_view_from_a_phone_to_a_wide_screen(
    browser: Any, robot: Any, scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 1: no sideways overflow at 390x844 and 1400x900 (and 360, 2560 px wide);
    Stop and E-STOP inside the viewport and on top, before and after 50 chat messages."""
    agent, _rec = make_agent(scripted_server([]), tmp_path, tools=robot.tools)
    web = await serve_console(agent, robot, port=0)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        page = await open_console(browser, web.port, (390, 844))
        await page.wait_for_function("window.loopactConsole.frames >= 1")
        await _check_fits(page, "phone, empty")
        for i in range(50):
            long = "word " * (i % 7) + "averyveryverylongwordwithoutanyspaces" * (i % 3)
            agent.bus.emit("message", None, text=f"message {i}: {long}", source="agent")
        await page.locator(".msg", has_text="message 49:").wait_for()
        await _check_fits(page, "phone, 50 messages")
        # the chat fills the phone: the composer is in view, the side panels are in tabs
        assert await page.is_visible("#input") and await page.is_hidden("#panel-camera")
        box = await page.evaluate(IN_VIEW, "#send")
        assert box["bottom"] <= box["h"] and box["onTop"], box
        await page.screenshot(path=str(ARTIFACTS / "console-phone-chat.png"))
        for tab, panel in (("map", "#panel-map"), ("camera", "#panel-camera"),
                           ("drive", "#panel-drive")):  # fmt: skip
            await page.click(f'.tabs button[data-tab="{tab}"]')
            await page.wait_for_selector(panel, state="visible")
            assert await page.is_hidden("#input")
            await _check_fits(page, f"phone, {tab} tab")
            await page.screenshot(path=str(ARTIFACTS / f"console-phone-{tab}.png"))
        await page.click('.tabs button[data-tab="chat"]')
        await page.wait_for_selector("#input", state="visible")

        for width, height in ((360, 740), (1400, 900), (2560, 1440)):
            await page.set_viewport_size({"width": width, "height": height})
            await page.wait_for_function(f"innerWidth === {width}")
            await _check_fits(page, f"{width}x{height}, 50 messages")
            if width == 1400:  # map, camera and drive beside the chat, no tabs
                assert await page.is_hidden(".tabs")
                for panel in ("#panel-map", "#panel-camera", "#panel-drive", "#input"):
                    assert await page.is_visible(panel), panel
                await page.screenshot(path=str(ARTIFACTS / "console-desktop.png"))
            if width == 2560:
                await page.screenshot(path=str(ARTIFACTS / "console-wide.png"))

        # the settings page fits a phone too
        await page.set_viewport_size({"width": 360, "height": 740})
        await page.goto(f"http://127.0.0.1:{web.port}/settings")
        await page.wait_for_selector("#f-provider")
        scroll_w, inner_w, _ = await page.evaluate(OVERFLOW)
        assert scroll_w <= inner_w, ("settings", scroll_w, inner_w)

        # a fresh desktop page: in view before any message too
        fresh = await browser.new_page()
        await fresh.set_viewport_size({"width": 1400, "height": 900})
        await fresh.goto(f"http://127.0.0.1:{web.port}/")
        await fresh.wait_for_selector("#conn.on")
        await _check_fits(fresh, "desktop, replayed history")
        await fresh.close()
        await page.close()
    finally:
        await web.stop()
        await agent.close()


async def test_the_console_in_chinese_shows_no_english(
    browser: Any, robot: Any, scripted_server: Any, tmp_path: Path
) -> None:
    """Acceptance 5: with ``language: zh`` (web.language) every visible string is Chinese:
    the page, a tool call and its outcome, the progress figure, the confirmation card, the
    settings page. What the reader typed and the model's name are theirs."""
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 0.3}, "m1")]},
            {"tool_calls": [call("file_write", {"path": "n.txt", "content": "好"}, "w1")]},
            {"text": "好的，我向前走了 0.3 米。"},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=robot.tools)
    runner = asyncio.ensure_future(agent.run())
    web = await serve_console(agent, robot, port=0, settings=WebSettings(language="zh"))
    try:
        page = await open_console(browser, web.port)
        assert await page.evaluate("document.documentElement.lang") == "zh"
        await page.wait_for_function("window.loopactConsole.frames >= 1")
        await page.fill("#input", "向前走 0.3 米，然后记一下")
        await page.press("#input", "Enter")
        card = page.locator('.event.tool-call[data-tool="move_forward"]')
        await card.locator(".tool-said", has_text="向前移动 0.30 米").wait_for()
        await card.locator(".tool-result.ok", has_text="前进了").wait_for()
        confirm = page.locator(".card.confirm", has_text="机器人请求执行 file_write")
        await confirm.wait_for()
        assert await page.evaluate(LATIN_VISIBLE) == []
        await page.screenshot(path=str(ARTIFACTS / "console-zh.png"))
        await confirm.locator("button.allow", has_text="允许").click()
        await page.locator(".event.end.completed", has_text="任务完成").wait_for()
        await rec.wait_for(lambda e: e.type == "task_end")
        await page.locator('.event.tool-call.ok[data-tool="file_write"]').wait_for()
        assert await page.evaluate(LATIN_VISIBLE) == []
        for width in (390, 1400):  # the phone's tabs too
            await page.set_viewport_size({"width": width, "height": 844})
            await page.wait_for_function(f"innerWidth === {width}")
            assert await page.evaluate(LATIN_VISIBLE) == [], width
            if width == 390:
                await page.screenshot(path=str(ARTIFACTS / "console-zh-phone.png"))

        await page.goto(f"http://127.0.0.1:{web.port}/settings")
        await page.wait_for_function("document.getElementById('key-state').dataset.state")
        assert await page.evaluate(LATIN_VISIBLE) == []
        # the reader switches to English in the settings: the cookie beats web.language
        await page.select_option("#f-language", "en")
        await page.wait_for_function("document.documentElement.lang === 'en'")
        assert await page.inner_text("h2") == "Settings"
        await page.close()
    finally:
        await browser.clear_cookies()
        await web.stop()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_without_a_robot_the_camera_panel_says_so_and_the_icon_is_served(
    browser: Any, scripted_server: Any, tmp_path: Path
) -> None:
    """Item 7: no broken image when there is no robot; ``/favicon.ico`` is an icon, not 404."""
    agent, _rec = make_agent(scripted_server([]), tmp_path)
    web = await serve_console(agent, None, port=0)
    try:
        page = await open_console(browser, web.port, None)
        info = page.locator("#camera-info.no-robot")
        await info.wait_for()
        assert (await info.inner_text()).startswith("No robot")
        assert await page.is_hidden("#camera")
        assert await page.is_disabled("#pad-forward")
        icon = await page.request.get(f"http://127.0.0.1:{web.port}/favicon.ico")
        assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        assert b"<svg" in await icon.body()
        await page.close()
    finally:
        await web.stop()
        await agent.close()
