"""``--foxglove``: the recording's channels live over Foxglove's WebSocket protocol, on loopback
only (issue 44 item 2).

A real WebSocket client (``websockets``) speaks the protocol (``foxglove.sdk.v1``) to
the server foxglove-sdk runs: it is told of every channel with its Foxglove schema, subscribes,
and receives what the run logs. An address beyond loopback is refused: the protocol has no
token, and the web console's rule allows only loopback without one.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from foxglove_schemas_protobuf.Log_pb2 import Log as LogProto  # type: ignore[import-untyped]
from websockets.asyncio.client import connect

from loopact.errors import ConfigError
from loopact.observe import topics as tp
from loopact.observe.live import check_live_host
from loopact.observe.recorder import SIM_LOG, Recorder

PROTOCOL = "foxglove.sdk.v1"  # foxglove-sdk 0.30 (foxglove.websocket.v1 before)


async def _json(ws: Any, op: str) -> dict[str, Any]:
    """The next text message with ``op`` (others, such as status, are skipped)."""
    while True:
        message = json.loads(await ws.recv())
        if message.get("op") == op:
            return message  # type: ignore[no-any-return]


async def test_the_live_view_serves_the_recordings_channels() -> None:
    recorder = Recorder(camera=(0.1, 0.35))
    url = recorder.serve("127.0.0.1", 0)
    try:
        assert url.startswith("ws://127.0.0.1:")
        async with connect(url, subprotocols=[PROTOCOL], open_timeout=10) as ws:  # type: ignore[list-item]
            info = await _json(ws, "serverInfo")
            assert info["name"] == "loopact"
            advertised = await _json(ws, "advertise")
            schemas = {c["topic"]: c["schemaName"] for c in advertised["channels"]}
            expected = dict(tp.SCHEMAS)
            expected[SIM_LOG] = "loopact.SimSample"
            assert schemas == expected
            log_channel = next(c for c in advertised["channels"] if c["topic"] == tp.LOG)
            subscribe = [{"id": 7, "channelId": log_channel["id"]}]
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": subscribe}))
            # a subscriber is in place once the server forwards to it: log until one arrives
            for attempt in range(200):
                recorder.on_event({"ts": 1.5 + attempt, "type": "reply", "task_id": "t9",
                                   "text": "live hello"})  # fmt: skip
                try:
                    frame = await _binary(ws, 0.05)
                except TimeoutError:
                    continue
                break
            else:
                pytest.fail("no message reached the subscribed client")
            opcode, sub_id, _log_time = struct.unpack_from("<BIQ", frame)
            assert (opcode, sub_id) == (1, 7)
            line = LogProto.FromString(frame[13:])
            assert (line.name, line.message, line.file) == ("reply", "live hello", "t9")
    finally:
        recorder.close()


async def _binary(ws: Any, timeout_s: float) -> bytes:
    import asyncio

    from loopact._compat import wait_within

    while True:
        try:
            message = await wait_within(ws.recv(), timeout_s)
        except asyncio.TimeoutError:
            raise TimeoutError from None
        if isinstance(message, bytes):
            return message


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "robot.example"])
def test_an_address_beyond_loopback_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="beyond loopback") as caught:
        check_live_host(host)
    assert caught.value.key == "foxglove.host"
    assert "ssh -L 8765:127.0.0.1:8765" in str(caught.value)
    for ok in ("127.0.0.1", "::1", "localhost"):
        check_live_host(ok)


def test_run_refuses_a_live_view_beyond_loopback(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    config = tmp_path / "c.yaml"
    config.write_text("foxglove: {host: 0.0.0.0}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPACT_", "OTEL_"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    args = ["run", "--robot", "none", "--once", "hi", "--base-url", server.base_url]
    args += ["--config", str(config), "--foxglove", "--no-memory"]
    args += ["--workspace", str(tmp_path / "ws")]
    proc = subprocess.run(
        [sys.executable, "-m", "loopact", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "foxglove.host '0.0.0.0' is beyond loopback" in proc.stderr
    assert server.requests == []
