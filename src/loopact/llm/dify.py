"""Dify chat-messages provider (SPEC B3, B4, B5, B6, A5).

A Dify app keeps the conversation on the server: each request sends only what is new, the
trailing user / tool-feedback text after the last assistant message, as ``query``, together
with the ``conversation_id`` Dify returned (an empty string on the first request of a
session; :meth:`DifyModel.reset` clears it). On the first request the system prompt (the
action catalogue in action-text mode, SPEC A5) is put in front of the query, since the app's
own prompt cannot know the live tools. Images are uploaded first (``POST /files/upload``,
multipart) and referenced by ``upload_file_id``; an image is uploaded once per model (by its
SHA-256), so a retried request does not upload it again.

The answer streams as server-sent events, read by :mod:`loopact.llm.dify_stream`
(:class:`~loopact.llm.dify_stream.DifyStreamState`): answer pieces with ``<think>`` text kept
apart as reasoning, ``message_end`` with the usage, ``error`` naming Dify's code and message.
Dify has no native tool calls: the answer holds action text that the loop parses
(:mod:`loopact.agent.actiontext`).

HTTP is ``httpx2`` (the client the SDKs here are built on; its server-sent-event support is the
httpx-sse code). Errors map like the other providers: connection failures, 408/409/429/5xx, a
stream cut before ``message_end`` or inside an event, and an error (event or HTTP body) that
tells of a transient failure (Dify's ``internal_server_error``, a model provider's rate limit
or outage, :func:`~loopact.llm.dify_stream.is_transient`) are retryable, everything else is
fatal.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx2

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.base import Capabilities, ModelEvent, ModelRequest, ResponseDone
from loopact.llm.dify_stream import DifyStreamState, is_transient, payloads
from loopact.llm.httperrors import (
    describe_body,
    masking_errors,
    parse_retry_after,
    status_error,
)
from loopact.llm.messages import NO_VISION_NOTE, Image, Message, audio_fallback_text
from loopact.llm.wire import drain, read_error_body
from loopact.redact import Redactor

__all__ = ["DIFY_CAPABILITIES", "DifyModel", "task_recap"]

logger = logging.getLogger(__name__)

DIFY_CAPABILITIES = Capabilities(
    vision=True,
    native_tool_calls=False,
    parallel_tool_calls=False,
    constrained_decoding=False,
    context_tokens=None,
    stream_usage=False,
)
"""What a Dify chat app can do: images via uploads, no native tool calls. The app keeps the
conversation (only new text is sent), so its context window is not the loop's to manage."""

_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "image/gif": "gif"}


class DifyModel:
    """A Dify chat / agent app behind the chat-messages API (SPEC B3).

    Args:
        model: A display name for the app (Dify picks the model from the API key).
        base_url: The API root ending in ``/v1`` (``https://api.dify.ai/v1``).
        api_key: The app's API key (the CLI resolves ``DIFY_API_KEY`` / ``LOOPACT_API_KEY``).
        capabilities: Defaults to :data:`DIFY_CAPABILITIES`.
        user: The ``user`` identifier sent with every request and upload.
        inputs: The app's ``inputs`` variables (``{}`` by default).
        send_system_prompt: Put the system prompt in front of the first query of a
            conversation.
        request_timeout_s: Timeout in seconds for connecting and for each read.

    Raises:
        ValueError: ``base_url`` is empty.
    """

    provider = "dify"

    def __init__(
        self,
        model: str = "dify-app",
        base_url: str = "",
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        user: str = "loopact",
        inputs: Mapping[str, Any] | None = None,
        send_system_prompt: bool = True,
        request_timeout_s: float = 120.0,
    ) -> None:
        if not base_url:
            raise ValueError("DifyModel needs base_url, the API root ending in /v1")
        self.model = model
        self.capabilities = capabilities or DIFY_CAPABILITIES
        self.user = user
        self.inputs = dict(inputs or {})
        self.send_system_prompt = send_system_prompt
        self._base = base_url.rstrip("/")
        self.redactor = Redactor([api_key])
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(request_timeout_s)
        )
        self._conversation_id = ""
        self._uploaded: dict[str, str] = {}

    @property
    def conversation_id(self) -> str:
        """The id of the current Dify conversation ("" before the first answer)."""
        return self._conversation_id

    def reset(self) -> None:
        """Start a new conversation: the next request sends an empty ``conversation_id``."""
        self._conversation_id = ""

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()

    # ---- request ---------------------------------------------------------------------------

    def query_for(self, messages: Sequence[Message], task: str = "") -> tuple[str, list[Image]]:
        """What to send for ``messages``: the new text and the images to upload.

        Args:
            messages: The canonical history.
            task: The current task's instruction (:attr:`ModelRequest.task`), if known.

        Returns:
            ``(query, images)``: the user and tool messages after the last assistant message,
            joined (tool results as ``Result of <tool>: <text>``). On a conversation's first
            request the system prompt comes first and, when the task began before the new
            text (Dify lost the conversation mid-task: HTTP 404 "Conversation Not Exists."),
            a recap carries it over: the instruction and a short account of what already ran
            (issue 22 item 9).

        Raises:
            ModelFatalError: There is nothing new to send.
        """
        start = len(messages)
        while start and messages[start - 1].role not in ("assistant", "system"):
            start -= 1
        tail = messages[start:]
        texts: list[str] = []
        images: list[Image] = []
        for m in tail:
            text = m.text.strip() or audio_fallback_text(m)  # Dify hears no audio (B8)
            if m.role == "tool":
                texts.append(f"Result of {m.name or 'tool'}: {text or '(no output)'}")
            elif text:
                texts.append(text)
            images.extend(m.images)
        if not texts and not images:
            raise ModelFatalError("nothing new to send to Dify: the history ends without a user")
        query = "\n\n".join(texts)
        if not self._conversation_id:
            system = ""
            if self.send_system_prompt:
                system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
            recap = task_recap(messages[:start], tail, task)
            query = "\n\n".join(part for part in (system, recap, query) if part)
        return query, images

    async def _upload(self, image: Image) -> str:
        """Upload ``image`` (once per SHA-256) and return its ``upload_file_id``."""
        key = image.sha256
        if key in self._uploaded:
            return self._uploaded[key]
        if image.file_id:
            return image.file_id
        name = f"image-{key[:12]}.{_EXTENSIONS.get(image.media_type, 'bin')}"
        try:
            response = await self._client.post(
                f"{self._base}/files/upload",
                files={"file": (name, image.data, image.media_type)},
                data={"user": self.user},
            )
        except httpx2.TransportError as exc:
            raise ModelRetryableError(f"cannot upload an image to Dify: {exc}") from None
        if response.status_code >= 300:
            raise _http_error(response, "file upload")
        try:
            file_id = str(response.json()["id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelFatalError(f"malformed Dify upload answer: {exc}") from None
        self._uploaded[key] = file_id
        return file_id

    async def _files(self, images: list[Image]) -> tuple[list[dict[str, str]], list[str]]:
        files: list[dict[str, str]] = []
        notes: list[str] = []
        for image in images:
            if not self.capabilities.vision:
                notes.append(NO_VISION_NOTE)
                continue
            try:
                file_id = await self._upload(image)
            except ModelFatalError as exc:  # SPEC G2: the turn goes on without the image
                logger.warning("Dify image upload failed, sending the text alone: %s", exc)
                notes.append(f"[an image could not be uploaded: {exc}]")
                continue
            files.append(
                {"type": "image", "transfer_method": "local_file", "upload_file_id": file_id}
            )
        return files, notes

    # ---- response --------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no error or event may show (the app's API key)."""
        return self.redactor.secrets

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send the newest input and yield the answer as it streams (SPEC B3, B5).

        Errors never show the API key (a 401 body may quote it, issue 21).

        ``request.tools`` is not sent (Dify has no tool parameter): the tools reach the model
        as the action catalogue in the system prompt.

        Raises:
            ModelRetryableError: Connection error, 408/409/429/5xx, stream cut (an event cut
                mid-JSON too), an ``error`` event or HTTP error of a transient failure
                (:func:`~loopact.llm.dify_stream.is_transient`), a vanished conversation.
            ModelFatalError: Any other ``error`` event (naming Dify's code and message) or
                HTTP error.
        """
        return masking_errors(self._stream(request), self.redactor)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        query, images = self.query_for(request.messages, request.task)
        files, notes = await self._files(images)
        if notes:
            query = "\n".join([query, *notes]) if query else "\n".join(notes)
        body: dict[str, Any] = {
            "inputs": self.inputs,
            "query": query,
            "response_mode": "streaming",
            "conversation_id": self._conversation_id,
            "user": self.user,
        }
        if files:
            body["files"] = files
        logger.debug(
            "dify request: conversation=%s files=%d", self._conversation_id or "(new)", len(files)
        )
        try:
            async with self._client.stream(
                "POST", f"{self._base}/chat-messages", json=body
            ) as response:
                if response.status_code != 200:
                    error = _http_error(await read_error_body(response), "chat-messages")
                    if response.status_code == 404 and self._conversation_id:
                        # Dify deleted the conversation: forget it, so a retry starts afresh;
                        # a server that lost it (restarted on a fresh database) may have lost
                        # the files uploaded for it too: they are uploaded again.
                        gone = self._conversation_id
                        self._conversation_id = ""
                        self._uploaded.clear()
                        raise ModelRetryableError(
                            f"Dify conversation {gone} no longer exists ({error}); "
                            "a retry starts a new conversation",
                            status=404,
                        )
                    raise error
                async for event in self._events(response):
                    yield event
                    if isinstance(event, ResponseDone):
                        return
        except ModelError:
            raise
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise ModelRetryableError(f"Dify stream was cut: {exc}") from None
        raise ModelRetryableError("Dify stream was cut: it ended before message_end")

    async def _events(self, response: httpx2.Response) -> AsyncIterator[ModelEvent]:
        state = DifyStreamState()
        events = payloads(response)
        async for event_name, data in events:
            out = state.feed(str(data.get("event") or event_name), data)
            if state.done:
                if state.conversation_id:
                    self._conversation_id = state.conversation_id
                await drain(events)  # read the rest first, so that the connection is reused
            for event in out:
                yield event
            if state.done:
                return


_RECAP_INTRO = (
    "(The server lost the earlier conversation, so this is a new one, in the middle of a task.)"
)
_RECAP_STEP_CHARS = 300
_RECAP_CHARS = 3000
_RESULT_PREFIX = "Result of "  # how a tool result reads as text (here and in action text)


def task_recap(earlier: Sequence[Message], tail: Sequence[Message], task: str = "") -> str:
    """The task so far, for a conversation that starts mid-task (issue 22 item 9).

    Args:
        earlier: The messages before the new text.
        tail: The new text's messages (the query).
        task: The task's instruction, when known; else the last user message that is not a
            tool result stands for it.

    Returns:
        ``""`` when the task starts in ``tail`` or nothing was said before; else the
        instruction and one line per step that followed it (the newest steps when they do
        not all fit in about 3,000 characters).
    """
    wanted = task.strip()

    def is_instruction(m: Message) -> bool:
        if m.role != "user":
            return False
        if wanted:
            return m.text.strip() == wanted
        return bool(m.text.strip()) and not m.text.startswith(_RESULT_PREFIX)

    if any(is_instruction(m) for m in tail):
        return ""
    begin = next((i for i in range(len(earlier) - 1, -1, -1) if is_instruction(earlier[i])), None)
    if begin is None:
        return ""
    steps: list[str] = []
    for m in earlier[begin + 1 :]:
        text = _clip(" ".join(m.text.split()), _RECAP_STEP_CHARS)
        if not text or m.role == "system":
            continue
        if m.role == "assistant":
            steps.append(f"- You wrote: {text}")
        elif m.role == "tool":
            steps.append(f"- {_RESULT_PREFIX}{m.name or 'tool'}: {text}")
        else:
            steps.append(f"- {text}")
    kept: list[str] = []
    size = 0
    for step in reversed(steps):
        size += len(step) + 1
        if size > _RECAP_CHARS:
            kept.append("- (earlier steps left out)")
            break
        kept.append(step)
    kept.reverse()
    instruction = _clip(earlier[begin].text.strip(), 2000)
    lines = [_RECAP_INTRO, f"The task: {instruction}"]
    if kept:
        lines += ["What already happened:", *kept]
    lines.append("Go on with the task from here.")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _http_error(response: httpx2.Response, what: str) -> ModelError:
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and (body.get("code") or body.get("message")):
        detail = f"{body.get('code') or 'error'}: {body.get('message') or ''}".rstrip(": ")
    else:
        detail = describe_body(response.text, response.headers.get("content-type"))
    message = f"Dify {what} answered HTTP {status}: {detail}"
    error = status_error(status, message, response.headers)
    if not error.retryable and isinstance(body, dict) and is_transient(body):
        # A model provider's rate limit raised before the stream started (HTTP 400).
        retry_after = parse_retry_after(response.headers)
        return ModelRetryableError(message, status=status, retry_after_s=retry_after)
    return error
