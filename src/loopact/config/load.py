"""Loading the configuration (SPEC H1): the file, the environment (read here and nowhere
else), the CLI flags, ``--mcp-config``; validation errors that name the key and the fix.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs
import pydantic
import yaml
from pydantic_core import ErrorDetails

from loopact.config.mcp_secrets import server_secrets
from loopact.config.sections import Config
from loopact.config.yaml_strict import safe_load_unique
from loopact.errors import ConfigError

PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "dify": "DIFY_API_KEY",
}


def default_config_paths(cwd: Path | None = None) -> list[Path]:
    """Where a config file is looked for when ``--config`` is not given, in order."""
    cwd = cwd or Path.cwd()
    return [cwd / "loopact.yaml", Path(platformdirs.user_config_dir("loopact")) / "loopact.yaml"]


_YAML_WRITTEN = {True: ("true", "yes", "on"), False: ("false", "no", "off"), None: ("null", "~")}
"""How a key YAML reads as a bool or null may have been written."""


def _format_error(errors: list[ErrorDetails], source: str) -> ConfigError:
    """The first of ``errors`` as one message naming ``source``, the key and the fix."""
    err = errors[0]
    loc = err["loc"]
    key = ".".join(str(p) for p in loc)
    kind = err["type"]
    if loc and loc[-1] == "[key]" and kind == "string_type":
        # a mapping key YAML read as a bool, number or null; pydantic's location would be
        # 'tools.shell.allow.1.[key]' for `true: []`, naming nothing the user wrote
        key = ".".join(str(p) for p in loc[:-2])
        value = err.get("input")
        if isinstance(value, (bool, type(None))):
            forms = _YAML_WRITTEN[value]
            read = f"a key written {', '.join(forms[:-1])} or {forms[-1]} was read by YAML as "
            read += f"{json.dumps(value)}, not a name"
            fix = ", ".join(f'"{form}": ...' for form in forms)
        else:
            read = f"the key {value} was read by YAML as a number, not a name"
            fix = f'"{value}": ...'
        msg = f"{source}: '{key}': {read}; quote it ({fix})"
    elif kind == "value_error":  # our validators' messages name the values themselves
        msg = f"{source}: '{key}': {err.get('ctx', {}).get('error', err['msg'])}."
    elif kind == "extra_forbidden":
        msg = f"{source}: unknown key '{key}'. Remove it or check its spelling (docs/config.md)."
    elif kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        msg = f"{source}: '{key}' must be one of {expected}; got {err.get('input')!r}."
    elif kind == "string_pattern_mismatch" and key.endswith("base_url"):
        msg = f"{source}: '{key}' must be an http:// or https:// URL; got {err.get('input')!r}."
    else:
        msg = f"{source}: '{key}': {err['msg']} (got {err.get('input')!r})."
    more = len(errors) - 1
    if more:
        msg += f" ({more} more problem{'s' if more > 1 else ''} after this one.)"
    return ConfigError(msg, key=key)


_NOT_A_MAPPING = frozenset({"model_type", "dict_type"})
"""pydantic's error types for a value where a mapping belongs (a section, a server, ...)."""


def _check_mappings(data: dict[str, Any], source: Path | None) -> None:
    """Refuse the file's values that must be mappings and are not, before the overrides are
    merged into the file (SPEC H1).

    :func:`_merge` puts a flag's or a variable's keys into the file's mapping; where the file
    holds a number, a text, a list or a null instead, the merge would put the override's
    mapping in its place and the wrong value would never be seen (``robot: 5`` with
    ``--robot none``). So the file alone is checked for these first, whatever the overrides;
    a null where the schema allows one (``vision.model: null``) passes. Every other error
    is left to the validation of the merged whole, where a flag may fix a file's value.

    Raises:
        ConfigError: The first such value, naming the file, the key and what is expected.
    """
    if not data:
        return
    try:
        Config.model_validate(data)
    except pydantic.ValidationError as exc:
        wrong = [err for err in exc.errors() if err["type"] in _NOT_A_MAPPING]
        if wrong:
            raise _format_error(wrong, str(source)) from None


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def flag_names(overrides: Mapping[str, Any], **renamed: str) -> dict[str, str]:
    """The flag that sets each key of ``overrides``, for :func:`load_config`'s ``flag_names``.

    A key ``section.some_key`` is set by ``--some-key`` unless ``renamed`` gives its flag:
    ``flag_names(ov, robot__kind="--robot")`` (``__`` for the dot).

    Args:
        overrides: The nested ``{section: {key: value}}`` of a command's flags.
        renamed: ``section__key="--flag"`` for a key whose flag is not its dashed name.

    Returns:
        ``{"section.key": "--flag"}`` for every key of ``overrides``.
    """
    names = {
        f"{section}.{key}": "--" + key.replace("_", "-")
        for section, keys in overrides.items()
        if isinstance(keys, Mapping)
        for key in keys
    }
    names.update({key.replace("__", "."): flag for key, flag in renamed.items()})
    return names


def load_config(
    path: Path | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    mcp_config: Path | None = None,
    overrides_from: str = "command line",
    flag_names: Mapping[str, str] | None = None,
) -> tuple[Config, Path | None]:
    """Load, merge and validate the configuration.

    Args:
        path: ``--config PATH``; None to look in the default places.
        overrides: Nested dict of CLI flag values (None values are ignored).
        env: The environment (``os.environ`` when None).
        cwd: Folder for ``./loopact.yaml`` (the current folder when None).
        mcp_config: ``--mcp-config FILE``: its MCP servers are added to ``mcp.servers``
            (a server of the same name replaces the config file's), see
            :func:`read_mcp_servers`.
        overrides_from: Where ``overrides`` came from, named in an error about one of them
            (``/provider`` for the terminal's command).
        flag_names: The flag that set a key (``{"web.token": "--web-token"}``); an error
            about a key given by a flag names the flag rather than ``overrides_from``.

    Returns:
        The config and the file it came from (None when no file was used).

    Raises:
        ConfigError: The file is missing (when given), not YAML, or a key is wrong, or
            ``messages.email.password_env`` names a variable that is not set or is empty.
    """
    env = os.environ if env is None else env
    data, source = _read_config_file(path, cwd)
    _check_mappings(data, source)
    env_given = _env_overrides(env, data, overrides)
    flags_given = _drop_none(overrides) if overrides else {}
    data = _merge(data, env_given)
    data = _merge(data, flags_given)
    from_file: dict[str, Any] = {}
    if mcp_config is not None:
        section = data.get("mcp")
        section = section if isinstance(section, dict) else {}
        servers = section.get("servers")
        servers = servers if isinstance(servers, dict) else {}
        from_file = read_mcp_servers(mcp_config)
        data["mcp"] = {**section, "servers": {**servers, **from_file}}
    written = _expand_mcp_env(data, env)
    try:
        cfg = Config.model_validate(data)
    except pydantic.ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        if _has_path(flags_given, loc):
            dotted = ".".join(str(p) for p in loc[:2])
            where = (flag_names or {}).get(dotted, overrides_from)
        elif loc[:2] == ("mcp", "servers") and len(loc) > 2 and str(loc[2]) in from_file:
            where = f"--mcp-config {mcp_config}"
        elif _has_path(env_given, loc):
            where = _env_var_for(loc)
        else:
            where = str(source) if source else "configuration"
        raise _format_error(exc.errors(), where) from None
    if mcp_config is not None:
        cfg.mcp._config_file = mcp_config
    for name, server in cfg.mcp.servers.items():  # what events may show (issue 39 item 14)
        server._env_refs, server._written = written.get(name, ([], {}))
    named = cfg.model.api_key_env
    if named and not _has_path(flags_given, ("model", "api_key")):
        key = _named_variable(env, named, "model.api_key_env")
        cfg.model.api_key = pydantic.SecretStr(key)
    email = cfg.messages.email
    if email is not None and email.password_env:
        email._password = _named_variable(env, email.password_env, "messages.email.password_env")
    return cfg, source


def _named_variable(env: Mapping[str, str], name: str, key: str) -> str:
    """The value of the variable a ``*_env`` setting names.

    Args:
        env: The environment.
        name: The variable's name (the setting's value).
        key: The setting, for the error (``messages.email.password_env``).

    Raises:
        ConfigError: The variable is not set, or is set to an empty string (names both
            the setting and the variable).
    """
    value = env.get(name)
    if value is None:
        raise ConfigError(f"{key} names {name}, which is not set; set it or remove {key}", key=key)
    if not value:
        raise ConfigError(f"{key} names {name}, which is empty; give it the secret", key=key)
    return value


def _read_config_file(path: Path | None, cwd: Path | None) -> tuple[dict[str, Any], Path | None]:
    """The YAML sections of ``--config PATH`` or of the first default file that exists.

    Returns:
        The raw sections (``{}`` without a file) and the file they came from.

    Raises:
        ConfigError: ``--config`` names a missing file or a folder, or the file is
            unreadable, not YAML, or not a mapping of sections.
    """
    source: Path | None
    if path is not None:
        if path.is_dir():
            raise ConfigError(
                f"config file {path} is a folder, not a file (from --config); give the YAML "
                f"file, e.g. {path / 'loopact.yaml'}",
                key="--config",
            )
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist (from --config)", key="--config")
        source = path
    else:
        source = next((p for p in default_config_paths(cwd) if p.is_file()), None)
    if source is None:
        return {}, None
    try:
        with source.open(encoding="utf-8") as stream:
            loaded = safe_load_unique(stream) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {source} cannot be read: {exc}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{source} must be a mapping of sections (model:, agent:, ...)")
    return loaded, source


def _env_overrides(
    env: Mapping[str, str], data: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The sections the environment sets (the one place ``LOOPACT_*`` variables are read).

    The provider's own key variable (e.g. ``OPENAI_API_KEY``) depends on the provider chosen
    by flag, environment or file, in that order, so ``data`` and ``overrides`` are consulted.
    Sections with no variable set are left out.
    """
    env_over: dict[str, Any] = {"model": {}, "robot": {}, "agent": {}, "mqtt": _mqtt_env(env)}
    model_data = data.get("model")
    over_model = (overrides or {}).get("model")
    provider = str(
        (over_model.get("provider") if isinstance(over_model, Mapping) else None)
        or env.get("LOOPACT_PROVIDER")
        or (model_data.get("provider") if isinstance(model_data, Mapping) else None)
        or "openai"
    )
    if env.get("LOOPACT_PROVIDER"):
        env_over["model"]["provider"] = env["LOOPACT_PROVIDER"]
    key = env.get("LOOPACT_API_KEY") or env.get(PROVIDER_KEY_ENV.get(provider, ""), "")
    if key:
        env_over["model"]["api_key"] = key
    if env.get("LOOPACT_BASE_URL"):
        env_over["model"]["base_url"] = env["LOOPACT_BASE_URL"]
    if env.get("LOOPACT_MODEL"):
        env_over["model"]["model"] = env["LOOPACT_MODEL"]
    if env.get("LOOPACT_ROBOT"):
        env_over["robot"]["kind"] = env["LOOPACT_ROBOT"]
    if env.get("LOOPACT_ROBOT_PROFILE"):
        env_over["robot"]["profile"] = env["LOOPACT_ROBOT_PROFILE"]
    if env.get("LOOPACT_LANG"):
        env_over["agent"]["lang"] = env["LOOPACT_LANG"]
    if env.get("LOOPACT_IMAGES_API_KEY"):
        env_over["images"] = {"api_key": env["LOOPACT_IMAGES_API_KEY"]}
    if env.get("LOOPACT_MCP_TOKEN"):
        env_over["mcp"] = {"token": env["LOOPACT_MCP_TOKEN"]}
    if env.get("LOOPACT_ESTOP_TOKEN"):
        env_over["robot"]["estop"] = {"reset_token": env["LOOPACT_ESTOP_TOKEN"]}
    return {k: v for k, v in env_over.items() if v}


def read_mcp_servers(path: Path) -> dict[str, Any]:
    """The MCP servers of ``--mcp-config FILE`` (JSON or YAML), by name (issue 18).

    The file holds a ``servers`` mapping (``{"servers": {"files": {"command": "npx", ...}}}``);
    the ``mcpServers`` mapping of a desktop assistant's config file and a loopact-style
    ``mcp: {servers: ...}`` are read too. Other top-level keys are ignored, so a desktop
    assistant's whole config file can be given.

    Raises:
        ConfigError: The file is missing or unreadable, not JSON/YAML, or has no servers
            mapping (the key is ``--mcp-config``).
    """
    where = f"--mcp-config {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot be read: {exc}", key="--mcp-config") from None
    try:
        loaded = json.loads(text) if path.suffix.lower() == ".json" else safe_load_unique(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: not valid JSON or YAML: {exc}", key="--mcp-config") from None
    if isinstance(loaded, dict) and isinstance(loaded.get("mcp"), dict):
        loaded = loaded["mcp"]
    servers = None
    if isinstance(loaded, dict):
        servers = loaded.get("servers", loaded.get("mcpServers"))
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{where}: needs a "servers" mapping of name -> {{command, args, env}} or '
            "{url, headers} (docs/mcp.md)",
            key="--mcp-config",
        )
    return {str(k): v for k, v in servers.items()}


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MCP_EXPANDED = ("command", "args", "env", "url", "headers", "cwd")


def _expand_mcp_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, _Written]:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in MCP server settings from ``env``, in place.

    Keeps secrets (API keys in ``env`` or ``headers``) out of config files, as desktop
    assistants allow.

    Returns:
        Per server: the ``(VAR, value)`` pairs substituted, and its ``command``, ``args``
        and ``url`` as written (for :attr:`McpServerConfig.env_refs` and ``.written``).

    Raises:
        ConfigError: A referenced variable is not set and has no default (names the key).
    """
    section = data.get("mcp")
    servers = section.get("servers") if isinstance(section, dict) else None
    if not isinstance(servers, dict):
        return {}
    refs: list[tuple[str, str]] = []

    def expand(value: Any, key: str) -> Any:
        if isinstance(value, str):

            def one(m: re.Match[str]) -> str:
                name, default = m.group(1), m.group(2)
                if name in env:
                    refs.append((name, env[name]))
                    return env[name]
                if default is not None:
                    refs.append((name, default))
                    return default
                raise ConfigError(
                    f"{key}: environment variable {name} is not set (referenced as "
                    f"${{{name}}}); set it or write ${{{name}:-default}}",
                    key=key,
                )

            return _ENV_REF.sub(one, value)
        if isinstance(value, list):
            return [expand(v, f"{key}.{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: expand(v, f"{key}.{k}") for k, v in value.items()}
        return value

    written: dict[str, _Written] = {}
    for name, server in list(servers.items()):
        if isinstance(server, dict):
            refs = []
            as_written = {k: server[k] for k in ("command", "args", "url") if k in server}
            servers[name] = {
                k: expand(v, f"mcp.servers.{name}.{k}") if k in _MCP_EXPANDED else v
                for k, v in server.items()
            }
            written[str(name)] = (list(refs), as_written)
    return written


_Written = tuple[list[tuple[str, str]], dict[str, Any]]


_ENV_VARS = {
    "model.provider": "LOOPACT_PROVIDER",
    "model.base_url": "LOOPACT_BASE_URL",
    "model.model": "LOOPACT_MODEL",
    "robot.kind": "LOOPACT_ROBOT",
    "robot.profile": "LOOPACT_ROBOT_PROFILE",
    "agent.lang": "LOOPACT_LANG",
    "images.api_key": "LOOPACT_IMAGES_API_KEY",
    "mcp.token": "LOOPACT_MCP_TOKEN",
    "robot.estop.reset_token": "LOOPACT_ESTOP_TOKEN",
    "mqtt.broker": "LOOPACT_MQTT_BROKER",
    "mqtt.username": "LOOPACT_MQTT_USERNAME",
    "mqtt.password": "LOOPACT_MQTT_PASSWORD",
    "mqtt.tls.ca_file": "LOOPACT_MQTT_CA_FILE",
    "mqtt.tls.cert_file": "LOOPACT_MQTT_CERT_FILE",
    "mqtt.tls.key_file": "LOOPACT_MQTT_KEY_FILE",
}
"""The ``LOOPACT_*`` variable that sets each config key (:func:`_env_overrides`)."""


def _env_var_for(loc: tuple[int | str, ...]) -> str:
    """The variable named in an error about the value at ``loc`` that the environment set
    (``LOOPACT_ROBOT``), or ``environment`` for one set by a provider's key variable."""
    for depth in (3, 2):
        name = _ENV_VARS.get(".".join(str(p) for p in loc[:depth]))
        if name:
            return name
    return "environment"


def _mqtt_env(env: Mapping[str, str]) -> dict[str, Any]:
    """``LOOPACT_MQTT_*``: broker, user name, password and TLS files (SPEC H1, issue 17)."""
    out: dict[str, Any] = {}
    for name, key in (
        ("LOOPACT_MQTT_BROKER", "broker"),
        ("LOOPACT_MQTT_USERNAME", "username"),
        ("LOOPACT_MQTT_PASSWORD", "password"),
    ):
        if env.get(name):
            out[key] = env[name]
    tls = {
        key: env[name]
        for name, key in (
            ("LOOPACT_MQTT_CA_FILE", "ca_file"),
            ("LOOPACT_MQTT_CERT_FILE", "cert_file"),
            ("LOOPACT_MQTT_KEY_FILE", "key_file"),
        )
        if env.get(name)
    }
    if tls:
        out["tls"] = tls
    return out


def _has_path(data: Mapping[str, Any], loc: tuple[int | str, ...]) -> bool:
    """Whether the nested ``data`` sets the value at ``loc`` (or a parent of it)."""
    node: Any = data
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            sub = _drop_none(v)
            if sub:
                out[k] = sub
        elif v is not None:
            out[k] = v
    return out


def config_secrets(cfg: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value the configuration holds or names, for the event bus's masker
    (:class:`~loopact.redact.Redactor`; issue 21 item 5, SPEC A8).

    Besides the model's key: every ``SecretStr`` (the vision, speech, images and e-mail
    keys, the console's and ``loopact mcp``'s tokens, the e-stop reset token, the MQTT
    password), the values of the variables that ``*_env`` keys name, the SMTP password, and
    the credentials of the MCP servers' settings
    (:func:`~loopact.config.mcp_secrets.server_secrets`): ``headers`` and ``env`` values
    whose names look secret (``Authorization``: the whole value and its last word, ``Bearer
    <token>``; ``GITHUB_TOKEN``, ``API_KEY``, ...), ``${VAR}`` values of secret-named
    variables, a URL's password and secret-named query values, and the values of
    secret-named flags in ``args`` (issue 39 item 14).

    Args:
        cfg: The loaded configuration.
        env: The environment for the ``*_env`` keys (``os.environ`` when None).

    Returns:
        The values, unordered; the masker ignores empty and short ones.
    """
    return [value for _setting, value in config_secret_settings(cfg, env)]


def config_secret_settings(
    cfg: Config, env: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """The secrets of :func:`config_secrets`, each with the setting it comes from.

    Args:
        cfg: The loaded configuration.
        env: The environment for the ``*_env`` keys (``os.environ`` when None).

    Returns:
        ``(setting, value)`` pairs, e.g. ``("model.api_key", "sk-...")`` or
        ``("messages.email.password_env (SMTP_PASSWORD)", "...")``; the setting names never
        hold a secret, so they may be logged.
    """
    env = os.environ if env is None else env
    found: list[tuple[str, str]] = []

    def walk(value: Any, path: str = "", name: str = "") -> None:
        if isinstance(value, pydantic.SecretStr):
            found.append((path, value.get_secret_value()))
        elif isinstance(value, pydantic.BaseModel):
            for field in type(value).model_fields:
                walk(getattr(value, field), _join(path, field), field)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, _join(path, str(key)), str(key))
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, path, name)
        elif isinstance(value, str) and name.endswith("_env") and env.get(value):
            found.append((f"{path} ({value})", env[value]))

    walk(cfg)
    email = cfg.messages.email
    if email is not None and email.password():
        found.append(("messages.email.password_env", str(email.password())))
    for server_name, server in cfg.mcp.servers.items():
        found += server_secrets(server_name, server)
    return found


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
