"""OpenTelemetry export of a run's spans over OTLP/HTTP (SPEC A8, H3; issue 44).

Off by default and free when off: with no endpoint, :func:`traces_endpoint` returns None and
nothing is imported or subscribed. On, a :class:`Telemetry` subscribes a
:class:`~loopact.observe.spans.SpanBuilder` to the event bus and exports through the
OpenTelemetry SDK's batch processor (a background thread) with the OTLP/HTTP protobuf
exporter (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http, Apache-2.0), on a
tracer provider of its own (an application's global provider is left alone).

Where spans go, first match wins (the standard variables, then the config file):
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL), ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base
URL: ``/v1/traces`` is added), ``telemetry.otlp_endpoint`` (either). ``OTEL_SDK_DISABLED=true``
turns it off. Only the ``http/protobuf`` protocol is spoken. ``OTEL_EXPORTER_OTLP_HEADERS``
(a collector's token) and ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` are read by the
SDK as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from loopact.errors import ConfigError

log = logging.getLogger(__name__)

_FLUSH_TIMEOUT_MS = 5000
_EXPORT_TIMEOUT_S = 10.0


def traces_endpoint(configured: str | None, env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL, or None when telemetry is off.

    Args:
        configured: ``telemetry.otlp_endpoint`` (a base URL, or one ending in ``/v1/traces``).
        env: The environment.

    Raises:
        ConfigError: ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` asks for another protocol than
            ``http/protobuf`` (key ``telemetry.otlp_endpoint``).
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    full = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    url = full or (_with_traces_path(base) if base else None)
    if url is None and configured:
        url = _with_traces_path(configured)
    if url is None:
        return None
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = env.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ConfigError(
                f"{name}={protocol}: loopact exports spans over OTLP/HTTP (http/protobuf) "
                "only; set it to http/protobuf and point the endpoint at the collector's "
                "HTTP port (4318)",
                key="telemetry.otlp_endpoint",
            )
        if protocol:
            break
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"the OTLP endpoint {url!r} is not an http(s) URL (e.g. http://127.0.0.1:4318)",
            key="telemetry.otlp_endpoint",
        )
    return url


def _with_traces_path(url: str) -> str:
    url = url.strip()
    return url if url.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"


def endpoint_server(base_url: str | None) -> tuple[str, int | None] | None:
    """``(host, port)`` of a model endpoint for ``server.address`` / ``server.port`` (never
    its user, password, path or query)."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.hostname, port


class Telemetry:
    """Spans of the bus's events, exported over OTLP/HTTP until :meth:`close`.

    Args:
        endpoint: The traces URL (:func:`traces_endpoint`).
        subscribe: The bus's ``subscribe`` (returns the unsubscriber).
        provider: ``gen_ai.provider.name``.
        model: ``gen_ai.request.model``.
        service_name: ``service.name`` (``OTEL_SERVICE_NAME`` wins).
        version: ``service.version``.
        agent_name: ``gen_ai.agent.name``.
        server: The model endpoint's ``(host, port)`` (:func:`endpoint_server`).

    Raises:
        ConfigError: The OpenTelemetry packages are not installed (the ``observe`` extra).
    """

    def __init__(
        self,
        endpoint: str,
        subscribe: Callable[[Any], Callable[[], None]],
        *,
        provider: str,
        model: str,
        service_name: str = "loopact",
        version: str = "",
        agent_name: str = "loopact",
        server: tuple[str, int | None] | None = None,
    ) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                f"telemetry needs the OpenTelemetry SDK ({exc.name} is missing): "
                "pip install 'loopact[observe]'",
                key="telemetry.otlp_endpoint",
            ) from None
        from loopact.observe.spans import SpanBuilder

        self.endpoint = endpoint
        resource = Resource.create({"service.name": service_name, "service.version": version})
        self._provider = TracerProvider(resource=resource)
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=_EXPORT_TIMEOUT_S)
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        tracer = self._provider.get_tracer("loopact", version)
        self.builder = SpanBuilder(tracer, provider, model, agent_name, server)
        self._unsubscribe: Callable[[], None] | None = subscribe(self.builder)

    def close(self) -> None:
        """Stop listening, end open spans, flush what is queued (at most 5 s) and shut the
        exporter down; idempotent."""
        if self._unsubscribe is None:
            return
        self._unsubscribe()
        self._unsubscribe = None
        self.builder.close()
        try:
            if not self._provider.force_flush(_FLUSH_TIMEOUT_MS):
                log.warning("telemetry: some spans could not be sent to %s", self.endpoint)
        finally:
            self._provider.shutdown()
