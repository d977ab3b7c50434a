"""Shared by the browser tests of the web console: the chromium context and the simulated
robot (fixtures), where screenshots go."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 20_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
NEEDS_BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"{CHROMIUM} is missing: run scripts/install-browser.sh",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="the playwright package is missing: pip install -e '.[dev]'",
    ),
]
"""The marks of every browser test: ``browser``, skipped (saying why) without chromium or
playwright."""


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="loopact-chromium-") as profile_dir:
        async with async_playwright() as pw:
            ctx = await pw.chromium.launch_persistent_context(
                profile_dir,
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1280, "height": 800},
            )
            ctx.set_default_timeout(WAIT_MS)
            try:
                yield ctx
            finally:
                await ctx.close()


@pytest_asyncio.fixture(loop_scope="module")
async def robot() -> AsyncIterator[Any]:
    sim_mod = pytest.importorskip("loopact.sim", reason="the simulator (loopact.sim) is missing")
    if importlib.util.find_spec("mujoco") is None:  # not imported here: it reads MUJOCO_GL
        pytest.skip("MuJoCo is missing: pip install -e '.[sim]'")
    session = await sim_mod.open_sim(speed=1.0)
    try:
        yield session
    finally:
        await session.close()


async def open_console(browser: Any, port: int, size: tuple[int, int] | None = (1400, 900)) -> Any:
    """A new page of the console served on ``port``, cookies cleared, ``size`` (width, height
    in CSS pixels; None: the browser's default), once its live connection is up (``#conn.on``)."""
    await browser.clear_cookies()
    page = await browser.new_page()
    if size is not None:
        await page.set_viewport_size({"width": size[0], "height": size[1]})
    await page.goto(f"http://127.0.0.1:{port}/")
    await page.wait_for_selector("#conn.on")
    return page
