"""What the loop benchmarks share (``bench/overhead.py``, ``bench/peers.py``, SPEC H4).

The scripted task (R rounds of one call of a no-op tool, then an answer), the clocks and the
per-round figures, loopact's agent on that task, and the hand-written baseline: the smallest
correct tool loop on the raw ``openai`` SDK, streaming or not.

A round is the time between two consecutive calls of the tool (``mark()`` is called as the tool
starts): the tool result goes back into the history, the next request is built and sent, the
response is read and parsed and the next call is dispatched. Every loop is measured at the same
point, whatever its framework.

loopact and openai are imported inside the functions, not here: ``bench/peers.py`` counts their
import as setup time in a fresh process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

    from loopact.agent import Agent
    from loopact.tools.base import Tool

Mark = Callable[[], None]
"""Called by the tool as it starts, once per round."""

Stamp = tuple[float, float]
"""(wall clock, CPU clock) in seconds."""

API_KEY = "sk-bench-0123456789abcdef"
"""Every loop's API key: as long as a real one (loopact masks known keys in its events)."""
TOOL_NAME = "noop"
TOOL_DESCRIPTION = "Return n."
FINAL_TEXT = "done"
NOOP_OPENAI_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer", "description": "Any integer."}},
            "required": ["n"],
        },
    },
}
"""The no-op tool as the hand-written loop offers it (what loopact derives from ``noop``)."""


def script(
    rounds: int, *, stream_as_json: bool = False, final_call: str | None = None
) -> dict[str, Any]:
    """The scripted model server's script of one task (docs/scripted-server.md).

    Args:
        rounds: Tool rounds: turn i calls ``noop`` with ``{"n": i}`` (call id ``c<i>``).
        stream_as_json: Answer every request with one whole JSON ``chat.completion``, also a
            stream request (a non-streaming endpoint; the stream-off mode of the benchmarks).
        final_call: The tool the last turn calls with ``{"answer": "done"}`` (smolagents ends a
            run with its ``final_answer`` tool); None: the last turn answers the text "done".

    Returns:
        ``{"turns": [...]}``: ``rounds`` tool turns and the final one; arguments stream in
        64-character pieces.
    """
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"c{i}", "name": TOOL_NAME, "arguments": {"n": i}}]}
        for i in range(rounds)
    ]
    if final_call is None:
        turns.append({"text": FINAL_TEXT})
    else:
        turns.append(
            {
                "tool_calls": [
                    {"id": "cfinal", "name": final_call, "arguments": {"answer": FINAL_TEXT}}
                ]
            }
        )
    for turn in turns:
        turn["chunk_size"] = 64
        if stream_as_json:
            turn["stream_as_json"] = True
    return {"turns": turns}


def stamp(cpu_clock: Callable[[], float] = time.thread_time) -> Stamp:
    """(``time.perf_counter()``, ``cpu_clock()``) now."""
    return (time.perf_counter(), cpu_clock())


def per_round(stamps: list[Stamp]) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds between consecutive stamps: ``len(stamps) - 1`` rounds."""
    pairs = list(zip(stamps, stamps[1:], strict=False))
    return [b[0] - a[0] for a, b in pairs], [b[1] - a[1] for a, b in pairs]


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def noop_tool(mark: Mark) -> Tool:
    """The loopact tool ``noop(n)``: calls ``mark()``, returns n."""
    from loopact.tools.base import tool

    @tool
    async def noop(n: int) -> int:
        """Return n.

        Args:
            n: Any integer.
        """
        mark()
        return n

    return noop


def loopact_agent(base_url: str, rounds: int, workspace: Path, mark: Mark) -> Agent:
    """loopact's agent on the task: OpenAI provider, dispatcher, guards, events, bounds.

    Args:
        base_url: The model endpoint (``.../v1``).
        rounds: Tool rounds of the task (the bounds allow them all).
        workspace: The agent's workspace folder.
        mark: Called as each call of the tool starts.
    """
    from loopact.agent import Agent, AgentOptions, Bounds
    from loopact.llm.openai_chat import OpenAIChatModel
    from loopact.tools.registry import ToolRegistry

    model = OpenAIChatModel("bench", base_url, API_KEY)
    bounds = Bounds(max_rounds=rounds + 1, max_calls_read_only=10 * rounds, token_budget=10**9)
    options = AgentOptions(bounds=bounds, workspace=workspace)
    return Agent(model, ToolRegistry([noop_tool(mark)]), options)


async def run_loopact_task(agent: Agent, prompt: str = "go") -> None:
    """One task on ``agent``, from a fresh history.

    Raises:
        RuntimeError: The task did not end ``completed`` with the answer "done".
    """
    agent.reset_history()
    outcome = await agent.run_task(prompt)
    if outcome.status != "completed" or outcome.reply != FINAL_TEXT:
        raise RuntimeError(f"loopact's task ended {outcome.status}: {outcome!r}")


def raw_client(base_url: str) -> openai.AsyncOpenAI:
    """The baseline's SDK client (no retries, as loopact's provider)."""
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


async def run_raw_task(
    client: openai.AsyncOpenAI,
    mark: Mark,
    *,
    stream: bool = True,
    typed: bool = True,
    prompt: str = "go",
) -> None:
    """One task through the smallest correct tool loop on the raw SDK (the baseline).

    Args:
        client: From :func:`raw_client`.
        mark: Called as each call of the tool starts.
        stream: Read the response as a stream of chunks (else one JSON completion).
        typed: Pass messages and tools as the SDK's typed parameters, as its documentation
            does; False: as ``extra_body``, which skips the SDK's request transformation
            (what loopact's provider does).
        prompt: The user message.

    Raises:
        RuntimeError: The final answer is not "done".
    """
    messages: list[Any] = [{"role": "user", "content": prompt}]
    while True:
        params = _params(messages, typed)
        if stream:
            text, calls = await _streamed(client, params)
        else:
            text, calls = await _whole(client, params)
        if not calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            mark()
            result = json.loads(c["arguments"])["n"]
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": json.dumps({"ok": True, "data": result}),
                }
            )
    if text != FINAL_TEXT:
        raise RuntimeError(f"raw SDK loop: final answer {text!r}")


def _params(messages: list[Any], typed: bool) -> dict[str, Any]:
    if typed:
        return {"model": "bench", "messages": messages, "tools": [NOOP_OPENAI_TOOL]}
    extra = {"messages": messages, "tools": [NOOP_OPENAI_TOOL]}
    return {"model": "bench", "messages": [], "extra_body": extra}


async def _streamed(
    client: openai.AsyncOpenAI, params: dict[str, Any]
) -> tuple[str, list[dict[str, str]]]:
    response = await client.chat.completions.create(**params, stream=True)
    text = ""
    calls: dict[int, dict[str, str]] = {}
    async for chunk in response:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for tc in delta.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            c["id"] = tc.id or c["id"]
            if tc.function:
                c["name"] = tc.function.name or c["name"]
                c["arguments"] += tc.function.arguments or ""
    return text, list(calls.values())


async def _whole(
    client: openai.AsyncOpenAI, params: dict[str, Any]
) -> tuple[str, list[dict[str, str]]]:
    response = await client.chat.completions.create(**params)
    message = response.choices[0].message
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    return message.content or "", calls
