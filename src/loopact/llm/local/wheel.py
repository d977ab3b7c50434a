"""Build, cache, check and install the portable llama-cpp-python wheel (issue 13).

Used by :mod:`loopact.llm.local.install` (``make local-brain``). The build options come from a
:class:`~loopact.llm.local.build.BuildProfile` chosen for the CPU, never ``-march=native``;
each build lives in its own keyed folder ``<cache>/wheels/<profile>-<key>/`` with the wheel and
a ``build.json`` that records the options, the instruction scan, and the self-tests passed or
failed on each CPU (by :func:`~loopact.llm.local.build.cpu_signature`). The folder is complete
only when ``build.json`` exists: it is written last, after the wheel and the scan.

Builds kept directly in ``<cache>/wheels/`` are the native builds of loopact before issue 13
(they crash on Intel AMX CPUs) and are deleted, never installed.
"""

from __future__ import annotations

import json
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
from typing import Any
from urllib.parse import unquote, urlparse

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from loopact.errors import InstallError
from loopact.llm.local.build import (
    BuildProfile,
    build_dir_name,
    llama_libs,
    native_flags_in_log,
    objdump,
    read_build_info,
    scan_instructions,
    write_build_info,
)

BUILD_BYTES_HINT = 1500 * 1024 * 1024
_PIP_TIMEOUT_S = 1800
_BUILD_TIMEOUT_S = 3600
_STEP_RE = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_PERCENT_RE = re.compile(r"\[\s*(\d{1,3})%\]")


def cache_dir() -> Path:
    """Same cache folder as :func:`loopact.llm.local.cache_dir`."""
    from loopact.llm.local.brain import cache_dir as _cache_dir

    return _cache_dir()


def wheels_dir() -> Path:
    """``<cache>/wheels``: one folder per build."""
    return cache_dir() / "wheels"


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


def _pip(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def _platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


# --- what is installed and cached ------------------------------------------------------------


def installed_llama_version(python: str = sys.executable) -> str | None:
    """The ``llama_cpp_python`` version installed for ``python`` (None when absent)."""
    info = installed_llama(python)
    return info.get("version") if info else None


def installed_llama(python: str = sys.executable) -> dict[str, Any] | None:
    """``{version, url, package_dir}`` of the llama-cpp-python installed for ``python``.

    ``url`` is where pip installed it from (its ``direct_url.json``; None for an index
    install); ``package_dir`` is the ``llama_cpp`` folder. None when it is not installed.
    """
    code = (
        "import importlib.metadata as m, importlib.util as u, json\n"
        "try:\n"
        "    d = m.distribution('llama_cpp_python')\n"
        "except m.PackageNotFoundError:\n"
        "    print('null'); raise SystemExit\n"
        "url = json.loads(d.read_text('direct_url.json') or 'null')\n"
        "spec = u.find_spec('llama_cpp')\n"
        "loc = list(spec.submodule_search_locations or [None])[0] if spec else None\n"
        "print(json.dumps({'version': d.version, 'url': (url or {}).get('url'),"
        " 'package_dir': loc}))\n"
    )
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    try:
        data = json.loads(out.stdout.strip() or "null")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def installed_build_dir(python: str = sys.executable) -> Path | None:
    """The cached build folder the installed llama-cpp-python came from (None: not ours)."""
    info = installed_llama(python)
    url = (info or {}).get("url")
    if not url or not str(url).startswith("file:"):
        return None
    wheel = Path(unquote(urlparse(str(url)).path))
    folder = wheel.parent
    if folder.parent != wheels_dir() or read_build_info(folder) is None:
        return None
    return folder


def remove_legacy_wheels(console: Console) -> list[Path]:
    """Delete wheels kept directly in ``<cache>/wheels/`` (native builds before issue 13)."""
    removed = []
    for path in sorted(wheels_dir().glob("llama_cpp_python-*.whl")):
        path.unlink(missing_ok=True)
        removed.append(path)
    if removed:
        console.print(
            f"Removed {len(removed)} cached llama-cpp-python build(s) made with native CPU "
            "options by an earlier loopact (they crash on Intel CPUs with AMX): "
            + ", ".join(p.name for p in removed),
            markup=False,
        )
    return removed


def build_folder(version: str, sdist_sha256: str | None, profile: BuildProfile) -> Path:
    """The folder of ``profile``'s build (it may not exist yet)."""
    return wheels_dir() / build_dir_name(version, sdist_sha256, profile)


def cached_build(folder: Path) -> Path | None:
    """The wheel in a complete build folder (``build.json`` present), or None."""
    if read_build_info(folder) is None:
        return None
    wheels = sorted(folder.glob(f"llama_cpp_python-*-{_platform_tag()}.whl"))
    return wheels[0] if wheels else None


def record_self_test(folder: Path, cpu: str, result: dict[str, Any]) -> None:
    """Record a self-test result for CPU signature ``cpu`` in the build's ``build.json``."""
    info = read_build_info(folder) or {}
    tests = dict(info.get("self_tests") or {})
    tests[cpu] = result
    info["self_tests"] = tests
    write_build_info(folder, info)


def self_test_result(folder: Path, cpu: str) -> dict[str, Any] | None:
    """The recorded self-test of this build on CPU signature ``cpu`` (None: never run)."""
    info = read_build_info(folder) or {}
    result = (info.get("self_tests") or {}).get(cpu)
    return result if isinstance(result, dict) else None


# --- building ----------------------------------------------------------------------------------


def build_wheel(
    version: str, console: Console, sdist_sha256: str | None, profile: BuildProfile
) -> Path:
    """Build the llama-cpp-python wheel with ``profile``'s options and cache it (once).

    Args:
        version: The pinned llama-cpp-python version.
        console: Where progress goes.
        sdist_sha256: The sdist's pinned sha256; pip refuses any other file. None skips
            the check (only for a version whose hash was not pinned).
        profile: The portable build options (never native).

    Returns:
        The cached wheel in its build folder.

    Raises:
        InstallError: No compiler, no disk space, the build failed (the log tail is shown
            and the full log kept in the cache folder), or the built libraries contain
            instructions the profile excludes (AMX, AVX-512): that build is not cached.
    """
    check_compiler()
    folder = build_folder(version, sdist_sha256, profile)
    check_disk(Path(tempfile.gettempdir()), BUILD_BYTES_HINT, "building llama-cpp-python")
    check_disk(wheels_dir(), 50 * 1024 * 1024, "the llama-cpp-python wheel")
    log_path = cache_dir() / "logs" / f"build-llama-cpp-python-{version}-{profile.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = _build_env(profile)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="loopact-wheel-") as tmp:
        out_dir = Path(tmp) / "out"
        source = _sdist_source(version, sdist_sha256, Path(tmp))
        # --no-cache-dir: pip would otherwise reuse a wheel it built earlier with other options.
        cmd = _pip(["wheel", "-v", "--no-deps", "--no-cache-dir", *source, "-w", str(out_dir)])
        console.print(
            f"Building llama-cpp-python {version} from source, portable {profile.name} build "
            f"(once; ~5-15 min on 2 cores). Log: {log_path}",
            markup=False,
        )
        code = _compile_with_progress(cmd, env, log_path, console)
        if code != 0:
            raise InstallError(
                f"building llama-cpp-python {version} failed (exit {code}). "
                f"The log {log_path} ends with:\n{_tail(log_path)}"
            )
        built = sorted(out_dir.glob("llama_cpp_python-*.whl"))
        if not built:
            raise InstallError(f"pip built no llama-cpp-python wheel; see {log_path}")
        info = check_wheel(built[0], profile, log_path)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / built[0].name
        shutil.copy2(built[0], target.with_suffix(".tmp"))
        os.replace(target.with_suffix(".tmp"), target)
    info.update(
        {
            "version": version,
            "sdist_sha256": sdist_sha256,
            "build_minutes": round((time.monotonic() - t0) / 60, 1),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "wheel": target.name,
        }
    )
    write_build_info(folder, info)
    console.print(
        f"Built {target.name} ({profile.name}) in {info['build_minutes']} min; cached in {folder}.",
        markup=False,
    )
    return target


def _build_env(profile: BuildProfile) -> dict[str, str]:
    """The environment of the build: ``profile``'s CMake options, all cores unless set."""
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    env["CMAKE_ARGS"] = " ".join(profile.cmake_args)
    env["FORCE_CMAKE"] = "1"
    return env


def _sdist_source(version: str, sdist_sha256: str | None, tmp: Path) -> list[str]:
    """pip's arguments for the sdist: pinned by hash (a requirements file in ``tmp``) if known."""
    req = f"llama-cpp-python=={version}"
    if not sdist_sha256:
        return ["--no-binary", "llama-cpp-python", req]
    req_file = tmp / "requirements.txt"
    req_file.write_text(f"{req} --hash=sha256:{sdist_sha256}\n", encoding="utf-8")
    return ["--require-hashes", "--no-binary", "llama-cpp-python", "-r", str(req_file)]


def _compile_with_progress(
    cmd: list[str], env: dict[str, str], log_path: Path, console: Console
) -> int:
    """Run the build with a progress bar on ``console``, its output into ``log_path``.

    Returns:
        The build's exit code.
    """
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
        return _run_logged(cmd, env, log_path, progress, task)


def check_wheel(wheel: Path, profile: BuildProfile, log_path: Path | None) -> dict[str, Any]:
    """Check a built wheel: no native flags in its build log, no excluded instructions.

    Returns:
        The ``build.json`` fields describing the check (profile, options, instruction counts).

    Raises:
        InstallError: The log shows ``-march=native`` or the libraries contain AMX (or,
            for the portable x86 profiles, AVX-512 / AVX) instructions.
    """
    log_text = log_path.read_text(encoding="utf-8", errors="replace") if log_path else ""
    native = native_flags_in_log(log_text)
    if native:
        raise InstallError(
            f"the llama-cpp-python build used {', '.join(native)} although loopact asked for "
            f"the portable {profile.name} options; see {log_path}. Is CMAKE_ARGS overridden?"
        )
    info: dict[str, Any] = {"profile": profile.name, "cmake_args": list(profile.cmake_args)}
    if objdump() is None:
        info["instruction_scan"] = "skipped: objdump (binutils) is not installed"
        return info
    with tempfile.TemporaryDirectory(prefix="loopact-scan-") as tmp:
        with zipfile.ZipFile(wheel) as z:
            members = [n for n in z.namelist() if re.search(r"llama_cpp/lib/[^/]+\.so", n)]
            z.extractall(tmp, members)
        scan = scan_instructions(llama_libs(Path(tmp) / "llama_cpp"))
    bad = scan.violations(profile)
    if bad:
        raise InstallError(
            f"the {profile.name} build of llama-cpp-python contains {', '.join(bad)} "
            f"(in {', '.join(scan.files)}); it would crash on CPUs without them, so it was "
            "not cached."
        )
    info["instruction_scan"] = {
        "amx": scan.amx,
        "zmm": scan.zmm,
        "ymm": scan.ymm,
        "files": list(scan.files),
    }
    return info


def _run_logged(
    cmd: list[str], env: dict[str, str], log_path: Path, progress: Progress, tid: TaskID
) -> int:
    """Run ``cmd`` with its output in ``log_path``, moving the bar on ``[n/m]`` / ``[ n%]``."""
    with log_path.open("w", encoding="utf-8") as logf:
        logf.write(f"CMAKE_ARGS={env.get('CMAKE_ARGS', '')}\n")
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


def install_wheel(wheel: Path) -> None:
    """``pip install --force-reinstall --no-deps WHEEL`` then its ``server`` extra's deps.

    ``--force-reinstall`` replaces a llama-cpp-python of the same version built with other
    options (pip would otherwise keep it).

    Raises:
        InstallError: pip failed (the message ends with pip's last 15 lines).
        subprocess.TimeoutExpired: pip took longer than its time limit.
    """
    for args in (
        ["install", "--quiet", "--force-reinstall", "--no-deps", str(wheel)],
        ["install", "--quiet", f"{wheel}[server]"],
    ):
        out = subprocess.run(
            _pip(args), capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
        if out.returncode != 0:
            raise InstallError(
                f"pip could not install {wheel} (exit {out.returncode}):\n"
                + "\n".join((out.stderr or out.stdout).splitlines()[-15:])
            )
