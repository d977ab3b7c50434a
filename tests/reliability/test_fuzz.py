"""Property-based fuzzing of the parsers and gates (issue 20 reliability; SPEC A4, A5, B5, B7, G1).

``hypothesis`` drives the stream accumulator, argument repair, the action-text parser, plan
placeholder resolution, config loading and the image gate with generated input, plausible and
hostile. The properties: never an unhandled exception (only the documented error type), and
every tool call is yielded exactly once and gets exactly one result. Derandomised (the same
examples every run) and without an example database, so ``make test`` is deterministic.
"""

from __future__ import annotations

import asyncio
import io
import json
import string
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage
from tests.agent.helpers import make_agent

from loopact.agent.actiontext import parse_actions
from loopact.agent.plan import resolve_parameters
from loopact.config import Config, load_config
from loopact.errors import ConfigError, ModelFatalError, ModelRetryableError, PlanError
from loopact.llm.accumulate import accumulate_chunk, finish_stream, new_state
from loopact.llm.base import ResponseDone, ToolCallReady, ToolSpec
from loopact.llm.repair import parse_tool_arguments
from loopact.testing import ScriptedModelServer
from loopact.tools.base import ToolResult, tool
from loopact.vision.gate import ImageGate

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=120,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ------------------------------------------------------------------------ shared strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NAMES = ["move_forward", "look", "wait", "file_write", "", "look_", "Move_Forward", "x" * 70]
json_fragments = st.sampled_from(
    ['{"', '"distance_m"', ": ", "0.5", ",", "}", "{", "]", "[", '"', "\\", "null", "NaN", "```"]
)
argument_text = (
    st.lists(json_fragments, max_size=12).map("".join)
    | st.text(max_size=40)
    | st.builds(lambda v: json.dumps(v, default=str), json_values)
)


# ------------------------------------------------------------------------ stream accumulator


def _tool_call_delta() -> st.SearchStrategy[dict[str, Any]]:
    function = st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(NAMES) | st.none(),
            "arguments": argument_text | json_values,
        },
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "index": st.integers(-1, 3) | st.none() | st.text(max_size=2),
            "id": st.sampled_from(["", "call_a", "call_b", "call_c"]) | st.none(),
            "type": st.just("function"),
            "function": function | json_values,
        },
    )


_delta = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.text(max_size=30)
        | st.sampled_from(["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_"])
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}))
        | json_values,
        "reasoning_content": st.text(max_size=20) | json_values,
        "reasoning": st.text(max_size=20),
        "tool_calls": st.lists(_tool_call_delta(), max_size=3) | json_values,
        "function_call": _tool_call_delta().map(lambda d: d.get("function", {})) | json_values,
        "refusal": st.text(max_size=20) | json_values,
    },
)
_choice = st.fixed_dictionaries(
    {"delta": _delta | json_values},
    optional={
        "index": st.sampled_from([0, 0, 0, 1]) | json_values,
        "finish_reason": st.sampled_from(
            ["stop", "tool_calls", "length", "", None, "function_call", "content_filter", "error"]
        ),
    },
)
chunks = (
    st.fixed_dictionaries(
        {},
        optional={
            "choices": st.lists(_choice, max_size=2) | json_values,
            "usage": st.fixed_dictionaries(
                {}, optional={"prompt_tokens": json_values, "completion_tokens": json_values}
            )
            | json_values,
        },
    )
    | json_values
)


@FUZZ
@given(st.lists(chunks, max_size=12), st.booleans())
def test_stream_accumulator_yields_every_call_once_and_never_crashes(
    stream: list[Any], native: bool
) -> None:
    state = new_state(["move_forward", "look", "wait"], native_tool_calls=native)
    events = []
    for chunk in stream:
        try:
            events += accumulate_chunk(chunk, state)
        except ModelRetryableError as exc:
            assert str(exc)  # a malformed chunk: the stream counts as cut, with a reason
            return
    try:
        events += finish_stream(state)
    except (ModelRetryableError, ModelFatalError) as exc:
        # a finish reason that is no answer: an error that says so (never a half answer)
        assert state.finish_reason in ("error", "content_filter") and "finish_reason" in str(exc)
        return
    assert isinstance(events[-1], ResponseDone)
    assert not any(isinstance(e, ResponseDone) for e in events[:-1])
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    done = events[-1]
    # each usable call yielded exactly once, in call order, and none of them truncated
    assert [c.id for c in ready] == [c.id for c in done.message.tool_calls]
    assert [e.index for e in events if isinstance(e, ToolCallReady)] == list(range(len(ready)))
    truncated = {c.id for c in done.truncated_calls}
    assert not truncated & {c.id for c in ready}
    assert all(c.error for c in done.truncated_calls)


# ------------------------------------------------------------------------ argument repair


@FUZZ
@given(argument_text | json_values)
def test_argument_repair_never_raises_and_says_why(raw: Any) -> None:
    args, error = parse_tool_arguments(raw)
    assert isinstance(args, dict)
    if error is not None:
        assert args == {} and isinstance(error, str) and error


# ------------------------------------------------------------------------ action text

SPECS = [
    ToolSpec(
        "move_forward",
        "Drive forward.",
        {
            "type": "object",
            "properties": {"distance_m": {"type": "number"}, "speed_mps": {"type": "number"}},
            "required": ["distance_m"],
        },
    ),
    ToolSpec("look", "Look.", {"type": "object", "properties": {}}),
    ToolSpec(
        "say",
        "Say.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
]
action_pieces = st.sampled_from(
    [
        "move_forward(",
        "look()",
        "say(",
        "finishtask()",
        "teleport(",
        "distance_m=",
        "1e309",
        "0.5",
        "'hi'",
        '"',
        ")",
        "(",
        ",",
        "\n",
        "```",
        "os.path(",
        "[1, 2",
        "{'a': ",
        "__import__('os')",
        "lambda: 0",
        "*args",
        "**kw",
    ]
)


@FUZZ
@given(st.lists(action_pieces | st.text(max_size=10), max_size=20).map("".join))
def test_action_text_parser_never_raises_and_runs_at_most_one_known_action(text: str) -> None:
    parse = parse_actions(text, SPECS)
    if parse.call is not None:
        assert parse.call.name in {s.name for s in SPECS}
        assert not parse.finished
        if parse.call.error is None:
            json.dumps(parse.call.arguments, allow_nan=False)  # finite, JSON-able literals only
    assert isinstance(parse.feedback(), str)


# ------------------------------------------------------------------------ plan placeholders

refs = st.builds(
    lambda step, field, path: "{{steps." + step + ".outputs." + field + path + "}}",
    st.sampled_from(["1", "2", "x", "", "1.2"]),
    st.sampled_from(["data", "metadata", "nope"]),
    st.lists(st.sampled_from(["a", "0", "-1", "5", "b", "x y"]), max_size=3).map(
        lambda p: "".join("." + s for s in p)
    ),
)
param_strings = (
    refs
    | st.builds(lambda a, r, b: a + r + b, st.text(max_size=5), refs, st.text(max_size=5))
    | st.text(alphabet=string.ascii_letters + "{}.", max_size=20)
)
param_values = st.recursive(
    param_strings | json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
results = st.builds(
    lambda ok, data, meta: ToolResult(ok=ok, data=data, metadata=meta),
    st.booleans(),
    json_values,
    st.dictionaries(st.sampled_from(["a", "b", "0"]), json_values, max_size=3),
)


@FUZZ
@given(
    st.dictionaries(st.text(max_size=6), param_values, max_size=4),
    st.dictionaries(st.sampled_from(["1", "2", "x"]), results, max_size=3),
)
def test_plan_placeholder_resolution_raises_only_plan_errors(
    params: dict[str, Any], outputs: dict[str, ToolResult]
) -> None:
    try:
        resolved = resolve_parameters(params, outputs)
    except PlanError as exc:
        assert str(exc)
        return
    assert set(resolved) == set(params)


# ------------------------------------------------------------------------ config loading

SECTIONS = [
    "model",
    "agent",
    "robot",
    "vision",
    "trace",
    "local",
    "web",
    "memory",
    "mqtt",
    "mcp",
    "nodes",
    "voice",
    "messages",
    "tools",
    "confirm",
    "images",
    "shell",
    "board",
]
KEYS = [
    "provider",
    "base_url",
    "model",
    "api_key",
    "bounds",
    "max_rounds",
    "mode",
    "kind",
    "profile",
    "lang",
    "servers",
    "broker",
    "port",
    "enabled",
    "path",
    "timeout_s",
    "allow",
    "stream_idle_timeout_s",
    "temperature",
    "context_limit",
    "tool_calling",
    "command",
]
config_values = st.recursive(
    json_scalars | st.sampled_from(["${NOPE}", "$HOME", "openai", "auto", "-1", "1e999"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=10,
)
config_docs = st.dictionaries(st.sampled_from(SECTIONS), config_values, max_size=4)


@FUZZ
@given(config_docs | json_values, st.sampled_from(["yaml", "text"]), st.text(max_size=60))
def test_config_loading_raises_only_config_errors(data: Any, form: str, text: str) -> None:
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "loopact.yaml"
        if form == "yaml":
            path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        else:
            path.write_text(text, encoding="utf-8")
        try:
            cfg, source = load_config(path, env={}, cwd=Path(folder))
        except ConfigError as exc:
            assert str(exc)
            return
    assert isinstance(cfg, Config) and source == path


# ------------------------------------------------------------------------ image gate


def _encoded(fmt: str, w: int, h: int, seed: int) -> bytes:
    rgb = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(rgb).save(buf, format=fmt)
    return buf.getvalue()


images = (
    st.binary(max_size=200)
    | st.builds(
        lambda fmt, w, h, seed, cut: (
            _encoded(fmt, w, h, seed)[:cut] if cut else _encoded(fmt, w, h, seed)
        ),
        st.sampled_from(["PNG", "JPEG", "GIF", "BMP", "WEBP", "TIFF"]),
        st.integers(1, 40),
        st.integers(1, 40),
        st.integers(0, 3),
        st.integers(0, 300),
    )
    | st.builds(
        lambda shape, dtype: np.zeros(shape, dtype=dtype),
        st.sampled_from(
            [(0, 0, 3), (8, 8), (8, 8, 3), (8, 8, 4), (8, 8, 2), (3,), (1, 1, 1, 1), (4000, 1, 3)]
        ),
        st.sampled_from([np.uint8, np.float32, np.int64, np.bool_]),
    )
)


@pytest.fixture(scope="module")
def gate() -> ImageGate:
    return ImageGate(max_side_px=64, max_input_bytes=100_000, busy_timeout_s=5)


@pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning")  # PIL on a cut TIFF
@FUZZ
@given(source=images)
def test_image_gate_never_raises_and_either_accepts_or_says_why(
    gate: ImageGate, source: Any
) -> None:
    result = gate.process(source)
    if result.image is None:
        assert result.error
    else:
        assert result.error is None
        with PILImage.open(io.BytesIO(result.image.data)) as img:
            assert max(img.size) <= 64 and img.mode == "RGB"
    assert gate.active == 0


# ------------------------------------------------------------------------ one result per call


@tool
async def look() -> str:
    """Look around."""
    return "a red box"


@tool
async def boom() -> str:
    """Fails."""
    raise ValueError("nope")


scripted_calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["look", "boom", "wait", "file_list", "nope", "Look", ""]),
            "arguments": argument_text,
        }
    ),
    min_size=1,
    max_size=5,
)


@settings(derandomize=True, database=None, deadline=None, max_examples=15)
@given(st.lists(scripted_calls, min_size=1, max_size=3))
def test_every_scripted_call_gets_exactly_one_result(rounds: list[list[dict[str, Any]]]) -> None:
    import tempfile

    turns: list[dict[str, Any]] = []
    for r, calls in enumerate(rounds):
        turns.append({"tool_calls": [{**c, "id": f"r{r}c{i}"} for i, c in enumerate(calls)]})
    turns.append({"text": "done"})

    async def run() -> None:
        with (
            tempfile.TemporaryDirectory() as folder,
            ScriptedModelServer({"turns": turns}) as server,
        ):
            agent, rec = make_agent(server, Path(folder), tools=[look, boom])
            try:
                outcome = await asyncio.wait_for(agent.run_task("go"), 30)
            finally:
                await agent.close()
            assert outcome.status in ("completed", "bounded"), outcome
            calls = [e.data["id"] for e in rec.of("tool_call")]
            results = [e.data["id"] for e in rec.of("tool_result")]
            assert sorted(calls) == sorted(results) and len(set(results)) == len(results)
            served = [turns[r.turn_index] for r in server.requests if r.turn_index is not None]
            made = {c["id"] for t in served[:-1] for c in t.get("tool_calls", [])}
            # every call the model made is answered in the history the model sees next
            answered = {
                m["tool_call_id"]
                for req in server.requests[1:]
                for m in req.body["messages"]
                if m["role"] == "tool"
            }
            assert made <= answered, (made, answered)

    asyncio.run(run())
