"""The node protocol over an MQTT broker, for fleets, and the model's MQTT tools (SPEC C4, C7).

- :mod:`~loopact.nodes.mqtt.connector`: the :class:`~loopact.nodes.connector.Connector` verbs
  over one broker connection;
- :mod:`~loopact.nodes.mqtt.link`: that connection (paho-mqtt 2.x), owned by loopact;
- :mod:`~loopact.nodes.mqtt.calls`: long calls with correlation ids;
- :mod:`~loopact.nodes.mqtt.settings`: where the broker is and how to log in;
- :mod:`~loopact.nodes.mqtt.channel`: ``send_message(channel="mqtt")``;
- :mod:`~loopact.nodes.mqtt.tools`, :mod:`~loopact.nodes.mqtt.rules`: the model's MQTT tools,
  rules and history.

See ``docs/mqtt.md``.
"""
