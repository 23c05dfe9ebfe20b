# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A2A's gRPC status rules the SDK's ``GrpcHandler`` does not hold, as a server interceptor.

An ``a2a-version`` the bridge does not speak over gRPC (anything but 1.x) is
VersionNotSupported: ``UNIMPLEMENTED`` (the SDK answers ``FAILED_PRECONDITION``). (Push
notifications are offered, so their methods need no rule of this kind.)
"""
from __future__ import annotations

import re

import grpc

SUPPORTED_VERSION = re.compile(r"^1(\.\d+)?$")


class A2AStatusRules(grpc.aio.ServerInterceptor):
    """Answers a call in an unsupported A2A version with ``UNIMPLEMENTED`` before it reaches the handler."""

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        metadata = dict((k.lower(), v) for k, v in (handler_call_details.invocation_metadata or ()))
        version = metadata.get("a2a-version", "")
        if isinstance(version, bytes):
            version = version.decode("latin-1")
        if version.strip() and not SUPPORTED_VERSION.match(version.strip()):
            return _refusal(handler, f"A2A version {version.strip()} is not supported over gRPC; use 1.0")
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
