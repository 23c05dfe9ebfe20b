# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A2A's gRPC rules the SDK's ``GrpcHandler`` does not hold, as a server interceptor.

* The A2A version (``a2a-version`` metadata) is decided by :mod:`versions`' rule, as on
  the other bindings: ``1.0.3`` is 1.0, no version is 0.3, and a version gRPC does not
  serve is VersionNotSupported, ``FAILED_PRECONDITION`` with its ``ErrorInfo`` (the SDK's
  handler takes any call, whatever version it names).
* A request that cannot be read (a string field that is not UTF-8, bytes that are not
  the message) is ``INVALID_ARGUMENT``, not ``UNKNOWN`` with the parser's exception.
* A request holding more than ``max_values`` message fields and elements (a ``Struct``
  of 30,000 entries in its metadata, say) is ``INVALID_ARGUMENT``: the SDK walks every
  one of them on the event loop.

Each refusal is the SDK's own error, answered by ``GrpcHandler.abort_context``, so it
carries the same ``google.rpc.Status`` details as the SDK's errors.

:func:`grpc_limits` gives the gRPC server the HTTP port's limits on connections.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import grpc
from a2a.server.request_handlers import GrpcHandler
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError, VersionNotSupportedError
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.edge.versions import HEADER, negotiate

VERSION_KEY = HEADER.lower()


@dataclass
class Unreadable:
    """What a request's deserializer gives for a request that is refused: the error to answer."""

    error: A2AError


class A2AStatusRules(grpc.aio.ServerInterceptor):
    """Refuses calls in a version gRPC does not serve, and requests that cannot be read or
    hold more than ``max_values`` values, with the error A2A maps for each."""

    def __init__(self, handler: GrpcHandler, served: tuple[str, ...], max_values: int) -> None:
        self.handler, self.served, self.max_values = handler, served, max_values

    async def intercept_service(self, continuation, handler_call_details):
        method_handler = await continuation(handler_call_details)
        if method_handler is None:
            return method_handler
        value = next((v for k, v in (handler_call_details.invocation_metadata or ()) if k.lower() == VERSION_KEY),
                     None)
        try:
            negotiate(value, self.served, "over gRPC")
        except VersionNotSupportedError as error:
            refusal = Unreadable(error)
            return self._checked(method_handler, lambda _raw: refusal)
        return self._checked(method_handler, self._reader(method_handler.request_deserializer))

    def _reader(self, deserialize):
        def read(raw: bytes):
            try:
                request = deserialize(raw)
            except DecodeError as exc:
                return Unreadable(InvalidParamsError(message=f"the request cannot be read: {exc}"))
            if isinstance(request, Message) and count_values(request, self.max_values + 1) > self.max_values:
                return Unreadable(InvalidRequestError(
                    message=f"the request holds more than {self.max_values} values (message fields and elements); "
                            f"at most {self.max_values} are accepted"))
            return request

        return read

    def _checked(self, method_handler: grpc.RpcMethodHandler, read) -> grpc.RpcMethodHandler:
        """``method_handler`` reading requests with ``read``, answering an :class:`Unreadable`
        with its error."""
        abort = self.handler.abort_context
        kwargs = {"request_deserializer": read, "response_serializer": method_handler.response_serializer}
        if method_handler.unary_unary is not None:
            behaviour = method_handler.unary_unary

            async def unary(request, context):
                if isinstance(request, Unreadable):
                    return await abort(request.error, context)
                return await behaviour(request, context)

            return grpc.unary_unary_rpc_method_handler(unary, **kwargs)
        if method_handler.unary_stream is not None:
            stream = method_handler.unary_stream

            async def streaming(request, context):
                if isinstance(request, Unreadable):
                    await abort(request.error, context)
                    return
                async for response in stream(request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(streaming, **kwargs)
        return method_handler  # A2A has no client-streaming methods


class GrpcCallEnds(grpc.aio.ServerInterceptor):
    """Calls ``ended(method, metadata, code, started)`` once each gRPC call ended: the A2A
    method, the call's metadata, its status code by name and when it began
    (``time.perf_counter()``)."""

    def __init__(self, ended) -> None:
        self.ended = ended

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method.rsplit("/", 1)[-1]
        metadata = handler_call_details.invocation_metadata or ()
        ended = self.ended
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request, context):
                started = time.perf_counter()
                try:
                    return await inner(request, context)
                finally:
                    ended(method, metadata, code_name(context), started)

            return grpc.unary_unary_rpc_method_handler(unary, handler.request_deserializer,
                                                       handler.response_serializer)
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def streaming(request, context):
                started = time.perf_counter()
                try:
                    async for item in inner_stream(request, context):
                        yield item
                finally:
                    ended(method, metadata, code_name(context), started)

            return grpc.unary_stream_rpc_method_handler(streaming, handler.request_deserializer,
                                                        handler.response_serializer)
        return handler


def code_name(context) -> str:
    """The call's status code by name (``OK`` when none was set)."""
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else ("OK" if code in (None, 0) else str(code))


def count_values(message: Message, most: int) -> int:
    """How many values ``message`` holds: every set field, every element of a repeated or
    map field, and so on inside each message among them; counted no further than ``most``.
    A ``google.protobuf.Value`` is counted where it stands, as one JSON value, so a
    ``Struct`` counts as its JSON does (``{"n": 1}``: 2 values)."""
    count = 0
    stack = [message]
    while stack and count < most:
        node = stack.pop()
        counted = node.DESCRIPTOR.full_name != JSON_VALUE  # a Value's one field is the value itself
        for field, value in node.ListFields():
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                count += (len(value) if field.is_repeated else 1) * counted
            elif field.message_type.GetOptions().map_entry:
                count += len(value)
                if field.message_type.fields_by_name["value"].type == FieldDescriptor.TYPE_MESSAGE:
                    stack.extend(value.values())
            elif field.is_repeated:
                count += len(value)
                stack.extend(value)
            else:
                count += counted
                stack.append(value)
    return count


JSON_VALUE = "google.protobuf.Value"


def grpc_limits(settings: BridgeSettings) -> list[tuple[str, int]]:
    """The gRPC server's limits on its connections, as the HTTP port's (:mod:`.connections`):
    at most ``max_connections`` (newer ones closed at once), an HTTP/2 handshake within
    ``header_timeout``, closed (GOAWAY) after ``idle_timeout`` without an RPC, and messages
    of at most ``max_body`` bytes. gRPC's own defaults already bound pings without data."""
    return [("grpc.max_allowed_incoming_connections", settings.connection_limit),
            ("grpc.server_handshake_timeout_ms", round(settings.header_timeout * 1000)),
            ("grpc.max_connection_idle_ms", round(settings.idle_timeout * 1000)),
            ("grpc.max_receive_message_length", settings.max_body)]
