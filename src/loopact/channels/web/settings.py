"""Console options and the settings form (SPEC F2).

:class:`WebSettings` configures :func:`~loopact.channels.web.app.create_app`. The settings page
edits provider, model, base URL, API key and robot profile; :func:`validate_settings` checks a
submitted form and names every bad field. The API key is write-only: it is kept on the server
(:class:`SettingsStore`) and only ever reported as ``"set"`` / ``"not set"``.

A key belongs to the endpoint it was configured for (issue 21, docs/security.md): a form that
changes the provider or the base URL must bring its own key, or say ``keep_api_key: true``
(the page's "keep the current key" box) to send the current one there. Otherwise it is
refused with an error on ``api_key``, and nothing is applied.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol
from urllib.parse import urlsplit

from loopact.redact import masked_url

#: What an ``on_settings`` callback gets and may return: None on success or an error text.
SettingsCallback = Callable[[dict[str, Any]], "str | None | Awaitable[str | None]"]

#: Providers the settings page offers by default (the wire protocols of SPEC B1-B3; Ollama,
#: llama.cpp, vLLM, Qwen, DeepSeek ... are ``openai`` with their base URL).
DEFAULT_PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "dify")

#: Robot profiles offered by default (the packaged ``loopact/robot/profiles/*.yaml``).
DEFAULT_PROFILES: tuple[str, ...] = ("sim", "turtlebot4", "mecanum_ptz")

DEFAULT_TITLE = "loopact console"
"""The default page title; the pages show it in the reader's language (``console.title``)."""

_FIELDS = ("provider", "model", "base_url", "api_key", "keep_api_key", "robot_profile")
_MODEL_RE = re.compile(r"^[\w.:/@+-]{1,200}$")


class GateLike(Protocol):
    """The image gate (SPEC G1): ``process(bytes)`` returns a result with ``image``/``error``."""

    def process(self, source: bytes) -> Any: ...


@dataclass
class WebSettings:
    """Options of the web console.

    Attributes:
        token: Bearer token every request must carry; None disables auth (loopback only).
        provider: Current provider name, shown on the settings page.
        model: Current model name.
        base_url: Current base URL ("" for the provider's default).
        api_key: Current API key; never sent to any page or response.
        robot_profile: Current robot profile name.
        providers: Provider names the form accepts.
        profiles: Robot profile names the form accepts.
        on_settings: Called with the validated new settings (a dict with the form's fields;
            ``api_key`` is the key to use with the new endpoint: the one typed, or the
            current one when the endpoint is unchanged or the form said to keep it; absent
            when there is none); returns None or an error text (sync or async). None: the
            page says settings cannot be changed.
        gate: The image gate for uploads; None builds ``loopact.vision.gate.ImageGate()``.
        camera_fps: Most frames per second the camera endpoints render (>= 5 for SPEC F6).
        jpeg_quality: JPEG quality of camera frames (1-100).
        queue_size: Per-client event queue bound.
        max_upload_bytes: Largest accepted upload in bytes.
        title: Page title.
        voice: The microphone / speaker pipeline (``loopact.channels.web.voice.WebVoice``),
            or None for a console without voice (issue 16).
        modality: ``agent.modality`` (G3): ``text`` and ``voice+text`` refuse image uploads.
        login_limiter: Counts wrong tokens and locks addresses out
            (:class:`~loopact.access.LoginLimiter`); None for the default.
        language: The pages' language (``web.language``: ``en`` or ``zh``); None follows
            each browser's language. A reader's choice on the settings page comes first.
    """

    token: str | None = None
    provider: str = ""
    model: str = ""
    base_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    robot_profile: str = ""
    providers: tuple[str, ...] = DEFAULT_PROVIDERS
    profiles: tuple[str, ...] = DEFAULT_PROFILES
    on_settings: SettingsCallback | None = None
    gate: GateLike | None = None
    camera_fps: float = 10.0
    jpeg_quality: int = 80
    queue_size: int = 1000
    max_upload_bytes: int = 20_000_000
    title: str = DEFAULT_TITLE
    voice: Any = None
    modality: str = "any"
    login_limiter: Any = None
    language: str | None = None


def packaged_profiles() -> tuple[str, ...]:
    """Names of the robot profiles shipped in ``loopact/robot/profiles`` (read when called)."""
    try:
        folder = resources.files("loopact.robot") / "profiles"
        names = sorted(
            entry.name[: -len(".yaml")]
            for entry in folder.iterdir()
            if entry.name.endswith(".yaml")
        )
    except (OSError, ModuleNotFoundError):
        return DEFAULT_PROFILES
    return tuple(names) or DEFAULT_PROFILES


def settings_from_config(
    config: Any,
    on_settings: SettingsCallback | None = None,
    token: str | None = None,
) -> WebSettings:
    """Console options showing a loaded ``loopact.config.Config``.

    Args:
        config: The loaded configuration (``config.model.provider/model/base_url``,
            ``config.api_key``, ``config.robot.profile``).
        on_settings: The callback applying changes (see :class:`WebSettings`).
        token: The console token (``--web-token``), None on loopback.

    Returns:
        The :class:`WebSettings`; the profile list is the packaged profiles plus the
        configured one.
    """
    profile = str(config.robot.profile)
    profiles = packaged_profiles()
    if profile not in profiles:
        profiles = (*profiles, profile)
    return WebSettings(
        token=token,
        provider=str(config.model.provider),
        model=str(config.model.model),
        base_url=str(config.model.base_url or ""),
        api_key=config.api_key,
        robot_profile=profile,
        profiles=profiles,
        on_settings=on_settings,
        language=getattr(getattr(config, "web", None), "language", None),
    )


class SettingsStore:
    """The settings the page shows; holds the API key without ever exposing it.

    Args:
        settings: The console options with the initial values.
    """

    def __init__(self, settings: WebSettings) -> None:
        self.provider = settings.provider
        self.model = settings.model
        self.base_url = settings.base_url
        self.robot_profile = settings.robot_profile
        self._api_key = settings.api_key or None

    @property
    def api_key_set(self) -> bool:
        """Whether an API key is configured."""
        return bool(self._api_key)

    def key_for(self, clean: dict[str, Any]) -> tuple[str | None, str | None]:
        """The API key validated settings ``clean`` may use, or why they may not (issue 21).

        Returns:
            ``(key, None)``: the typed key, or the current key when provider and base URL are
            unchanged or ``keep_api_key`` is true (None when there is no key);
            ``(None, error)``: the endpoint changed and the form neither typed a key nor
            chose to keep the current one.
        """
        if clean.get("api_key"):
            return str(clean["api_key"]), None
        moved = (clean.get("provider"), clean.get("base_url")) != (self.provider, self.base_url)
        if moved and self._api_key and not clean.get("keep_api_key"):
            where = f"{self.provider} at {masked_url(self.base_url) or 'its default URL'}"
            return None, (
                f"the current API key belongs to {where}; type the key for the new "
                "endpoint, or choose 'keep the current key' to send it there"
            )
        return self._api_key, None

    def secrets(self) -> list[str]:
        """Secrets that must never appear in a response (the API key)."""
        return [self._api_key] if self._api_key else []

    def unmask(self, clean: dict[str, Any]) -> None:
        """Put the current base URL back into validated settings ``clean`` when the form sent
        it as :meth:`public` shows it (its credentials masked, SPEC B6): an unchanged form
        keeps the URL's user info and query."""
        if self.base_url and clean.get("base_url") == masked_url(self.base_url):
            clean["base_url"] = self.base_url

    def public(self) -> dict[str, Any]:
        """The page's view: every field, the API key only as ``"set"``/``"not set"``, the
        base URL's user info and query masked (:func:`~loopact.redact.masked_url`)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": masked_url(self.base_url),
            "api_key": "set" if self._api_key else "not set",
            "robot_profile": self.robot_profile,
        }

    def apply(self, new: dict[str, Any]) -> None:
        """Store validated settings (``api_key`` replaced only when present)."""
        self.provider = new["provider"]
        self.model = new["model"]
        self.base_url = new["base_url"]
        self.robot_profile = new["robot_profile"]
        if new.get("api_key"):
            self._api_key = new["api_key"]


def validate_settings(
    form: Any,
    providers: tuple[str, ...],
    profiles: tuple[str, ...],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Check a submitted settings form.

    Args:
        form: The JSON body: ``{provider, model, base_url, api_key?, keep_api_key?,
            robot_profile}``; an empty or missing ``api_key`` keeps the current key, which a
            new provider or base URL may use only with ``keep_api_key: true``
            (:meth:`SettingsStore.key_for`).
        providers: Accepted provider names.
        profiles: Accepted robot profile names.

    Returns:
        ``(clean, errors)``: the normalised settings and a ``{field: message}`` dict, empty when
        the form is valid. Messages never quote the API key.
    """
    errors: dict[str, str] = {}
    if not isinstance(form, dict):
        return {}, {"form": "expected a JSON object with the settings fields"}
    unknown = sorted(set(form) - set(_FIELDS))
    if unknown:
        errors["form"] = f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(_FIELDS)}"

    def text(name: str) -> str:
        value = form.get(name, "")
        if value is None:
            return ""
        if not isinstance(value, str):
            errors[name] = f"{name} must be text"
            return ""
        return value.strip()

    provider = text("provider")
    if "provider" not in errors and provider not in providers:
        errors["provider"] = f"unknown provider {provider!r}; choose one of: {', '.join(providers)}"
    model = text("model")
    if "model" not in errors and not _MODEL_RE.match(model):
        errors["model"] = "model is required: 1-200 characters of letters, digits and . _ - : / @ +"
    base_url = text("base_url")
    if "base_url" not in errors and base_url:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            errors["base_url"] = "base_url must be an http:// or https:// URL (or empty)"
    raw_key = form.get("api_key", "")
    api_key = ""
    if raw_key is not None and not isinstance(raw_key, str):
        errors["api_key"] = "api_key must be text"
    elif raw_key:
        api_key = raw_key.strip()
        if any(c.isspace() for c in api_key) or len(api_key) > 500:
            errors["api_key"] = "api_key must be one word without spaces (at most 500 characters)"
    keep = form.get("keep_api_key", False)
    if keep is None:
        keep = False
    if not isinstance(keep, bool):
        errors["keep_api_key"] = "keep_api_key must be true or false"
    profile = text("robot_profile")
    if "robot_profile" not in errors and profile not in profiles:
        errors["robot_profile"] = (
            f"unknown robot profile {profile!r}; choose one of: {', '.join(profiles)}"
        )
    clean: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "robot_profile": profile,
        "keep_api_key": keep is True,
    }
    if api_key:
        clean["api_key"] = api_key
    return clean, errors
