# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A2A's gRPC status rules the SDK's ``GrpcHandler`` does not hold, as a server interceptor.

* An ``a2a-version`` the bridge does not speak over gRPC (anything but 1.x) is
  VersionNotSupported: ``UNIMPLEMENTED``.
* The push-notification config methods, when push is not offered, are
  PushNotificationNotSupported: ``UNIMPLEMENTED`` (the SDK answers ``FAILED_PRECONDITION``).
"""
from __future__ import annotations

import re

import grpc

SUPPORTED_VERSION = re.compile(r"^1(\.\d+)?$")
PUSH_METHODS = ("TaskPushNotificationConfig",)


class A2AStatusRules(grpc.aio.ServerInterceptor):
    """Answers the calls above with ``UNIMPLEMENTED`` before they reach the handler."""

    def __init__(self, push_offered: bool) -> None:
        self.push_offered = push_offered

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method or ""
        metadata = dict((k.lower(), v) for k, v in (handler_call_details.invocation_metadata or ()))
        version = metadata.get("a2a-version", "")
        if isinstance(version, bytes):
            version = version.decode("latin-1")
        if version.strip() and not SUPPORTED_VERSION.match(version.strip()):
            return _refusal(handler, f"A2A version {version.strip()} is not supported over gRPC; use 1.0")
        if not self.push_offered and any(name in method for name in PUSH_METHODS):
            return _refusal(handler, "push notifications are not supported by this agent")
        return handler


def _refusal(handler: grpc.RpcMethodHandler, detail: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that ends the call with ``UNIMPLEMENTED``."""

    async def unary(_request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, detail)

    async def streaming(_request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, detail)
        yield  # pragma: no cover (a generator: abort raises first)

    kwargs = {"request_deserializer": handler.request_deserializer,
              "response_serializer": handler.response_serializer}
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(unary, **kwargs)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(streaming, **kwargs)
    return handler
