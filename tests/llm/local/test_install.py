"""The install self-test of the local brain (issue 13, SPEC B1): a crash rebuilds once, safest.

Only the expensive steps are replaced: building/installing llama-cpp-python
(``ensure_llama_cpp``) and downloading the model (``ensure_model``). The stand-in install
writes the build folder with its ``build.json`` (as a real build does) and notes which
profile is "installed"; the self-test itself runs for real: :func:`local_install.self_test`
starts a child process (a stand-in ``llama_cpp.server`` on ``PYTHONPATH``), waits for
``/v1/models`` and sends its one ``/v1/completions`` request over HTTP. The stand-in reads
which build is installed and, when that profile is listed in ``crash-profiles``, kills
itself with SIGSEGV on that request, as the AMX build does on an Intel Xeon, or with SIGILL
while starting, as a build with instructions the CPU lacks does.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from loopact.config import LocalConfig
from loopact.errors import InstallError
from loopact.llm.local import install as local_install
from loopact.llm.local.build import (
    PROFILES,
    BuildProfile,
    cpu_signature,
    read_build_info,
    safest_profile,
    write_build_info,
)
from loopact.llm.local.wheel import build_folder, self_test_result

FAKE_SERVER = textwrap.dedent(
    """
    import http.server, json, os, signal, sys
    from pathlib import Path
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    d = Path(os.environ["LOOPACT_FAKE_LOCAL_DIR"])
    build = (d / "installed-profile").read_text()
    crashes = build in (d / "crash-profiles").read_text().split()
    print(f"fake llama.cpp server: build {build}, pid {os.getpid()}", flush=True)
    if crashes and os.environ["LOOPACT_FAKE_CRASH_AT"] == "start":
        print(f"fake llama.cpp server: {build} crashes while loading", flush=True)
        os.kill(os.getpid(), signal.SIGILL)

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.reply({"object": "list", "data": [{"id": "local"}]})
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if crashes:
                print(f"fake llama.cpp server: {build} crashes on its first request", flush=True)
                os.kill(os.getpid(), signal.SIGSEGV)
            n = int(body["max_tokens"])
            self.reply({"choices": [{"text": " moves."}], "usage": {"completion_tokens": n}})
        def reply(self, data):
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        def log_message(self, *a):
            pass

    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)

#: The profile this CPU would be given first (pinned, so the test does not depend on the CI
#: machine's CPU); the rebuild must use :func:`safest_profile`.
FIRST = PROFILES["x86-64-v3"]


class FakeInstall:
    """Stands in for ``ensure_llama_cpp``: a build folder with its build.json, "installed"."""

    def __init__(self, marker_dir: Path) -> None:
        self.marker_dir = marker_dir
        self.calls: list[str] = []

    def __call__(self, cfg: LocalConfig, console: Console, profile: BuildProfile) -> str:
        self.calls.append(profile.name)
        folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, profile)
        folder.mkdir(parents=True, exist_ok=True)
        if read_build_info(folder) is None:
            write_build_info(folder, {"profile": profile.name, "wheel": "fake.whl"})
        marker = self.marker_dir / "installed-profile"
        if marker.is_file() and marker.read_text() == profile.name:
            return "present"
        marker.write_text(profile.name)
        return "built and installed"


@pytest.fixture
def installer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeInstall, Path]:
    """(the stand-in install, the folder the stand-in server reads its markers from)."""
    pkg = tmp_path / "fakepkgs" / "llama_cpp" / "server"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(FAKE_SERVER)
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fakepkgs"))
    monkeypatch.setenv("LOOPACT_FAKE_LOCAL_DIR", str(markers))
    monkeypatch.setenv("LOOPACT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    fake = FakeInstall(markers)
    monkeypatch.setattr(local_install, "ensure_llama_cpp", fake)
    monkeypatch.setattr(local_install, "ensure_model", lambda cfg, console: (model, "present"))
    monkeypatch.setattr(local_install, "select_profile", lambda: FIRST)
    return fake, markers


def _cfg() -> LocalConfig:
    return LocalConfig(start_timeout_s=60)


def _recorded(cfg: LocalConfig, profile: BuildProfile) -> dict[str, Any] | None:
    folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, profile)
    return self_test_result(folder, cpu_signature())


@pytest.mark.parametrize(
    ("crash_at", "crash"), [("request", "signal 11 / SIGSEGV"), ("start", "signal 4 / SIGILL")]
)
def test_a_build_that_crashes_its_self_test_is_rebuilt_once_with_the_safest_profile(
    installer: tuple[FakeInstall, Path],
    monkeypatch: pytest.MonkeyPatch,
    crash_at: str,
    crash: str,
) -> None:
    fake, markers = installer
    monkeypatch.setenv("LOOPACT_FAKE_CRASH_AT", crash_at)
    safest = safest_profile()
    assert safest != FIRST
    (markers / "crash-profiles").write_text(FIRST.name)
    cfg, out = _cfg(), io.StringIO()
    llama, _, _, result = local_install.install_and_test(cfg, Console(file=out, width=400))
    printed = out.getvalue()
    assert fake.calls == [FIRST.name, safest.name], printed  # rebuilt once, with the safest
    assert llama == "built and installed"
    crash_line = next(ln for ln in printed.splitlines() if f"The {FIRST.name} build crashed" in ln)
    assert crash in crash_line, printed
    assert f"rebuilding with the safest options ({safest.name}) once" in crash_line
    passed = re.search(
        r"Self-test passed: 16 tokens in ([\d.]+) s \(([\d.]+) tokens/s, prompt included\)",
        printed,
    )
    assert passed, printed
    assert result["ok"] and result["tokens"] == 16 and result["tokens_per_s"] > 0
    # build.json: the crashing build failed on this CPU, the safest passed
    first, second = _recorded(cfg, FIRST), _recorded(cfg, safest)
    assert first is not None and not first["ok"] and first["crash"], first
    assert second is not None and second["ok"], second
    # the log the crash line names still holds the crashing build's output
    log = Path(crash_line.rsplit("log: ", 1)[1].split(")")[0].strip())
    assert f"build {FIRST.name}, pid" in log.read_text(), log.read_text()
    # the next install (`make run`) keeps the safest build, without a new self-test
    fake.calls.clear()
    out = io.StringIO()
    llama, _, _, again = local_install.install_and_test(cfg, Console(file=out, width=400))
    assert fake.calls == [safest.name] and llama == "present"
    assert again == second and "Self-test" not in out.getvalue(), out.getvalue()


def test_when_the_safest_build_crashes_too_the_install_fails_and_nothing_is_verified(
    installer: tuple[FakeInstall, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, markers = installer
    safest = safest_profile()
    monkeypatch.setenv("LOOPACT_FAKE_CRASH_AT", "request")
    (markers / "crash-profiles").write_text(f"{FIRST.name} {safest.name}")
    cfg = _cfg()
    with pytest.raises(InstallError) as info:
        local_install.install_and_test(cfg, Console(file=io.StringIO(), width=400))
    msg = str(info.value)
    assert f"crashed in its self-test with the safest build ({safest.name}) too" in msg, msg
    assert "signal 11 / SIGSEGV" in msg and "log: " in msg
    assert "LOOPACT_BASE_URL" in msg  # what to do instead
    assert fake.calls == [FIRST.name, safest.name]  # one rebuild, no more
    first, second = _recorded(cfg, FIRST), _recorded(cfg, safest)
    assert first is not None and not first["ok"]
    assert second is not None and not second["ok"]
    # `make local-brain` says so and exits 1; `make test` does not take the build as usable
    fake.calls.clear()
    assert local_install.main([]) == 1
    err = capsys.readouterr().err
    assert "loopact local-brain: the local brain" in err and "crashed in its self-test" in err
    assert fake.calls == [safest.name]  # the failed record sends it to the safest build
    cache = tmp_path / "cache"
    builds = {p.parent.name: json.loads(p.read_text()) for p in cache.glob("wheels/*/build.json")}
    assert len(builds) == 2
    assert not any(t.get("ok") for b in builds.values() for t in b["self_tests"].values())
