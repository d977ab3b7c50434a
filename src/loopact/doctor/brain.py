"""The brain's checks for ``loopact doctor``: the config file, the CPU and the local brain's
build for it, the model cache, the configured endpoint reached with its key (issue 44).

The endpoint check asks what every client of the protocol may ask without spending a token:
``GET <base_url>/models`` (OpenAI-compatible, with ``Authorization: Bearer``), ``GET
/v1/models`` (Anthropic, with ``x-api-key``), ``GET <base_url>/parameters`` (Dify). The key is
sent only to the configured endpoint and never printed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from loopact.config import Config, load_config
from loopact.doctor.checks import Check, Status
from loopact.errors import ConfigError

_TIMEOUT_S = 5.0


def check_config(path: Path | None) -> tuple[Config, list[Check]]:
    """Load the configuration as ``loopact run`` would; a broken one falls back to defaults."""
    try:
        cfg, source = load_config(path)
    except ConfigError as exc:
        fix = "fix the key it names, or write a fresh file with loopact init --force"
        return Config(), [Check("the agent", "config file", "missing", str(exc), fix, True)]
    where = str(source) if source is not None else "none (defaults; loopact init writes one)"
    return cfg, [Check("the agent", "config file", "ok", where, needed=True)]


def check_cpu() -> Check:
    """The CPU's flags and the portable llama.cpp build profile chosen for them."""
    from loopact.llm.local.build import cpu_flags, cpu_name, select_profile

    flags = cpu_flags()
    profile = select_profile(flags)
    notable = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    detail = f"{cpu_name() or 'unknown CPU'}: {', '.join(notable) or 'baseline'}"
    detail += f" -> build profile {profile.name}"
    if "amx_tile" in flags:
        detail += "; AMX present, never used (no -march=native build)"
    return Check("local brain", "CPU", "info", detail)


def check_local_brain(cfg: Config) -> list[Check]:
    """The llama.cpp build in this Python (made for this CPU) and the model in the cache."""
    from loopact.llm.local.brain import (
        check_installed_build,
        installed_build,
        resolve_model_path,
        server_installed,
    )

    needed = not cfg.endpoint_configured
    status: Status = "missing" if needed else "warn"
    fix = "make local-brain (make run does it when no endpoint is configured)"
    rows = []
    build_id, info = installed_build()
    if not server_installed():
        rows.append(Check("local brain", "llama.cpp build", status, "not installed", fix, needed))
    else:
        try:
            check_installed_build()
        except ConfigError as exc:
            rows.append(Check("local brain", "llama.cpp build", status, str(exc), fix, needed))
        else:
            made = build_id + (f" (profile {info.get('profile')})" if info else "")
            rows.append(Check("local brain", "llama.cpp build", "ok", made, needed=needed))
    try:
        path = resolve_model_path(cfg.local)
    except (ConfigError, OSError) as exc:
        rows.append(Check("local brain", "model", status, str(exc), fix, needed))
    else:
        size = path.stat().st_size / 1e6
        rows.append(Check("local brain", "model", "ok", f"{path} ({size:.0f} MB)", needed=needed))
    rows.append(_cache_room(needed))
    return rows


def _cache_room(needed: bool) -> Check:
    """Room in the cache folder for the build and the model (about 1 GB)."""
    from loopact.llm.local.brain import cache_dir

    folder = cache_dir()
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 1e9
    if free_gb >= 1.0:
        return Check("local brain", "cache folder", "ok", f"{folder} ({free_gb:.1f} GB free)")
    fix = "free some space, or set LOOPACT_CACHE_DIR to a folder on a larger disk"
    status: Status = "missing" if needed else "warn"
    found = f"{folder}: {free_gb:.2f} GB free"
    return Check("local brain", "cache folder", status, found, fix, needed)


def check_endpoint(cfg: Config) -> Check:
    """The configured model endpoint answers, and accepts its key."""
    import httpx2

    def row(status: Status, detail: str, fix: str = "") -> Check:
        return Check("model endpoint", "reachable with its key", status, detail, fix, True)

    if not cfg.endpoint_configured:
        return Check(
            "model endpoint", "reachable with its key", "info", "none: the local brain runs"
        )
    url, headers = _probe(cfg)
    try:
        reply = httpx2.get(url, headers=headers, timeout=_TIMEOUT_S, follow_redirects=True)
    except httpx2.HTTPError as exc:
        fix = "check model.base_url (--base-url / LOOPACT_BASE_URL) and the network"
        return row("missing", f"{_shown(url)}: {type(exc).__name__}", fix)
    code = reply.status_code
    if code in (401, 403):
        fix = "set the right key: LOOPACT_API_KEY or --api-key (docs/config-env.md)"
        return row("missing", f"{_shown(url)}: the key was refused (HTTP {code})", fix)
    if code >= 400:
        return row("warn", f"{_shown(url)}: HTTP {code} (reachable; the key was not checked)")
    return row("ok", f"{_shown(url)}: HTTP {code}")


def _probe(cfg: Config) -> tuple[str, dict[str, str]]:
    """The URL and headers of the endpoint's cheapest authenticated request."""
    key = cfg.api_key or ""
    provider = cfg.model.provider
    if provider == "anthropic":
        base = (cfg.model.base_url or "https://api.anthropic.com").rstrip("/")
        return f"{base}/v1/models", {"x-api-key": key, "anthropic-version": "2023-06-01"}
    if provider == "dify":
        base = (cfg.model.base_url or "https://api.dify.ai/v1").rstrip("/")
        return f"{base}/parameters", {"Authorization": f"Bearer {key}"}
    base = (cfg.model.base_url or "https://api.openai.com/v1").rstrip("/")
    return f"{base}/models", ({"Authorization": f"Bearer {key}"} if key else {})


def _shown(url: str) -> str:
    """The URL without user, password or query (docs/security.md: nothing secret printed)."""
    from loopact.redact import masked_url

    return masked_url(url)
