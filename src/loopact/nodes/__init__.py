"""Hot-pluggable input and output nodes over in-process or ROS 2 transports (SPEC C2-C4, X4).

See ``docs/ros2-nodes.md`` for the node protocol.
"""

from loopact.errors import NodeError
from loopact.nodes.connector import CallReply, Connector, ImageData
from loopact.nodes.input import InputNode, InputSource, input_source
from loopact.nodes.local import LocalBus, LocalConnector
from loopact.nodes.output import OutputNode

__all__ = [
    "CallReply",
    "Connector",
    "ImageData",
    "InputNode",
    "InputSource",
    "LocalBus",
    "LocalConnector",
    "NodeError",
    "OutputNode",
    "input_source",
]
