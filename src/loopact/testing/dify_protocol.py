"""Dify ``POST /v1/chat-messages`` and ``POST /v1/files/upload`` for the scripted server (X2, B3).

Chat messages consume one turn each. With ``response_mode: streaming`` the answer is sent as
Dify's server-sent events (``data: {"event": ...}`` lines): a ``ping``, any scripted extra
events (workflow events and the like), the answer in ``message`` (or ``agent_message``) pieces,
more extra events, then ``message_end`` with the usage in ``metadata.usage``; with
``response_mode: blocking`` one JSON object with the whole ``answer``. File uploads consume no
turn: each is answered with a new file id (``file-scripted-<n>``) and kept in
:attr:`DifyProtocol.uploads`.

Turn fields map as: ``text`` -> answer; ``reasoning`` -> a ``<think>...</think>`` prefix of the
answer (how Dify apps pass a reasoning model's thoughts through); ``tool_calls`` -> action text
lines ``name(key=value, ...)`` after the text (Dify has no native tool calls, SPEC A5), so one
protocol-neutral script drives all three protocols; ``usage`` -> ``metadata.usage``.

Extras under ``extras.dify``:

- ``conversation_id``: the id to return; default: the request's own id when it sent one, else
  a new ``conv-scripted-<n>``.
- ``event``: ``message`` (default, chat apps) or ``agent_message`` (agent apps).
- ``events_before`` / ``events_after``: lists of event objects sent before / after the answer
  pieces (``{"event": "workflow_started", ...}``, ``{"event": "agent_thought", ...}``).
- ``error``: ``{"code", "message", "status"}``: after the answer pieces send an ``error``
  event instead of ``message_end``.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import threading
import time
from typing import Any

from loopact.testing.protocol import (
    Protocol,
    RecordedRequest,
    RequestSummary,
    ResponsePlan,
    wire_json,
)
from loopact.testing.script import ScriptUsage, Turn

__all__ = ["DifyProtocol"]

CHAT_PATH = "/v1/chat-messages"
UPLOAD_PATH = "/v1/files/upload"
_ERROR_CODES = {
    400: "invalid_param",
    401: "unauthorized",
    404: "not_found",
    413: "file_too_large",
    415: "unsupported_file_type",
    429: "too_many_requests",
}


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {wire_json(payload)}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def action_line(name: str, arguments: dict[str, Any] | str) -> str:
    """A tool call written as action text: ``name(key=value, ...)`` (values as JSON)."""
    if isinstance(arguments, str):
        return f"{name}({arguments})"
    args = ", ".join(f"{k}={wire_json(v)}" for k, v in arguments.items())
    return f"{name}({args})"


class DifyProtocol(Protocol):
    """The Dify chat-messages protocol (streaming and blocking) with file uploads.

    Attributes:
        uploads: One dict per uploaded file: ``id``, ``name``, ``size``, ``mime_type``,
            ``user``, ``sha256``.
    """

    name = "dify"
    paths = (CHAT_PATH, UPLOAD_PATH)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.uploads: list[dict[str, Any]] = []
        self._conversations = 0

    def consumes_turn(self, request: RecordedRequest) -> bool:
        """Chat messages consume a turn; uploads do not."""
        return request.path == CHAT_PATH

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """The query is both the last user text and all text; Dify requests offer no tools."""
        body = request.body if isinstance(request.body, dict) else {}
        query = str(body.get("query") or "")
        return RequestSummary(
            last_user_text=query,
            all_text=query,
            stream=body.get("response_mode") == "streaming",
        )

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """Answer a chat message as an event stream or a blocking JSON answer."""
        body = request.json()
        if not isinstance(body.get("query"), str):
            raise ValueError("chat-messages request without a string 'query'")
        extra = turn.extra("dify")
        conversation_id = self._conversation_id(extra, body)
        n = request.index + 1
        ids = {
            "task_id": f"task-scripted-{n}",
            "message_id": f"msg-scripted-{n}",
            "conversation_id": conversation_id,
        }
        answer = self._answer(turn)
        usage = self._usage(turn, request, answer)
        if body.get("response_mode") == "streaming" and not turn.stream_as_json:
            return ResponsePlan(
                content_type="text/event-stream",
                chunks=self._stream(turn, extra, ids, answer, usage),
                delay_s=turn.delay_s,
                chunk_delay_s=turn.chunk_delay_s,
                cut_after_chunks=turn.cut_after_chunks,
            )
        if turn.raw_chunks is not None:
            payload = "".join(turn.raw_chunks).encode()
        else:
            whole = {
                "event": "message",
                **ids,
                "id": ids["message_id"],
                "mode": "chat",
                "answer": answer,
                "metadata": {"usage": usage},
                "created_at": int(time.time()),
            }
            payload = wire_json(whole).encode()
        return ResponsePlan(
            body=payload, delay_s=turn.delay_s, cut_after_chunks=turn.cut_after_chunks
        )

    def render_error(
        self, status: int, message: str, request: RecordedRequest, turn: Turn | None = None
    ) -> ResponsePlan:
        """A Dify error body ``{"code", "message", "status"}``."""
        spec = turn.error if turn is not None else None
        code = spec.code if spec is not None and spec.code else _ERROR_CODES.get(status)
        if code is None:
            code = "internal_server_error" if status >= 500 else "bad_request"
        headers = {}
        if spec is not None and spec.retry_after is not None:
            headers["Retry-After"] = spec.retry_after
        if spec is not None:
            headers.update(spec.headers)
        body = {"code": code, "message": message, "status": status}
        return ResponsePlan(
            status=status,
            body=json.dumps(body).encode(),
            headers=headers,
            delay_s=turn.delay_s if turn is not None else 0.0,
        )

    def render_static(self, request: RecordedRequest) -> ResponsePlan:
        """Answer a file upload (multipart ``file`` and ``user`` fields) with a new file id."""
        if request.path != UPLOAD_PATH:
            return self.render_error(404, f"not served: {request.path}", request)
        fields = _multipart(request.headers.get("content-type", ""), request.raw_body)
        upload = fields.get("file")
        if upload is None or not isinstance(upload[1], bytes):
            return self.render_error(400, "no file field in the upload", request)
        filename, data, mime = upload
        user = fields.get("user")
        with self._lock:
            file_id = f"file-scripted-{len(self.uploads) + 1}"
            record = {
                "id": file_id,
                "name": filename,
                "size": len(data),
                "mime_type": mime,
                "user": user[1].decode() if user is not None else "",
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            self.uploads.append(record)
        answer = {
            "id": file_id,
            "name": filename,
            "size": len(data),
            "extension": filename.rsplit(".", 1)[-1] if "." in filename else "",
            "mime_type": mime,
            "created_by": record["user"],
            "created_at": int(time.time()),
        }
        return ResponsePlan(status=201, body=json.dumps(answer).encode())

    # ---- helpers ---------------------------------------------------------------------------

    def _conversation_id(self, extra: dict[str, Any], body: dict[str, Any]) -> str:
        if extra.get("conversation_id"):
            return str(extra["conversation_id"])
        if body.get("conversation_id"):
            return str(body["conversation_id"])
        with self._lock:
            self._conversations += 1
            return f"conv-scripted-{self._conversations}"

    def _answer(self, turn: Turn) -> str:
        answer = f"<think>{turn.reasoning}</think>" if turn.reasoning else ""
        answer += turn.text
        lines = [action_line(c.name, c.arguments) for c in turn.tool_calls]
        if lines:
            answer += ("\n" if turn.text else "") + "\n".join(lines)
        return answer

    def _usage(self, turn: Turn, request: RecordedRequest, answer: str) -> dict[str, Any]:
        usage = turn.usage or ScriptUsage(
            prompt_tokens=max(1, len(request.raw_body) // 4),
            completion_tokens=max(1, len(answer) // 4),
        )
        return {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "currency": "USD",
            "latency": 0.01,
        }

    def _stream(
        self,
        turn: Turn,
        extra: dict[str, Any],
        ids: dict[str, str],
        answer: str,
        usage: dict[str, Any],
    ) -> list[bytes]:
        if turn.raw_chunks is not None:
            return [f"data: {raw}\n\n".encode() for raw in turn.raw_chunks]
        created = int(time.time())
        kind = str(extra.get("event") or "message")
        out = [b"event: ping\n\n"]
        out += [_data({**ids, **e}) for e in extra.get("events_before") or []]
        out += [
            _data(
                {"event": kind, **ids, "id": ids["message_id"], "answer": p, "created_at": created}
            )
            for p in _pieces(answer, turn.chunk_size)
        ]
        out += [_data({**ids, **e}) for e in extra.get("events_after") or []]
        error = extra.get("error")
        if isinstance(error, dict):
            out.append(
                _data(
                    {
                        "event": "error",
                        "task_id": ids["task_id"],
                        "message_id": ids["message_id"],
                        "status": int(error.get("status", 400)),
                        "code": str(error.get("code", "invalid_param")),
                        "message": str(error.get("message", "scripted error")),
                    }
                )
            )
            return out
        out.append(
            _data(
                {
                    "event": "message_end",
                    **ids,
                    "id": ids["message_id"],
                    "metadata": {"usage": usage, "retriever_resources": []},
                    "files": None,
                }
            )
        )
        return out


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str, bytes, str]]:
    """Fields of a multipart body: name -> ``(filename, data, mime type)``."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields: dict[str, tuple[str, bytes, str]] = {}
    if not msg.is_multipart():
        return fields
    for part in msg.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        fields[str(name)] = (part.get_filename() or "", data, part.get_content_type())
    return fields
