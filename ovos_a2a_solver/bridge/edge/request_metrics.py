# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Requests counted for ``/metrics`` (``metrics`` on): by binding, A2A version, method and
outcome, on every binding.

The outcome is read from the answer: ``ok``; ``unauthenticated`` (HTTP 401); ``busy``
(HTTP 429 or 503, gRPC ``RESOURCE_EXHAUSTED`` or ``UNAVAILABLE``: see :mod:`.busy`);
``error`` (the bridge failed: HTTP 5xx, JSON-RPC -32603, gRPC ``INTERNAL`` or ``UNKNOWN``);
``rejected`` (any other error: the request was wrong, or asked for what is not there).
JSON-RPC says its errors in a body answered HTTP 200, so a JSON-RPC answer's body is read
when it is small (an error always is); a stream's outcome is its HTTP status.

Every label takes one of a few known values whatever the caller sends: a method or a version
the bridge does not know is counted as ``other``, so a caller cannot make series without end.
"""
from __future__ import annotations

import json

from ovos_a2a_solver.bridge.edge.access_log import binding_and_method
from ovos_a2a_solver.bridge.edge.rest_v03 import is_v03_rest
from ovos_a2a_solver.bridge.edge.version_check import METHOD_VERSIONS
from ovos_a2a_solver.bridge.edge.versions import HEADER, requested_version
from ovos_a2a_solver.bridge.observe.metrics import Metrics

#: the largest JSON-RPC answer read for an error (error answers are far smaller)
ERROR_READ = 8192
#: JSON-RPC's code of an error of the server itself (the others say the request was wrong)
INTERNAL_ERROR = -32603
BUSY_STATUSES = (429, 503)
GRPC_BUSY = ("RESOURCE_EXHAUSTED", "UNAVAILABLE")
GRPC_FAILED = ("INTERNAL", "UNKNOWN", "DATA_LOSS")
VERSION_KEY = HEADER.lower()
#: the versions a label may name (any other is ``other``)
KNOWN_VERSIONS = ("0.3", "1.0")


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


class RequestMetrics:
    """Counts each HTTP request once its answer ended (outermost, so that refusals at the
    edge count too)."""

    def __init__(self, app, *, metrics: Metrics, rpc_paths: set[str], rest_prefix: str) -> None:
        self.app, self.metrics, self.rpc_paths, self.rest_prefix = app, metrics, rpc_paths, rest_prefix

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        answer = {"status": 0, "body": b"", "read": False}
        rpc = scope["path"] in self.rpc_paths

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["read"] = rpc and _is_json(message)
            elif answer["read"] and message["type"] == "http.response.body":
                body = answer["body"] + message.get("body", b"")
                answer["body"], answer["read"] = body, len(body) <= ERROR_READ
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            binding, method = binding_and_method(scope, self.rpc_paths, self.rest_prefix)
            if binding == "JSON-RPC" and method not in METHOD_VERSIONS and method != "-":
                method = "other"  # a name the caller made up
            error = _jsonrpc_error(answer["body"]) if answer["read"] else None
            self.metrics.request(binding, self._version(scope, binding, method), method,
                                 http_outcome(answer["status"], error))

    def _version(self, scope, binding: str, method: str) -> str:
        if binding == "JSON-RPC":
            return METHOD_VERSIONS.get(method, "-")
        if binding == "HTTP+JSON":
            return "0.3" if is_v03_rest(scope["path"], self.rest_prefix) else "1.0"
        return "-"


def grpc_request_ended(metrics: Metrics):
    """The ``ended`` of a ``grpc_rules.GrpcCallEnds`` that counts each gRPC call."""
    def ended(method: str, metadata, code: str, _started: float) -> None:
        value = next((v for k, v in metadata if k.lower() == VERSION_KEY), None)
        try:
            version = requested_version(value)
        except Exception:  # not a version: the call was refused for it
            version = "other"
        if version not in KNOWN_VERSIONS:
            version = "other"
        metrics.request("gRPC", version, method, grpc_outcome(code))
    return ended


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
