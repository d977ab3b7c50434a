"""Credentials in an MCP server's URL and arguments are never shown (issue 39 item 14,
SPEC B6, H6): ``loopact run`` as a user runs it, the servers as processes.

The config file references the key as ``${LAB_TOKEN}`` (what docs/mcp.md recommends) and
writes others inline: a flag's value, an env-style argument, a database URL's password, an
HTTP server's ``?api_key=``. The stdio server prints its arguments on stderr before it
exits (as servers that log their settings do), so its stderr, quoted in the
``mcp_server`` event, carries them too. Neither the trace nor the terminal may show any.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.mcp.helpers import RAW, free_port
from tests.test_cli import once_args, run_cli

from loopact.config import load_config
from loopact.config.mcp_secrets import server_secrets, shown_server

SECRETS = {
    "LAB_TOKEN": "tok-from-env-0123456789",
    "args": "pw-in-args-98765",
    "url_in_args": "pg-secret-4242",
    "query": "key-in-url-13579",
}
SHORT = "k9"
"""Too short to be masked in any text (it would mangle words, as for every secret):
masked where the settings are shown, and warned about at start."""


def _config(tmp_path: Path, port: int) -> str:
    return f"""
mcp:
  servers:
    files:
      command: {sys.executable}
      args: [{RAW}, exit, --api-key, "${{LAB_TOKEN}}", "DB_PASSWORD={SECRETS["args"]}",
             "postgres://bob:{SECRETS["url_in_args"]}@db/x", --token, {SHORT},
             --verbose]
      connect_timeout_s: 10
    web:
      url: "http://127.0.0.1:{port}/mcp?api_key={SECRETS["query"]}&region=eu"
      connect_timeout_s: 10
"""


def test_server_credentials_are_masked_in_the_trace_and_the_terminal(
    scripted_server: Any, tmp_path: Path
) -> None:
    (tmp_path / "cfg.yaml").write_text(_config(tmp_path, free_port()))
    server = scripted_server([{"text": "hello"}])
    env = {"LAB_TOKEN": SECRETS["LAB_TOKEN"]}
    args = once_args(server, tmp_path, "hi", "--config", "cfg.yaml", "--no-memory")
    proc = run_cli(args, tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    trace = (tmp_path / "t.jsonl").read_text()
    shown = trace + proc.stdout + proc.stderr
    assert '"type": "mcp_server"' in trace and "connecting (" in trace
    assert "raw: started with" in trace  # its stderr is quoted, masked
    for value in SECRETS.values():
        assert value not in shown, (value, shown)
    assert "--api-key ${LAB_TOKEN} DB_PASSWORD=*** postgres://***@db/x --token ***" in trace
    err = " ".join(proc.stderr.split())
    assert "mcp.servers.files.args: shorter than 6 characters, so not masked" in err
    assert "http://127.0.0.1:" in trace and "/mcp?***" in trace


def test_what_the_settings_hold_is_found(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(_config(tmp_path, 8000))
    cfg, _ = load_config(tmp_path / "cfg.yaml", env={"LAB_TOKEN": SECRETS["LAB_TOKEN"]})
    files, web = cfg.mcp.servers["files"], cfg.mcp.servers["web"]
    assert files.env_refs == [("LAB_TOKEN", SECRETS["LAB_TOKEN"])]
    pairs = server_secrets("files", files)
    assert ("mcp.servers.files (${LAB_TOKEN})", SECRETS["LAB_TOKEN"]) in pairs
    found = {value for _, value in pairs}
    assert {SECRETS["args"], SECRETS["url_in_args"], SHORT} <= found
    assert "--verbose" not in found and "exit" not in found
    assert [v for _, v in server_secrets("web", web)] == [SECRETS["query"]]
    assert shown_server(web) == "http://127.0.0.1:8000/mcp?***"
