"""The loops ``bench/peers.py`` compares, one builder each (issue 20, SPEC H4).

A builder gets a :class:`Setup` (the scripted server's base URL, stream on/off, the rounds of a
task and the ``mark`` the tool calls) in a fresh worker process and returns a :class:`Runner`
whose ``run()`` does one task. Each framework is imported inside its builder, after
``bench/peers.py`` has taken this folder off ``sys.path`` (its ``mcp.py`` would shadow the SDK).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loops import (
    API_KEY,
    FINAL_TEXT,
    Mark,
    loopact_agent,
    raw_client,
    run_loopact_task,
    run_raw_task,
)

BASELINE = "raw"
RAW_JSON = "raw-json"  # the same loop with the body as extra_body: no SDK transformation


@dataclass(frozen=True)
class Setup:
    """What a worker hands a loop's builder."""

    base_url: str
    stream: bool
    rounds: int
    mark: Mark


@dataclass(frozen=True)
class Runner:
    """One built loop: ``run()`` does one task, ``close()`` releases it."""

    run: Callable[[], Awaitable[None]]
    close: Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


def _check(framework: str, answer: object) -> None:
    if answer != FINAL_TEXT:
        raise RuntimeError(f"{framework}: final answer {answer!r}, expected {FINAL_TEXT!r}")


# --- the loops ------------------------------------------------------------------------------


async def build_raw(s: Setup) -> Runner:
    client = raw_client(s.base_url)
    return Runner(lambda: run_raw_task(client, s.mark, stream=s.stream), client.close)


async def build_raw_json(s: Setup) -> Runner:
    client = raw_client(s.base_url)
    return Runner(lambda: run_raw_task(client, s.mark, stream=s.stream, typed=False), client.close)


async def build_loopact(s: Setup) -> Runner:
    workspace = Path(tempfile.mkdtemp(prefix="peers-loopact-"))
    agent = loopact_agent(s.base_url, s.rounds, workspace, s.mark)

    async def close() -> None:
        await agent.close()
        shutil.rmtree(workspace, ignore_errors=True)

    return Runner(lambda: run_loopact_task(agent), close)


async def build_langgraph(s: Setup) -> Runner:
    import warnings

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():  # create_react_agent is deprecated for langchain's own
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    async def noop(n: int) -> int:
        """Return n."""
        s.mark()
        return n

    llm = ChatOpenAI(
        model="bench",
        base_url=s.base_url,
        api_key=API_KEY,
        max_retries=0,
        streaming=s.stream,
        use_responses_api=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(llm, [tool(noop)])
    config = {"recursion_limit": 2 * s.rounds + 10}

    async def run() -> None:
        state = await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
        _check("langgraph", state["messages"][-1].content)

    return Runner(run, _nothing)


async def build_smolagents(s: Setup) -> Runner:
    from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent, tool

    def noop(n: int) -> int:
        """Return n.

        Args:
            n: Any integer.
        """
        s.mark()
        return n

    model = OpenAIServerModel(
        model_id="bench", api_base=s.base_url, api_key=API_KEY, client_kwargs={"max_retries": 0}
    )
    agent = ToolCallingAgent(
        tools=[tool(noop)],
        model=model,
        stream_outputs=s.stream,
        max_steps=s.rounds + 2,
        verbosity_level=LogLevel.OFF,
    )

    async def run() -> None:  # smolagents is synchronous: the run blocks this event loop
        _check("smolagents", agent.run("go"))

    return Runner(run, _nothing)


async def build_openai_agents(s: Setup) -> Runner:
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from agents import Runner as AgentRunner

    set_tracing_disabled(True)

    async def noop(n: int) -> int:
        """Return n.

        Args:
            n: Any integer.
        """
        s.mark()
        return n

    client = openai.AsyncOpenAI(base_url=s.base_url, api_key=API_KEY, max_retries=0)
    agent = Agent(
        name="bench",
        tools=[function_tool(noop)],
        model=OpenAIChatCompletionsModel(model="bench", openai_client=client),
    )

    async def run() -> None:
        if s.stream:
            result = AgentRunner.run_streamed(agent, "go", max_turns=s.rounds + 2)
            async for _ in result.stream_events():
                pass
        else:
            result = await AgentRunner.run(agent, "go", max_turns=s.rounds + 2)
        _check("openai-agents", result.final_output)

    return Runner(run, client.close)


async def build_pydantic_ai(s: Setup) -> Runner:
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = openai.AsyncOpenAI(base_url=s.base_url, api_key=API_KEY, max_retries=0)
    agent = Agent(OpenAIChatModel("bench", provider=OpenAIProvider(openai_client=client)))

    async def noop(n: int) -> int:
        """Return n.

        Args:
            n: Any integer.
        """
        s.mark()
        return n

    agent.tool_plain(noop)

    async def drain(_ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    async def run() -> None:
        result = await agent.run("go", event_stream_handler=drain if s.stream else None)
        _check("pydantic-ai", result.output)

    return Runner(run, client.close)


@dataclass(frozen=True)
class Peer:
    """A loop in the comparison.

    Attributes:
        name: Its name on the command line and in the table.
        dists: The distributions it needs (their versions are shown); missing: not installed.
        build: Builds it in a worker process.
        final_call: The tool its script's last turn calls (None: the last turn is text).
    """

    name: str
    dists: tuple[str, ...]
    build: Callable[[Setup], Awaitable[Runner]]
    final_call: str | None = None


PEERS = {
    p.name: p
    for p in (
        Peer(BASELINE, ("openai",), build_raw),
        Peer(RAW_JSON, ("openai",), build_raw_json),
        Peer("loopact", ("loopact",), build_loopact),
        Peer("langgraph", ("langgraph", "langchain-openai"), build_langgraph),
        Peer("smolagents", ("smolagents",), build_smolagents, final_call="final_answer"),
        Peer("openai-agents", ("openai-agents",), build_openai_agents),
        Peer("pydantic-ai", ("pydantic-ai-slim",), build_pydantic_ai),
    )
}
