"""A tiny OTLP/HTTP (protobuf) trace receiver for the tests of issue 44: run as its own process.

``python otlp_receiver.py OUT_DIR`` listens on 127.0.0.1 (a free port, printed as
``listening PORT`` on stdout), accepts ``POST /v1/traces`` bodies (``ExportTraceServiceRequest``
of opentelemetry-proto, optionally gzip-compressed), and before it answers 200 appends each raw
body to ``OUT_DIR/raw.bin`` and each span as one JSON line to ``OUT_DIR/spans.jsonl``
(resource attributes, name, ids in hex, kind, times, attributes, status, events). So once an
exporter's request has returned, what it sent is on disk. It serves until it is terminated.
Anything else is answered 404 (other paths) or 400 (a body that is not a request).
"""

from __future__ import annotations

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_LOCK = Lock()


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def _attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def spans_of(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    out = []
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    {
                        "resource": resource,
                        "scope": ss.scope.name,
                        "name": s.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "kind": int(s.kind),
                        "start_ns": s.start_time_unix_nano,
                        "end_ns": s.end_time_unix_nano,
                        "attributes": _attrs(s.attributes),
                        "status": {"code": int(s.status.code), "message": s.status.message},
                        "events": [
                            {"name": e.name, "attributes": _attrs(e.attributes)} for e in s.events
                        ],
                    }
                )
    return out


def make_handler(out: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            raw = gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body
            request = ExportTraceServiceRequest()
            try:
                request.ParseFromString(raw)
            except DecodeError:
                self.send_error(400)
                return
            with _LOCK:
                with (out / "raw.bin").open("ab") as f:
                    f.write(raw)
                with (out / "spans.jsonl").open("a", encoding="utf-8") as f:
                    for span in spans_of(request):
                        f.write(json.dumps(span) + "\n")
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(out))
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
