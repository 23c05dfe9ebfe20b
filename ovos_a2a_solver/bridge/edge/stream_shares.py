# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Streams per caller: no caller holds more than its share of a process's connections.

A stream (SendStreamingMessage, SubscribeToTask; A2A 0.3's ``message/stream`` and
``tasks/resubscribe``) keeps its connection for as long as its task runs, and a connection
with a request in progress is never closed to make room. Without a share, one caller could
open as many streams on one long task as the process allows connections, and every other
caller would be refused until that task ended.

So each process counts the streams open per caller (:class:`StreamCounts`), and a caller's
stream past ``max_streams_per_caller`` is refused at once, before it is served, with the
bridge's busy answer (HTTP 429 with ``Retry-After``; gRPC ``RESOURCE_EXHAUSTED`` with a
``RetryInfo``): only the caller past its share is refused, never another.

"A caller" is the authenticated user when the bridge has credentials (each token is a user
of its own), else the client's address (one IP address: behind a proxy, every caller the
proxy sends is the same one).
"""
from __future__ import annotations

import logging

from a2a.utils.errors import InternalError

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.edge.busy import REASON, Busy, abort_call
from ovos_a2a_solver.bridge.edge.classify import classified
from ovos_a2a_solver.bridge.edge.connections import LOG_INTERVAL, BurstLog
from ovos_a2a_solver.bridge.edge.errors import jsonrpc_error_body, send_json, status_body

#: the A2A methods whose answer is a stream, by their names in A2A 1.0 and 0.3
STREAM_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"})
#: the gRPC methods whose answer is a stream
GRPC_STREAM_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask"})
#: seconds a caller refused past its share is told to wait
RETRY_AFTER = 1


class StreamCounts:
    """The streams open per caller in one process (shared by the personas it serves), and
    the share each caller may hold (``share``); ``share_name`` says how a person changes it."""

    def __init__(self, share: int, share_name: str = "max_streams_per_caller") -> None:
        self.share = share
        self.open: dict[str, int] = {}
        self.refused = BurstLog(logging.WARNING, lambda n: (
            f"refused {n} stream{'s' if n != 1 else ''} of callers that already had {share} open "
            f"({share_name}; HTTP 429){f' in the last {LOG_INTERVAL:g} s' if n > 1 else ''}"))

    def take(self, caller: str) -> bool:
        """Count one more stream of ``caller``, or ``False`` (not counted) past its share."""
        held = self.open.get(caller, 0)
        if held >= self.share:
            self.refused.note()
            return False
        self.open[caller] = held + 1
        return True

    def give_back(self, caller: str) -> None:
        """One stream of ``caller`` ended."""
        held = self.open.get(caller, 0) - 1
        if held > 0:
            self.open[caller] = held
        else:
            self.open.pop(caller, None)

    def message(self) -> str:
        """What a caller refused past its share reads."""
        return f"too many streams open at once by this caller (at most {self.share}); retry later"


def stream_counts(settings: BridgeSettings) -> StreamCounts:
    """The counts of one process's streams, each caller's share from ``settings``."""
    return StreamCounts(settings.stream_share, names_of("max_streams_per_caller"))


def caller_of(scope) -> str:
    """Who sends the HTTP request of ``scope``: its authenticated user, else its client's address."""
    user = scope.get("user")
    if user is not None and getattr(user, "is_authenticated", False):
        return "user:" + user.display_name
    client = scope.get("client")
    return "address:" + (client[0] if client else "")


class StreamShares:
    """Refuses an HTTP stream of a caller that already holds its share of streams (an ASGI
    middleware, inside authentication and the wire check: the caller and a JSON-RPC
    request's method are known); every other request passes untouched."""

    def __init__(self, app, counts: StreamCounts) -> None:
        self.app, self.counts = app, counts

    def __call__(self, scope, receive, send):
        # not a coroutine for what is no stream: the inner app's awaitable is the answer
        request = classified(scope) if scope["type"] == "http" else None
        if request is None or request.method not in STREAM_METHODS:
            return self.app(scope, receive, send)
        return self._stream(scope, receive, send, request)

    async def _stream(self, scope, receive, send, request) -> None:
        caller = caller_of(scope)
        if not self.counts.take(caller):
            return await self._refuse(send, request)
        held = True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                self.counts.give_back(caller)

        async def answer(message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                give_back()  # before the caller can see its stream end, and stream again
            await send(message)

        try:
            await self.app(scope, receive, answer)
        finally:
            give_back()

    async def _refuse(self, send, request) -> None:
        message = self.counts.message()
        if request.binding.rest:
            body = status_body(429, "RESOURCE_EXHAUSTED", REASON, message)
        else:
            body = jsonrpc_error_body(InternalError(message=message), request.request_id)
        await send_json(send, 429, body, [(b"retry-after", str(RETRY_AFTER).encode())])


def grpc_caller(peer: str) -> str:
    """Who makes a gRPC call, by its ``peer`` (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``):
    its address without the port (the gRPC endpoint takes no credentials)."""
    kind, _, address = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        address = address.rsplit(":", 1)[0].strip("[]")
    return "address:" + (address or peer)


def grpc_stream_shares(counts: StreamCounts):
    """A ``grpc.aio.ServerInterceptor`` refusing a caller's gRPC stream past its share
    (``RESOURCE_EXHAUSTED`` with a ``RetryInfo``); ``counts`` are the gRPC port's own."""
    import grpc

    class GrpcStreamShares(grpc.aio.ServerInterceptor):
        async def intercept_service(self, continuation, handler_call_details):
            handler = await continuation(handler_call_details)
            method = handler_call_details.method.rsplit("/", 1)[-1]
            if handler is None or handler.unary_stream is None or method not in GRPC_STREAM_METHODS:
                return handler
            inner = handler.unary_stream

            async def streaming(request, context):
                caller = grpc_caller(context.peer())
                if not counts.take(caller):
                    await abort_call(context, Busy(counts.message(), RETRY_AFTER, unavailable=False))
                try:
                    async for item in inner(request, context):
                        yield item
                finally:
                    counts.give_back(caller)

            return grpc.unary_stream_rpc_method_handler(streaming, handler.request_deserializer,
                                                        handler.response_serializer)

    return GrpcStreamShares()
