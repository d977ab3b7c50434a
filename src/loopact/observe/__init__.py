"""Looking at a run with the tools robotics engineers use (SPEC H3, H4, A8; issue 44).

- :mod:`~loopact.observe.recorder`: the run on Foxglove channels (foxglove-sdk), into an MCAP
  file (``loopact run --record run.mcap``) and live over Foxglove's WebSocket protocol
  (``--foxglove``, :mod:`~loopact.observe.live`); :mod:`~loopact.observe.tap` reads the robot
  for it, :mod:`~loopact.observe.messages` builds the Foxglove messages.
- :mod:`~loopact.observe.convert`: a trace and its sim log as MCAP (``loopact trace t.jsonl
  --to-mcap run.mcap``).
- :mod:`~loopact.observe.spans` and :mod:`~loopact.observe.otel`: OpenTelemetry spans of
  tasks, model requests (GenAI semantic conventions), tool calls and governor decisions over
  OTLP/HTTP.
- :mod:`~loopact.observe.topics`: the one mapping from event types to topics and span roles.

Everything is fed by what exists (the event bus, the robot interface, the simulator's sim log
samples); nothing here is imported unless recording or telemetry is on. docs/observability.md.
"""
