"""What does the portable llama.cpp build cost against a native one on this CPU? (issue 13)

Installs each given llama-cpp-python wheel into its own temporary venv, then, in the same run
and alternating between them, measures with the pinned local-brain GGUF:

- prompt processing (tokens/s): evaluating a ~900-token prompt (a system prompt with a tool
  catalogue, like the agent's first request);
- generation (tokens/s): 64 tokens after that prompt.

Prints the median of ``--repeat`` runs per build and the ratio portable / native. The native
wheel must be built beforehand (it is not something loopact ships)::

    pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \\
        llama-cpp-python==0.3.36 -w /tmp/native            # default options: -march=native
    .venv/bin/python bench/llama_build.py --wheel native=/tmp/native/*.whl \\
        --wheel portable=~/.cache/loopact/wheels/x86-64-v3-*/llama_cpp_python-*.whl

Each measurement runs in a child process with ``--threads`` threads (default: all cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from loopact.config import LocalConfig
from loopact.llm.local.brain import resolve_model_path
from loopact.llm.local.build import cpu_name

MEASURE = r"""
import json, sys, time
from llama_cpp import Llama
model, threads = sys.argv[1], int(sys.argv[2])
llm = Llama(model_path=model, n_ctx=4096, n_threads=threads, n_threads_batch=threads,
            n_gpu_layers=0, verbose=False)
tools = "".join(
    f"- tool_{i}(distance_m: number, speed_mps: number): drive the robot part {i} of the way.\n"
    for i in range(40)
)
prompt = "<|im_start|>system\nYou control a mobile robot.\n" + tools + "<|im_end|>\n"
prompt += "<|im_start|>user\nmove forward one meter<|im_end|>\n<|im_start|>assistant\n"
tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
t0 = time.perf_counter()
llm.eval(tokens)
pp = time.perf_counter() - t0
t0 = time.perf_counter()
n = 0
for tok in llm.generate([], temp=0.0, reset=False):
    n += 1
    if n >= 64:
        break
tg = time.perf_counter() - t0
print(json.dumps({"prompt_tokens": len(tokens), "pp_tps": len(tokens) / pp, "tg_tps": n / tg}))
"""


def make_venv(wheel: Path, where: Path) -> Path:
    """A venv at ``where`` with ``wheel`` installed; returns its python."""
    venv.EnvBuilder(with_pip=True).create(where)
    py = where / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel), "numpy", "diskcache"],
        check=True,
    )
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "typing-extensions", "jinja2"], check=True
    )
    return py


def measure(py: Path, model: Path, threads: int) -> dict[str, float]:
    out = subprocess.run(
        [str(py), "-c", MEASURE, str(model), str(threads)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--wheel", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--model-path", type=Path, default=None)
    args = p.parse_args()
    import os

    threads = args.threads or os.cpu_count() or 1
    model = args.model_path or resolve_model_path(LocalConfig())
    builds = dict(w.split("=", 1) for w in args.wheel)
    with tempfile.TemporaryDirectory(prefix="loopact-bench-llama-") as tmp:
        pys = {
            name: make_venv(Path(path).expanduser(), Path(tmp) / name)
            for name, path in builds.items()
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
        for i in range(args.repeat):
            for name, py in pys.items():
                r = measure(py, model, threads)
                runs[name].append(r)
                print(
                    f"run {i + 1} {name}: pp {r['pp_tps']:.1f} t/s, tg {r['tg_tps']:.1f} t/s",
                    flush=True,
                )
    print(f"\nCPU: {cpu_name()}; {threads} threads; model {model.name}; median of {args.repeat}")
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in ("pp_tps", "tg_tps")}
        for name, rs in runs.items()
    }
    for name, m in med.items():
        print(
            f"{name:>10}: prompt {m['pp_tps']:7.1f} tokens/s, "
            + f"generation {m['tg_tps']:6.1f} tokens/s"
        )
    if "native" in med and "portable" in med:
        for k, label in (("pp_tps", "prompt"), ("tg_tps", "generation")):
            ratio = med["portable"][k] / med["native"][k]
            print(f"portable / native {label}: {ratio:.2f} ({(1 - ratio) * 100:+.0f} % cost)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
