"""Looking at a run with other tools (SPEC H3, H4, A8; issue 44): ``record``, ``foxglove``,
``telemetry``.

``record``: ``loopact run --record run.mcap`` writes the run as one MCAP file for Foxglove.
``foxglove``: ``--foxglove`` serves the same channels live over Foxglove's WebSocket protocol,
on loopback only. ``telemetry``: OpenTelemetry spans over OTLP/HTTP when ``otlp_endpoint`` (or
the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``) is set. docs/observability.md has them all.
"""

from __future__ import annotations

from pathlib import Path

import pydantic

from loopact.config.base import STRICT as _STRICT


class RecordConfig(pydantic.BaseModel):
    """``record``: the MCAP recording of a run (``--record PATH``).

    Attributes:
        path: The MCAP file, or None for no recording.
        camera_hz: Camera frames recorded per second (JPEG); 0 records none. Each frame in the
            simulator is a render of its own, so the default keeps recording cheap
            (docs/observability.md, "Cost").
        pose_hz: Odometry pose and TF messages per second.
        jpeg_quality: JPEG quality of the recorded camera frames, 1-100.
    """

    model_config = _STRICT
    path: Path | None = None
    camera_hz: float = pydantic.Field(1.0, ge=0, le=60)
    pose_hz: float = pydantic.Field(10.0, gt=0, le=100)
    jpeg_quality: int = pydantic.Field(75, ge=1, le=100)


class FoxgloveConfig(pydantic.BaseModel):
    """``foxglove``: the live view over Foxglove's WebSocket protocol (``--foxglove``).

    The protocol has no token, so it binds to loopback only (the web console's rule: beyond
    loopback only with a token); reach it from elsewhere through an SSH tunnel.

    Attributes:
        enabled: Serve the live view.
        host: Loopback address to bind (``127.0.0.1``, ``::1`` or ``localhost``).
        port: TCP port (0: any free port, printed at start).
    """

    model_config = _STRICT
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = pydantic.Field(8765, ge=0, le=65535)


class TelemetryConfig(pydantic.BaseModel):
    """``telemetry``: OpenTelemetry spans of tasks, model requests, tool calls and governor
    decisions, exported over OTLP/HTTP (protobuf).

    Attributes:
        otlp_endpoint: The collector's OTLP/HTTP base URL (``http://127.0.0.1:4318``; spans go
            to ``<endpoint>/v1/traces``) or the full traces URL. None: the standard
            ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` decide;
            with neither, telemetry is off.
        service_name: The ``service.name`` resource attribute (``OTEL_SERVICE_NAME`` wins).
    """

    model_config = _STRICT
    otlp_endpoint: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    service_name: str = pydantic.Field("loopact", min_length=1)
