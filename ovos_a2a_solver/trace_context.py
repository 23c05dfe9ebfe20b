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
#: version, trace id, parent id, flags (W3C Trace Context §3.2): lower-case hex; version ff is
#: invalid; an all-zero trace or parent id is invalid
_PARENT = re.compile(r"(?P<version>[0-9a-f]{2})-(?P<trace>[0-9a-f]{32})-(?P<parent>[0-9a-f]{16})-"
                     r"(?P<flags>[0-9a-f]{2})(?P<rest>.*)", re.S)
#: a ``tracestate`` key (§3.3.1.3.1): simple, or tenant@system
_STATE_KEY = re.compile(r"[a-z0-9][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}")
#: a ``tracestate`` value: up to 256 printable ASCII characters but ``,`` and ``=``, not ending in a space
_STATE_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
#: the most ``tracestate`` list members (§3.3.1.1) and the longest ``tracestate`` passed on (§3.3.1.5:
#: past it, members longer than 128 characters are left out first, then the last ones)
MOST_STATE_MEMBERS = 32
MOST_STATE = 512
MOST_KEPT_MEMBER = 128

_carried: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("ovos_a2a_trace_context",
                                                                                    default=None)


def trace_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The trace context among ``headers`` (lower-case names), as W3C Trace Context reads it:
    ``traceparent`` (:func:`read_traceparent`) with its ``tracestate`` (:func:`read_tracestate`)
    when that is a valid list; none when the parent is invalid (it starts no trace)."""
    parent = read_traceparent(headers.get(TRACEPARENT) or "")
    if parent is None:
        return {}
    found = {TRACEPARENT: parent}
    state = read_tracestate(headers.get(TRACESTATE) or "")
    if state:
        found[TRACESTATE] = state
    return found


def read_traceparent(value: str) -> str | None:
    """The ``traceparent`` to go on with, or None when ``value`` is not a valid one. Version 00
    is exactly its four fields; a later version is read by its first four fields (anything after
    them must begin with ``-``), and goes on as version 00, the one this reader knows (§3.2.4)."""
    match = _PARENT.fullmatch(value.strip(" \t"))
    if match is None:
        return None
    version, trace, parent, flags, rest = match.group("version", "trace", "parent", "flags", "rest")
    if version == "ff" or trace == "0" * 32 or parent == "0" * 16:
        return None
    if (version == "00" and rest) or (rest and not rest.startswith("-")):
        return None
    return f"00-{trace}-{parent}-{flags}"


def read_tracestate(value: str) -> str:
    """The ``tracestate`` to go on with: its list members (``key=value``, empty ones left out),
    or '' when it is not a valid list (a member malformed, a key twice, more than
    :data:`MOST_STATE_MEMBERS` members): then it is dropped whole (§3.3.1.1). Longer than
    :data:`MOST_STATE` characters, members of more than :data:`MOST_KEPT_MEMBER` are left out
    first, then the last ones, until it fits (§3.3.1.5)."""
    members, keys = [], set()
    for member in value.split(","):
        member = member.strip(" \t")
        if not member:
            continue
        key, equals, state = member.partition("=")
        if not equals or not _STATE_KEY.fullmatch(key) or not _STATE_VALUE.fullmatch(state) or key in keys:
            return ""
        keys.add(key)
        members.append(member)
    if len(members) > MOST_STATE_MEMBERS:
        return ""
    if len(",".join(members)) > MOST_STATE:
        members = [member for member in members if len(member) <= MOST_KEPT_MEMBER]
        while len(",".join(members)) > MOST_STATE:
            members.pop()
    return ",".join(members)


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
