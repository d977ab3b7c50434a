"""The local brain's saved prompt state (issue 13, SPEC B1): its key, and the disk round trip.

The child process is loopact's own server (``python -m loopact.llm.local.server``: its
argument parsing, its ``/loopact/prefix`` route, :func:`~loopact.llm.local.server.warm_prefix`
and its save/load through ``llama_state_save_file`` / ``llama_state_load_file``), over a
stand-in ``llama_cpp`` package on ``PYTHONPATH`` in place of the compiled one: a ``Llama``
whose "evaluation" turns the chat messages into one token per word and keeps them as its KV
cache, and state files that hold those tokens. So a server process that answers
``"source": "disk"`` holds exactly what another process evaluated and saved, without the
real model. The provider that builds the system message (system prompt + tool catalogue)
is the real one (:func:`loopact.app.model.make_model`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest

from loopact.app.model import make_model
from loopact.config import Config, LocalConfig
from loopact.llm.base import Model, ModelRequest
from loopact.llm.local.model import LocalBrainModel
from loopact.llm.local.process import LocalBrain
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

FAKE_LLAMA_CPP = textwrap.dedent(
    """
    # Stand-in for the compiled llama_cpp: the state functions loopact's server calls, and
    # the class whose chat completions it wraps (loopact.llm.local.server).
    import ctypes, json

    llama_token = ctypes.c_int32

    class Llama:
        def create_chat_completion(self, **kwargs):
            raise NotImplementedError("the stand-in serves /loopact/prefix only")

    def llama_state_save_file(ctx, path, tokens, n):
        data = {"tokens": [int(tokens[i]) for i in range(n)], "kv": ctx.kv[:n]}
        with open(path.decode(), "w") as f:
            json.dump(data, f)
        return True

    def llama_state_load_file(ctx, path, tokens_out, capacity, n_out):
        try:
            with open(path.decode()) as f:
                data = json.load(f)
        except ValueError:
            return False  # not a state file (truncated, another build)
        if len(data["tokens"]) > capacity:
            return False
        for i, t in enumerate(data["tokens"]):
            tokens_out[i] = t
        ctx.kv = list(data["kv"])
        n_out._obj.value = len(data["tokens"])
        return True
    """
)

FAKE_APP = textwrap.dedent(
    """
    import hashlib, json, zlib
    from types import SimpleNamespace
    from fastapi import FastAPI

    class FakeLlama:
        def __init__(self, n_ctx):
            self._n_ctx = n_ctx
            self._ctx = SimpleNamespace(ctx=SimpleNamespace(kv=[]))
            self.input_ids = [0] * n_ctx
            self.n_tokens = 0
            self._requires_eval = False
            self.evaluations = 0

        def n_ctx(self):
            return self._n_ctx

        def reset(self):
            self.n_tokens = 0
            self._ctx.ctx.kv = []

        def create_chat_completion(self, messages, **kwargs):
            text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            tokens = [zlib.crc32(w.encode()) & 0x7FFFFFFF for w in text.split()]
            n = len(tokens)
            self.input_ids[:n] = tokens
            self.n_tokens = n
            self._ctx.ctx.kv = list(tokens)
            self.evaluations += 1
            print(f"fake llama: evaluated {n} tokens", flush=True)
            return {"choices": [{"message": {"role": "assistant", "content": "."}}]}

    LLAMA = []

    def get_llama_proxy():
        return lambda model: LLAMA[0]

    def create_app(server_settings, model_settings):
        LLAMA.append(FakeLlama(model_settings[0].n_ctx))
        app = FastAPI()

        @app.get("/v1/models")
        def models():
            return {"object": "list", "data": [{"id": "local"}]}

        @app.get("/fake/held")
        def held():
            llama = LLAMA[0]
            n = llama.n_tokens
            digest = lambda xs: hashlib.sha256(json.dumps(list(xs)).encode()).hexdigest()
            return {
                "n_tokens": n,
                "tokens": digest(llama.input_ids[:n]),
                "kv": digest(llama._ctx.ctx.kv),
                "evaluations": llama.evaluations,
            }

        return app
    """
)

FAKE_CLI = textwrap.dedent(
    """
    from types import SimpleNamespace
    NAMES = ["model", "model_alias", "host", "n_ctx", "n_threads", "n_threads_batch",
             "n_gpu_layers", "chat_format", "clip_model_path", "logits_all"]

    def add_args_from_model(parser, settings):
        for name in NAMES:
            parser.add_argument("--" + name)
        parser.add_argument("--port", type=int)

    def parse_model_from_args(cls, args):
        values = vars(args)
        # loopact never lets the server keep every token's logits (local_launch.SERVER_OPTIONS)
        assert values["logits_all"] == "false", values["logits_all"]
        return SimpleNamespace(
            host=values["host"], port=values["port"], n_ctx=int(values["n_ctx"]),
            model=values["model"], chat_format=values["chat_format"],
        )
    """
)

FAKE_SETTINGS = "class Settings: pass\nclass ModelSettings: pass\nclass ServerSettings: pass\n"


@pytest.fixture
def fake_llama_cpp(tmp_path: Path) -> dict[str, str]:
    """Environment for a child process that finds the stand-in ``llama_cpp``."""
    root = tmp_path / "fakepkgs" / "llama_cpp"
    (root / "server").mkdir(parents=True)
    (root / "__init__.py").write_text(FAKE_LLAMA_CPP)
    (root / "server" / "__init__.py").write_text("")
    (root / "server" / "app.py").write_text(FAKE_APP)
    (root / "server" / "cli.py").write_text(FAKE_CLI)
    (root / "server" / "settings.py").write_text(FAKE_SETTINGS)
    # the lazy sampler patches the compiled Llama's sampler, which the stand-in has not
    return {"PYTHONPATH": str(tmp_path / "fakepkgs"), "LOOPACT_LOCAL_SAMPLER": "chain"}


def gguf(path: Path, extra: bytes = b"") -> Path:
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + extra + b"\x00" * 64)
    return path


def robot_request(tmp_path: Path, system: str = "You drive a robot.", drop: str = "") -> Any:
    tools = [t for t in make_builtin_tools(tmp_path / "ws") if t.name != drop]
    specs = ToolRegistry(tools).specs()
    return ModelRequest((Message.system(system), Message.user("move forward one meter")), specs)


class Server:
    """One started server process with its model (stopped at the end of the ``async with``)."""

    def __init__(self, tmp_path: Path, env: dict[str, str], name: str) -> None:
        self.log = tmp_path / f"{name}.log"
        self.brain = LocalBrain(
            model_path=tmp_path / "m.gguf",
            chat_format="chatml",
            start_timeout_s=60,
            log_path=self.log,
            extra_env=env,
            state_dir=tmp_path / "prompt-states",
        )
        cfg = Config(local=LocalConfig(model_path=self.brain.model_path))
        self.model: Any = None
        self.cfg = cfg

    async def __aenter__(self) -> Server:
        await self.brain.start()
        self.model = make_model(self.cfg, local_brain=self.brain)
        assert isinstance(self.model, LocalBrainModel)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.model.aclose()
        await self.brain.stop()

    async def held(self) -> dict[str, Any]:
        root = self.brain.base_url.removesuffix("/v1")
        async with httpx2.AsyncClient(timeout=10) as client:
            data: dict[str, Any] = (await client.get(root + "/fake/held")).json()
        return data


def states(tmp_path: Path) -> set[str]:
    return {p.stem for p in (tmp_path / "prompt-states").glob("*.state")}


async def test_a_state_saved_by_one_server_is_loaded_from_disk_by_the_next(
    tmp_path: Path, fake_llama_cpp: dict[str, str]
) -> None:
    gguf(tmp_path / "m.gguf")
    async with Server(tmp_path, fake_llama_cpp, "first") as first:
        answer = await first.model.prepare(robot_request(tmp_path), timeout_s=60)
        held = await first.held()
    assert answer["source"] == "evaluated" and answer["saved"] is True, answer
    assert answer["tokens"] > 100 and held["evaluations"] == 1
    saved = states(tmp_path)
    assert len(saved) == 1
    async with Server(tmp_path, fake_llama_cpp, "second") as second:
        again = await second.model.prepare(robot_request(tmp_path), timeout_s=60)
        assert again["source"] == "disk", again
        assert again["tokens"] == answer["tokens"]
        # the second process holds what the first evaluated, without evaluating anything
        assert await second.held() == {**held, "evaluations": 0}
        assert "evaluated" not in second.log.read_text()
        assert states(tmp_path) == saved

        # another tool catalogue or another system prompt: another key, evaluated once
        fewer = await second.model.prepare(robot_request(tmp_path, drop="file_write"), 60)
        other = await second.model.prepare(robot_request(tmp_path, system="You fly."), 60)
        assert fewer["source"] == other["source"] == "evaluated", (fewer, other)
        assert len(states(tmp_path)) == 3
        assert (await second.model.prepare(robot_request(tmp_path), 60))["source"] == "disk"

        # a damaged state file is not used: evaluated again and saved again
        (tmp_path / "prompt-states" / f"{next(iter(saved))}.state").write_text("{trunc")
        redone = await second.model.prepare(robot_request(tmp_path), 60)
        assert redone["source"] == "evaluated" and redone["tokens"] == answer["tokens"]
        assert (await second.model.prepare(robot_request(tmp_path), 60))["source"] == "disk"


def _key(brain: LocalBrain, build: str, system: dict[str, Any]) -> str:
    def inner(url: str) -> Model:
        return OpenAIChatModel(model="local", base_url=url, api_key=None)

    return LocalBrainModel(brain, inner, build_id=build).prompt_key(system)


def test_the_key_changes_with_model_build_context_format_and_prompt_only(tmp_path: Path) -> None:
    model = gguf(tmp_path / "m.gguf")
    other = gguf(tmp_path / "other.gguf")
    system = {"role": "system", "content": "You drive a robot.\n<tools>...</tools>"}
    build = "x86-64-v4-0123456789ab"

    def brain(**kw: Any) -> LocalBrain:
        return LocalBrain(**{"model_path": model, "chat_format": "chatml", **kw})

    key = _key(brain(), build, system)
    assert key == _key(brain(), build, dict(system))  # the same inputs: the same key
    assert key == _key(brain(threads=1, port=5555), build, system)  # not part of the state
    changed = {
        "model file": _key(brain(model_path=other), build, system),
        "build": _key(brain(), "x86-64-v3-0123456789ab", system),
        "context": _key(brain(context_tokens=4096), build, system),
        "chat format": _key(brain(chat_format="qwen"), build, system),
        "prompt": _key(brain(), build, {**system, "content": "You fly.\n<tools>...</tools>"}),
    }
    for what, other_key in changed.items():
        assert other_key != key, what
    # the same file name with other contents (a new model downloaded over the old one)
    gguf(model, b"another model")
    assert _key(brain(), build, system) != key
    assert len(set(changed.values())) == len(changed)
