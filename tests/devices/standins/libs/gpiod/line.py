"""Stand-in of ``gpiod.line`` (libgpiod 2 Python bindings): the line setting enumerations,
member names as in bindings/python/gpiod/line.py (values as the C library numbers them)."""

from enum import Enum

__all__ = ["Bias", "Clock", "Direction", "Drive", "Edge", "Value"]


class Value(Enum):
    """Logical line states."""

    INACTIVE = 0
    ACTIVE = 1


class Direction(Enum):
    """Direction settings."""

    AS_IS = 1
    INPUT = 2
    OUTPUT = 3


class Bias(Enum):
    """Internal bias settings."""

    AS_IS = 1
    UNKNOWN = 2
    DISABLED = 3
    PULL_UP = 4
    PULL_DOWN = 5


class Drive(Enum):
    """Drive settings."""

    PUSH_PULL = 1
    OPEN_DRAIN = 2
    OPEN_SOURCE = 3


class Edge(Enum):
    """Edge detection settings."""

    NONE = 1
    RISING = 2
    FALLING = 3
    BOTH = 4


class Clock(Enum):
    """Event clock settings."""

    MONOTONIC = 1
    REALTIME = 2
    HTE = 3
