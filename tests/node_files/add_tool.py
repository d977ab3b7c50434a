"""The tool file of the node acceptance tests, over ROS 2 and MQTT (issues 4 and 17)."""

from loopact import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
