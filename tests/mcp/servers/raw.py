"""A hand-written stdio "MCP server" that misbehaves on purpose (issue 18, bad input).

Usage: ``python raw.py MODE``:

- ``exit``: prints its arguments and a line on stderr (as servers that log their
  settings at start do) and exits with code 2 at once;
- ``garbage``: prints lines that are not JSON-RPC on stdout, then serves normally;
- ``silent``: reads its input and never answers (not even initialize);
- ``bad_list``: answers ``tools/list`` with a tool whose inputSchema is not an object;
- ``many``: lists 150 tools, ``t0`` ... ``t149``;
- ``unknown_content``: serves one tool ``odd`` whose result has a content block of a type
  MCP does not define (the SDK's own server cannot send it).

It speaks the 2025-11-25 handshake only (no server/discover).
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    if MODE == "exit":
        sys.stderr.write(f"raw: started with {' '.join(sys.argv[2:])}\n")
        sys.stderr.write("raw: missing API key, giving up\n")
        sys.exit(2)
    if MODE == "garbage":
        print("Starting server... (this line is not JSON-RPC)", flush=True)
        print("{not json either", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line or MODE == "silent":
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method, rid = msg.get("method"), msg["id"]
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
        elif method == "tools/list":
            schema: object = "object" if MODE == "bad_list" else {"type": "object"}
            tools = [{"name": "odd", "description": "Odd result.", "inputSchema": schema}]
            if MODE == "many":
                tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(150)]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            content = [{"type": "hologram", "data": "???"}]
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": content}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"method not found: {method}"},
                }
            )


if __name__ == "__main__":
    main()
