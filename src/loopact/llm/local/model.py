"""The local brain as a Model: crash-aware requests and a warm prompt prefix (issue 13).

:class:`LocalBrainModel` wraps the ordinary OpenAI-compatible provider talking to the
supervised llama.cpp server (:class:`~loopact.llm.local.process.LocalBrain`):

- **Crash-aware requests** (SPEC B6). Before each request it waits until the server is ready
  (it may be restarting). When a request fails and the server process turns out to have died
  during it, the request is sent once more to the restarted server, provided nothing of the
  response had reached the loop yet; otherwise, or if it dies again, the loop gets a
  retryable error whose text is the crash line ("the local model server crashed (signal 11 /
  SIGSEGV: ...); log: PATH; restarting it"). Once the restart bound is spent the loop gets the
  final error as a :class:`~loopact.errors.ModelFatalError`.
- **A warm prompt prefix** (:meth:`prepare`). The system prompt and the tool catalogue are the
  same at the start of every request; :meth:`prepare` has the server evaluate them once, before
  the first instruction, or load the evaluated state saved by an earlier run
  (:mod:`loopact.llm.local.server`), so the first request is as fast as later ones. A
  restarted server (after a crash) gets the same prefix again, from the saved state, before
  the next request: the first instruction after a crash is not a cold start either.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

from loopact.errors import ModelError, ModelRetryableError
from loopact.llm.base import Model, ModelEvent, ModelRequest
from loopact.llm.local.launch import SERVER_OPTIONS
from loopact.llm.local.process import LocalBrain
from loopact.llm.messages import Message
from loopact.llm.tokens import estimate_prompt_tokens

log = logging.getLogger(__name__)

#: The one-character user message that follows the system prompt in the warm-up request.
WARM_USER_TEXT = "."


class LocalBrainModel:
    """A model on the supervised local server (see the module docstring).

    Args:
        brain: The started :class:`~loopact.llm.local.process.LocalBrain`.
        make_inner: Builds the provider for an endpoint root (``http://127.0.0.1:PORT/v1``);
            called again when a restart moved the server to another port.
        build_id: Identifies the llama.cpp build (part of the prompt-state key).
    """

    def __init__(
        self, brain: LocalBrain, make_inner: Callable[[str], Model], build_id: str = ""
    ) -> None:
        self.brain = brain
        self._make_inner = make_inner
        self._url = brain.base_url
        self._inner = make_inner(self._url)
        self.last_prepare: dict[str, Any] | None = None
        """The answer of the last :meth:`prepare` (``source``: ``disk``, ``evaluated``, ...)."""
        self._warm: ModelRequest | None = None  # the last prefix prepared, for a restart
        self._warm_generation = -1  # the server generation that holds it
        self._build_id = build_id
        self._closing: set[asyncio.Future[None]] = set()
        self.provider = self._inner.provider
        self.model = self._inner.model
        self.capabilities = self._inner.capabilities

    @property
    def inner(self) -> Model:
        """The provider for the server's current endpoint."""
        if self.brain.base_url != self._url:
            old, self._url = self._inner, self.brain.base_url
            self._inner = self._make_inner(self._url)
            fut = asyncio.ensure_future(old.aclose())
            self._closing.add(fut)
            fut.add_done_callback(self._closing.discard)
        return self._inner

    def backend_status(self) -> dict[str, Any]:
        """The local server's state for ``/status`` and the web console (issue 13)."""
        return {"kind": "local", **self.brain.status().as_dict()}

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` to the local server; once more to its restart after a crash.

        Raises:
            ModelRetryableError: The server crashed during the request after part of the
                response was yielded, or crashed again on the retry (text: the crash line).
            ModelFatalError: The server failed for good (restart bound spent) or did not
                become ready.
            ModelError: Any other failure of the request, as the provider raised it.
        """
        for attempt in (1, 2):
            await self.brain.wait_ready()
            await self._rewarm()
            generation = self.brain.generation
            yielded = False
            try:
                async for event in self.inner.stream(request):
                    yielded = True
                    yield event
                return
            except ModelError as exc:
                if not await self.brain.exited(generation):
                    raise
                line = self.brain.last_crash or "the local model server stopped"
                if yielded or attempt == 2:
                    raise ModelRetryableError(line) from exc
                log.info("retrying the request on the restarted local server")

    def estimate_prompt_tokens(self, request: ModelRequest) -> int:
        """The provider's estimate of the prompt it sends for ``request`` (SPEC E1)."""
        return estimate_prompt_tokens(self.inner, request)

    async def prepare(self, request: ModelRequest, timeout_s: float = 600.0) -> dict[str, Any]:
        """Have the server hold the evaluated prompt prefix of ``request`` (issue 13).

        Args:
            request: A request whose messages are the system prompt (the tools go with it);
                its other messages are ignored.
            timeout_s: Longest wait for the evaluation, in seconds.

        Returns:
            The server's answer (``source``: ``disk`` or ``evaluated``, ``tokens``,
            ``seconds``), or ``{"source": "skipped", "reason": ...}`` when the server or the
            provider cannot do it. Never raises for a failure of the warm-up itself: it
            only makes the first request faster.
        """
        build_body = getattr(self.inner, "build_body", None)
        system = [m for m in request.messages if m.role == "system"][:1]
        if build_body is None or not system:
            return {"source": "skipped", "reason": "no system prompt or no OpenAI body"}
        warm = ModelRequest(messages=(*system, Message.user(WARM_USER_TEXT)), tools=request.tools)
        messages = build_body(warm)["messages"]
        key = self.prompt_key(messages[0])
        url = self.brain.base_url.removesuffix("/v1") + "/loopact/prefix"
        t0 = time.monotonic()
        try:
            await self.brain.wait_ready()
            generation = self.brain.generation
            async with httpx2.AsyncClient(timeout=timeout_s) as client:
                resp = await client.post(url, json={"key": key, "messages": messages})
            if resp.status_code != 200:
                return {"source": "skipped", "reason": f"HTTP {resp.status_code}"}
            result: dict[str, Any] = resp.json()
        except (httpx2.HTTPError, ModelError, ValueError) as exc:
            log.warning("the local brain could not prepare its prompt: %r", exc)
            return {"source": "skipped", "reason": type(exc).__name__}
        result["wall_s"] = round(time.monotonic() - t0, 3)
        self.last_prepare = result
        if result.get("source") in ("disk", "evaluated"):
            self._warm, self._warm_generation = request, generation
        return result

    async def _rewarm(self) -> None:
        """Prepare the last prepared prefix again on a server restarted since (a fraction of
        a second: its state is on disk). Never raises: it only makes the request faster."""
        if self._warm is None or self._warm_generation == self.brain.generation:
            return
        result = await self.prepare(self._warm)
        log.info("prompt prefix on the restarted local server: %s", result.get("source"))
        self._warm_generation = self.brain.generation  # tried once per generation

    def prompt_key(self, system_message: Any) -> str:
        """The key of a saved prompt state: model file, build, context, format, prompt."""
        path = self.brain.model_path
        try:
            st = path.stat()
            ident = [str(path), st.st_size, st.st_mtime_ns]
        except OSError:
            ident = [str(path)]
        payload = [
            ident,
            self._build_id,
            self.brain.context_tokens,
            self.brain.chat_format,
            system_message,
            *SERVER_OPTIONS,  # the context's output buffer is part of the saved state
        ]
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:32]

    async def aclose(self) -> None:
        """Close the provider's connections (the server is stopped by its owner)."""
        await self._inner.aclose()
        if self._closing:
            await asyncio.wait(self._closing, timeout=5)

    def reset(self) -> None:
        """Forget provider-side conversation state."""
        self._inner.reset()
