"""The web console (SPEC F2, F6): chat, live camera and settings at http://localhost:8080.

Usage from the CLI, on the agent's event loop::

    console = await serve_console(agent, robot_session, host="127.0.0.1", port=8080)
    print(console.url)          # http://localhost:8080
    ...
    await console.stop()
"""

from loopact.access import is_loopback
from loopact.channels.web.app import create_app
from loopact.channels.web.server import WebConsole, serve_console
from loopact.channels.web.settings import WebSettings, settings_from_config, validate_settings

__all__ = [
    "WebConsole",
    "WebSettings",
    "create_app",
    "is_loopback",
    "serve_console",
    "settings_from_config",
    "validate_settings",
]
