"""Late, untyped imports of ROS 2 modules (rclpy, message packages, loopact_interfaces).

ROS 2 is optional (the ``ros2`` extra or a sourced installation), its message packages ship no
type information, and nothing may import it at module import time; every ROS symbol is
fetched here, inside the function that needs it, as ``Any``.
"""

from __future__ import annotations

import importlib
from typing import Any

from loopact.errors import LoopactError

INSTALL_HINT = (
    "ROS 2 (rclpy) is not available: source a ROS 2 installation, or install the wheels with "
    "`pip install 'loopact[ros2]'` and build the interfaces with `make ros2` "
    "(see docs/ros2.md)"
)


class RosUnavailable(LoopactError, ImportError):
    """A ROS 2 module is missing: its message names it and says how to install ROS 2.

    An :class:`ImportError` (code that probes for ROS 2 keeps working) and a
    :class:`~loopact.errors.LoopactError` (a command prints it as one line, no traceback).
    """


def ros_module(module: str) -> Any:
    """``importlib.import_module(module)`` typed as ``Any``.

    Raises:
        RosUnavailable: The module is missing (an ImportError).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise RosUnavailable(f"{INSTALL_HINT}; no module named {missing!r}") from None


def ros_types(module: str, *names: str) -> Any:
    """``getattr(import_module(module), name)`` for each name (one value, or a tuple).

    Raises:
        RosUnavailable: The module or a name is missing (an ImportError).
    """
    mod = ros_module(module)
    try:
        values = tuple(getattr(mod, n) for n in names)
    except AttributeError as exc:
        raise RosUnavailable(f"{INSTALL_HINT}; {module} has no {exc.name}") from None
    return values[0] if len(values) == 1 else values
