"""Collecting streamed tool-call arguments is linear in their size (issue 21 item 7).

Feeds one tool call's arguments to the real stream accumulator in realistic 8-character
fragments (one ``chat.completion.chunk`` dict per fragment, as the provider does after
decoding each event) and times it for growing sizes. Baselines measured in the same run:
decoding the finished argument text once with ``json.loads`` (the least any parser must do),
and building the same chunk dicts without accumulating (the cost of the input itself).

Linear time shows as a "per doubling" ratio near 2 (quadratic: near 4).

Usage: .venv/bin/python bench/arguments.py [--sizes-kb 120,240,480,960] [--piece 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from loopact.llm.accumulate import accumulate_chunk, finish_stream, new_state


def chunk(index: int, args: str, head: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if head:
        call.update(id="call_1", type="function")
        call["function"]["name"] = "file_write"
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def arguments_text(size: int) -> str:
    filler = "x" * max(0, size - 40)
    return json.dumps({"path": "notes.txt", "content": filler})


def collect(text: str, piece: int) -> tuple[float, float]:
    """Seconds to accumulate ``text`` in ``piece``-character fragments, and to build the input."""
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    start = time.perf_counter()
    chunks = [chunk(0, "", head=True)] + [chunk(0, p) for p in pieces]
    built = time.perf_counter() - start
    state = new_state(["file_write"])
    start = time.perf_counter()
    for c in chunks:
        accumulate_chunk(c, state)
    events = finish_stream(state)
    elapsed = time.perf_counter() - start
    call = events[-1].message.tool_calls[0]  # type: ignore[union-attr]
    assert call.error is None and len(call.arguments["content"]) == len(text) - 36, call.error
    return elapsed, built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", default="120,240,480,960")
    parser.add_argument("--piece", type=int, default=8)
    args = parser.parse_args()
    sizes = [int(s) * 1024 for s in args.sizes_kb.split(",")]
    print(f"{args.piece}-character fragments, one chunk dict each")
    print(f"{'size':>8} {'collect':>9} {'per MB':>8} {'x json.loads':>13} {'per doubling':>13}")
    previous: float | None = None
    for size in sizes:
        text = arguments_text(size)
        elapsed, _built = collect(text, args.piece)
        start = time.perf_counter()
        json.loads(text)
        parse = time.perf_counter() - start
        doubling = f"{elapsed / previous:.2f}" if previous else "-"
        print(
            f"{size // 1024:>6}KB {elapsed:>8.3f}s {elapsed / (size / 2**20):>7.3f}s "
            f"{elapsed / parse:>13.0f} {doubling:>13}"
        )
        previous = elapsed
    return 0


if __name__ == "__main__":
    sys.exit(main())
