# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The shape of a request on the wire, before the a2a-sdk parses it (:class:`WireCheck`, an
ASGI middleware; the size is :mod:`.body_limit`'s, the version :mod:`.versions`').

It refuses a malformed body or query with a protocol error, never a -32603 or an HTTP 500:
invalid UTF-8 or JSON (-32700), JSON nested deeper than ``MAX_DEPTH``, holding more than
``max_values`` JSON values, or with a number too long to read (-32600), a lone UTF-16
surrogate (``"\\ud800"`` escaped alone) in the ``id`` (-32600) or a parameter (-32602), and,
for the A2A operations, any value of the wrong JSON type for its field, an unknown enum name
or number, or a message with more than ``max_parts`` parts (-32602; HTTP+JSON: 400; A2A 0.3
HTTP+JSON bodies by their own model): the rules of :mod:`.json_rules`. Unknown fields are
ignored, as A2A asks. A large body is parsed on a worker thread, and a body of too many values is read only until it passes the limit
(the SDK walks every value on the event loop, ~20 µs apiece), so one request never stalls
the loop. A JSON-RPC request whose ``Content-Type`` is not JSON is refused with -32005
(ContentTypeNotSupported); an HTTP+JSON POST without a body (``:cancel``, ``:subscribe``) is
let through. HTTP+JSON answers are labelled ``Content-Type: application/json`` (the SDK says
``application/a2a+json``, which the A2A 1.0 HTTP+JSON binding and its conformance kit do not
name), and TaskNotCancelable is HTTP 409 as A2A 1.0 maps it (the SDK says 400). An A2A 0.3
request whose params do not fit its method is -32602 (the SDK's 0.3 layer says -32600), with or
without an id; one whose params fit but that has no id, or a null one, is -32600.
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import ListTasksRequest, SendMessageRequest, TaskPushNotificationConfig
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError, InvalidRequestError, JSONParseError

from ovos_a2a_solver.bridge.edge.classify import REQUEST, Binding, ClassifiedRequest, classified
from ovos_a2a_solver.bridge.edge.errors import jsonrpc_error_body, rest_error_body, send_json
from ovos_a2a_solver.bridge.edge.json_rules import (Refusal, check_parts, check_envelope, check_fields, check_query,
                                                    check_v03_params, load_json, lone_surrogate_at,
                                                    lone_surrogate_message)
from ovos_a2a_solver.bridge.edge.rest_v03 import V03_BODIES


OFF_LOOP_BYTES = 64 * 1024  # bodies larger than this are parsed on a worker thread


MESSAGE_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}


#: the request bodies of A2A 1.0 HTTP+JSON, by the A2A method of their path
REST_BODIES = {"SendMessage": SendMessageRequest, "SendStreamingMessage": SendMessageRequest,
               "CreateTaskPushNotificationConfig": TaskPushNotificationConfig}


class WireCheck:
    """Protocol errors for malformed bodies and queries, before the SDK sees them; a
    well-formed JSON-RPC request's method and id go into its classification."""

    def __init__(self, app, *, max_parts: int, max_values: int) -> None:
        self.app, self.max_parts, self.max_values = app, max_parts, max_values

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = classified(scope)
        rest, jsonrpc = request.binding.rest, request.binding is Binding.JSONRPC
        try:
            if scope["method"] == "POST" and (rest or jsonrpc):
                if jsonrpc:
                    check_content_type(scope)
                body = await _read_body(receive)
                receive = _replay_body(body, receive)
                if len(body) > OFF_LOOP_BYTES:
                    call = await asyncio.to_thread(self.check_body, body, request)
                else:
                    call = self.check_body(body, request)
                if call is not None:  # in place: the layers outside (the access log) see it too
                    scope[REQUEST] = request.called(*call)
            elif request.method == "ListTasks":
                check_query(scope.get("query_string", b""), ListTasksRequest.DESCRIPTOR)
        except Refusal as refusal:
            if rest:  # HTTP+JSON has no parse error of its own: a bad body is an invalid request
                error = refusal.error
                status, payload = rest_error_body(InvalidRequestError(message=error.message)
                                                  if isinstance(error, JSONParseError) else error)
                return await send_json(send, status, payload)
            return await send_json(send, 200, jsonrpc_error_body(refusal.error, refusal.request_id))
        await self.app(scope, receive, _rest_answer(send) if rest else send)

    def check_body(self, body: bytes, request: ClassifiedRequest) -> tuple[str, Any] | None:
        """Raise :class:`Refusal` if ``body`` is not a well-formed request of its binding and
        method (as ``request`` classifies it); return a JSON-RPC request's (method, id)."""
        if request.binding.rest:
            v03 = request.binding is Binding.HTTP_JSON_V03
            model = (V03_BODIES if v03 else REST_BODIES).get(request.method)
            if model is None and not body.strip():  # :cancel and :subscribe need no body
                return None
            value = load_json(body, self.max_values)
            where = lone_surrogate_at(value, body)
            if where is not None:
                raise Refusal(InvalidParamsError(message=lone_surrogate_message(where)))
            if model is not None:
                try:
                    check_fields(value, model.DESCRIPTOR, "")
                except InvalidParamsError as error:
                    raise Refusal(error) from None
                check_parts(value.get("message"), self.max_parts, None, "content" if v03 else "parts")
            return None
        value = load_json(body, self.max_values)
        request_id = check_envelope(value)
        method, params = value["method"], value.get("params")
        where = lone_surrogate_at(value, body)
        if where is not None:
            error = InvalidParamsError if where.startswith("params") else InvalidRequestError
            raise Refusal(error(message=lone_surrogate_message(where)), request_id)
        model = JsonRpcDispatcher.METHOD_TO_MODEL.get(method)
        check_v03_params(value, method, request_id)
        try:
            if model is not None and params is not None:
                if not isinstance(params, dict):
                    raise InvalidParamsError(message="params must be an object")
                check_fields(params, model.DESCRIPTOR, "params")
            if method in MESSAGE_METHODS and isinstance(params, dict):
                check_parts(params.get("message"), self.max_parts, request_id)
        except InvalidParamsError as error:
            raise Refusal(error, request_id) from None
        return method, request_id


JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")
#: the Content-Type headers clients send most, known to be JSON without a look
JSON_HEADERS = frozenset({b"application/json", b"application/json; charset=utf-8", b"application/a2a+json"})


def check_content_type(scope) -> None:
    """:class:`Refusal` (-32005) when a JSON-RPC request says its body is not JSON."""
    header = next((v for k, v in scope["headers"] if k == b"content-type"), None)
    if header is None or header in JSON_HEADERS:
        return
    media_type = header.decode("latin-1").split(";", 1)[0].strip().lower()
    if not JSON_TYPE.match(media_type):
        raise Refusal(ContentTypeNotSupportedError(
            message=f"Content-Type {media_type or '(empty)'} is not supported; send application/json"))


SPEC_HTTP_STATUS = {"TASK_NOT_CANCELABLE": 409, "CONTENT_TYPE_NOT_SUPPORTED": 415, "INVALID_AGENT_RESPONSE": 502}
"""HTTP statuses A2A 1.0 (5.4, error code mappings) gives these errors, where the SDK answers 400 or 500."""


def _rest_answer(send):
    """``send`` for an HTTP+JSON answer: labelled ``application/json`` (not ``application/a2a+json``),
    and an A2A error with the HTTP status A2A 1.0 gives it (:data:`SPEC_HTTP_STATUS`)."""
    held: dict = {}

    def relabel(headers):
        return [(k, b"application/json") if k.lower() == b"content-type"
                and v.split(b";", 1)[0].strip().lower() == b"application/a2a+json" else (k, v) for k, v in headers]

    async def answer(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": relabel(message.get("headers", []))}
            if message["status"] >= 400:  # an error body is small: hold it to check its reason
                held["start"], held["body"] = message, b""
                return
            return await send(message)
        if message["type"] == "http.response.body" and "start" in held:
            held["body"] += message.get("body", b"")
            if message.get("more_body"):
                return
            start, body = held.pop("start"), held.pop("body")
            start, body = _spec_status(start, body)
            await send(start)
            return await send({"type": "http.response.body", "body": body})
        await send(message)

    return answer


def _spec_status(start: dict, body: bytes) -> tuple[dict, bytes]:
    try:
        error = json.loads(body)["error"]
        reason = next(d.get("reason") for d in error.get("details", []) if d.get("reason"))
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        return start, body
    status = SPEC_HTTP_STATUS.get(reason)
    if status is None or status == start["status"]:
        return start, body
    error["code"] = status
    body = json.dumps({"error": error}).encode()
    headers = [(k, str(len(body)).encode() if k.lower() == b"content-length" else v) for k, v in start["headers"]]
    return {**start, "status": status, "headers": headers}, body


async def _read_body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay_body(body: bytes, receive):
    """A ``receive`` that gives the buffered body once, then what the server sends (disconnects).
    Not a coroutine itself: it hands on the server's ``receive()``, so that no frame of its own
    waits, for as long as a stream is open, for the disconnect."""
    sent = False

    def replay():
        nonlocal sent
        if not sent:
            sent = True
            return _given({"type": "http.request", "body": body, "more_body": False})
        return receive()

    return replay


async def _given(message: dict) -> dict:
    """An awaitable of ``message``, for a ``receive`` that already holds it."""
    return message
