"""``loopact node FILE.py``: serve a plain file's tools and inputs as nodes (SPEC C2-C4).

A user adds a capability to a running agent in a few lines::

    # my_tool.py
    from loopact import tool

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

``loopact node my_tool.py`` finds every tool (``@loopact.tool`` functions and other
:class:`~loopact.tools.base.Tool` objects) and every :func:`~loopact.nodes.input.input_source`
at the file's top level, and serves each as an output or input node until Ctrl-C / SIGTERM,
over ROS 2 (default) or MQTT (``--transport mqtt --broker mqtt://host:1883``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from loopact.errors import ConfigError
from loopact.nodes.connector import Connector
from loopact.nodes.input import InputNode, InputSource
from loopact.nodes.output import OutputNode
from loopact.nodes.protocol import (
    DEFAULT_AGENT_NAME,
    SHARED_AGENT,
    check_agent_name,
    check_name,
)
from loopact.tools.base import Tool

logger = logging.getLogger(__name__)


@dataclass
class NodeFile:
    """What a user file provides.

    Attributes:
        path: The file.
        tools: Its tools, in file order.
        inputs: Its input sources.
    """

    path: Path
    tools: list[Tool] = field(default_factory=list)
    inputs: list[InputSource] = field(default_factory=list)


def load_node_file(path: Path) -> NodeFile:
    """Import ``path`` and collect its top-level tools and input sources.

    Raises:
        ConfigError: The file is missing, fails to import (the error is named), or defines
            no tool and no input, or two with one name.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"node file {path} does not exist")
    module_name = f"loopact_user_node_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"node file {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a file that calls sys.exit() at import too
        sys.modules.pop(module_name, None)
        raise ConfigError(
            f"node file {path} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    return _collect(path, module)


def _collect(path: Path, module: ModuleType) -> NodeFile:
    found = NodeFile(path)
    seen: set[str] = set()
    for value in vars(module).values():
        if isinstance(value, Tool):
            name = value.name
            found.tools.append(value)
        elif isinstance(value, InputSource):
            name = value.name
            found.inputs.append(value)
        else:
            continue
        if name in seen:
            raise ConfigError(f"node file {path}: two nodes are named {name!r}")
        seen.add(name)
        check_name(name)
    if not found.tools and not found.inputs:
        raise ConfigError(
            f"node file {path} defines no tool (a function decorated with @loopact.tool) and "
            "no input (@loopact.nodes.input.input_source)"
        )
    return found


class NodeRunner:
    """Run a :class:`NodeFile` on a connector.

    Args:
        node_file: The loaded file.
        connector: The transport (ROS 2 for ``loopact node``).
        agent: The agent name (topic prefix).
    """

    def __init__(
        self, node_file: NodeFile, connector: Connector, agent: str = DEFAULT_AGENT_NAME
    ) -> None:
        self.file = node_file
        self.connector = connector
        self.agent = agent
        self.outputs = [
            OutputNode(t, connector, agent, workspace=Path.cwd()) for t in node_file.tools
        ]
        self.inputs = [
            (
                src,
                InputNode(
                    src.name, connector, agent, src.description, src.mode, src.kind, src.inject
                ),
            )
            for src in node_file.inputs
        ]
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start every node."""
        await self.connector.start()
        for out in self.outputs:
            await out.start()
        loop = asyncio.get_running_loop()
        for src, node in self.inputs:
            await node.start()
            self._tasks.append(loop.create_task(src.run(node), name=f"loopact-input-{src.name}"))

    async def stop(self) -> None:
        """Stop every node and the connector."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for _src, node in self.inputs:
            await node.stop()
        for out in self.outputs:
            await out.stop()
        await self.connector.shutdown()


def node_name_for(path: Path) -> str:
    """``loopact_node_<file stem>`` (letters, digits and underscores)."""
    return f"loopact_node_{''.join(c if c.isalnum() else '_' for c in Path(path).stem)}"


async def serve_file(
    path: Path, agent: str = DEFAULT_AGENT_NAME, connector: Connector | None = None
) -> int:
    """``loopact node FILE.py``: serve until SIGINT/SIGTERM; returns the exit code.

    Args:
        path: The node file.
        agent: The agent served (:data:`~loopact.nodes.protocol.SHARED_AGENT` for every agent
            of a fleet).
        connector: The transport (default: a ROS 2 node named after the file).

    Raises:
        ConfigError: See :func:`load_node_file`; or the MQTT broker refused the login.
        NodeError: ROS 2 is unavailable.
    """
    check_agent_name(agent)
    node_file = load_node_file(path)
    if connector is None:
        from loopact.nodes.ros2.connector import Ros2Connector

        connector = Ros2Connector(node_name_for(path))
    runner = NodeRunner(node_file, connector, agent)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await runner.start()
        names = [t.name for t in node_file.tools] + [s.name for s in node_file.inputs]
        whom = "every agent (shared)" if agent == SHARED_AGENT else f"agent {agent!r}"
        print(
            f"loopact node: serving {', '.join(names)} for {whom} over {connector.transport}",
            flush=True,
        )
        await stop.wait()
    finally:
        await runner.stop()
    return 0
