"""Where loopact's servers listen: one loopback rule and one listening socket for the web
console and ``loopact mcp --http`` (loopact.access; issue 38 item 4)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from loopact.access import is_loopback, listen_socket
from loopact.channels.web import serve_console
from loopact.errors import ConfigError
from loopact.mcp.address import check_access
from loopact.mcp.http import serve_http
from loopact.mcp.server import Decision, ToolServer
from loopact.tools.registry import ToolRegistry


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LocalHost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("robot.example.com", False),
        ("", False),
    ],
)
def test_loopback_is_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_beyond_loopback_needs_a_token_in_both_servers() -> None:
    check_access("127.0.0.1", None)  # no token on loopback: allowed
    with pytest.raises(ConfigError, match="beyond loopback") as mcp:
        check_access("0.0.0.0", None)
    assert mcp.value.key == "--token"


def test_a_listening_socket_accepts_and_a_busy_port_is_an_error() -> None:
    sock = listen_socket("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port > 0 and not sock.getblocking()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with pytest.raises(OSError) as busy:
            listen_socket("127.0.0.1", port)
        assert not isinstance(busy.value, socket.gaierror)
    finally:
        sock.close()
    with pytest.raises(socket.gaierror):
        listen_socket("no-such-host.invalid", 0)


async def _nobody(call_id: str, name: str, arguments: object) -> Decision:
    return Decision(False, "no one to ask")


async def test_each_server_names_its_own_setting_for_a_busy_port(tmp_path: Path) -> None:
    taken = listen_socket("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(ConfigError, match="cannot serve the console on") as web:
            await serve_console(None, host="127.0.0.1", port=port)
        assert web.value.key == "web.port"
        tools = ToolServer(ToolRegistry([]), confirm=_nobody, workspace=tmp_path)
        with pytest.raises(ConfigError, match="cannot serve MCP on") as mcp:
            await serve_http(tools, "127.0.0.1", port, None)
        assert mcp.value.key == "--http"
        with pytest.raises(ConfigError, match="cannot be resolved") as host:
            await serve_console(None, host="no-such-host.invalid", port=0, token="t" * 20)
        assert host.value.key == "web.host"
    finally:
        taken.close()
