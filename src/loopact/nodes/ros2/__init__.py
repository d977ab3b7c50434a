"""The node protocol over ROS 2 (rclpy), across processes and machines (SPEC C4, X4).

- :mod:`~loopact.nodes.ros2.connector`: the :class:`~loopact.nodes.connector.Connector` verbs
  over one rclpy node;
- :mod:`~loopact.nodes.ros2.spin`: its executor thread;
- :mod:`~loopact.nodes.ros2.actions`: the ``ExecuteTool`` action, both sides;
- :mod:`~loopact.nodes.ros2.audio`: a ROS 2 audio topic pair as a voice source and sink;
- :mod:`~loopact.nodes.ros2.convert`: payloads to and from ROS 2 messages (pure functions);
- :mod:`~loopact.nodes.ros2.interfaces`: late imports of rclpy and the message packages, for
  every ROS 2 user in loopact (the robot over ROS 2, the base governor, the simulator's bridge).

Nothing here imports rclpy at import time. See ``docs/ros2.md``.
"""
