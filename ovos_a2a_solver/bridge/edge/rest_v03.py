# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A2A 0.3 HTTP+JSON, beside 1.0, under the same prefix: the a2a-sdk's own 0.3 REST adapter.

A2A 0.3 put its HTTP+JSON paths under ``/v1`` (``{url}/v1/message:send``, ``/v1/tasks/{id}``,
...), so they sit beside the 1.0 paths of the same interface URL; the tenant ``v1`` is
therefore not available to 1.0 calls. A stream refused before its first event (an unknown
task, "busy", a message not in words) is answered as an error with its status, as on the
other bindings, where the adapter would begin the stream and then cut it.
"""
from __future__ import annotations

from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb2_v03
from a2a.compat.v0_3.context_builders import V03ServerCallContextBuilder
from a2a.compat.v0_3.rest_adapter import REST03Adapter
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes.common import ServerCallContextBuilder, create_event_source_response
from a2a.utils import json_utils
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError
from starlette.responses import JSONResponse
from starlette.routing import Route

from ovos_a2a_solver.bridge.edge.classify import V03_PREFIX

#: the request bodies of A2A 0.3 HTTP+JSON, by the A2A method of their path
V03_BODIES = {"SendMessage": pb2_v03.SendMessageRequest, "SendStreamingMessage": pb2_v03.SendMessageRequest,
              "CreateTaskPushNotificationConfig": pb2_v03.CreateTaskPushNotificationConfigRequest}


def v03_rest_routes(handler: RequestHandler, context_builder: ServerCallContextBuilder,
                    shutdown_grace_period: float) -> list[Route]:
    """The 0.3 HTTP+JSON routes of the a2a-sdk's ``REST03Adapter``, its streams begun only
    once their first event is there."""
    adapter = REST03Adapter(handler, context_builder=context_builder, shutdown_grace_period=shutdown_grace_period)
    contexts = V03ServerCallContextBuilder(context_builder)
    routes = []
    for (path, method), endpoint in adapter.routes().items():
        if path in STREAMS:
            endpoint = _first_event_first(getattr(adapter.handler, STREAMS[path]), contexts, shutdown_grace_period)
        routes.append(Route(path, endpoint, methods=[method]))
    return routes


#: the adapter's streams: path -> the method of its ``REST03Handler`` that streams
STREAMS = {V03_PREFIX + "/message:stream": "on_message_send_stream",
           V03_PREFIX + "/tasks/{id}:subscribe": "on_subscribe_to_task"}


def _first_event_first(method, contexts: ServerCallContextBuilder, shutdown_grace_period: float):
    """A stream endpoint that reads its first event before it answers: an error raised
    before it is an error response (its HTTP status, ``google.rpc.Status``), not a stream."""
    async def endpoint(request):
        await request.body()  # read before the stream begins (the SDK's adapter does so too)
        events = aiter(method(request, contexts.build(request)))
        try:
            first = await anext(events)
        except StopAsyncIteration:
            first = None
        except A2AError as error:
            payload = build_rest_error_payload(error)
            return JSONResponse(payload, status_code=payload["error"]["code"])

        async def stream():
            if first is not None:
                yield json_utils.dumps(first)
            async for event in events:
                yield json_utils.dumps(event)

        return create_event_source_response(stream(), shutdown_grace_period=shutdown_grace_period)

    return endpoint
