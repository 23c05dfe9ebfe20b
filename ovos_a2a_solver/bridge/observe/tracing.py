# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A caller's trace, on to the persona's turn and past it (``tracing``; see ``trace_context``).

Always: the ``traceparent`` (and ``tracestate``) a caller sends over HTTP or gRPC reaches its
message's persona turn (:func:`turn_trace`), and a relay persona (this package's plugin as
its handler) sends it on to the agent it asks, as it came: one trace id from the caller to
the remote agent, with nothing configured and nothing recorded here.

With ``tracing`` on, the bridge records spans with OpenTelemetry (:func:`start_tracing`): a
server span for each HTTP request, a child of the caller's (:class:`TraceRequests`), the
a2a-sdk's own spans within it, and a span for each persona turn; what the relay sends on is
then the turn's span. Exporters, endpoint and service name come from the standard
``OTEL_*`` environment; a tracer provider configured before the bridge starts (by
``opentelemetry-instrument``) is used as it is.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

from ovos_a2a_solver.trace_context import carrying, trace_headers

#: the instrumentation's name on its spans
TRACER = "ovos_a2a_solver.bridge"
#: the exporters' entry points (opentelemetry-sdk registers ``console``, the OTLP exporters ``otlp``)
EXPORTERS = "opentelemetry_traces_exporter"
DEFAULT_SERVICE = "ovos-a2a-bridge"

_tracer = None  # the bridge's tracer once tracing is on in this process


def headers_of(call_context) -> dict[str, str]:
    """The trace headers of the request of an a2a-sdk ``ServerCallContext`` (HTTP headers,
    or gRPC metadata)."""
    if call_context is None:
        return {}
    headers = call_context.state.get("headers")
    if headers is None:
        grpc_context = call_context.state.get("grpc_context")
        metadata = grpc_context.invocation_metadata() if grpc_context is not None else None
        headers = {key.lower(): value for key, value in metadata or () if isinstance(value, str)}
    return trace_headers(headers)


@contextlib.contextmanager
def turn_trace(headers: Mapping[str, str]) -> Iterator[None]:
    """Within: the caller's trace. With tracing on, a span "persona turn" in it; else the
    headers carried as they came."""
    if _tracer is None:
        with carrying(headers):
            yield
        return
    from opentelemetry import propagate

    with _tracer.start_as_current_span("persona turn", context=propagate.extract(headers)):
        yield


class TraceRequests:
    """A server span around each HTTP request, a child of the caller's ``traceparent`` (with
    tracing on; outermost, so that the a2a-sdk's spans are within it)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or _tracer is None:
            return await self.app(scope, receive, send)
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        # named by the HTTP method alone (OpenTelemetry's rule without a route): paths hold task ids
        with _tracer.start_as_current_span(scope["method"], kind=SpanKind.SERVER,
                                           context=propagate.extract(trace_headers(headers)),
                                           attributes={"url.path": scope["path"]}) as span:
            async def sending(message) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", message["status"])
                await send(message)

            await self.app(scope, receive, sending)


class TracingUnavailable(RuntimeError):
    """Tracing is on, but OpenTelemetry's SDK or the exporter asked for is not installed."""


def start_tracing() -> None:
    """Record spans in this process: with the tracer provider already configured, or with
    one made from the ``OTEL_*`` environment (``OTEL_TRACES_EXPORTER``, default ``otlp``;
    ``OTEL_SERVICE_NAME``, default ``ovos-a2a-bridge``). Raises :class:`TracingUnavailable`."""
    global _tracer
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise TracingUnavailable(f"tracing needs OpenTelemetry's SDK, which is not installed ({exc})") from None
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # nobody configured one: make it from the environment
        provider = _provider_from_environment()
        trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer(TRACER)


def _provider_from_environment():
    from importlib.metadata import entry_points

    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE}
    provider = TracerProvider(resource=Resource.create(named))
    for name in filter(None, (n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(","))):
        if name == "none":
            continue
        found = entry_points(group=EXPORTERS, name=name)
        if not found:
            raise TracingUnavailable(f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed (the OTLP "
                                     f"exporter: pip install opentelemetry-exporter-otlp)")
        provider.add_span_processor(BatchSpanProcessor(next(iter(found)).load()()))
    return provider
