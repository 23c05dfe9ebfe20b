# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Errors answered before a request reaches the a2a-sdk, in the shape of its binding.

The bridge's middleware refuses some requests itself (too large, unauthenticated,
malformed). Each refusal looks like the SDK's own errors: JSON-RPC 2.0 ``error`` objects
with A2A's typed details on the JSON-RPC endpoint, ``google.rpc.Status`` with an
``ErrorInfo`` under the HTTP+JSON prefix. Both are ``application/json``.
"""
from __future__ import annotations

import json

from a2a.server import jsonrpc_models
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError, JSONParseError

DOMAIN = "a2a-protocol.org"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def jsonrpc_error_body(error: A2AError, request_id=None) -> bytes:
    """A JSON-RPC 2.0 error response for ``error``."""
    if isinstance(error, JSONParseError):  # the SDK maps this one only in its model form
        error = jsonrpc_models.JSONParseError(message=error.message)
    return json.dumps(build_error_response(request_id, error)).encode()


def rest_error_body(error: A2AError) -> tuple[int, bytes]:
    """(HTTP status, ``google.rpc.Status`` body) for ``error``."""
    payload = build_rest_error_payload(error)
    return payload["error"]["code"], json.dumps(payload).encode()


def status_body(http_status: int, grpc_status: str, reason: str, message: str) -> bytes:
    """A ``google.rpc.Status`` body with an explicit HTTP status (401, 413, ...)."""
    return json.dumps({"error": {"code": http_status, "status": grpc_status, "message": message,
                                 "details": [{"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN,
                                              "metadata": {}}]}}).encode()


async def send_json(send, status: int, body: bytes, extra_headers=()) -> None:
    """Send a complete ``application/json`` response on a raw ASGI ``send``."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra_headers]})
    await send({"type": "http.response.body", "body": body})
