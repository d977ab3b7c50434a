"""``loopact run --mcp-config FILE`` as a user runs it (issue 18): separate processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.agent.helpers import call
from tests.mcp.helpers import TOY
from tests.test_cli import once_args, run_cli

from loopact.trace import read_trace


def test_once_uses_a_tool_of_a_server_from_the_mcp_config_file(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [{"tool_calls": [call("echo", {"text": "from the file"})]}, {"text": "Echoed."}]
    )
    config = {
        "mcpServers": {
            "toy": {
                "command": sys.executable,
                "args": [str(TOY), "--marker-dir", str(tmp_path)],
                "trust": True,
            }
        }
    }
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    args = once_args(server, tmp_path, "echo it", "--mcp-config", str(tmp_path / "mcp.json"))
    proc = run_cli([*args, "--no-memory"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Echoed."
    events = list(read_trace(tmp_path / "t.jsonl"))
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and result["data"] == "from the file"
    # the server's first connection is in the trace, before the task (docs/mcp.md)
    kinds = [(e["type"], e.get("state") or e.get("kind")) for e in events]
    first_task = kinds.index(("task_start", None))
    assert ("mcp_server", "connected") in kinds[:first_task], kinds
    assert ("node_added", "mcp") in kinds[:first_task], kinds
    assert "from the file" in json.dumps(server.requests[1].body["messages"])
    log = tmp_path / "xdg-cache" / "loopact" / "logs" / "mcp-toy.log"
    assert log.is_file()  # the server's stderr went to its log, not into the terminal


def test_a_bad_mcp_config_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text('{"servers": {"x": {"command": "a", "url": "http://h/m"}}}')
    proc = run_cli(["run", "--robot", "none", "--mcp-config", "mcp.json", "--once", "x"], tmp_path)
    assert proc.returncode == 2
    assert "mcp.servers.x" in proc.stderr and "either command" in proc.stderr
