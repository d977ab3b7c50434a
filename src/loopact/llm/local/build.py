"""Which llama.cpp build the offline brain uses, and how it is keyed and checked (issue 13).

A build tied to the CPU it was made on breaks elsewhere: llama.cpp's default ``-march=native``
build enables the AMX matmul path on Intel Sapphire Rapids class CPUs, which dies with a general
protection fault on the first request there (llama.cpp issue 20824, PR 26954), and a native
build copied to an older CPU or kept across a VM migration dies with SIGILL. So loopact never
builds natively. It builds one of a few fixed, portable **profiles**, each a list of CMake
options that names every instruction-set switch explicitly:

===============  =======================================  ==================================
profile          instruction sets                         runs on
===============  =======================================  ==================================
``x86-64-v4``    ``x86-64-v3`` + AVX-512 F, CD, VL, DQ,   Intel Cascade Lake, Ice Lake,
                 BW and AVX-512 VNNI (no AMX)             Sapphire Rapids and later; AMD
                                                          Zen 4 and later
``x86-64-v3``    SSE4.2, AVX, AVX2, FMA, F16C, BMI2       x86-64 CPUs since 2013-2015
                                                          (Intel Haswell, AMD Zen 1) and on
``x86-64-v2``    SSE4.2                                   older x86-64 CPUs
``x86-64``       none beyond SSE2                         every x86-64 CPU (the safest)
``generic``      the compiler's baseline                  other architectures (aarch64: v8.0)
===============  =======================================  ==================================

AMX is always off (and AVX-VNNI, AVX-512 VBMI and BF16, which this model's kernels do not
use). ``x86-64-v4`` exists because AVX-512 VNNI is what llama.cpp's quantised dot products
run fastest with: ``x86-64-v3`` evaluated prompts 30 % slower than a native build on an AMD
Zen 4, ``x86-64-v4`` as fast as native (docs/performance.md). The profile is chosen from the
CPU's flags (``/proc/cpuinfo``) at every install, never from the build machine's ``-march``,
and :func:`loopact.llm.local.check_installed_build` refuses an installed build whose
instructions this CPU lacks (a cache copied to another machine, a VM moved to an older host).
The cached wheel lives in
``<cache>/wheels/<profile>-<key>/`` where the key hashes the llama-cpp-python version, the
sdist's sha256, the profile and its options: a wheel built with other options (e.g. the native
builds of loopact before issue 13, kept directly in ``<cache>/wheels/``) is never reused.

After building, :func:`scan_instructions` disassembles the shared libraries (``objdump -d``)
and the build is refused if it contains instructions its profile excludes (AMX tile
instructions always, ``zmm`` registers of AVX-512 outside ``x86-64-v4``, ``ymm`` registers on
the AVX-less profiles).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Bumped when the meaning of a profile's options or of ``build.json`` changes.
BUILD_SCHEMA = 2

#: The file next to a cached wheel that describes it.
BUILD_INFO = "build.json"

#: Extensions off unless a profile turns them on (the AMX ones never are).
_EXTENSIONS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_BACKEND_DL=OFF",
    "-DGGML_CPU_ALL_VARIANTS=OFF",
    "-DGGML_AVX_VNNI=OFF",
    "-DGGML_AVX512=OFF",
    "-DGGML_AVX512_VBMI=OFF",
    "-DGGML_AVX512_VNNI=OFF",
    "-DGGML_AVX512_BF16=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)

#: AMX mnemonics as objdump prints them (Intel SDM vol. 2, "AMX instructions").
AMX_MNEMONICS = (
    "ldtilecfg",
    "sttilecfg",
    "tileloadd",
    "tileloaddt1",
    "tilestored",
    "tilerelease",
    "tilezero",
    "tdpbssd",
    "tdpbsud",
    "tdpbusd",
    "tdpbuud",
    "tdpbf16ps",
    "tdpfp16ps",
)
_AMX_RE = re.compile(r"\b(" + "|".join(AMX_MNEMONICS) + r")\b")
_ZMM_RE = re.compile(r"%zmm\d+")
_YMM_RE = re.compile(r"%ymm\d+")


@dataclass(frozen=True)
class BuildProfile:
    """A portable llama.cpp build: its CMake options and what it needs from the CPU.

    Attributes:
        name: ``x86-64-v4``, ``x86-64-v3``, ``x86-64-v2``, ``x86-64`` or ``generic``.
        cmake_args: The options passed in ``CMAKE_ARGS``.
        needs: ``/proc/cpuinfo`` flags the build's code uses (the CPU must have all).
        allow_ymm: The build may use 256-bit AVX registers.
        allow_zmm: The build may use 512-bit AVX-512 registers.
    """

    name: str
    cmake_args: tuple[str, ...]
    needs: frozenset[str]
    allow_ymm: bool
    allow_zmm: bool = False

    def runs_on(self, flags: Iterable[str]) -> bool:
        """True when a CPU with these ``/proc/cpuinfo`` flags has everything the build uses."""
        return self.needs <= set(flags)


def _x86(
    name: str, on: tuple[str, ...], needs: tuple[str, ...], ymm: bool, zmm: bool = False
) -> BuildProfile:
    switches = ("SSE42", "AVX", "AVX2", "FMA", "F16C", "BMI2")
    args = tuple(f"-DGGML_{s}={'ON' if s in on else 'OFF'}" for s in switches)
    extensions = tuple(
        arg.replace("=OFF", "=ON") if arg[len("-DGGML_") : arg.index("=")] in on else arg
        for arg in _EXTENSIONS
    )
    return BuildProfile(name, (*extensions, *args), frozenset(needs), ymm, zmm)


_V3 = ("SSE42", "AVX", "AVX2", "FMA", "F16C", "BMI2")
_V3_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2")
_V4_FLAGS = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "avx512_vnni")


PROFILES: Mapping[str, BuildProfile] = {
    p.name: p
    for p in (
        _x86("x86-64-v4", (*_V3, "AVX512", "AVX512_VNNI"), (*_V3_FLAGS, *_V4_FLAGS), True, True),
        _x86("x86-64-v3", _V3, _V3_FLAGS, True),
        _x86("x86-64-v2", ("SSE42",), ("sse4_2",), False),
        _x86("x86-64", (), (), False),
        BuildProfile("generic", ("-DGGML_NATIVE=OFF",), frozenset(), True),
    )
}


def is_x86(machine: str | None = None) -> bool:
    """True on x86-64 (``platform.machine()`` is ``x86_64`` or ``AMD64``)."""
    return (machine or platform.machine()).lower() in ("x86_64", "amd64")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty when they cannot be read)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU model name (``model name`` in ``/proc/cpuinfo``), or the platform's guess."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_signature(flags: Iterable[str] | None = None, name: str | None = None) -> str:
    """A short hash of the CPU model and flags: a self-test passed on it is recorded under it."""
    flags = sorted(cpu_flags() if flags is None else flags)
    name = cpu_name() if name is None else name
    return hashlib.sha256(json.dumps([name, flags]).encode()).hexdigest()[:16]


def select_profile(flags: Iterable[str] | None = None, machine: str | None = None) -> BuildProfile:
    """The fastest portable profile this CPU runs (never a native build).

    Args:
        flags: ``/proc/cpuinfo`` flags (read from this machine when None).
        machine: ``platform.machine()`` value (this machine's when None).
    """
    if not is_x86(machine):
        return PROFILES["generic"]
    have = cpu_flags() if flags is None else frozenset(flags)
    for name in ("x86-64-v4", "x86-64-v3", "x86-64-v2"):
        if PROFILES[name].runs_on(have):
            return PROFILES[name]
    return PROFILES["x86-64"]


def safest_profile(machine: str | None = None) -> BuildProfile:
    """The profile with the fewest instruction sets (used when a build crashes its self-test)."""
    return PROFILES["x86-64"] if is_x86(machine) else PROFILES["generic"]


def build_key(version: str, sdist_sha256: str | None, profile: BuildProfile) -> str:
    """The cache key of a build: hash of version, sdist hash, profile and its options."""
    payload = {
        "schema": BUILD_SCHEMA,
        "version": version,
        "sdist_sha256": sdist_sha256,
        "profile": profile.name,
        "cmake_args": list(profile.cmake_args),
        "machine": platform.machine().lower(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def build_dir_name(version: str, sdist_sha256: str | None, profile: BuildProfile) -> str:
    """``<profile>-<key>``: the folder under ``<cache>/wheels`` holding that build."""
    return f"{profile.name}-{build_key(version, sdist_sha256, profile)}"


def read_build_info(folder: Path) -> dict[str, Any] | None:
    """The ``build.json`` of a cached build folder, or None when absent or unreadable."""
    try:
        data = json.loads((folder / BUILD_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_build_info(folder: Path, info: Mapping[str, Any]) -> None:
    """Write ``build.json`` atomically (a reader never sees half a file)."""
    tmp = folder / (BUILD_INFO + ".tmp")
    tmp.write_text(json.dumps(dict(info), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, folder / BUILD_INFO)


@dataclass(frozen=True)
class InstructionScan:
    """What :func:`scan_instructions` found in a build's shared libraries.

    Attributes:
        amx: AMX instructions (``tileloadd``, ``tdpbssd``, ``ldtilecfg``, ...).
        zmm: Instructions using 512-bit AVX-512 registers.
        ymm: Instructions using 256-bit AVX registers.
        files: The libraries disassembled.
    """

    amx: int
    zmm: int
    ymm: int
    files: tuple[str, ...]

    def violations(self, profile: BuildProfile) -> list[str]:
        """What the profile forbids that the build contains (empty when it is clean)."""
        found = []
        if self.amx:
            found.append(f"{self.amx} AMX tile instructions")
        if self.zmm and is_x86() and profile.name != "generic" and not profile.allow_zmm:
            found.append(f"{self.zmm} AVX-512 (zmm) instructions")
        if self.ymm and not profile.allow_ymm:
            found.append(f"{self.ymm} AVX (ymm) instructions")
        return found


def objdump() -> str | None:
    """The ``objdump`` on PATH (binutils, installed with gcc), or None."""
    return shutil.which("objdump")


def scan_instructions(libs: Iterable[Path], timeout_s: float = 600.0) -> InstructionScan:
    """Disassemble ``libs`` with ``objdump -d`` and count AMX, zmm and ymm instructions.

    Args:
        libs: Shared libraries (``libggml-cpu.so`` and the others of the wheel).
        timeout_s: Limit for each ``objdump`` run, in seconds.

    Raises:
        FileNotFoundError: ``objdump`` is not installed.
        subprocess.TimeoutExpired: ``objdump`` took longer than ``timeout_s``.
    """
    tool = objdump()
    if tool is None:
        raise FileNotFoundError("objdump (binutils) is not installed")
    amx = zmm = ymm = 0
    names = []
    for lib in libs:
        names.append(lib.name)
        with subprocess.Popen(
            [tool, "-d", "--no-show-raw-insn", str(lib)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            errors="replace",
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if "%" in line:
                    zmm += bool(_ZMM_RE.search(line))
                    ymm += bool(_YMM_RE.search(line))
                if "t" in line and _AMX_RE.search(line):
                    amx += 1
            proc.wait(timeout=timeout_s)
    return InstructionScan(amx, zmm, ymm, tuple(names))


def native_flags_in_log(log_text: str) -> list[str]:
    """Compiler flags in a build log that tie the build to the build machine's CPU."""
    found = set(re.findall(r"-march=native|-mtune=native|-mcpu=native", log_text))
    return sorted(found)


def llama_libs(package_dir: Path) -> list[Path]:
    """The shared libraries of an unpacked ``llama_cpp`` package (``llama_cpp/lib/*.so*``).

    A wheel holds ``libx.so``, ``libx.so.0`` and ``libx.so.0.1.2`` as copies of one file;
    each content is listed once.
    """
    seen: set[str] = set()
    libs = []
    for path in sorted(package_dir.glob("lib/*.so*"), key=lambda p: (len(p.name), p.name)):
        if not path.is_file() or path.is_symlink():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            libs.append(path)
    return libs
