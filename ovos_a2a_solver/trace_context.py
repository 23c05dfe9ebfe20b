# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""W3C trace context (``traceparent``, ``tracestate``) from one hop to the next, so that one
trace covers the plugin, the bridge and the agent a relay persona asks.

The bridge takes the headers a caller sent (:func:`trace_headers`) and runs the persona's
turn within them (:func:`carrying`); this plugin, as the persona's handler, sends them on
with every request (:func:`outgoing`: HTTP headers, gRPC metadata). When the program uses OpenTelemetry and a span is
current, that span's context is sent instead (a child of the caller's, in the same trace);
otherwise the headers that came in go on as they came. Nothing here imports OpenTelemetry
unless the program already did.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
import sys
from collections.abc import Iterator, Mapping

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
#: version, trace id, parent id, flags (W3C Trace Context §3.2); version ff is invalid
_PARENT = re.compile(r"(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")
#: the longest ``tracestate`` passed on (32 members of 256 characters would be 8 KiB; vendors keep it short)
MOST_STATE = 512

_carried: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("ovos_a2a_trace_context",
                                                                                    default=None)


def trace_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The trace context among ``headers`` (lower-case names): ``traceparent`` when it is
    well-formed, with its ``tracestate``; none otherwise (a malformed one starts no trace)."""
    parent = (headers.get(TRACEPARENT) or "").strip()
    if not _PARENT.fullmatch(parent):
        return {}
    found = {TRACEPARENT: parent}
    state = (headers.get(TRACESTATE) or "").strip()
    if state and len(state) <= MOST_STATE and state.isprintable():
        found[TRACESTATE] = state
    return found


@contextlib.contextmanager
def carrying(headers: Mapping[str, str]) -> Iterator[None]:
    """Within, :func:`outgoing` sends ``headers`` on (when no OpenTelemetry span is current).
    Threads and tasks started within take it with them when they copy the context."""
    token = _carried.set(dict(headers) or None)
    try:
        yield
    finally:
        _carried.reset(token)


def outgoing() -> dict[str, str]:
    """The trace headers a request sent now carries: the current OpenTelemetry span's, when
    the program uses OpenTelemetry and one is current; else those :func:`carrying` holds;
    else none."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None and trace.get_current_span().get_span_context().is_valid:
        from opentelemetry import propagate

        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier
    return dict(_carried.get() or {})
