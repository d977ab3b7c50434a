"""MCP client: servers' tools as hot-pluggable outputs of the agent (issue 18, C8, C2, B8).

Every test runs real MCP servers as processes: ``servers/toy.py`` (written with the official
SDK) and ``servers/raw.py`` (hand-written JSON-RPC that misbehaves on purpose).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent
from tests.mcp.helpers import FAST, SIGNALS, TOY, free_port, raw, toy, until

from loopact.config import McpServerConfig
from loopact.events import Event, EventBus
from loopact.llm.messages import ToolCall
from loopact.mcp.client import McpServerLink
from loopact.mcp.hub import McpHub
from loopact.tools.base import FunctionTool, ToolContext
from loopact.tools.registry import ToolRegistry


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def _tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="t", call_id="c", workspace=tmp_path)


async def _hub(
    servers: dict[str, McpServerConfig], tmp_path: Path, registry: ToolRegistry | None = None
) -> tuple[McpHub, ToolRegistry, list[Event]]:
    registry = registry if registry is not None else ToolRegistry()
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    hub = McpHub(servers, registry, bus=bus, log_dir=tmp_path / "logs", **FAST)
    await hub.start(wait=True)
    return hub, registry, events


# ---------------------------------------------------------------------- acceptance 1
@pytest.mark.parametrize("announce", list(SIGNALS))
async def test_agent_calls_an_mcp_tool_sees_a_new_one_and_survives_the_server_dying(
    scripted_server: Any, tmp_path: Path, announce: str
) -> None:
    """Acceptance 1: call -> result in the next request; list_changed -> offered in the next
    request; server killed -> tool dropped, the agent keeps running (and it comes back).

    Run once per way a server announces a change (``SIGNALS``): a 2025-era server that sends
    only ``notifications/tools/list_changed``, and a 2026-era one that sends only a
    ``subscriptions/listen`` event; each passes only through its own handler."""
    flags, protocol = SIGNALS[announce]
    server = scripted_server(
        [
            {"tool_calls": [call("echo", {"text": "hello from mcp"})]},
            {"tool_calls": [call("picture", {})]},
            {"text": "It said hello and showed a red square."},
            {"text": "Still here."},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    hub = McpHub(
        {"toy": toy(tmp_path, *flags, trust=True, safety={"picture": "read_only"})},
        agent.registry,
        bus=agent.bus,
        log_dir=tmp_path / "logs",
        **FAST,
    )
    await hub.start(wait=True)
    try:
        assert "echo" in agent.registry and "shout" not in agent.registry
        up = [e for e in rec.events if e.type == "mcp_server" and e.data["state"] == "connected"]
        assert up[0].data["protocol"] == protocol
        outcome = await agent.run_task("say hello through the echo tool")
        assert outcome.status == "completed", outcome
        first, second = server.requests[0].body, server.requests[1].body
        assert "echo" in _tool_names(first) and "shout" not in _tool_names(first)
        assert any("hello from mcp" in m for m in _tool_messages(second))
        # echo's server added `shout` and sent list_changed before answering: offered next.
        assert "shout" in _tool_names(second)
        # B8: the picture's image and its embedded resource reach the model.
        third = json.dumps(server.requests[2].body["messages"])
        assert "data:image/jpeg;base64," in third and "inline note text" in third

        pid = int((tmp_path / "pid").read_text())
        os.kill(pid, signal.SIGKILL)
        removed = await rec.wait_for(
            lambda e: e.type == "node_removed" and e.data["name"] == "echo"
        )
        assert "lost" in removed.data["reason"]
        assert "echo" not in agent.registry
        outcome = await agent.run_task("are you still there?")
        assert outcome.status == "completed" and outcome.reply == "Still here."
        assert "echo" not in _tool_names(server.requests[3].body)
        back = await rec.wait_for(
            lambda e: (
                e.type == "mcp_server" and e.data["state"] == "connected" and e.data["restarts"]
            )
        )
        assert back.data["restarts"] >= 1 and "echo" in agent.registry
    finally:
        await hub.stop()
        await agent.close()
    assert agent.registry.get("echo") is None


@pytest.mark.parametrize("announce", list(SIGNALS))
async def test_a_tool_added_by_the_first_call_after_connecting_is_offered_at_once(
    tmp_path: Path, announce: str
) -> None:
    """The very first call right after the connection is up grows ``shout``: it is offered
    when the call's result is back. (A 2026-era server's ``subscriptions/listen`` stream has
    no replay: opened after the first ``tools/list``, it missed this change for good.)"""
    flags, protocol = SIGNALS[announce]
    offered: list[list[str]] = []
    link = McpServerLink(
        "toy",
        toy(tmp_path, *flags),
        on_tools=lambda _link, tools: offered.append([t.name for t in tools]),
        on_status=lambda _status: None,
        **FAST,
    )
    link.start()
    try:
        await link.wait_first_attempt()
        assert link.connected and "shout" not in offered[-1]
        result, _ = await link.call("echo", {"text": "a"}, 10.0)  # at once: no model turn first
        assert result.content[0].text == "a"  # type: ignore[union-attr]
        assert "shout" in offered[-1], (protocol, offered)
    finally:
        await link.stop()


async def test_a_listen_stream_acknowledged_late_still_brings_a_change_made_before(
    tmp_path: Path,
) -> None:
    """A 2026-era server that acknowledges ``subscriptions/listen`` only after the client
    stopped waiting (``ping_timeout_s``, 1 s here): the connection goes on without it, a change
    made meanwhile is lost on the stream (no replay), and the late ack re-reads the list."""
    offered: list[list[str]] = []
    link = McpServerLink(
        "toy",
        toy(tmp_path, "--signals", "listen", "--listen-ack-delay", "3"),
        on_tools=lambda _link, tools: offered.append([t.name for t in tools]),
        on_status=lambda _status: None,
        **FAST,
    )
    link.start()
    try:
        await link.wait_first_attempt()
        assert link.connected and "shout" not in offered[-1]
        result, _ = await link.call("echo", {"text": "a"}, 10.0)  # grows shout, unannounced
        assert not result.is_error
        await until(lambda: "shout" in offered[-1], 20, "the list re-read after the late ack")
    finally:
        await link.stop()


async def test_cancelling_the_task_cancels_the_mcp_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server([{"tool_calls": [call("wait_here", {"seconds": 60})]}])
    agent, rec = make_agent(server, tmp_path)
    hub = McpHub({"toy": toy(tmp_path, trust=True)}, agent.registry, bus=agent.bus, **FAST)
    await hub.start()
    runner = asyncio.ensure_future(agent.run())
    try:
        agent.submit("wait a minute", source="test")
        await rec.wait_for(lambda e: e.type == "tool_call" and e.data["name"] == "wait_here")
        # the call event comes before the request reaches the server: stop a call it runs
        await until(lambda: (tmp_path / "waiting").exists(), what="the server running the call")
        agent.stop(source="test")
        await rec.wait_for(lambda e: e.type == "task_end")
        await until(lambda: (tmp_path / "cancelled").exists(), what="the server's cancel marker")
    finally:
        runner.cancel()
        await hub.stop()
        await agent.close()


# ---------------------------------------------------------------------- results (B8)
async def test_images_and_resources_reach_the_model(
    tmp_path: Path,
) -> None:
    def echo(text: str) -> str:
        """A local echo."""
        return f"local {text}"

    registry = ToolRegistry([FunctionTool(echo)])
    hub, registry, _ = await _hub({"toy": toy(tmp_path)}, tmp_path, registry)
    try:
        # A name taken by a tool of the agent's own: the server's is prefixed.
        local = await registry.execute(ToolCall("l", "echo", {"text": "a"}), _ctx(tmp_path), 5)
        remote = await registry.execute(ToolCall("r", "toy_echo", {"text": "b"}), _ctx(tmp_path), 5)
        assert local.data == "local a" and remote.data == "b"

        result = await registry.execute(ToolCall("1", "picture", {}), _ctx(tmp_path), 20)
        assert result.ok, result
        assert "a red square" in result.data and "inline note text" in result.data
        assert "hello from the linked note" in result.data  # resource link read
        assert len(result.images) == 1 and result.images[0].media_type == "image/jpeg"
        assert result.images[0].width_px == 64
        notes = " ".join(result.metadata["notes"])
        assert "application/octet-stream" in notes and "audio" in notes

    finally:
        await hub.stop()


async def test_a_result_with_an_unknown_content_type_is_a_clear_error(tmp_path: Path) -> None:
    hub, registry, _ = await _hub({"odd": raw("unknown_content")}, tmp_path)
    try:
        result = await registry.execute(ToolCall("1", "odd", {}), _ctx(tmp_path), 10)
        assert not result.ok
        assert "MCP server odd sent a result for odd that loopact cannot read" in result.error
        assert "content.0 fits none of the shapes MCP defines" in result.error
        assert "'hologram'" in result.error
        again = await registry.execute(ToolCall("2", "odd", {}), _ctx(tmp_path), 10)
        assert "cannot read" in str(again.error)  # the server stays connected
    finally:
        await hub.stop()


# ---------------------------------------------------------------------- safety (C5)
async def test_safety_classes_from_annotations_trust_and_grants(tmp_path: Path) -> None:
    servers = {
        "trusted": toy(tmp_path, trust=True, safety={"delete_all": "idempotent"}),
        "plain": toy(tmp_path),
    }
    hub, registry, events = await _hub(servers, tmp_path)
    try:
        t, p = hub.offered("trusted"), hub.offered("plain")
        assert set(t).isdisjoint(p)
        trusted = {registry.get(n).remote_name: registry.get(n).safety.value for n in t}  # type: ignore[union-attr]
        plain = {registry.get(n).remote_name: registry.get(n).safety.value for n in p}  # type: ignore[union-attr]
        assert trusted["echo"] == "read_only"  # readOnlyHint, trusted server
        assert trusted["delete_all"] == "idempotent"  # the operator's grant wins
        assert trusted["picture"] == "write"  # no hints
        assert plain["echo"] == "write"  # readOnlyHint of an untrusted server: write
        assert plain["delete_all"] == "write"  # destructiveHint
        # Both servers offer `echo`: the second one is prefixed with its server's name.
        assert "echo" in registry
        assert ("plain_echo" in registry) != ("trusted_echo" in registry)
        errors = {e.data["topic"]: e.data["message"] for e in events if e.type == "node_error"}
        assert "invalid parameter schema" in errors["mcp:trusted/bad_schema"]
        assert "$ref 'https://example.com/point.json' points outside" in errors["mcp:plain/bad_ref"]
        bloated = errors["mcp:plain/bloated"]
        assert "inputSchema is 32024 characters of JSON, more than 16000" in bloated
        remote = {registry.get(n).remote_name for n in t + p}  # type: ignore[union-attr]
        assert not remote & {"bad_schema", "bad_ref", "bloated"} and "crash" in remote
    finally:
        await hub.stop()


@pytest.mark.parametrize("allowed", [False, True])
async def test_an_untrusted_read_only_tool_needs_confirmation_unless_allowed(
    scripted_server: Any, tmp_path: Path, allowed: bool
) -> None:
    """No confirmation channel (--once): refused, saying how to allow it; listed in
    ``confirm.allow`` by its server and name (``mcp:toy/echo``, issue 39 item 13): it runs."""
    server = scripted_server([{"tool_calls": [call("echo", {"text": "x"})]}, {"text": "Done."}])
    allow = frozenset({"mcp:toy/echo"}) if allowed else frozenset({"echo"})
    agent, _ = make_agent(server, tmp_path, interactive=False, allow=allow)
    hub = McpHub({"toy": toy(tmp_path)}, agent.registry, bus=agent.bus, **FAST)
    await hub.start()
    try:
        outcome = await agent.run_task("echo x")
        assert outcome.status == "completed"
        tool_text = _tool_messages(server.requests[1].body)[0]
        if allowed:
            assert tool_text == "x" or '"x"' in tool_text, tool_text
            assert "shout" in agent.registry  # echo ran on the server (it grows shout)
        else:
            assert "add mcp:toy/echo to confirm.allow" in tool_text, tool_text
            assert "--yes" in tool_text  # a plain "echo" entry allows no MCP tool
            # why it needs a yes: its server is not trusted, not "it changes files" (audit A
            # finding 3), and the server's keys that trust it
            assert "echo comes from the MCP server 'toy', which is not trusted" in tool_text
            assert "changes files" not in tool_text
            assert "a class for echo in its `safety` mapping" in tool_text
            assert "`trust: true`" in tool_text
            assert "shout" not in agent.registry  # echo never ran on the server
    finally:
        await hub.stop()
        await agent.close()


# ---------------------------------------------------------------------- dying and hanging
async def test_a_call_on_a_crashing_server_ends_at_once_and_the_server_restarts(
    tmp_path: Path,
) -> None:
    hub, registry, events = await _hub({"toy": toy(tmp_path)}, tmp_path)
    try:
        t0 = time.monotonic()
        result = await registry.execute(ToolCall("1", "crash", {}), _ctx(tmp_path), 30)
        assert not result.ok and "MCP server toy was lost during the call to crash" in result.error
        assert time.monotonic() - t0 < 10
        note = await until(
            lambda: next(
                (e for e in events if e.type == "mcp_server" and e.data["state"] == "restarting"),
                None,
            )
        )
        assert "crashing on purpose" in note.data["detail"]  # its last stderr line
        await until(lambda: "crash" in registry, what="the restarted server's tools")
    finally:
        await hub.stop()


async def test_a_hung_server_fails_the_call_within_the_timeout_and_is_dropped(
    tmp_path: Path,
) -> None:
    hub, registry, events = await _hub({"toy": toy(tmp_path, timeout_s=2.0)}, tmp_path)
    try:
        t0 = time.monotonic()
        result = await registry.execute(ToolCall("1", "hang", {}), _ctx(tmp_path), 30)
        elapsed = time.monotonic() - t0
        assert not result.ok and result.metadata["error_kind"] == "timeout"
        assert "hang timed out after 2 s and was cancelled" in str(result.error)
        assert elapsed < 5
        dropped = await until(
            lambda: next(
                (e for e in events if e.type == "mcp_server" and e.data["state"] == "restarting"),
                None,
            )
        )
        assert "hung" in dropped.data["detail"] or "did not answer" in dropped.data["detail"]
        await until(lambda: "hang" in registry, what="the restarted server")
    finally:
        await hub.stop()


# ---------------------------------------------------------------------- bad servers
@pytest.mark.parametrize(
    ("mode", "expect"),
    [
        ("exit", "missing API key, giving up"),
        ("silent", "did not start and answer initialize and tools/list within 2 s"),
        ("bad_list", "ListToolsResult is not valid MCP: tools.0.inputSchema: Input should be"),
    ],
)
async def test_servers_that_never_come_up_get_a_clear_note_and_back_off(
    tmp_path: Path, mode: str, expect: str
) -> None:
    cfg = raw(mode, connect_timeout_s=2.0)
    hub, registry, events = await _hub({"bad": cfg}, tmp_path)
    try:
        assert len(registry) == 0
        notes = [
            e.data for e in events if e.type == "mcp_server" and e.data["state"] == "restarting"
        ]
        assert notes and expect in notes[0]["detail"], notes
        assert notes[0]["delay_s"] == pytest.approx(0.2)
        await until(
            lambda: (
                sum(1 for e in events if e.type == "mcp_server" and e.data["state"] == "restarting")
                >= 2
            ),
            what="a second, backed-off attempt",
        )
        delays = [e.data["delay_s"] for e in events if e.data.get("state") == "restarting"]
        assert delays[1] > delays[0]
    finally:
        t0 = time.monotonic()
        await hub.stop()  # also while it is starting or waiting for its next attempt
        assert time.monotonic() - t0 < 8
        assert hub.status()[0]["state"] == "stopped"


async def test_a_server_with_too_many_tools_gets_the_first_128_offered(tmp_path: Path) -> None:
    hub, registry, events = await _hub({"big": raw("many")}, tmp_path)
    try:
        assert len(registry) == 128 and "t127" in registry and "t128" not in registry
        note = next(e.data for e in events if e.type == "node_error")
        assert note["topic"] == "mcp:big"
        assert "lists 150 tools; loopact offers the first 128" in note["message"]
        assert "not: t128, t129," in note["message"]
    finally:
        await hub.stop()


async def test_garbage_on_stdout_is_reported_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="loopact.mcp")
    hub, registry, _ = await _hub({"noisy": raw("garbage")}, tmp_path)
    try:
        assert "odd" in registry  # the server is used despite the noise
        notes = [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]
        assert len(notes) == 1 and "MCP server noisy printed a line" in notes[0]
        assert notes[0].endswith(": 'Starting server... (this line is not JSON-RPC)'"), notes
    finally:
        await hub.stop()


# ---------------------------------------------------------------------- streamable HTTP
async def test_streamable_http_server_with_headers(tmp_path: Path) -> None:
    """The configured ``headers`` go with every request: the server answers 401 without its
    ``Authorization`` header, so a header loopact dropped would keep it from connecting."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(TOY),
        "--http",
        str(port),
        "--require-header",
        "Authorization: Bearer test-token",
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        cfg = McpServerConfig(
            url=f"http://127.0.0.1:{port}/mcp",
            headers={"Authorization": "Bearer test-token"},
            trust=True,
            timeout_s=60,
        )

        hub, registry, _ = await _hub({"lab": cfg}, tmp_path)  # retried until it is up
        try:
            await until(lambda: "echo" in registry, 30, "the HTTP server's tools")
            result = await registry.execute(
                ToolCall("1", "echo", {"text": "over http"}), _ctx(tmp_path), 10
            )
            assert result.ok and result.data == "over http"
            assert hub.status()[0]["transport"] == "http"
            # A 20 MB result: cut to 100,000 characters for the model, with a note. (Over
            # stdio the same works, but the SDK's line reader takes seconds for it.)
            huge = await registry.execute(ToolCall("2", "huge", {}), _ctx(tmp_path), 60)
            assert huge.ok, huge
            assert len(huge.data) == 100_000
            assert "19900000 more characters" in " ".join(huge.metadata["notes"])
            after = await registry.execute(ToolCall("3", "echo", {"text": "x"}), _ctx(tmp_path), 10)
            assert after.ok  # the server is still connected
        finally:
            await hub.stop()
        # The same server with a wrong token: refused, so nothing is offered.
        wrong = cfg.model_copy(update={"headers": {"Authorization": "Bearer other-token"}})
        hub, registry, events = await _hub({"lab": wrong}, tmp_path)
        try:
            assert len(registry) == 0
            note = next(e.data for e in events if e.data.get("state") == "restarting")
            assert "HTTP 401 Unauthorized from http://127.0.0.1:" in note["detail"], note
            assert "check the server's `headers`" in note["detail"], note
            assert "other-token" not in note["detail"]  # a header's value is never shown
        finally:
            await hub.stop()
    finally:
        proc.kill()
        await proc.wait()


def test_status_before_start_is_json(tmp_path: Path) -> None:
    hub = McpHub({"toy": toy(tmp_path), "off": toy(tmp_path, disabled=True)}, ToolRegistry())
    status = json.loads(json.dumps(hub.status()))
    assert [s["name"] for s in status] == ["toy"] and status[0]["state"] == "stopped"
