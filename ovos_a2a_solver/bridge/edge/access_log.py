# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The access log: one line per request, when the operator turns it on (``--access-log``).

    POST /a2a/ JSON-RPC SendMessage 200 12.4ms owner=token-3f2a9c1d7e0b

The HTTP method and path, the binding, the A2A method, the status (a gRPC code on gRPC), how
long the answer took to its last byte (a stream: until it ended), and who called (the owner
the credentials name, ``anonymous`` without). Never a message's text, a header or a query:
ids in a path are the only values from the request. Written at INFO on the logger
``ovos_a2a_solver.bridge.access``, so it goes wherever the bridge's log goes (stderr).
"""
from __future__ import annotations

import logging
import re
import time

from ovos_a2a_solver.bridge.config import ACCESS_LOGGER
from ovos_a2a_solver.bridge.edge.version_check import JSONRPC_CALL
from ovos_a2a_solver.bridge.edge.errors import is_rest

LOG = logging.getLogger(ACCESS_LOGGER)

#: the A2A method of an HTTP+JSON request, by its HTTP method and the end of its path
REST_METHODS = (
    ("POST", re.compile(r"/message:send$"), "SendMessage"),
    ("POST", re.compile(r"/message:stream$"), "SendStreamingMessage"),
    ("POST", re.compile(r"/tasks/[^/]+:cancel$"), "CancelTask"),
    ("GET", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("POST", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("GET", re.compile(r"/tasks$"), "ListTasks"),
    ("GET", re.compile(r"/tasks/[^/:]+$"), "GetTask"),
    ("POST", re.compile(r"/pushNotificationConfigs$"), "CreateTaskPushNotificationConfig"),
    ("GET", re.compile(r"/pushNotificationConfigs$"), "ListTaskPushNotificationConfigs"),
    ("GET", re.compile(r"/pushNotificationConfigs/[^/]+$"), "GetTaskPushNotificationConfig"),
    ("DELETE", re.compile(r"/pushNotificationConfigs/[^/]+$"), "DeleteTaskPushNotificationConfig"),
    ("GET", re.compile(r"/extendedAgentCard$|/card$"), "GetExtendedAgentCard"),
)


def rest_method(http_method: str, path: str) -> str:
    return next((name for verb, pattern, name in REST_METHODS if verb == http_method and pattern.search(path)), "-")


def owner_of(scope) -> str:
    user = scope.get("user")
    name = getattr(user, "username", "") if user is not None and getattr(user, "is_authenticated", False) else ""
    return name or "anonymous"


class AccessLog:
    """The access log of the HTTP bindings (JSON-RPC, HTTP+JSON) and the card: outermost, so
    that refusals at the edge are logged too."""

    def __init__(self, app, *, rpc_paths: set[str], rest_prefix: str) -> None:
        self.app, self.rpc_paths, self.rest_prefix = app, rpc_paths, rest_prefix

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 0

        async def sending(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            LOG.info("%s %s %s %s %s %.1fms owner=%s", scope["method"], scope["path"],
                     *binding_and_method(scope, self.rpc_paths, self.rest_prefix), status or "-",
                     (time.perf_counter() - started) * 1000, owner_of(scope))


def binding_and_method(scope, rpc_paths: set[str], rest_prefix: str) -> tuple[str, str]:
    """(binding, A2A method) of a request: ``HTTP`` and ``-`` for what is neither binding's."""
    path = scope["path"]
    if is_rest(path, rest_prefix):
        return "HTTP+JSON", rest_method(scope["method"], path)
    if path in rpc_paths:
        call = scope.get(JSONRPC_CALL)
        return "JSON-RPC", (call[0] if call else "-")
    return "HTTP", "-"


def log_grpc_call(method: str, code: str, started: float) -> None:
    """The access log's line for a gRPC call (see ``grpc_rules.grpc_access_log``): its status
    code by name; the owner is always ``anonymous``, the gRPC endpoint takes no credentials."""
    LOG.info("gRPC %s gRPC %s %s %.1fms owner=anonymous", method, method, code, (time.perf_counter() - started) * 1000)
