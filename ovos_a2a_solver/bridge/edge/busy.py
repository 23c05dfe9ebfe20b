# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
""""Not now, retry later" in each binding's words, where clients retry it.

A message refused because every slot is taken is not an error of the request: A2A has no
code for it, so its body stays the A2A error the bridge has (InternalError: JSON-RPC
``-32603``, ``google.rpc.Status`` with the reason ``INTERNAL_ERROR``), and the binding's own
status says "retry later", as HTTP clients and gRPC clients read it:

* HTTP (JSON-RPC, HTTP+JSON; A2A 1.0 and 0.3): status 429 with ``Retry-After`` (503 while the
  bridge shuts down or its task store is away), the JSON-RPC error body as it was, or a
  ``google.rpc.Status`` of ``RESOURCE_EXHAUSTED`` (``UNAVAILABLE``). A stream refused so is a
  plain JSON answer, never a stream: an A2A 0.3 stream, which would say it as its first event,
  too. A refusal may give its JSON-RPC error another code than ``-32603`` (the store away
  does: it is no internal error).
* gRPC: ``RESOURCE_EXHAUSTED`` (``UNAVAILABLE``), with a ``google.rpc.RetryInfo``.

Whoever refuses calls :func:`answer_busy` with the call's ``ServerCallContext``; over HTTP
the context finds the answer to mark through :class:`BusyContextBuilder` (the context
builder of every HTTP route), and :class:`BusyAnswers` (an ASGI middleware) marks it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder

from ovos_a2a_solver.bridge.edge.classify import classified
from ovos_a2a_solver.bridge.edge.errors import send_json, status_body

#: where a request's scope, and the ``ServerCallContext`` built from it, hold what :func:`answer_busy` said
SAID = "ovos_a2a.busy"


@dataclass(frozen=True)
class Busy:
    """A request refused for now: why, and in how many seconds to try again."""

    message: str
    retry_after: int
    unavailable: bool  # 503 / UNAVAILABLE (shutting down, the store away), not 429 / RESOURCE_EXHAUSTED
    jsonrpc_code: int | None = None  # the JSON-RPC error's code, when not the one the error has

    @property
    def http_status(self) -> int:
        return 503 if self.unavailable else 429

    @property
    def grpc_status(self) -> str:
        return "UNAVAILABLE" if self.unavailable else "RESOURCE_EXHAUSTED"


async def answer_busy(context: ServerCallContext, message: str, retry_after: int, unavailable: bool,
                      jsonrpc_code: int | None = None) -> None:
    """Have the answer to the call of ``context`` say "retry in ``retry_after`` s" (see the
    module). Over gRPC the call is aborted here (``grpc.aio.AbortError`` is raised); over HTTP
    the caller raises its error as usual, and :class:`BusyAnswers` gives it its status (and,
    with ``jsonrpc_code``, its JSON-RPC error that code)."""
    busy = Busy(message, retry_after, unavailable, jsonrpc_code)
    said = context.state.get(SAID)
    if said is not None:
        said.append(busy)
        return
    grpc_context = context.state.get("grpc_context")  # what the a2a-sdk's gRPC handler puts there
    if grpc_context is not None:
        await abort_call(grpc_context, busy)


async def abort_call(grpc_context, busy: Busy) -> None:
    """End the gRPC call of ``grpc_context`` (a ``grpc.aio.ServicerContext``) with ``busy``:
    its status, and a ``RetryInfo`` of its seconds (raises ``grpc.aio.AbortError``)."""
    import grpc
    from a2a.utils.grpc_status import status_to_grpc
    from google.protobuf.any_pb2 import Any
    from google.protobuf.duration_pb2 import Duration
    from google.rpc import error_details_pb2, status_pb2

    code = getattr(grpc.StatusCode, busy.grpc_status)
    status = status_pb2.Status(code=code.value[0], message=busy.message)
    for detail in (error_details_pb2.ErrorInfo(reason=REASON, domain=DOMAIN),
                   error_details_pb2.RetryInfo(retry_delay=Duration(seconds=busy.retry_after))):
        packed = Any()
        packed.Pack(detail)
        status.details.append(packed)
    rich = status_to_grpc(status)
    grpc_context.set_trailing_metadata(rich.trailing_metadata)
    await grpc_context.abort(rich.code, rich.details)


REASON = "INTERNAL_ERROR"  # the A2A error it is (InternalError): A2A names no other
DOMAIN = "a2a-protocol.org"


class BusyContextBuilder(DefaultServerCallContextBuilder):
    """The a2a-sdk's context, holding where :func:`answer_busy` says it (:data:`SAID`)."""

    def build(self, request) -> ServerCallContext:
        context = super().build(request)
        said = request.scope.get(SAID)
        if said is not None:
            context.state[SAID] = said
        return context


class BusyAnswers:
    """Gives an HTTP answer that :func:`answer_busy` marked its status and ``Retry-After``."""

    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, scope, receive, send):
        # not a coroutine: the inner app's awaitable is the answer (no frame of this layer
        # stays for a stream's whole life)
        if scope["type"] != "http" or scope["method"] != "POST":
            return self.app(scope, receive, send)
        said: list[Busy] = []
        rest = classified(scope).binding.rest
        held: dict = {}

        async def answer(message) -> None:
            if held.get("replaced"):
                return  # the rest of a stream that was answered in its place
            if message["type"] == "http.response.start":
                if said:
                    held["start"] = message  # an error: its body is small
                    return
                if _is_stream(message):  # an A2A 0.3 stream says an error as its first event
                    held["stream"] = message
                    return
                return await send(message)
            if message["type"] == "http.response.body" and ("start" in held or "stream" in held):
                if "stream" in held and not said:
                    await send(held.pop("stream"))
                    return await send(message)
                held["body"] = held.get("body", b"") + message.get("body", b"")
                if message.get("more_body") and "start" in held:
                    return
                held["replaced"] = True
                return await self._answer(send, said[-1], rest, held.get("body", b""), "stream" in held)
            await send(message)

        scope[SAID] = said  # in place: a copy of the scope would live as long as the request
        return self.app(scope, receive, answer)

    async def _answer(self, send, busy: Busy, rest: bool, body: bytes, streamed: bool) -> None:
        headers = [(b"retry-after", str(busy.retry_after).encode())]
        if rest:
            body = status_body(busy.http_status, busy.grpc_status, REASON, busy.message)
        else:
            if streamed:  # the JSON-RPC error of the stream's first event
                body = b"\n".join(line[5:].strip() for line in body.splitlines() if line.startswith(b"data:"))
            if streamed or busy.jsonrpc_code is not None:
                answer = json.loads(body)  # whole, or this answer is not the busy one: fail loudly
                if busy.jsonrpc_code is not None:
                    answer["error"]["code"] = busy.jsonrpc_code
                    body = json.dumps(answer, separators=(",", ":")).encode()
        await send_json(send, busy.http_status, body, headers)


def _is_stream(start: dict) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in start["headers"])
