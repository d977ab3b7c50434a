"""The portable llama.cpp build of the local brain (issue 13): profiles, keys, AMX check.

The AMX check is proved on a real shared library compiled here with AMX tile instructions
(gcc's ``-mamx-tile``), so it holds on machines without AMX too. Where this machine's cache
holds the installed build, its libraries are checked as well.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from loopact.config import LocalConfig
from loopact.errors import ConfigError, InstallError
from loopact.llm.local import brain as local
from loopact.llm.local import build as local_build
from loopact.llm.local import wheel as local_wheel
from loopact.llm.local.build import (
    PROFILES,
    build_key,
    llama_libs,
    native_flags_in_log,
    safest_profile,
    scan_instructions,
    select_profile,
)

V3_FLAGS = [
    "fpu",
    "sse",
    "sse2",
    "ssse3",
    "sse4_1",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi1",
    "bmi2",
    "popcnt",
]
SKYLAKE_SP = [*V3_FLAGS, "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"]
SAPPHIRE_RAPIDS = [
    *SKYLAKE_SP,
    "avx512_vnni",
    "avx512vbmi",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
]

AMX_C = r"""
#include <immintrin.h>
void tile_work(const void *cfg, const void *src, void *dst) {
    _tile_loadconfig(cfg);
    _tile_loadd(0, src, 64);
    _tile_loadd(1, src, 64);
    _tile_loadd(2, src, 64);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, dst, 64);
    _tile_release();
}
"""

needs_toolchain = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("objdump") is None,
    reason="needs gcc and objdump (binutils)",
)


def test_profiles_are_chosen_from_cpu_flags_never_native() -> None:
    assert select_profile(SAPPHIRE_RAPIDS, "x86_64").name == "x86-64-v4"  # AMX machine
    assert select_profile(SKYLAKE_SP, "x86_64").name == "x86-64-v3"  # AVX-512 without VNNI
    assert select_profile(V3_FLAGS, "x86_64").name == "x86-64-v3"
    assert select_profile(["sse2", "sse4_2", "avx"], "x86_64").name == "x86-64-v2"
    assert select_profile(["sse2"], "x86_64").name == "x86-64"
    assert select_profile([], "aarch64").name == "generic"
    assert safest_profile("x86_64").name == "x86-64"
    for profile in PROFILES.values():
        assert "-DGGML_NATIVE=OFF" in profile.cmake_args
        if profile.name != "generic":
            for switch in ("AMX_TILE", "AMX_INT8", "AMX_BF16"):
                assert f"-DGGML_{switch}=OFF" in profile.cmake_args
            avx512 = "ON" if profile.name == "x86-64-v4" else "OFF"
            assert f"-DGGML_AVX512={avx512}" in profile.cmake_args
            assert f"-DGGML_AVX512_VNNI={avx512}" in profile.cmake_args
            assert profile.allow_zmm == (profile.name == "x86-64-v4")
    v3, v4 = PROFILES["x86-64-v3"], PROFILES["x86-64-v4"]
    assert v3.runs_on(SAPPHIRE_RAPIDS) and not v3.runs_on(["sse4_2", "avx"])
    assert v4.runs_on(SAPPHIRE_RAPIDS) and not v4.runs_on(SKYLAKE_SP)


def test_the_cache_key_changes_with_every_build_option() -> None:
    v3, v2 = PROFILES["x86-64-v3"], PROFILES["x86-64-v2"]
    key = build_key("0.3.36", "ab" * 32, v3)
    assert key == build_key("0.3.36", "ab" * 32, v3)
    assert key != build_key("0.3.36", "ab" * 32, v2)
    assert key != build_key("0.3.37", "ab" * 32, v3)
    assert key != build_key("0.3.36", "cd" * 32, v3)


def test_native_flags_in_a_build_log_are_found() -> None:
    log = "g++ -O3 -march=native -c ggml-cpu.c\n"
    assert native_flags_in_log(log) == ["-march=native"]
    assert native_flags_in_log("g++ -O3 -mavx2 -mfma -c ggml-cpu.c\n") == []


@pytest.fixture
def amx_lib(tmp_path: Path) -> Path:
    src = tmp_path / "amx.c"
    src.write_text(AMX_C)
    lib = tmp_path / "libggml-cpu.so"
    subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", "-mamx-tile", "-mamx-int8", str(src), "-o", str(lib)],
        check=True,
        capture_output=True,
    )
    return lib


@needs_toolchain
def test_the_scan_finds_amx_tile_instructions(amx_lib: Path, tmp_path: Path) -> None:
    scan = scan_instructions([amx_lib])
    assert scan.amx >= 5, scan  # ldtilecfg, tileloadd x3, tdpbssd, tilestored, tilerelease
    assert scan.violations(PROFILES["x86-64-v3"])[0].endswith("AMX tile instructions")
    plain = tmp_path / "plain.c"
    plain.write_text("int add(int a, int b) { return a + b; }\n")
    lib = tmp_path / "libplain.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(plain), "-o", str(lib)], check=True)
    clean = scan_instructions([lib])
    assert (clean.amx, clean.zmm) == (0, 0)
    assert clean.violations(PROFILES["x86-64"]) == []
    wide = tmp_path / "wide.c"
    wide.write_text(
        "#include <immintrin.h>\n"
        "void add(float *a, const float *b) {\n"
        "  _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));\n}\n"
    )
    lib = tmp_path / "libwide.so"
    subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", "-mavx512f", str(wide), "-o", str(lib)], check=True
    )
    zmm = scan_instructions([lib])
    assert zmm.zmm > 0 and zmm.amx == 0
    assert zmm.violations(PROFILES["x86-64-v3"]) == [f"{zmm.zmm} AVX-512 (zmm) instructions"]
    assert zmm.violations(PROFILES["x86-64-v4"]) == []  # AVX-512 is v4's, AMX never
    assert scan.violations(PROFILES["x86-64-v4"])[0].endswith("AMX tile instructions")


@needs_toolchain
def test_a_wheel_with_amx_code_is_refused_and_not_cached(amx_lib: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(amx_lib, "llama_cpp/lib/libggml-cpu.so")
        z.writestr("llama_cpp/__init__.py", "")
    log = tmp_path / "build.log"
    log.write_text("g++ -O3 -mavx2 -c ggml-cpu.c\n")
    with pytest.raises(InstallError, match="AMX tile instructions"):
        local_wheel.check_wheel(wheel, PROFILES["x86-64-v3"], log)
    log.write_text("g++ -O3 -march=native -c ggml-cpu.c\n")
    with pytest.raises(InstallError, match="-march=native"):
        local_wheel.check_wheel(wheel, PROFILES["x86-64-v3"], log)


def test_old_native_wheels_in_the_cache_are_deleted_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPACT_CACHE_DIR", str(tmp_path))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    legacy = wheels / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    legacy.write_bytes(b"PK")
    out = io.StringIO()
    removed = local_wheel.remove_legacy_wheels(Console(file=out, width=200))
    assert removed == [legacy] and not legacy.exists()
    assert "native CPU options" in out.getvalue() and "AMX" in out.getvalue()
    cfg = LocalConfig()
    folder = local_wheel.build_folder(cfg.llama_cpp_version, cfg.llama_cpp_sha256, select_profile())
    assert folder.parent == wheels and folder.name.startswith(select_profile().name + "-")
    assert local_wheel.cached_build(folder) is None  # nothing half-built counts as a build


def test_a_build_for_a_cpu_with_more_features_is_refused_at_run_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = {"profile": "x86-64-v3", "cmake_args": list(PROFILES["x86-64-v3"].cmake_args)}
    monkeypatch.setattr(local, "installed_build", lambda: ("x86-64-v3-abc", info))
    monkeypatch.setattr(local_build, "cpu_flags", lambda: frozenset({"sse2", "sse4_2"}))
    with pytest.raises(ConfigError, match="avx, avx2, bmi2, f16c, fma") as err:
        local.check_installed_build()
    assert "make local-brain" in str(err.value)
    monkeypatch.setattr(local_build, "cpu_flags", lambda: frozenset(SAPPHIRE_RAPIDS))
    local.check_installed_build()  # runs on an AMX machine: fine
    v4 = {"profile": "x86-64-v4", "cmake_args": list(PROFILES["x86-64-v4"].cmake_args)}
    monkeypatch.setattr(local, "installed_build", lambda: ("x86-64-v4-abc", v4))
    local.check_installed_build()
    monkeypatch.setattr(local_build, "cpu_flags", lambda: frozenset(SKYLAKE_SP))  # VM moved
    with pytest.raises(ConfigError, match="avx512_vnni"):
        local.check_installed_build()


def _installed_build() -> tuple[str, dict[str, object] | None]:
    try:
        return local.installed_build()
    except Exception:  # only decides whether to skip
        return "", None


@pytest.mark.local_model
@pytest.mark.skipif(_installed_build()[1] is None, reason="no loopact-built llama.cpp installed")
@needs_toolchain
def test_the_installed_build_is_portable_and_has_no_amx_code() -> None:
    import llama_cpp

    build_id, info = _installed_build()
    assert info is not None
    assert info["profile"] in PROFILES and "-DGGML_NATIVE=OFF" in info["cmake_args"]
    libs = llama_libs(Path(llama_cpp.__file__).parent)
    assert any(p.name.startswith("libggml-cpu") for p in libs)
    scan = scan_instructions(libs)
    profile = PROFILES[str(info["profile"])]
    assert scan.amx == 0 and scan.violations(profile) == [], scan
    if not profile.allow_zmm:
        assert scan.zmm == 0, scan
    assert json.dumps(info)  # build.json is plain JSON
    assert build_id.startswith(str(info["profile"]))
