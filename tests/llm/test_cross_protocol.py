"""One protocol-neutral script gives the same tool calls over OpenAI, Anthropic and Dify (X2, B4).

Dify has no native tools: its answer is action text (A5), parsed with the live tool schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopact.agent.actiontext import parse_actions
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelRequest, ResponseDone, ToolSpec
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer

SPECS = (
    ToolSpec("observe_surroundings", "Look around.", {"type": "object", "properties": {}}),
    ToolSpec(
        "move_forward",
        "Drive straight ahead.",
        {
            "type": "object",
            "properties": {"distance_m": {"type": "number"}, "speed_mps": {"type": "number"}},
            "required": ["distance_m"],
        },
    ),
)
TURNS = [
    {"text": "Looking.", "tool_calls": [{"name": "observe_surroundings", "arguments": {}}]},
    {
        "text": "The red box is ahead.",
        "tool_calls": [
            {"name": "move_forward", "arguments": {"distance_m": 1.0, "speed_mps": 0.25}}
        ],
    },
]


async def calls_over(model: Model) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    history = [Message.system("Drive the robot."), Message.user("look around, then go")]
    for _ in TURNS:
        done = None
        async for event in model.stream(ModelRequest(messages=tuple(history), tools=SPECS)):
            if isinstance(event, ResponseDone):
                done = event
        assert done is not None
        calls = list(done.message.tool_calls)
        if not model.capabilities.native_tool_calls:
            parsed = parse_actions(done.message.text, SPECS)
            assert parsed.call is not None and parsed.call.error is None
            calls = [parsed.call]
        assert len(calls) == 1
        out.append((calls[0].name, calls[0].arguments))
        history.append(
            Message.assistant(done.message.text, tool_calls=calls)
            if model.capabilities.native_tool_calls
            else done.message
        )
        if model.capabilities.native_tool_calls:
            history.append(Message.tool(calls[0].id, calls[0].name, "ok"))
        else:
            history.append(Message.user(f"Result of {calls[0].name}: ok"))
    await model.aclose()
    return out


async def test_same_calls_over_three_protocols(
    scripted_server: Callable[[Any], ScriptedModelServer],
) -> None:
    results = []
    for make in (
        lambda url: OpenAIChatModel("m", base_url=url, api_key="k"),
        lambda url: AnthropicModel("m", base_url=url.removesuffix("/v1"), api_key="k"),
        lambda url: DifyModel("app", base_url=url, api_key="k"),
    ):
        server = scripted_server(TURNS)
        results.append(await calls_over(make(server.base_url)))
    expected = [
        ("observe_surroundings", {}),
        ("move_forward", {"distance_m": 1.0, "speed_mps": 0.25}),
    ]
    assert results == [expected, expected, expected]
