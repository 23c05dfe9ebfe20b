# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Each request seen once it was answered, for the access log and the request metrics alike.

:class:`RequestObserver` (an ASGI middleware, outermost but for the classification, so that
refusals at the edge are seen too) and :func:`grpc_call_ended` (for ``grpc_rules.GrpcCallEnds``)
make one :class:`AnsweredRequest` of each HTTP request or gRPC call: its binding, A2A version,
A2A method, status, outcome, how long it took and who called. They hand it to their sinks:
the access log (:mod:`.access_log`) and the request metrics (:mod:`.request_metrics`).

The outcome is read from the answer: ``ok``; ``unauthenticated`` (HTTP 401); ``busy``
(HTTP 429 or 503, gRPC ``RESOURCE_EXHAUSTED`` or ``UNAVAILABLE``: see :mod:`.busy`);
``error`` (the bridge failed: HTTP 5xx, JSON-RPC -32603, gRPC ``INTERNAL`` or ``UNKNOWN``);
``rejected`` (any other error: the request was wrong, or asked for what is not there).
JSON-RPC says its errors in a body answered HTTP 200, so a JSON-RPC answer's body is read
when it is small (an error always is) and a sink wants the outcome; a stream's outcome is
its HTTP status.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

from ovos_a2a_solver.bridge.edge.classify import Binding, classified
from ovos_a2a_solver.bridge.edge.versions import HEADER, METHOD_VERSIONS, requested_version

#: the largest JSON-RPC answer read for an error (error answers are far smaller)
ERROR_READ = 8192
#: JSON-RPC's code of an error of the server itself (the others say the request was wrong)
INTERNAL_ERROR = -32603
BUSY_STATUSES = (429, 503)
GRPC_BUSY = ("RESOURCE_EXHAUSTED", "UNAVAILABLE")
GRPC_FAILED = ("INTERNAL", "UNKNOWN", "DATA_LOSS")
GRPC_VERSION_KEY = HEADER.lower()
#: the versions a gRPC call may be counted under (any other is ``other``)
KNOWN_VERSIONS = ("0.3", "1.0")


@dataclass(frozen=True, slots=True)
class AnsweredRequest:
    """One request, answered (a stream: ended).

    ``verb`` and ``target`` are the HTTP method and path as sent, percent-encoded (gRPC:
    ``gRPC`` and the method);
    ``binding`` is ``JSON-RPC``, ``HTTP+JSON``, ``gRPC`` or ``HTTP`` for the rest; ``version``
    the A2A version of the method or path (``-`` when none; over gRPC the one asked, ``other``
    for one the bridge does not know); ``method`` the A2A method as the caller named it (``-``
    when none is known); ``status`` the HTTP status (0 when none was sent) or the gRPC code's
    name; ``outcome`` as the module says (``None`` when no sink asked for it); ``seconds`` to
    the answer's last byte; ``owner`` the caller the credentials name, ``anonymous`` without."""

    verb: str
    target: str
    binding: str
    version: str
    method: str
    status: int | str
    outcome: str | None
    seconds: float
    owner: str

    @property
    def counted_method(self) -> str:
        """The method as a label may name it: a JSON-RPC method the bridge does not know is
        ``other`` (a caller cannot make series without end)."""
        if self.binding == "JSON-RPC" and self.method not in METHOD_VERSIONS and self.method != "-":
            return "other"
        return self.method


class RequestSink(Protocol):
    """Where answered requests go: the access log, the request metrics."""

    #: whether this sink reads ``AnsweredRequest.outcome`` (the observer then reads JSON-RPC errors)
    wants_outcome: bool

    def answered(self, request: AnsweredRequest) -> None:
        """``request`` was answered."""


class RequestObserver:
    """Makes one :class:`AnsweredRequest` of each HTTP request once its answer ended, for
    every sink."""

    def __init__(self, app, *, sinks: list[RequestSink]) -> None:
        self.app, self.sinks = app, tuple(sinks)
        self.wants_outcome = any(sink.wants_outcome for sink in self.sinks)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        answer = {"status": 0, "body": b"", "read": False}
        read_errors = self.wants_outcome and classified(scope).binding is Binding.JSONRPC

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["read"] = read_errors and _is_json(message)
            elif answer["read"] and message["type"] == "http.response.body":
                body = answer["body"] + message.get("body", b"")
                answer["body"], answer["read"] = body, len(body) <= ERROR_READ
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - started
            request = classified(scope)  # a JSON-RPC request's method is known once its body was read
            method = request.method or "-"
            binding = request.binding
            if binding is Binding.JSONRPC:
                version = METHOD_VERSIONS.get(method, "-")
            else:
                version = request.binding.path_version or "-"
            outcome = None
            if self.wants_outcome:
                outcome = http_outcome(answer["status"], _jsonrpc_error(answer["body"]) if answer["read"] else None)
            answered = AnsweredRequest(scope["method"], raw_path(scope), binding.label, version, method,
                                       answer["status"], outcome, seconds, owner_of(scope))
            for sink in self.sinks:
                sink.answered(answered)


def grpc_call_ended(sinks: list[RequestSink]):
    """The ``ended`` of a ``grpc_rules.GrpcCallEnds``: each gRPC call, once it ended, as an
    :class:`AnsweredRequest` for every sink (the gRPC endpoint takes no credentials: the
    owner is always ``anonymous``)."""
    sinks = tuple(sinks)

    def ended(method: str, metadata, code: str, started: float) -> None:
        seconds = time.perf_counter() - started
        value = next((v for k, v in metadata if k.lower() == GRPC_VERSION_KEY), None)
        try:
            version = requested_version(value)
        except Exception:  # not a version: the call was refused for it
            version = "other"
        if version not in KNOWN_VERSIONS:
            version = "other"
        answered = AnsweredRequest("gRPC", method, "gRPC", version, method, code, grpc_outcome(code), seconds,
                                   "anonymous")
        for sink in sinks:
            sink.answered(answered)

    return ended


def http_outcome(status: int, jsonrpc_error: int | None = None) -> str:
    """The outcome of an HTTP answer of ``status`` (with the JSON-RPC error code it carried)."""
    if status == 401:
        return "unauthenticated"
    if status in BUSY_STATUSES:
        return "busy"
    if status >= 500 or status == 0 or jsonrpc_error == INTERNAL_ERROR:
        return "error"
    if status >= 400 or jsonrpc_error is not None:
        return "rejected"
    return "ok"


def grpc_outcome(code: str) -> str:
    """The outcome of a gRPC call that ended with ``code`` (by name)."""
    if code == "OK":
        return "ok"
    if code == "UNAUTHENTICATED":
        return "unauthenticated"
    if code in GRPC_BUSY:
        return "busy"
    return "error" if code in GRPC_FAILED else "rejected"


def owner_of(scope) -> str:
    """Who the request's credentials name (the owner of its tasks), ``anonymous`` without."""
    user = scope.get("user")
    name = getattr(user, "username", "") if user is not None and getattr(user, "is_authenticated", False) else ""
    return name or "anonymous"


def raw_path(scope) -> str:
    """The request's path as it was sent, percent-encoded (``%0A`` stays three characters),
    without its query."""
    raw = scope.get("raw_path")
    if raw is None:
        return scope["path"]
    return raw.decode("latin-1").partition("?")[0]


def _is_json(start: dict) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(b"application/json") for k, v in start["headers"])


def _jsonrpc_error(body: bytes) -> int | None:
    """The code of the JSON-RPC error ``body`` answers, or None (a result, or not JSON-RPC)."""
    if b'"error"' not in body:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    return code if isinstance(code, int) else INTERNAL_ERROR
