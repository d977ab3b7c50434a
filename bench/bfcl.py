"""The offline brain on an outside benchmark: BFCL's non-live AST categories (issue 45 item 4).

The Berkeley Function Calling Leaderboard (``bfcl-eval`` on PyPI, Apache-2.0) ships its test
data and possible answers in the package (``bfcl_eval/data/BFCL_v4_*.json``) and judges a
response with its AST checker (``bfcl_eval.eval_checker.ast_eval.ast_checker``). This script
puts each entry of the non-live AST categories (``simple_python``, ``multiple``, ``parallel``,
``parallel_multiple``, ``irrelevance``) to the pinned local-brain GGUF in one of two ways and
grades the calls with that checker:

- ``--mode loopact``: the brain as loopact serves it: loopact's server
  (``python -m loopact.llm.local.server``) and loopact's provider for it, as ``loopact run``
  builds it (``OpenAIChatModel`` with the local capabilities inside ``SmallModelPolicy``): the
  functions as the compact Hermes catalogue in the system message, a GBNF grammar over their
  schemas, the ``reply`` pseudo-tool and a call first, greedy decoding, 256 output tokens, one
  call per response (the local brain's capability: the parallel categories need several);
- ``--mode plain``: the same GGUF as plain llama-cpp-python serves it (``python -m
  llama_cpp.server``, the model's own chat template, no grammar), the functions sent as the
  OpenAI ``tools`` list, and the calls read from what the model writes: ``<tool_call>``
  blocks (Qwen's template, as BFCL's own Qwen handler reads them) or, as this GGUF mostly
  answers, a code-fenced JSON call object.

An ``irrelevance`` entry passes when no function is called (BFCL's rule). BFCL's own
``bfcl generate`` cannot run here: its handlers for open models load the tokenizer from the
Hugging Face hub (no network), and the package pins ``numpy==1.26.4`` and pulls
``sentence-transformers`` (torch) for its agentic categories. So the data and the checker are
used from the package, installed without its dependencies, and the checker is imported without
bfcl-eval's model registry (which imports every provider SDK); names with dots
(``math.factorial``) are sent as ``math_factorial`` and mapped back before checking.

Usage (not part of ``make test``; a brain request takes seconds on 2 cores, so a whole run of
the 1,240 entries takes hours: ``--sample N`` puts N entries of each category, evenly spaced)::

    .venv/bin/pip install --no-deps bfcl-eval==2026.3.23
    .venv/bin/python bench/bfcl.py --mode loopact --sample 20 --json bfcl-loopact.json
    .venv/bin/python bench/bfcl.py --mode plain --sample 20 --json bfcl-plain.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import types
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

import openai

from loopact.config import LocalConfig
from loopact.llm.base import Model, ModelRequest, ToolCallReady, ToolSpec
from loopact.llm.local.brain import MODEL_NAME, local_capabilities
from loopact.llm.local.process import LocalBrain
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.small_model import SmallModelPolicy

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
MAX_TOKENS = LocalConfig().max_output_tokens
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def _checker() -> Any:
    """bfcl-eval's AST checker, imported without its model registry (module docstring)."""
    registry = types.ModuleType("bfcl_eval.constants.model_config")
    no_dots = types.SimpleNamespace(underscore_to_dot=False)
    registry.MODEL_CONFIG_MAPPING = defaultdict(lambda: no_dots)  # type: ignore[attr-defined]
    sys.modules.setdefault("bfcl_eval.constants.model_config", registry)
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker


def load(category: str, sample: int) -> list[tuple[dict[str, Any], list[Any]]]:
    """``(entry, possible answer)`` pairs of ``category`` (``sample`` evenly spaced, 0: all)."""
    data = resources.files("bfcl_eval") / "data"
    entries = [json.loads(x) for x in (data / f"BFCL_v4_{category}.json").read_text().splitlines()]
    answers: dict[str, list[Any]] = {}
    path = data / "possible_answer" / f"BFCL_v4_{category}.json"
    if path.is_file():
        for line in path.read_text().splitlines():
            item = json.loads(line)
            answers[item["id"]] = item["ground_truth"]
    if sample and sample < len(entries):
        entries = [entries[i * len(entries) // sample] for i in range(sample)]
    return [(e, answers.get(e["id"], [])) for e in entries]


def _schema(node: Any) -> Any:
    """A BFCL parameter schema as JSON Schema (``dict`` -> ``object``, ``float`` ->
    ``number``, ``tuple`` -> ``array``, ``any`` -> no type)."""
    if isinstance(node, list):
        return [_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _schema(v) for k, v in node.items()}
    if isinstance(node.get("type"), str) and node["type"] in _TYPES:
        mapped = _TYPES[node["type"]]
        if mapped is None:
            out.pop("type")
        else:
            out["type"] = mapped
    return out


def specs(entry: dict[str, Any]) -> tuple[tuple[ToolSpec, ...], dict[str, str]]:
    """The entry's functions as tool specs, and their sent names -> BFCL names."""
    out, names = [], {}
    for fn in entry["function"]:
        sent = re.sub(r"[^a-zA-Z0-9_-]", "_", fn["name"])[:64]
        names[sent] = fn["name"]
        params = _schema(fn.get("parameters") or {"type": "object", "properties": {}})
        out.append(ToolSpec(sent, fn.get("description", ""), params))
    return tuple(out), names


def messages(entry: dict[str, Any]) -> list[dict[str, str]]:
    """The entry's first turn (the non-live categories have one)."""
    return [dict(m) for m in entry["question"][0]]


async def ask_loopact(model: Model, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls the brain makes as loopact serves it: ``[{name: arguments}]``."""
    tools, names = specs(entry)
    msgs = [
        Message.system(m["content"]) if m["role"] == "system" else Message.user(m["content"])
        for m in messages(entry)
    ]
    if not msgs or msgs[0].role != "system":
        msgs.insert(0, Message.system("You are a helpful assistant."))
    request = ModelRequest(tuple(msgs), tools, max_output_tokens=MAX_TOKENS, temperature=0.0)
    calls: list[dict[str, Any]] = []
    async for event in model.stream(request):
        if isinstance(event, ToolCallReady) and event.call.error is None:
            name = names.get(event.call.name)
            if name is not None:
                calls.append({name: dict(event.call.arguments)})
    return calls


_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S)


def _calls_in(text: str, names: dict[str, str]) -> list[dict[str, Any]]:
    """The calls written in ``text`` as ``[{name: arguments}]``: ``<tool_call>`` blocks (Qwen's
    template), else code-fenced JSON, else the whole text as JSON; each a call object
    ``{"name", "arguments"}`` or a list of them. What does not parse is no call (a lenient
    reading: BFCL's own handlers read fewer forms)."""
    found = _TOOL_CALL.findall(text) or _FENCE.findall(text) or [text.strip()]
    calls = []
    for raw in found:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            if isinstance(item, dict) and isinstance(item.get("arguments"), dict):
                name = names.get(str(item.get("name")), str(item.get("name")))
                calls.append({name: item["arguments"]})
    return calls


async def ask_plain(client: openai.AsyncOpenAI, entry: dict[str, Any]) -> Any:
    """The calls the same GGUF makes as plain llama-cpp-python serves it."""
    tools, names = specs(entry)
    resp = await client.chat.completions.create(
        model=MODEL_NAME,
        messages=messages(entry),  # type: ignore[arg-type]
        tools=[t.openai() for t in tools],  # type: ignore[misc]
        tool_choice="auto",
        temperature=0.0,
        max_tokens=MAX_TOKENS,
    )
    message = resp.choices[0].message
    calls = []
    for tc in message.tool_calls or []:
        fn = getattr(tc, "function", None)
        try:
            args = json.loads(getattr(fn, "arguments", None) or "{}")
        except json.JSONDecodeError:
            continue
        name = str(getattr(fn, "name", ""))
        calls.append({names.get(name, name): args})
    return calls or _calls_in(message.content or "", names)


def grade(category: str, entry: dict[str, Any], answer: list[Any], calls: list[Any]) -> bool:
    """BFCL's verdict: irrelevance passes with no call; the others by its AST checker."""
    if category == "irrelevance":
        return not calls
    if not calls:
        return False
    from bfcl_eval.constants.enums import Language

    verdict = _checker()(entry["function"], calls, answer, Language.PYTHON, category, "loopact")
    return bool(verdict["valid"])


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = LocalConfig(context_tokens=args.ctx)
    brain = LocalBrain.from_config(cfg)
    if args.mode == "plain":
        brain = LocalBrain(
            model_path=brain.model_path,
            context_tokens=args.ctx,
            chat_format=None,
            server_module="llama_cpp.server",
        )
    await brain.start()
    model: Model = SmallModelPolicy(
        OpenAIChatModel(
            model=MODEL_NAME,
            base_url=brain.base_url,
            api_key=None,
            capabilities=local_capabilities(args.ctx),
            request_timeout_s=600,
        )
    )
    results: list[dict[str, Any]] = []
    try:
        client = openai.AsyncOpenAI(base_url=brain.base_url, api_key="local", timeout=600)
        async with client:
            for category in args.categories.split(","):
                items = load(category, args.sample)
                for i, (entry, answer) in enumerate(items, 1):
                    t0 = time.perf_counter()
                    try:
                        if args.mode == "plain":
                            calls = await ask_plain(client, entry)
                        else:
                            calls = await ask_loopact(model, entry)
                        ok = grade(category, entry, answer, calls)
                    except Exception as exc:  # one bad entry is a miss, not the end of the run
                        calls, ok = [f"error: {type(exc).__name__}: {exc}"], False
                    took = time.perf_counter() - t0
                    results.append(
                        {"id": entry["id"], "category": category, "ok": ok, "calls": calls}
                    )
                    print(
                        f"[{args.mode} {category} {i}/{len(items)}] {'OK ' if ok else 'BAD'} "
                        f"{took:5.1f}s {json.dumps(calls, ensure_ascii=False)[:150]}",
                        flush=True,
                    )
    finally:
        await brain.stop()
    summary: dict[str, Any] = {"mode": args.mode, "sample_per_category": args.sample}
    for category in args.categories.split(","):
        rs = [r for r in results if r["category"] == category]
        n = sum(r["ok"] for r in rs)
        summary[category] = f"{100.0 * n / len(rs):.1f}% ({n}/{len(rs)})" if rs else "n/a"
    return {"summary": summary, "results": results}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["loopact", "plain"], default="loopact")
    p.add_argument("--categories", default=",".join(CATEGORIES))
    p.add_argument("--sample", type=int, default=0, help="N evenly spaced entries a category.")
    p.add_argument("--ctx", type=int, default=8192, help="Context size of the server.")
    p.add_argument("--json", help="Write every result here.")
    args = p.parse_args()
    out = asyncio.run(run(args))
    print(json.dumps(out["summary"], ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
