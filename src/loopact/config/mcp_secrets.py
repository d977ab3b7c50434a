"""The credentials an MCP server's settings hold, and the server as it may be shown
(SPEC B6, H6; issue 21 item 5, issue 39 item 14).

A server's ``headers``, ``env``, ``url`` and ``args`` can all carry a key: ``Authorization:
Bearer ...``, ``GITHUB_TOKEN``, ``https://host/mcp?api_key=...``, ``--api-key ${LAB_KEY}``.
:func:`server_secrets` finds them, so the event bus's masker hides them in the trace, the
terminal and the web console; :func:`shown_server` is the server as a person may read it in
an ``mcp_server`` event: the command and its arguments as the config file wrote them
(``${LAB_KEY}``, not its value), with the values of secret-named flags, a URL's password
and its query masked.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING

from loopact.redact import MASK, masked_url

if TYPE_CHECKING:
    from loopact.config.connect import McpServerConfig

SECRET_NAME = re.compile(
    r"(^|[_-])(api_?key|key|token|secret|pass(word|wd|phrase)?|auth(orization)?|"
    r"credentials?|cookie|pat|sig(nature)?)($|[_-])",
    re.IGNORECASE,
)
"""A header, variable, flag or query parameter name that holds a secret: ``Authorization``,
``X-API-Key``, ``GITHUB_TOKEN``, ``DB_PASSWORD``, ``--api-key``, ``accessToken`` (not
``AUTHOR``, ``KEYBOARD`` or ``path``)."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def looks_secret(name: str) -> bool:
    """Whether a setting's, flag's or parameter's ``name`` says it holds a secret."""
    return bool(SECRET_NAME.search(_CAMEL.sub("_", name.strip().lstrip("-"))))


def server_secrets(name: str, server: McpServerConfig) -> list[tuple[str, str]]:
    """The secret values of one ``mcp.servers`` entry, each with the setting it is in.

    Args:
        name: The server's name in ``mcp.servers``.
        server: Its settings (``${VAR}`` already replaced).

    Returns:
        ``(setting, value)`` pairs: ``headers`` and ``env`` entries with secret names (a
        header's whole value and its last word: ``Bearer <token>``), the values of
        ``${VAR}`` references whose variable's name looks secret, a URL's password and its
        query values with secret names (in ``url`` and in any argument that is a URL), and
        the values of secret-named flags in ``args`` (``--token X``, ``--api-key=X``,
        ``GITHUB_TOKEN=X``). The settings never hold a secret, so they may be logged.
    """
    where = f"mcp.servers.{name}"
    found: list[tuple[str, str]] = []
    for header, value in server.headers.items():
        if looks_secret(header) and value.split():
            found += [(f"{where}.headers.{header}", v) for v in (value, value.split()[-1])]
    found += [(f"{where}.env.{k}", v) for k, v in server.env.items() if looks_secret(k)]
    found += [(f"{where} (${{{var}}})", v) for var, v in server.env_refs if looks_secret(var)]
    if server.url is not None:
        found += [(f"{where}.url", v) for v in _url_secrets(server.url)]
    found += [(f"{where}.args", v) for v in _arg_secrets(server.args)]
    return [(setting, value) for setting, value in found if value]


def shown_server(server: McpServerConfig) -> str:
    """The server as a person may read it (an ``mcp_server`` event): its command and
    arguments as written in the config (``${VAR}`` references unexpanded) with the values
    of secret-named flags and a URL argument's password and query masked, or its URL with
    its password and query masked."""
    if server.command is None:
        return masked_url(server.written.get("url") or server.url or "")
    command = str(server.written.get("command") or server.command)
    args = server.written.get("args")
    shown = _masked_args(list(args) if isinstance(args, list) else list(server.args))
    return " ".join([command, *shown])


def _url_secrets(url: str) -> list[str]:
    """A URL's password and the values of its query parameters with secret names."""
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=False)
        password = parts.password
    except ValueError:
        return []
    found = [v for k, v in query if looks_secret(k)]
    return [password, *found] if password else found


def _arg_secrets(args: list[str]) -> list[str]:
    found: list[str] = []
    for i, arg in enumerate(args):
        if "://" in arg:
            found += _url_secrets(arg)
        flag, sep, value = arg.partition("=")
        if sep and looks_secret(flag):  # --api-key=X, GITHUB_TOKEN=X
            found.append(value)
        elif _secret_flag(arg) and i + 1 < len(args) and not args[i + 1].startswith("-"):
            found.append(args[i + 1])  # --token X
    return found


def _secret_flag(arg: str) -> bool:
    return arg.startswith("-") and "=" not in arg and looks_secret(arg)


def _masked_args(args: list[str]) -> list[str]:
    shown: list[str] = []
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if i and _secret_flag(args[i - 1]) and not arg.startswith("-"):
            shown.append(_unless_reference(arg))
        elif sep and looks_secret(flag):
            shown.append(f"{flag}={_unless_reference(value)}")
        elif "://" in arg:
            shown.append(masked_url(arg))
        else:
            shown.append(arg)
    return shown


def _unless_reference(value: str) -> str:
    """A secret flag's value as shown: a ``${VAR}`` reference as written, else masked."""
    return value if re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", value) else MASK
