"""The local brain's server streams a context overflow as an error event (SPEC B6, E1).

llama-cpp-python's server refuses a prompt longer than its context window only once a
streamed answer has begun: the client got HTTP 200 with an empty body and retried it three
times. :func:`~loopact.llm.local.server.overflow_as_error_event` turns that refusal into the
error llama-cpp-python sends for a request that does not stream. The real server and model are
in tests/llm/local/test_brain.py (``local_model``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from loopact.errors import ContextOverflow
from loopact.llm.httperrors import body_error
from loopact.llm.local.server import overflow_as_error_event


def refused(message: str) -> Iterator[Any]:
    raise ValueError(message)
    yield  # a generator, as llama-cpp-python's chunks are


def test_an_overflow_becomes_one_error_chunk_the_provider_reads_as_an_overflow() -> None:
    chunks = list(
        overflow_as_error_event(refused("Requested tokens (9251) exceed context window of 8192"))
    )
    assert len(chunks) == 1
    error = chunks[0]["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["message"].startswith("This model's maximum context length is 8192 tokens.")
    assert "9251" in error["message"]
    read = body_error(chunks[0], error["message"])
    assert isinstance(read, ContextOverflow) and not read.retryable
    assert read.context_tokens == 8192


def test_other_chunks_and_errors_pass_unchanged() -> None:
    assert list(overflow_as_error_event(iter([{"a": 1}, {"b": 2}]))) == [{"a": 1}, {"b": 2}]
    assert list(overflow_as_error_event(iter([]))) == []
    with pytest.raises(ValueError, match="something else"):
        list(overflow_as_error_event(refused("something else")))
