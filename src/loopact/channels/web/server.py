"""Serving the console inside the agent's asyncio loop (SPEC F2).

:func:`serve_console` binds the socket itself (so a busy port is a clear
:class:`~loopact.errors.ConfigError`, not uvicorn's ``sys.exit``), starts
``uvicorn.Server.serve()`` as a task on the running loop and returns a :class:`WebConsole`
handle. uvicorn's signal capture is disabled: Ctrl-C belongs to the CLI, which calls
:meth:`WebConsole.stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn

from loopact._compat import wait_within
from loopact.access import check_token, is_loopback, listen_socket
from loopact.channels.agent_port import AgentPort
from loopact.channels.web.app import ConsoleState, create_app
from loopact.channels.web.settings import WebSettings
from loopact.errors import ConfigError

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 5.0


class _Server(uvicorn.Server):
    """uvicorn's server without its SIGINT/SIGTERM handlers (the CLI owns the signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    """The console's listening socket (:func:`loopact.access.listen_socket`).

    Raises:
        ConfigError: ``web.host`` cannot be resolved, or ``web.port`` cannot be bound.
    """
    try:
        return listen_socket(host, port)
    except socket.gaierror as exc:
        raise ConfigError(f"web.host {host!r} cannot be resolved: {exc}", key="web.host") from exc
    except OSError as exc:
        raise ConfigError(
            f"cannot serve the console on {host}:{port}: {exc.strerror or exc}; "
            "choose another port with --web-port (web.port) or stop the other program",
            key="web.port",
        ) from exc


class WebConsole:
    """A running console.

    Attributes:
        url: The address to open, e.g. ``http://localhost:8080`` (without the token).
        host: The bound host.
        port: The bound port (the real one when 0 was asked for).
        state: The app's shared :class:`ConsoleState` (hub, camera, settings).
    """

    def __init__(
        self, server: _Server, task: asyncio.Task[None], sock: socket.socket, state: ConsoleState
    ) -> None:
        self._server = server
        self._task = task
        self._sock = sock
        self.state = state
        self.host: str = ""
        self.port: int = 0
        self.url: str = ""

    @property
    def running(self) -> bool:
        """True while the server task runs."""
        return not self._task.done()

    async def stop(self) -> None:
        """Close every page's stream and WebSocket, then the server (at most ~5 s)."""
        self.state.shutdown.set()
        self.state.hub.close()
        self.state.shown.close()
        self._server.should_exit = True
        try:
            await wait_within(asyncio.shield(self._task), _STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("web console did not stop within %.0f s; cancelling it", _STOP_TIMEOUT_S)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        except Exception:
            log.exception("web console server failed")
        finally:
            self._sock.close()


async def serve_console(
    agent: AgentPort,
    robot_session: Any = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    token: str | None = None,
    settings: WebSettings | None = None,
) -> WebConsole:
    """Start the console on the running loop and return once it accepts connections.

    Args:
        agent: The running agent (see :func:`~loopact.channels.web.app.create_app`).
        robot_session: The robot session, or None (no camera, no pose).
        host: Interface to bind; beyond loopback a token is required.
        port: TCP port; 0 picks a free one (read it from ``WebConsole.port``).
        token: Bearer token for every request; overrides ``settings.token``.
        settings: Console options (settings page values, ``on_settings`` callback, ...).

    Returns:
        The running :class:`WebConsole`.

    Raises:
        ConfigError: No token for a non-loopback host, a token shorter than 16 characters
            (``web.token``), or the address cannot be bound (``web.port`` / ``web.host``).
    """
    settings = settings or WebSettings()
    if token is not None:
        settings.token = token
    if settings.token is not None and not settings.token.strip():
        raise ConfigError("web.token is empty; set a non-empty token or none.", key="web.token")
    weak = check_token(settings.token, "web.token")  # issue 21: a short token can be guessed
    if weak is not None:
        raise ConfigError(f"{weak}.", key="web.token")  # a sentence, as load_config's
    if not is_loopback(host) and not settings.token:
        raise ConfigError(
            f"web.token is required to bind the console to {host}; set --web-token or web.token.",
            key="web.token",
        )
    sock = _bind(host, port)
    app = create_app(agent, robot_session, settings)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=2,
        ws_ping_interval=20.0,
    )
    server = _Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    console = WebConsole(server, task, sock, app.state.console)
    deadline = asyncio.get_running_loop().time() + _START_TIMEOUT_S
    while not server.started:
        if task.done():
            exc = task.exception() if not task.cancelled() else None
            sock.close()
            raise ConfigError(f"the web console failed to start: {exc!r}", key="web")
        if asyncio.get_running_loop().time() > deadline:
            await console.stop()
            raise ConfigError("the web console did not start within 10 s", key="web")
        await asyncio.sleep(0.01)
    bound = sock.getsockname()
    console.host = host
    console.port = int(bound[1])
    shown = "localhost" if is_loopback(host) else host
    if ":" in shown:
        shown = f"[{shown}]"
    console.url = f"http://{shown}:{console.port}"
    log.info("web console at %s", console.url)
    return console
