"""A stand-in local brain server for tests without the model (issue 13).

:func:`fake_server_files` writes a stand-in ``llama_cpp.server`` package that a
:class:`~loopact.llm.local.process.LocalBrain` child process runs (``PYTHONPATH`` from the
returned environment): it serves loopact's scripted model server over real HTTP on the port
it is given. Each start of the child reads its own script (``gen<N>.json``, else
``default.json``) and leaves ``started-<N>`` holding its pid; a script with
``crash_on_request: "SIGSEGV"`` makes the process kill itself with that signal on its first
chat request.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Any

FAKE_MAIN = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from loopact.testing import ScriptedModelServer
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    d = Path(os.environ["LOOPACT_FAKE_LOCAL_DIR"])
    n = len(list(d.glob("started-*"))) + 1
    (d / f"started-{n}").write_text(str(os.getpid()))
    path = d / f"gen{n}.json"
    script = json.loads((path if path.exists() else d / "default.json").read_text())
    crash = script.pop("crash_on_request", None)
    server = ScriptedModelServer(script, port=port).start()
    print(f"fake local server {n}: pid {os.getpid()} port {port}", flush=True)
    print("OMP_WAIT_POLICY=" + os.environ.get("OMP_WAIT_POLICY", ""), flush=True)
    while True:
        if crash and any(r.path == "/v1/chat/completions" for r in server.requests):
            print("fake local server: crashing with", crash, flush=True)
            os.kill(os.getpid(), getattr(signal, crash))
        time.sleep(0.005)
    """
)


def fake_server_files(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(scripts folder, env): a stand-in ``llama_cpp.server`` serving scripted turns."""
    pkgs = tmp_path / "fakepkgs"
    server_pkg = pkgs / "llama_cpp" / "server"
    server_pkg.mkdir(parents=True)
    (pkgs / "llama_cpp" / "__init__.py").write_text("")
    (server_pkg / "__init__.py").write_text("")
    (server_pkg / "__main__.py").write_text(FAKE_MAIN)
    for name in ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings"):
        if importlib.util.find_spec(name) is None:  # only so that server_installed() is true
            (pkgs / name).mkdir()
            (pkgs / name / "__init__.py").write_text("")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    env = {"PYTHONPATH": str(pkgs), "LOOPACT_FAKE_LOCAL_DIR": str(scripts)}
    return scripts, env


def gguf(path: Path) -> Path:
    """A file that passes for a GGUF model (the stand-in never reads it)."""
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    return path


def write(scripts: Path, name: str, turns: list[dict[str, Any]], **extra: Any) -> None:
    """Write the script ``name`` (``gen<N>.json`` or ``default.json``) of the stand-in."""
    (scripts / name).write_text(json.dumps({"turns": turns, **extra}))
