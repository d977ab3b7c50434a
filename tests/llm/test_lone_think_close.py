"""A reasoning model that starts inside its think block (issue 22 item 6, SPEC B5).

Its chat template opened ``<think>`` in the prompt, so the stream has only the closing tag:
everything before a lone ``</think>`` is reasoning, the reply is what follows, and the
history keeps the two apart. Through the scripted server into the real providers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.llm.base import ModelRequest, ResponseDone
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer

Factory = Callable[[Any], ScriptedModelServer]
REQUEST = ModelRequest(messages=(Message.user("what is 2 + 3?"),))
ISSUE_PIECES = ["The user wants", " a short answer.\n", "</think>", "\n\nThe answer is 5."]


def content_chunks(pieces: list[str]) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]})

    return (
        [chunk({"role": "assistant", "content": ""})]
        + [chunk({"content": p}) for p in pieces]
        + [chunk({}, "stop")]
    )


@pytest.mark.parametrize(
    "pieces",
    [
        ISSUE_PIECES,
        ["The user wants a short answer.\n</think>\n\nThe answer is 5."],
        ["The user wants a short answer.\n</th", "ink>", "\n\nThe answer is 5."],
        ["The user", " wants a short answer.\n<", "/think>\n\nThe ", "answer is 5."],
    ],
    ids=["issue", "one-chunk", "tag-split", "tag-split-early"],
)
async def test_text_before_a_lone_close_tag_is_reasoning(
    scripted_server: Factory, pieces: list[str]
) -> None:
    server = scripted_server([{"raw_chunks": content_chunks(pieces)}])
    model = OpenAIChatModel("scripted", server.base_url, api_key="k", request_timeout_s=10)
    try:
        events = [e async for e in model.stream(REQUEST)]
    finally:
        await model.aclose()
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.text == "The answer is 5."
    assert done.message.reasoning == "The user wants a short answer.\n"


async def test_a_think_block_then_a_stray_close_keeps_the_answer(
    scripted_server: Factory,
) -> None:
    """After a real <think> block a stray </think> is dropped; the answer is not touched."""
    pieces = ["<think>plan</think>", "The answer", " is 5.</think> Indeed."]
    server = scripted_server([{"raw_chunks": content_chunks(pieces)}])
    model = OpenAIChatModel("scripted", server.base_url, api_key="k", request_timeout_s=10)
    try:
        done = [e async for e in model.stream(REQUEST)][-1]
    finally:
        await model.aclose()
    assert isinstance(done, ResponseDone)
    assert done.message.text == "The answer is 5. Indeed." and done.message.reasoning == "plan"


async def test_dify_answer_with_a_lone_close_tag(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"text": "The user wants a short answer.\n</think>\n\nThe answer is 5.", "chunk_size": 7}]
    )
    model = DifyModel(base_url=server.base_url, api_key="app-k", request_timeout_s=10)
    try:
        done = [e async for e in model.stream(REQUEST)][-1]
    finally:
        await model.aclose()
    assert isinstance(done, ResponseDone)
    assert done.message.text == "The answer is 5."
    assert done.message.reasoning == "The user wants a short answer.\n"


async def test_the_reply_and_the_history_keep_them_apart(
    scripted_server: Factory, tmp_path: Path
) -> None:
    server = scripted_server([{"raw_chunks": content_chunks(ISSUE_PIECES)}])
    agent, rec = make_agent(server, tmp_path)
    outcome = await agent.run_task("what is 2 + 3?")
    await agent.close()
    assert outcome.reply == "The answer is 5."
    last = agent.history[-1]
    assert last.role == "assistant" and last.text == "The answer is 5."
    assert last.reasoning == "The user wants a short answer.\n"
    (response,) = rec.of("model_response")
    assert response.data["text"] == "The answer is 5."
