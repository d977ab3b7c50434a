"""Late, untyped imports of ROS 2 modules (rclpy, message packages, loopact_interfaces).

ROS 2 is optional (the ``ros2`` extra or a sourced installation), its message packages ship no
type information, and nothing may import it at module import time; every ROS symbol is
fetched here, inside the function that needs it, as ``Any``.
"""

from __future__ import annotations

import importlib
from typing import Any


def ros_types(module: str, *names: str) -> Any:
    """``getattr(import_module(module), name)`` for each name (one value, or a tuple).

    Raises:
        ImportError: The module or a name is missing.
    """
    mod = importlib.import_module(module)
    try:
        values = tuple(getattr(mod, n) for n in names)
    except AttributeError as exc:
        raise ImportError(f"{module} has no {exc.name}") from None
    return values[0] if len(values) == 1 else values


def ros_module(module: str) -> Any:
    """``importlib.import_module(module)`` typed as ``Any``.

    Raises:
        ImportError: The module is missing.
    """
    return importlib.import_module(module)
