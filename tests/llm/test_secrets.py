"""No API key in any provider error or any event (issue 21 item 5, SPEC A8, B6).

An Anthropic or Dify endpoint answering 401 quotes the key it refused; before, that key went
in clear into the trace, stderr, the console WebSocket and the ROS 2 text channel (all fed by
the event bus). Real HTTP (scripted server), real providers, the real CLI in a process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.agent.helpers import Recorder
from tests.test_cli import run_cli

from loopact.agent import Agent, AgentOptions, Bounds, TaskOutcome
from loopact.config import config_secret_settings, config_secrets, load_config
from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.events import EventBus
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelRequest
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.redact import MAX_DEPTH, TOO_DEEP, Redactor, StreamMasker, public_url
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
KEY = "sk-live-Zq8Wm3Kx9Pa2Vb7Nc4"
REQUEST = ModelRequest(messages=(Message.user("hello"),))


def model_for(provider: str, server: ScriptedModelServer) -> Model:
    if provider == "anthropic":
        return AnthropicModel("m", server.root_url, api_key=KEY, request_timeout_s=10)
    if provider == "dify":
        return DifyModel(base_url=server.base_url, api_key=KEY, request_timeout_s=10)
    return OpenAIChatModel("m", server.base_url, api_key=KEY, request_timeout_s=10)


async def run_recorded(
    server: ScriptedModelServer, files: Path, text: str, **options: Any
) -> tuple[TaskOutcome, Recorder]:
    """One task of an agent with the built-in tools on ``files``, talking to ``server`` with
    the key :data:`KEY`; its outcome and every event it emitted."""
    model = OpenAIChatModel("m", server.base_url, api_key=KEY, request_timeout_s=10)
    agent = Agent(model, ToolRegistry(make_builtin_tools(files)), AgentOptions(**options))
    rec = Recorder()
    agent.bus.subscribe(rec)
    try:
        return await agent.run_task(text), rec
    finally:
        await agent.close()


def refusal(status: int = 401) -> dict[str, Any]:
    return {"error": {"status": status, "message": f"Invalid API key: {KEY}"}}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dify"])
@pytest.mark.parametrize("status", [401, 503])
async def test_a_quoted_key_never_leaves_the_provider(
    scripted_server: Factory, provider: str, status: int
) -> None:
    server = scripted_server([refusal(status)])
    model = model_for(provider, server)
    try:
        with pytest.raises((ModelFatalError, ModelRetryableError)) as info:
            [e async for e in model.stream(REQUEST)]
    finally:
        await model.aclose()
    assert KEY not in str(info.value) and "Invalid API key: ***" in str(info.value)
    assert info.value.status == status


@pytest.mark.parametrize("provider", ["anthropic", "dify"])
def test_cli_stderr_and_trace_never_show_the_key(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    server = scripted_server([refusal()])
    base = server.root_url if provider == "anthropic" else server.base_url
    trace = tmp_path / "t.jsonl"
    proc = run_cli(
        [
            "run",
            "--once",
            "hello",
            "--provider",
            provider,
            "--base-url",
            base,
            "--api-key",
            KEY,
            "--model",
            "m",
            "--robot",
            "none",
            "--no-memory",
            "--no-web",
            "--workspace",
            str(tmp_path / "ws"),
            "--trace",
            str(trace),
        ],
        tmp_path,
    )
    assert proc.returncode == 1
    assert "Invalid API key: ***" in proc.stderr
    assert KEY not in proc.stderr and KEY not in proc.stdout
    text = trace.read_text()
    assert KEY not in text and "Invalid API key: ***" in text


async def test_every_event_is_masked(scripted_server: Factory, tmp_path: Path) -> None:
    """A key a tool reads (a config file in the workspace) is masked in the events, in
    whatever field, while the model itself still gets the tool's result."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "robot.env").write_text(f"API_KEY={KEY}\n")
    server = scripted_server(
        [
            {"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "robot.env"}}]},
            {"text": f"The file holds the key {KEY}."},
        ]
    )
    outcome, rec = await run_recorded(
        server, workspace, "what is in robot.env?", bounds=Bounds(), workspace=workspace
    )
    assert outcome.status == "completed"
    dumped = json.dumps([e.to_json() for e in rec.events])
    assert KEY not in dumped
    (result,) = rec.of("tool_result")
    assert "API_KEY=***" in json.dumps(result.data["data"])
    assert rec.of("reply")[0].data["text"] == "The file holds the key ***."
    assert KEY in server.requests[1].raw_body.decode()  # the model's own view is unchanged


OTHER_SECRETS = {
    "images": "img-live-4Kd9Qw2Zx7",
    "estop": "estop-live-8Hn3Lp6Rt1",
    "web": "web-live-2Vc5Mb8Yq4Jk",
    "vision": "vis-live-6Tg1Ws9Ea3",
    "smtp": "smtp-live-3Xr7Nf2Ud5",
}


def test_every_configured_secret_is_masked_not_only_the_model_key(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """The event bus knew only the model's key: a tool that read the images key, the
    e-stop token, the console token or a key from a ``*_env`` variable (a .env file in the
    workspace) put it in clear into the trace and on stdout."""
    cfg = tmp_path / "robot.yaml"
    cfg.write_text(
        json.dumps(
            {
                "images": {"api_key": OTHER_SECRETS["images"]},
                "robot": {"estop": {"reset_token": OTHER_SECRETS["estop"]}},
                "web": {"token": OTHER_SECRETS["web"]},
                "voice": {"stt": {"api_key_env": "STT_KEY"}},
                "messages": {
                    "email": {
                        "host": "127.0.0.1",
                        "from_addr": "robot@example.com",
                        "password_env": "SMTP_PASSWORD",
                    }
                },
            }
        ),
        encoding="utf-8",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("".join(f"{k}={v}\n" for k, v in OTHER_SECRETS.items()))
    server = scripted_server(
        [
            {"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": ".env"}}]},
            {"text": "The keys are " + ", ".join(OTHER_SECRETS.values())},
        ]
    )
    trace = tmp_path / "t.jsonl"
    args = ["run", "--once", "what is in .env?", "--config", str(cfg), "--base-url"]
    args += [server.base_url, "--model", "m", "--robot", "none", "--no-memory", "--no-web"]
    args += ["--workspace", str(ws), "--trace", str(trace)]
    env = {"STT_KEY": OTHER_SECRETS["vision"], "SMTP_PASSWORD": OTHER_SECRETS["smtp"]}
    proc = run_cli(args, tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    text = trace.read_text()
    assert "The keys are ***, ***, ***, ***, ***" in proc.stdout + proc.stderr
    assert "images=***" in text and "smtp=***" in text
    for secret in OTHER_SECRETS.values():
        assert secret not in text and secret not in proc.stdout + proc.stderr, secret
    assert OTHER_SECRETS["images"] in server.requests[1].raw_body.decode()  # the model's view


def test_mcp_servers_secret_headers_and_env_are_secrets(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.yaml"
    servers = {
        "gh": {
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer ghp-live-5Jd8Ks2Lq9", "Accept": "text/plain"},
        },
        "fs": {
            "command": "fs-server",
            "env": {"FS_TOKEN": "fs-live-1Az4Qx7Wc0", "HOME": "/x", "AUTHOR": "Ada Lovelace"},
        },
    }
    cfg_file.write_text(json.dumps({"mcp": {"servers": servers}}), encoding="utf-8")
    cfg, _ = load_config(cfg_file, env={})
    secrets = set(config_secrets(cfg, env={}))
    assert {"Bearer ghp-live-5Jd8Ks2Lq9", "ghp-live-5Jd8Ks2Lq9", "fs-live-1Az4Qx7Wc0"} <= secrets
    assert not {"text/plain", "/x", "Ada Lovelace"} & secrets  # not secrets: never masked


async def test_a_key_split_across_streamed_deltas_is_masked(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Each text_delta was masked on its own: a key the model wrote out, streamed in pieces
    of 5 characters, reached the console and the ROS 2 text channel in clear, piece by piece."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    text = f"The key is {KEY}, and sk-live is not it."
    server = scripted_server([{"text": text, "chunk_size": 5}])
    outcome, rec = await run_recorded(server, workspace, "say the key")
    assert outcome.status == "completed"
    deltas = [e.data["text"] for e in rec.of("text_delta")]
    assert len(deltas) > 5  # it did stream in pieces
    assert "".join(deltas) == "The key is ***, and sk-live is not it."
    tail = KEY[4:]  # "ive-Zq8..."; "sk-live" itself is the decoy at the end
    assert not any(tail[i : i + 5] in d for d in deltas for i in range(len(tail) - 4))


@given(
    text=st.text(alphabet="sk-lvie *abc", max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=12),
    secrets=st.lists(st.text(alphabet="sk-lvie*ab", min_size=6, max_size=12), max_size=3),
)
def test_stream_masker_shows_what_the_whole_text_would_show(
    text: str, cuts: list[int], secrets: list[str]
) -> None:
    redactor = Redactor(secrets)
    masker = StreamMasker(redactor)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    shown = [masker.feed(p) for p in pieces] + [masker.flush()]
    assert "".join(shown) == redactor.text(text)


def test_redactor_rules() -> None:
    r = Redactor([KEY, None, "", "none"])  # short values are placeholders, not secrets
    assert r.text(f"Bearer {KEY}") == "Bearer ***"
    assert r.text("key=sk-live-Zq8Wm3Kx9Pa2Vb7Nc4&x=1") == "key=***&x=1"
    assert r.text("none of this") == "none of this"
    value = {"a": [KEY, ("x", KEY)], "b": 3}
    masked = r.value(value)
    assert masked == {"a": ["***", ("x", "***")], "b": 3} and value["a"][0] == KEY
    clean = {"a": ["x"]}
    assert r.value(clean) is clean
    exc = ModelRetryableError(f"HTTP 503: {KEY}", status=503, retry_after_s=2.0)
    copy = r.error(exc)
    assert isinstance(copy, ModelRetryableError) and str(copy) == "HTTP 503: ***"
    assert (copy.status, copy.retry_after_s) == (503, 2.0)
    bus = EventBus(Redactor([KEY]))
    seen: list[Any] = []
    bus.subscribe(seen.append)
    bus.emit("error", None, message=f"oops {KEY}")
    assert seen[0].data == {"message": "oops ***"}


def _nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


async def test_secrets_in_argument_keys_and_deep_arguments_are_masked(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Audit B findings 2 and 3: a key used as an argument's NAME reached the terminal and the
    trace in clear (only values were masked), and one nested 62 levels deep in the arguments
    (under the 64-level argument limit) reached the ``model_response`` event in clear, since
    the masker stopped at 64 levels and the event wraps the arguments in about 3 more."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = scripted_server(
        [
            {"tool_calls": [{"id": "k", "name": "file_list", "arguments": {"path": ".", KEY: 1}}]},
            {
                "tool_calls": [
                    {"id": "d", "name": "wait", "arguments": {"seconds": 0, "x": _nested(62, KEY)}}
                ]
            },
            {"text": "done"},
        ]
    )
    outcome, rec = await run_recorded(
        server, workspace, "list the files, then wait", bounds=Bounds(), workspace=workspace
    )
    assert outcome.status == "completed"
    assert rec.of("model_response"), "the events under test were emitted"
    dumped = json.dumps([e.to_json() for e in rec.events])
    assert KEY not in dumped
    first = rec.of("tool_call")[0]
    assert first.data["arguments"] == {"path": ".", "***": 1}
    deep = json.dumps([e.data for e in rec.of("model_response")])
    assert '[["***"]]' in deep  # masked where it is, not dropped


def test_redactor_masks_keys_and_replaces_what_is_too_deep() -> None:
    r = Redactor([KEY, "other-Secret-99"])
    assert r.value({f"x{KEY}": 1, "other-Secret-99": 2, "***": 3}) == {
        "x***": 1,
        "*** (2)": 2,  # "***" is taken: no entry is lost
        "***": 3,
    }
    at_limit = _nested(MAX_DEPTH - 1, KEY)
    assert r.value(at_limit) == _nested(MAX_DEPTH - 1, "***")
    too_deep = {"a": _nested(MAX_DEPTH + 5, "harmless")}
    masked = r.value(too_deep)
    node = masked["a"]
    for _ in range(MAX_DEPTH - 1):
        (node,) = node
    assert node == TOO_DEEP  # replaced, not passed on unchecked
    assert Redactor().value(too_deep) is too_deep  # no secrets known: nothing to check


def test_a_secret_too_short_to_mask_is_named_at_start(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Audit B finding 4: a 5-character SMTP password is never masked (shorter than
    MIN_SECRET_CHARS) and nothing said so. Now one warning at start names the setting, never
    the value; a long secret gets no warning."""
    cfg = tmp_path / "robot.yaml"
    email = {"host": "127.0.0.1", "from_addr": "robot@example.com"}
    cfg.write_text(
        json.dumps({"messages": {"email": {**email, "password_env": "SMTP_PASSWORD"}}}),
        encoding="utf-8",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    server = scripted_server([{"text": "hello"}])
    args = ["run", "--once", "hi", "--config", str(cfg), "--base-url", server.base_url]
    args += ["--model", "m", "--api-key", KEY, "--robot", "none", "--no-memory", "--no-web"]
    args += ["--workspace", str(ws)]
    proc = run_cli(args, tmp_path, env={"SMTP_PASSWORD": "pw1x3"})
    assert proc.returncode == 0, proc.stderr
    err = " ".join(proc.stderr.split())  # rich wraps long lines
    assert "messages.email.password_env (SMTP_PASSWORD): shorter than 6 characters" in err
    assert "not masked" in err
    assert "pw1x3" not in proc.stderr + proc.stdout
    assert err.count("shorter than 6 characters") == 1  # once, not per event
    server = scripted_server([{"text": "hello"}])
    args[args.index("--base-url") + 1] = server.base_url
    proc = run_cli(args, tmp_path, env={"SMTP_PASSWORD": "SmtpPassw0rdLong99"})
    assert proc.returncode == 0, proc.stderr
    assert "shorter than" not in proc.stderr


def test_secret_settings_are_named_without_their_values(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        json.dumps(
            {
                "images": {"api_key": "img-live-4Kd9Qw2Zx7"},
                "voice": {"stt": {"api_key_env": "STT_KEY"}},
                "mcp": {"servers": {"fs": {"command": "fs", "env": {"FS_TOKEN": "abc"}}}},
            }
        ),
        encoding="utf-8",
    )
    cfg, _ = load_config(cfg_file, env={})
    named = dict(config_secret_settings(cfg, env={"STT_KEY": "stt-live-7Yh2"}))
    assert named["images.api_key"] == "img-live-4Kd9Qw2Zx7"
    assert named["voice.stt.api_key_env (STT_KEY)"] == "stt-live-7Yh2"
    assert named["mcp.servers.fs.env.FS_TOKEN"] == "abc"
    assert sorted(config_secrets(cfg, env={"STT_KEY": "stt-live-7Yh2"})) == sorted(named.values())


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://bob:pw@host:8080/v1?key=k#frag", "http://host:8080/v1"),
        ("https://token@api.example.com/v1/", "https://api.example.com/v1/"),
        ("http://[::1]:11434/v1", "http://[::1]:11434/v1"),
        ("http://127.0.0.1/v1", "http://127.0.0.1/v1"),
        ("not a url", "not a url"),
        ("http://u:pw@host:notaport/v1", "http://host:notaport/v1"),  # a bad port too
        ("http://u:pw@[::1/v1", "[::1/v1"),  # not parsable at all: nothing up to the "@"
    ],
)
def test_public_url_drops_user_info_query_and_fragment(url: str, shown: str) -> None:
    assert public_url(url) == shown


@given(st.text(max_size=40), st.text(min_size=1, max_size=20).filter(lambda s: "@" not in s))
def test_public_url_never_shows_the_password(user: str, password: str) -> None:
    from urllib.parse import quote

    url = f"http://{quote(user, safe='')}:{quote(password, safe='')}@host/v1"
    assert public_url(url) == "http://host/v1"
