"""``loopact mcp``: the agent's tools served to MCP clients (issue 18, C8, C5, X3, G1).

``loopact mcp`` runs as its own process; the clients are the official SDK's (and, for input
the SDK cannot produce, raw JSON-RPC over HTTP). Robot behaviour is graded by the
simulator's pose, which the server records as ``robot_state`` in its trace after every
motion, never by what the tool result claims.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from tests.mcp.helpers import free_port, until
from tests.test_cli import cli_env, run_cli

from loopact.access import LoginLimiter, check_token
from loopact.mcp.http import serve_http
from loopact.mcp.server import Decision, ToolServer
from loopact.robot.profile import load_profile
from loopact.tools.registry import ToolRegistry
from loopact.trace import read_trace

pytestmark = pytest.mark.timeout(240)

#: A bearer token that meets the rule (>= 16 characters without spaces, issue 21 item 12).
TOKEN = "tok-mcp-test-0123456789"


def _texts(result: mt.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


def _body(result: mt.CallToolResult) -> dict[str, Any]:
    return json.loads(_texts(result))  # type: ignore[no-any-return]


def _states(trace: Path) -> list[dict[str, Any]]:
    if not trace.exists():
        return []
    return [e for e in read_trace(trace) if e["type"] == "robot_state"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = cli_env(tmp_path)
    env.pop("LOOPACT_MCP_TOKEN", None)
    return env


# ---------------------------------------------------------------------- acceptance 2 (stdio)
async def test_an_sdk_client_drives_the_simulated_robot_within_its_limits(tmp_path: Path) -> None:
    """Acceptance 2: list with schemas, move_forward(1.0) ends at x = 1.0 +- 0.05 m (sim
    pose), drive(50, 0, 1) is clamped and says so, file_write is refused unconfirmed; bad
    input (no arguments, NaN as the SDK sends it) gets clear errors; images come back."""
    trace = tmp_path / "t.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "loopact",
            "mcp",
            "--no-web",
            "--no-memory",
            "--trace",
            str(trace),
            "--workspace",
            str(tmp_path / "ws"),
        ],  # fmt: skip
        env=_env(tmp_path),
        cwd=str(tmp_path),
    )
    limits = load_profile("sim").limits
    async with Client(params, cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"move_forward", "drive", "file_write", "seewhat", "get_current_pose"} <= set(tools)
        assert "agent_call" not in tools and "instruct" not in tools
        mf = tools["move_forward"]
        assert mf.input_schema["required"] == ["distance_m"]
        assert mf.input_schema["properties"]["distance_m"]["type"] == "number"
        assert mf.annotations is not None and mf.annotations.destructive_hint
        assert mf.meta and mf.meta["io.github.loopact/safety"] == "motion"
        pose = tools["get_current_pose"].annotations
        assert pose is not None and pose.read_only_hint

        moved = await client.call_tool("move_forward", {"distance_m": 1.0})
        assert not moved.is_error, _texts(moved)
        state = await until(lambda: _states(trace), what="robot_state in the trace")
        assert abs(state[-1]["x_m"] - 1.0) <= 0.05 and abs(state[-1]["y_m"]) <= 0.05

        drove = await client.call_tool(
            "drive", {"linear_mps": 50, "angular_dps": 0, "duration_s": 1}
        )
        body = _body(drove)
        assert body["metadata"]["clamped"]["linear_mps"]["requested"] == 50
        assert body["metadata"]["clamped"]["linear_mps"]["applied"] <= limits.max_linear_mps
        assert "clamped" in body["data"]["result"]
        after = await until(lambda: len(_states(trace)) >= 2 and _states(trace))
        assert after[-1]["x_m"] - state[-1]["x_m"] <= limits.max_linear_mps * 1.0 + 0.05

        refused = await client.call_tool("file_write", {"path": "a.txt", "content": "x"})
        assert refused.is_error and "needs a person's confirmation" in _texts(refused)
        assert not (tmp_path / "ws" / "a.txt").exists()

        missing = await client.call_tool("move_forward", None)
        assert missing.is_error and "'distance_m' is a required property" in _texts(missing)
        nan = await client.call_tool("move_forward", {"distance_m": float("nan")})
        assert nan.is_error and "distance_m" in _texts(nan)  # the SDK sends NaN as null
        typed = await client.call_tool("move_forward", {"distance_m": "1"})  # not a number
        assert typed.is_error and "'1' is not of type 'number'" in _texts(typed)
        # An unknown tool is a protocol error, JSON-RPC -32602, as the MCP spec asks (tools:
        # "Error Handling"), not a tool result (issue 39 item 10)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("fly", {})
        assert unknown.value.code == mt.INVALID_PARAMS == -32602
        assert "unknown tool 'fly'; available tools: " in unknown.value.message

        seen = await client.call_tool("seewhat", {})
        images = [b for b in seen.content if isinstance(b, mt.ImageContent)]
        assert not seen.is_error and len(images) == 1 and images[0].mime_type == "image/jpeg"
        assert len(_states(trace)) == 2  # read-only calls do not move the robot
    events = list(read_trace(trace))
    calls = [e["name"] for e in events if e["type"] == "tool_call" and e["task_id"] == "mcp"]
    assert calls[:3] == ["move_forward", "drive", "file_write"]


# ---------------------------------------------------------------------- HTTP
@asynccontextmanager
async def _http_server(
    tmp_path: Path, *args: str, stdin: int | None = None, stderr_lines: list[str] | None = None
) -> AsyncIterator[str]:
    """``loopact mcp --http ...`` as a process; yields its URL once it serves.

    Args:
        stdin: A file descriptor for its standard input (default: nothing to read).
        stderr_lines: Receives what it writes on stderr, chunk by chunk, as it comes.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "loopact",
        "mcp",
        "--no-memory",
        "--workspace",
        str(tmp_path / "ws"),
        *args,
        cwd=tmp_path,
        env=_env(tmp_path),
        stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    lines = stderr_lines if stderr_lines is not None else []
    serving = asyncio.get_running_loop().create_future()

    async def read() -> None:  # chunks, not lines: a y/N prompt ends without a newline
        assert proc.stderr is not None
        while chunk := (await proc.stderr.read(4096)).decode(errors="replace"):
            lines.append(chunk)
            match = re.search(r"at (http://\S+/mcp)", "".join(lines))
            if match and not serving.done():
                serving.set_result(match.group(1))
        if not serving.done():
            serving.set_exception(AssertionError("loopact mcp exited: " + "".join(lines)))

    reader = asyncio.ensure_future(read())
    try:
        yield await asyncio.wait_for(serving, 90)
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0  # SIGTERM: a clean stop
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        reader.cancel()


async def _raw(url: str, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One legacy-handshake session over plain HTTP, then ``method``: the raw JSON answer."""
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.post(url, json=init, headers=headers)
        assert first.status_code == 200, first.text
        headers["mcp-session-id"] = first.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-11-25"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=note, headers=headers)
        # NaN is not JSON, but clients write it (Python's json.dumps does): send it raw.
        text = json.dumps({"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
        reply = await http.post(url, content=text.encode(), headers=headers)
    for line in reply.text.splitlines():
        if line.startswith("data:"):
            return json.loads(line[5:])  # type: ignore[no-any-return]
    return json.loads(reply.text)  # type: ignore[no-any-return]


async def test_http_beyond_loopback_needs_the_token_and_validates_raw_input(
    tmp_path: Path,
) -> None:
    """Acceptance 3 (401 without the token beyond loopback) and the bad input an SDK client
    cannot send: NaN on the wire, a call without arguments; confirmation on the web console
    allows one write and denies another."""
    port, web = free_port(), free_port()
    trace = tmp_path / "t.jsonl"
    async with _http_server(
        tmp_path, "--http", f"0.0.0.0:{port}", "--token", TOKEN, "--web-port", str(web),
        "--trace", str(trace),
    ) as served:  # fmt: skip
        url = f"http://127.0.0.1:{port}/mcp"
        assert served == f"http://0.0.0.0:{port}/mcp"
        async with httpx2.AsyncClient(timeout=10) as http:
            bare = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            wrong = await http.post(url, json={}, headers={"authorization": "Bearer nope"})
        assert bare.status_code == 401 and wrong.status_code == 401
        assert bare.headers["www-authenticate"].startswith("Bearer")
        assert "no bearer token" in bare.json()["error_description"]

        for bad in ({"distance_m": float("nan")}, {"distance_m": 1.0, "speed_mps": float("inf")}):
            move = {"name": "move_forward", "arguments": bad}
            nan = await _raw(url, TOKEN, "tools/call", move)
            assert nan["result"]["isError"], nan
            assert "must be a finite number (got NaN or infinity)" in json.dumps(nan)
        refused = [e for e in read_trace(trace) if e["type"] == "tool_result"]
        assert [e["metadata"]["error_kind"] for e in refused] == ["refused", "refused"]
        assert _states(trace) == []  # nothing moved, so no robot_state was recorded
        bare_call = await _raw(url, TOKEN, "tools/call", {"name": "file_read"})
        assert bare_call["result"]["isError"]
        assert "'path' is a required property" in json.dumps(bare_call)

        async with _sdk_client(url, TOKEN) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "file_write" in names and "move_forward" in names
            for allow in (True, False):
                path = f"{'yes' if allow else 'no'}.txt"
                call = asyncio.ensure_future(
                    client.call_tool("file_write", {"path": path, "content": "hi"})
                )
                await _answer_on_the_console(f"http://127.0.0.1:{web}", call, allow)
                result = await asyncio.wait_for(call, 20)
                assert result.is_error is (not allow), _texts(result)
                assert (tmp_path / "ws" / path).exists() is allow
            assert "denied" in _texts(result)
            await _stop_and_cancel_end_served_motions(client, f"http://127.0.0.1:{web}", trace)


async def test_the_consoles_settings_take_a_typed_key(tmp_path: Path) -> None:
    """loopact mcp's web settings: a key typed for a new endpoint (what issue 21 item 4
    asks for) failed with 'applying the settings failed' (a plain str where the config holds
    a SecretStr)."""
    port, web = free_port(), free_port()
    args = ("--robot", "none", "--http", f"127.0.0.1:{port}", "--web-port", str(web))
    async with _http_server(tmp_path, *args), httpx2.AsyncClient(timeout=10) as http:
        console = f"http://127.0.0.1:{web}"
        current = (await http.get(f"{console}/api/settings")).json()
        form = {k: current[k] for k in ("provider", "model", "robot_profile")}
        form.update(base_url="http://127.0.0.1:9/v1", api_key="sk-typed-for-the-new-host")
        applied = await http.post(f"{console}/api/settings", json=form)
        assert applied.status_code == 200, applied.text
        assert applied.json()["settings"]["base_url"] == "http://127.0.0.1:9/v1"


async def _moving_past(client: Client, motion: asyncio.Future[Any], x_m: float) -> None:
    """Until the robot (its pose, read over MCP while ``motion`` runs) is past ``x_m``."""
    while True:
        assert not motion.done(), _texts(motion.result())
        pose = _body(await client.call_tool("get_current_pose", {}))["data"]
        if pose["x_m"] > x_m:
            return


async def _stop_and_cancel_end_served_motions(client: Client, console: str, trace: Path) -> None:
    """X3: Stop on the web console, and a client cancelling its request, stop a served motion
    half-way (graded by the simulator's pose in the trace)."""
    far = {"distance_m": 2.0, "speed_mps": 0.5}
    motion = asyncio.ensure_future(client.call_tool("move_forward", far))
    start = _states(trace)[-1]["x_m"] if _states(trace) else 0.0
    await _moving_past(client, motion, start + 0.1)
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await http.post(f"{console}/api/stop")).status_code == 200
    stopped = await asyncio.wait_for(motion, 20)
    assert stopped.is_error, _texts(stopped)
    assert _body(stopped)["metadata"]["achieved"]["stopped_by"] == "cancelled"
    halted = _states(trace)[-1]["x_m"]
    assert start + 0.1 < halted < start + 1.5

    motion = asyncio.ensure_future(client.call_tool("move_forward", far))
    await _moving_past(client, motion, halted + 0.1)
    motion.cancel()  # the SDK sends notifications/cancelled
    ended = await until(
        lambda: [
            e
            for e in read_trace(trace)
            if e["type"] == "tool_result" and e["metadata"].get("error_kind") == "cancelled"
        ],
        what="the cancelled motion's result in the trace",
    )
    assert ended[-1]["name"] == "move_forward"
    states = await until(
        lambda: (s := _states(trace)) and s[-1]["x_m"] > halted + 0.1 and s,
        what="the robot_state after the cancelled motion",
    )
    assert states[-1]["x_m"] < halted + 1.5


@asynccontextmanager
async def _sdk_client(url: str, token: str) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP with a bearer token."""
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), cache=None) as c:
        yield c


async def _answer_on_the_console(console: str, call: asyncio.Future[Any], allow: bool) -> None:
    """Wait for the write's confirmation request on the web console, then answer it."""
    async with httpx2.AsyncClient(timeout=10) as http:
        ids: list[str] = []
        while not ids:
            assert not call.done(), "the write ended without a confirmation"
            status = (await http.get(f"{console}/api/status")).json()
            ids = list(status["pending_confirmations"])
            await asyncio.sleep(0.05)
        answer = await http.post(f"{console}/api/confirm", json={"id": ids[0], "allow": allow})
        assert answer.status_code == 200, answer.text


def test_beyond_loopback_without_a_token_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli(["mcp", "--robot", "none", "--http", "0.0.0.0:0"], tmp_path, env={})
    assert proc.returncode == 2
    assert "--token" in proc.stderr and "beyond loopback" in proc.stderr
    assert proc.stderr.endswith("which every client must send as a bearer token.\n")
    bad = run_cli(["mcp", "--robot", "none", "--http", "localhost:port"], tmp_path)
    assert bad.returncode == 2 and "is not HOST:PORT" in bad.stderr
    weak = run_cli(
        ["mcp", "--robot", "none", "--http", "127.0.0.1:0", "--token", "s3cret"], tmp_path
    )
    assert weak.returncode == 2, weak.stderr  # issue 21 item 12: a short token can be guessed
    assert "--token must be at least 16 characters without spaces (got 6)" in weak.stderr
    suggested = re.search(r"newly generated one: (\S+)\.\n$", weak.stderr)
    assert suggested and len(suggested.group(1)) >= 16, weak.stderr
    assert "." not in suggested.group(1)  # the full stop is not part of the token
    # a long token with a space is named for its space, not its length (a newcomer audit)
    spaced = check_token("abcdefgh ijklmnopq", "--token") or ""
    assert "(it has 1 space or other blank characters)" in spaced
    assert check_token("abcdefghijklmnopq", "--token") is None


async def _nobody(call_id: str, name: str, arguments: dict[str, Any]) -> Decision:
    return Decision(False, "no one to ask in this test")


async def test_wrong_bearer_tokens_lock_the_address_out(tmp_path: Path) -> None:
    """Issue 21 item 12 on the HTTP server of ``loopact mcp --http`` (real HTTP, real SDK app;
    in this process so that the lockout's clock is the test's and nothing sleeps): the same
    wrong token counts once; after 5 different wrong ones the next request, even with the
    right token, gets 429 with Retry-After; once the lockout is over the right token works."""
    now = [1000.0]
    tools = ToolServer(ToolRegistry([]), confirm=_nobody, workspace=tmp_path)
    handle = await serve_http(tools, "127.0.0.1", 0, TOKEN, LoginLimiter(clock=lambda: now[0]))
    try:
        async with httpx2.AsyncClient(timeout=10) as http:

            async def post(token: str) -> httpx2.Response:
                auth = {"authorization": f"Bearer {token}"}
                return await http.post(handle.url, json={}, headers=auth)

            for wrong in ("wrong-0", "wrong-0", "wrong-1", "wrong-2", "wrong-3", "wrong-4"):
                refused = await post(wrong)
                assert refused.status_code == 401, (wrong, refused.text)
            for token in ("wrong-5", TOKEN):
                locked = await post(token)
                assert locked.status_code == 429, locked.text
                assert locked.headers["retry-after"] == "1"
                assert "locked out" in locked.json()["error_description"]
        now[0] += 1.0  # the first lockout is 1 s
        listed = await _raw(handle.url, TOKEN, "tools/list", {})
        assert listed["result"]["tools"] == [], listed
        async with httpx2.AsyncClient(timeout=10) as http:  # the success cleared the count
            again = await http.post(handle.url, json={}, headers={"authorization": "Bearer x"})
        assert again.status_code == 401, again.text
    finally:
        await handle.stop()


# ---------------------------------------------------------------------- --agent
async def test_instruct_runs_a_whole_task_cancelling_stops_it_and_a_tty_confirms(
    scripted_server: Any, tmp_path: Path
) -> None:
    """--agent: instruct(text) returns the agent's reply; cancelling the request ends the task
    preempted. With --http on a terminal, a write is confirmed by typing y there."""
    server = scripted_server(
        [
            {"tool_calls": [{"id": "c1", "name": "wait", "arguments": {"seconds": 0.1}}]},
            {"text": "I waited a moment."},
            {"tool_calls": [{"id": "c2", "name": "wait", "arguments": {"seconds": 60}}]},
        ]
    )
    port = free_port()
    trace = tmp_path / "t.jsonl"
    args = ["--agent", "--robot", "none", "--no-web", "--http", f"127.0.0.1:{port}"]
    args += ["--base-url", server.base_url, "--api-key", "sk-test", "--trace", str(trace)]
    main, tty = pty.openpty()
    lines: list[str] = []
    served = _http_server(tmp_path, *args, stdin=tty, stderr_lines=lines)
    try:
        async with served as url, Client(url, cache=None) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["instruct"].input_schema["required"] == ["text"]
            done = await client.call_tool("instruct", {"text": "wait a moment"})
            assert not done.is_error, _texts(done)
            assert _body(done)["data"]["reply"] == "I waited a moment."
            empty = await client.call_tool("instruct", {"text": ""})
            assert empty.is_error and "text" in _texts(empty)

            long = asyncio.ensure_future(client.call_tool("instruct", {"text": "wait a minute"}))
            await until(
                lambda: any(
                    e["type"] == "tool_call" and e.get("arguments") == {"seconds": 60}
                    for e in read_trace(trace)
                ),
                what="the long wait to start",
            )
            long.cancel()
            await until(
                lambda: [
                    e
                    for e in read_trace(trace)
                    if e["type"] == "task_end" and e["status"] == "preempted"
                ],
                what="the task to end preempted",
            )

            write = {"path": "t.txt", "content": "from a tty"}
            call = asyncio.ensure_future(client.call_tool("file_write", write))
            await until(lambda: "Allow file_write(" in "".join(lines), 30, "the y/N prompt")
            assert not call.done()
            os.write(main, b"y\n")
            result = await asyncio.wait_for(call, 20)
            assert not result.is_error, _texts(result)
            assert (tmp_path / "ws" / "t.txt").read_text() == "from a tty"
    finally:
        os.close(main)
        os.close(tty)
