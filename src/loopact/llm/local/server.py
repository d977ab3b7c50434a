"""The local brain's server: llama-cpp-python's server plus a prompt-prefix cache (issue 13).

Run by :class:`loopact.llm.local.LocalBrain` as ``python -m loopact.llm.local.server`` with
llama-cpp-python's own server arguments and ``--loopact-state-dir DIR``. It serves the same
OpenAI-compatible API as ``python -m llama_cpp.server`` and adds two routes:

``GET /loopact/health``
    ``{"ok": true}`` without waiting for the model (the model lock is not taken).

``POST /loopact/prefix`` with ``{"key": "<hex>", "messages": [...]}``
    Makes the model's KV cache hold the evaluated ``messages`` (the system prompt with the
    tool catalogue, followed by a one-character user message), so the next chat request that
    starts with the same system message only evaluates its own suffix: llama-cpp-python reuses
    the longest matching token prefix of what it evaluated last. The evaluated state is saved
    with llama.cpp's ``llama_state_save_file`` as ``DIR/<key>.state`` and loaded from there by
    later processes, so the prefix is evaluated once per model, build and prompt, not once per
    run. The key (chosen by the caller) must hash everything the state depends on. Answers
    ``{"source": "disk" | "evaluated", "tokens": N, "seconds": S}``.

A streamed request whose prompt is longer than the context window is answered with one
OpenAI-style error event (``{"error": {"code": "context_length_exceeded", "message": "This
model's maximum context length is 8192 tokens. ..."}}``) instead of an empty body:
llama-cpp-python's server refuses such a prompt only once the stream has begun, so the client
got "HTTP 200 with an empty body" and retried it (:func:`overflow_as_error_event`).

Greedy grammar requests are sampled by :mod:`loopact.llm.local.sampler` (the grammar is
asked about the greedy token first, the whole vocabulary only when it refuses it) and decoded
speculatively with guesses looked up in the prompt (:mod:`loopact.llm.local.draft`); set
``LOOPACT_LOCAL_SAMPLER=chain`` to compare with llama-cpp-python's own sampler chain, or
``LOOPACT_LOCAL_DRAFT=off`` to keep the lazy check without the guesses.

This module runs only in the child process; it imports llama_cpp, which the agent's own
process never needs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_KEY_RE = re.compile(r"^[0-9a-f]{16,64}$")

#: Saved prompt states kept (the newest; each is tens of MB).
KEEP_STATES = 8


def _prune(state_dir: Path, keep: int) -> None:
    states = sorted(state_dir.glob("*.state"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in states[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _load_state(llama: Any, path: Path) -> int:
    """Load a saved KV state into ``llama``; returns its token count (0 when unusable)."""
    import llama_cpp

    capacity = llama.n_ctx()
    tokens = (llama_cpp.llama_token * capacity)()
    count = ctypes.c_size_t(0)
    ok = llama_cpp.llama_state_load_file(
        llama._ctx.ctx, str(path).encode(), tokens, capacity, ctypes.byref(count)
    )
    n = int(count.value)
    if not ok or n <= 0 or n > capacity:
        llama.reset()
        return 0
    llama.input_ids[:n] = tokens[:n]
    llama.n_tokens = n
    llama._requires_eval = True
    return n


def _save_state(llama: Any, path: Path) -> bool:
    """Save ``llama``'s evaluated tokens and KV state to ``path`` atomically."""
    import llama_cpp

    n = int(llama.n_tokens)
    tokens = (llama_cpp.llama_token * n)(*[int(t) for t in llama.input_ids[:n]])
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    ok = bool(llama_cpp.llama_state_save_file(llama._ctx.ctx, str(tmp).encode(), tokens, n))
    if ok:
        os.replace(tmp, path)
    else:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return ok


def warm_prefix(llama: Any, state_dir: Path, key: str, messages: list[Any]) -> dict[str, Any]:
    """Make ``llama`` hold the evaluated ``messages``, from disk when saved before.

    Args:
        llama: The ``llama_cpp.Llama`` the server uses.
        state_dir: Where ``<key>.state`` files live.
        key: Hex key naming the state (model, build, context size, prompt).
        messages: OpenAI chat messages to evaluate (system prompt + a short user message).

    Returns:
        ``{"source", "tokens", "seconds"}``.

    Raises:
        ValueError: The key is not a hex string.
    """
    if not _KEY_RE.match(key):
        raise ValueError("key must be 16-64 hex digits")
    t0 = time.monotonic()
    path = state_dir / f"{key}.state"
    if path.is_file():
        n = _load_state(llama, path)
        if n:
            return {"source": "disk", "tokens": n, "seconds": round(time.monotonic() - t0, 3)}
        with contextlib.suppress(OSError):
            path.unlink()  # unreadable (another build, a truncated file): evaluate again
    llama.create_chat_completion(messages=messages, max_tokens=1, temperature=0.0)
    state_dir.mkdir(parents=True, exist_ok=True)
    saved = _save_state(llama, path)
    _prune(state_dir, keep=KEEP_STATES)
    return {
        "source": "evaluated",
        "tokens": int(llama.n_tokens),
        "seconds": round(time.monotonic() - t0, 3),
        "saved": saved,
    }


#: llama-cpp-python's words for a prompt longer than the context window.
_OVERFLOW = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def overflow_as_error_event(chunks: Iterator[Any]) -> Iterator[Any]:
    """``chunks`` of a streamed chat completion, or one error chunk when llama-cpp-python
    refuses the prompt as longer than the context window (SPEC B6, E1).

    The refusal is a ``ValueError`` ("Requested tokens (9251) exceed context window of
    8192") raised by the first chunk, after the server has sent HTTP 200: its stream ended
    with no event at all (2026-12-05, a 20 kB instruction). The error chunk is the body
    llama-cpp-python sends for the same refusal of a request that does not stream (code
    ``context_length_exceeded``), which the provider reads as a context overflow, not as a
    failure worth a retry.

    Raises:
        ValueError: Any other error of the first chunk, as before.
    """
    try:
        first = next(chunks)
    except StopIteration:
        return
    except ValueError as exc:
        found = _OVERFLOW.search(str(exc))
        if found is None:
            raise
        prompt, window = int(found[1]), int(found[2])
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt} tokens in the messages. Please reduce the length of the messages."
        )
        yield {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
        return
    yield first
    yield from chunks


def install_overflow_errors() -> None:
    """Make ``llama_cpp.Llama.create_chat_completion`` stream a context overflow as an
    error event (:func:`overflow_as_error_event`). Idempotent; for the server process only."""
    import llama_cpp

    original = llama_cpp.Llama.create_chat_completion
    if getattr(original, "_loopact_overflow", False):
        return

    def create_chat_completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        return overflow_as_error_event(iter(result)) if kwargs.get("stream") else result

    create_chat_completion._loopact_overflow = True  # type: ignore[attr-defined]
    llama_cpp.Llama.create_chat_completion = create_chat_completion


def _add_routes(app: Any, state_dir: Path) -> None:
    from fastapi import Body, Depends, HTTPException
    from llama_cpp.server.app import get_llama_proxy
    from starlette.concurrency import run_in_threadpool

    @app.get("/loopact/health")  # type: ignore[untyped-decorator]
    async def health() -> dict[str, Any]:
        return {"ok": True, "pid": os.getpid()}

    @app.post("/loopact/prefix")  # type: ignore[untyped-decorator]
    async def prefix(
        body: dict[str, Any] = Body(...),  # noqa: B008 - FastAPI's way
        llama_proxy: Any = Depends(get_llama_proxy),  # noqa: B008
    ) -> dict[str, Any]:
        key, messages = body.get("key"), body.get("messages")
        if not isinstance(key, str) or not isinstance(messages, list) or not messages:
            raise HTTPException(422, "body must be {key: hex string, messages: [...]}")
        try:
            return await run_in_threadpool(warm_prefix, llama_proxy(None), state_dir, key, messages)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    """Parse llama-cpp-python's server arguments plus ``--loopact-state-dir`` and serve."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="loopact's local brain server")
    add_args_from_model(parser, Settings)
    parser.add_argument("--loopact-state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    if os.environ.get("LOOPACT_LOCAL_SAMPLER", "lazy") != "chain":
        from loopact.llm.local.sampler import install

        install(draft=os.environ.get("LOOPACT_LOCAL_DRAFT", "on") != "off")
    install_overflow_errors()
    server_settings = parse_model_from_args(ServerSettings, args)
    model_settings = [parse_model_from_args(ModelSettings, args)]
    app = create_app(server_settings=server_settings, model_settings=model_settings)
    _add_routes(app, args.loopact_state_dir)
    print(f"loopact local server: pid {os.getpid()}, port {server_settings.port}", flush=True)
    uvicorn.run(app, host=server_settings.host, port=server_settings.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
