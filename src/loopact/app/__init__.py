"""Composition at the top (SPEC H2): the model, the body, memory, nodes, web and the agent.

Every other package is a part; this one is the only place that knows how the parts of a
``loopact run`` fit together, so every import in it points down. Importing it starts nothing.

- :mod:`loopact.app.model`: the model endpoint a config names (:func:`make_model`);
- :mod:`loopact.app.local`: the offline brain, started supervised, its prompt warmed
  (:func:`start_local_brain`, :func:`prepare_local_prompt`);
- :mod:`loopact.app.robot`: the body (simulator, ROS 2 or none: :func:`open_robot`,
  :func:`open_body`);
- :mod:`loopact.app.memory`: the Git memory and skills (:func:`open_memory`);
- :mod:`loopact.app.nodes`: hot-pluggable nodes and the ROS 2 text channel
  (:func:`attach_nodes`);
- :mod:`loopact.app.web`: the web console (:func:`serve_web`);
- :mod:`loopact.app.run`: ``loopact run`` (:func:`build_and_run`).
- :mod:`loopact.app.modes`: how a run talks to people (``--once``, an audio file, the
  terminal chat).
"""

from loopact.app.model import make_model
from loopact.app.robot import open_robot

__all__ = ["make_model", "open_robot"]
