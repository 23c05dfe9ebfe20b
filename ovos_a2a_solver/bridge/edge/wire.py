# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The request on the wire, before the a2a-sdk parses it: its size, its shape, its A2A version.

Three ASGI middlewares, one job each:

* :class:`BodyLimit` refuses a body over ``max_body`` bytes with HTTP 413: at once when
  ``Content-Length`` says so, else as soon as a chunked body grows past the limit.
* :class:`WireCheck` refuses a malformed body or query with a protocol error, never a
  -32603 or an HTTP 500: invalid UTF-8 or JSON (-32700), JSON nested deeper than
  :data:`MAX_DEPTH`, holding more than ``max_values`` JSON values, or with a number too
  long to read (-32600), a lone UTF-16 surrogate (``"\\ud800"`` escaped alone) in the
  ``id`` (-32600) or a parameter (-32602), and, for the A2A operations, any value of the
  wrong JSON type for its field, an unknown enum name or number, or a message with more
  than ``max_parts`` parts (-32602; HTTP+JSON: 400). The SDK parses leniently (an unknown
  enum name becomes 0, a list stands for an object); this is where the ProtoJSON rules are
  held. Unknown fields are ignored, as A2A asks. A large body is parsed on a worker thread,
  and a body of too many values is read only until it passes the limit (the SDK walks every
  value on the event loop, ~20 µs apiece), so one request never stalls the loop. A JSON-RPC
  request whose ``Content-Type`` is not JSON is refused with -32005 (ContentTypeNotSupported);
  an HTTP+JSON POST without a body (``:cancel``, ``:subscribe``) is let through. HTTP+JSON
  answers are labelled ``Content-Type: application/json`` (the SDK says ``application/a2a+json``,
  which the A2A 1.0 HTTP+JSON binding and its conformance kit do not name), and TaskNotCancelable
  is HTTP 409 as A2A 1.0 maps it (the SDK says 400). An A2A 0.3 request whose params do not fit
  its method is -32602 (the SDK's 0.3 layer says -32600); one without an id is -32600.
* :class:`VersionCheck` decides the A2A version of a JSON-RPC or HTTP+JSON request by the
  rule of :mod:`versions` and refuses one its binding or method does not serve (-32009,
  HTTP 400).
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import parse_qsl

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import ListTasksRequest, SendMessageRequest, TaskPushNotificationConfig
from a2a.utils.errors import (A2AError, ContentTypeNotSupportedError, InvalidParamsError, InvalidRequestError,
                              JSONParseError, VersionNotSupportedError)
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from pydantic import ValidationError

from ovos_a2a_solver.bridge.edge.errors import is_rest, jsonrpc_error_body, rest_error_body, send_json, status_body
from ovos_a2a_solver.bridge.edge.versions import HEADER as VERSION_HEADER
from ovos_a2a_solver.bridge.edge.versions import negotiate

MAX_DEPTH = 64            # JSON nesting a request may have (A2A messages need a handful)
OFF_LOOP_BYTES = 64 * 1024  # bodies larger than this are parsed on a worker thread
MESSAGE_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
#: the A2A version each JSON-RPC method name belongs to
METHOD_VERSIONS = {**{name: "1.0" for name in JsonRpcDispatcher.METHOD_TO_MODEL},
                   **{name: "0.3" for name in JSONRPC03Adapter.METHOD_TO_MODEL}}
#: where :class:`WireCheck` leaves a JSON-RPC request's (method, id) for :class:`VersionCheck`
JSONRPC_CALL = "ovos_a2a.jsonrpc_call"
REST_BODIES = {"/message:send": SendMessageRequest, "/message:stream": SendMessageRequest,
               "/pushNotificationConfigs": TaskPushNotificationConfig}


class BodyTooLarge(Exception):
    """A request body grew past the limit while it was read."""


class BodyLimit:
    """HTTP 413 for a body over ``max_body`` bytes (also a chunked one)."""

    def __init__(self, app, *, max_body: int, rest_prefix: str) -> None:
        self.app, self.max_body, self.rest_prefix = app, max_body, rest_prefix

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
        if length.isdigit() and int(length) > self.max_body:
            return await self._refuse(scope, send)
        received, started = 0, False

        async def counted_receive():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                raise BodyTooLarge
            return message

        async def watched_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, send)

    async def _refuse(self, scope, send) -> None:
        message = f"request body over {self.max_body} bytes"
        if is_rest(scope["path"], self.rest_prefix):
            await send_json(send, 413, status_body(413, "INVALID_ARGUMENT", "INVALID_REQUEST", message))
        else:
            await send_json(send, 413, jsonrpc_error_body(InvalidRequestError(message=message)))


class Refusal(Exception):
    """What is wrong with a request, as the protocol error to answer."""

    def __init__(self, error: A2AError, request_id=None) -> None:
        super().__init__(error.message)
        self.error, self.request_id = error, request_id


class WireCheck:
    """Protocol errors for malformed bodies and queries, before the SDK sees them."""

    def __init__(self, app, *, rpc_paths: set[str], rest_prefix: str, max_parts: int, max_values: int) -> None:
        self.app, self.rpc_paths, self.rest_prefix = app, rpc_paths, rest_prefix
        self.max_parts, self.max_values = max_parts, max_values

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        rest = is_rest(path, self.rest_prefix)
        try:
            if method == "POST" and not rest and path in self.rpc_paths:
                check_content_type(scope)
            if method == "POST" and (rest or path in self.rpc_paths):
                body = await _read_body(receive)
                receive = _replay_body(body, receive)
                if len(body) > OFF_LOOP_BYTES:
                    call = await asyncio.to_thread(self.check_body, body, path, rest)
                else:
                    call = self.check_body(body, path, rest)
                if call is not None:
                    scope = {**scope, JSONRPC_CALL: call}
            elif method == "GET" and rest and path.endswith("/tasks"):
                check_query(scope.get("query_string", b""), ListTasksRequest.DESCRIPTOR)
        except Refusal as refusal:
            if rest:  # HTTP+JSON has no parse error of its own: a bad body is an invalid request
                error = refusal.error
                status, payload = rest_error_body(InvalidRequestError(message=error.message)
                                                  if isinstance(error, JSONParseError) else error)
                return await send_json(send, status, payload)
            return await send_json(send, 200, jsonrpc_error_body(refusal.error, refusal.request_id))
        await self.app(scope, receive, _rest_answer(send) if rest else send)

    def check_body(self, body: bytes, path: str, rest: bool) -> tuple[str, Any] | None:
        """Raise :class:`Refusal` if ``body`` is not a well-formed request for ``path``;
        return a JSON-RPC request's (method, id)."""
        if rest:
            model = next((m for suffix, m in REST_BODIES.items() if path.endswith(suffix)), None)
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
                _check_parts(value.get("message"), self.max_parts, None)
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
                _check_parts(params.get("message"), self.max_parts, request_id)
        except InvalidParamsError as error:
            raise Refusal(error, request_id) from None
        return method, request_id


class VersionCheck:
    """The A2A version of every JSON-RPC and HTTP+JSON request, by :mod:`versions`' rule.

    The version comes from the ``A2A-Version`` header, else the ``A2A-Version`` query
    parameter. One the binding does not serve (``served``, from the card), or over
    JSON-RPC one that is not the version of the method (from :class:`WireCheck`), is
    refused with VersionNotSupported (-32009; HTTP+JSON: 400). A request that passes goes
    on with the header ``A2A-Version: Major.Minor`` alone, so the a2a-sdk reads the version
    decided here (it would not read the query, and counts any 1.x as 1.0)."""

    def __init__(self, app, *, rest_prefix: str, served: dict[str, tuple[str, ...]]) -> None:
        self.app, self.rest_prefix, self.served = app, rest_prefix, served

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        rest = is_rest(scope["path"], self.rest_prefix)
        call = scope.get(JSONRPC_CALL)
        if not rest and call is None:  # the cards, /health, and what the SDK refuses as it is
            return await self.app(scope, receive, send)
        value = requested_value(scope)
        try:
            if rest:
                version = negotiate(value, self.served.get("HTTP+JSON", ()), "over HTTP+JSON")
            else:
                method, request_id = call
                if method not in METHOD_VERSIONS:  # the SDK answers -32601
                    return await self.app(scope, receive, send)
                negotiate(value, self.served.get("JSONRPC", ()), "over JSON-RPC")
                version = negotiate(value, (METHOD_VERSIONS[method],),
                                    f"for {method} (an A2A {METHOD_VERSIONS[method]} method)")
        except VersionNotSupportedError as error:
            if rest:
                return await send_json(send, *rest_error_body(error))
            return await send_json(send, 200, jsonrpc_error_body(error, request_id))
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != VERSION_KEY]
        await self.app({**scope, "headers": [*headers, (VERSION_KEY, version.encode())]}, receive, send)


VERSION_KEY = VERSION_HEADER.lower().encode()


def requested_value(scope) -> bytes | str | None:
    """The version a request names: its ``A2A-Version`` header, else its ``A2A-Version``
    query parameter, else ``None``."""
    header = next((v for k, v in scope["headers"] if k.lower() == VERSION_KEY), None)
    if header is not None:
        return header
    query = scope.get("query_string", b"")
    if VERSION_HEADER.encode().lower() not in query.lower():
        return None
    return next((v for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
                 if k.lower() == VERSION_HEADER.lower()), None)


def check_v03_params(value: dict, method: str, request_id) -> None:
    """:class:`Refusal` (-32602) for an A2A 0.3 request whose params do not fit its method
    (the SDK's 0.3 layer answers -32600, which JSON-RPC keeps for a malformed envelope)."""
    model = JSONRPC03Adapter.METHOD_TO_MODEL.get(method)
    if model is None:
        return
    if request_id is None:
        raise Refusal(InvalidRequestError(message=f"{method} (A2A 0.3) needs an id: a string or an integer"))
    try:
        model.model_validate(value)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"]) if exc.errors() else "params"
        raise Refusal(InvalidParamsError(message=f"invalid params for {method}: {where}: "
                                                 f"{exc.errors()[0]['msg'] if exc.errors() else exc}"),
                      request_id) from None


JSON_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")


def check_content_type(scope) -> None:
    """:class:`Refusal` (-32005) when a JSON-RPC request says its body is not JSON."""
    header = next((v for k, v in scope["headers"] if k == b"content-type"), None)
    if header is None:
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


def check_envelope(value: Any):
    """The request id of a JSON-RPC 2.0 request object, or :class:`Refusal` (-32600) if it
    is not one: ``jsonrpc`` is "2.0", ``method`` a non-empty string, ``id`` a string, an
    integer or null."""
    if isinstance(value, list):
        raise Refusal(InvalidRequestError(message="batch requests are not supported"))
    if not isinstance(value, dict):
        raise Refusal(InvalidRequestError(message="the body must be a JSON-RPC request object"))
    request_id = value.get("id")
    if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
        raise Refusal(InvalidRequestError(message="id must be a string, an integer or null"))
    if isinstance(request_id, str) and _SURROGATE.search(request_id):
        raise Refusal(InvalidRequestError(message=lone_surrogate_message("id")))
    if value.get("jsonrpc") != "2.0":
        raise Refusal(InvalidRequestError(message='jsonrpc must be "2.0"'), request_id)
    if not isinstance(value.get("method"), str) or not value["method"]:
        raise Refusal(InvalidRequestError(message="method must be a non-empty string"), request_id)
    return request_id


def load_json(body: bytes, max_values: int) -> Any:
    """The body as JSON, or :class:`Refusal`: not UTF-8 or not JSON (-32700), nested deeper
    than :data:`MAX_DEPTH`, with a number too long to read, or holding more than
    ``max_values`` JSON values (-32600). A body of too many values is not read to its end:
    the count is known once it passes the limit."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(JSONParseError(message=f"the body is not valid UTF-8 (byte {exc.start})")) from None
    counter = _ValueCounter(max_values)
    try:
        value = json.loads(text, object_pairs_hook=counter.object, parse_int=counter.integer,
                           parse_float=counter.real)
    except _TooManyValues:
        raise Refusal(too_many_values(max_values)) from None
    except json.JSONDecodeError as exc:
        raise Refusal(JSONParseError(message=f"the body is not JSON: {exc.msg} at line {exc.lineno} "
                                             f"column {exc.colno}")) from None
    except RecursionError:
        raise Refusal(InvalidRequestError(message=f"the body is nested deeper than {MAX_DEPTH} levels")) from None
    except ValueError:  # an integer of more than 4300 digits
        raise Refusal(InvalidRequestError(message="the body has a number too long to read")) from None
    values = count_values(value, MAX_DEPTH, max_values + 1)
    if values < 0:
        raise Refusal(InvalidRequestError(message=f"the body is nested deeper than {MAX_DEPTH} levels"))
    if values > max_values:
        raise Refusal(too_many_values(max_values))
    return value


def too_many_values(max_values: int) -> InvalidRequestError:
    """The refusal of a body holding more than ``max_values`` JSON values."""
    return InvalidRequestError(message=f"the request holds more than {max_values} JSON values (objects, arrays, "
                                       f"strings, numbers, ...); at most {max_values} are accepted")


class _TooManyValues(Exception):
    """The body read so far holds more values than the limit."""


class _ValueCounter:
    """Hooks of ``json.loads`` that count objects, their members and numbers as they are read,
    and stop the reading once there are more than ``most``: a body of a million small
    objects costs the first thousand, not the million."""

    def __init__(self, most: int) -> None:
        self.most, self.count = most, 0

    def _add(self, n: int) -> None:
        self.count += n
        if self.count > self.most:
            raise _TooManyValues

    def object(self, pairs: list) -> dict:  # itself, and those of its values no other hook counts
        self._add(1 + sum(1 for _, value in pairs if not isinstance(value, (dict, int, float))))
        return dict(pairs)

    def integer(self, text: str) -> int:
        self._add(1)
        return int(text)

    def real(self, text: str) -> float:
        self._add(1)
        return float(text)


def count_values(value: Any, max_depth: int, most: int) -> int:
    """How many JSON values ``value`` holds (itself, and every object, array, string,
    number, true, false and null in it; not the keys), counting no further than ``most``;
    -1 if it is nested deeper than ``max_depth``."""
    stack = [(value, 1)]
    count = 0
    while stack and count < most:
        item, depth = stack.pop()
        count += 1
        if depth > max_depth:
            return -1
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return count


_SURROGATE = re.compile("[\ud800-\udfff]")  # left alone by json.loads only when unpaired
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def lone_surrogate_at(value: Any, body: bytes) -> str | None:
    """Where in ``value`` (parsed from ``body``) a string or key holds a lone UTF-16 surrogate
    (``"\\ud800"`` escaped alone: not a Unicode character), as a dotted path; ``None`` if none does.
    UTF-8 cannot carry a surrogate, so only a body with such an escape is searched."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "the body"
        elif isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{key}" if path else key
                if _SURROGATE.search(key):
                    return (path or "the body") + " (a key)"
                stack.append((child, where))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{n}]") for n, child in enumerate(item))
    return None


def lone_surrogate_message(where: str) -> str:
    """The refusal of a lone surrogate found at ``where``."""
    return f"{where} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not a character"


def _check_parts(message: Any, max_parts: int, request_id) -> None:
    if isinstance(message, dict) and isinstance(message.get("parts"), list) and len(message["parts"]) > max_parts:
        raise Refusal(InvalidParamsError(message=f"message has {len(message['parts'])} parts; at most {max_parts} "
                                                 f"are accepted"), request_id)


# ---- ProtoJSON types ---------------------------------------------------------------------------

_INTEGERS = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
             FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
             FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
             FieldDescriptor.TYPE_SFIXED64}
_FLOATS = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}
_INTEGER_RANGE = {kind: ((0, 2**32 - 1) if kind in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32) else
                         (0, 2**64 - 1) if kind in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64) else
                         (-2**31, 2**31 - 1) if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32,
                                                         FieldDescriptor.TYPE_SFIXED32) else (-2**63, 2**63 - 1))
                  for kind in _INTEGERS}
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")  # standard or URL-safe, padded or not (ProtoJSON takes both)
_WELL_KNOWN = {"google.protobuf.Struct": dict, "google.protobuf.ListValue": list, "google.protobuf.Value": object,
               "google.protobuf.Timestamp": str, "google.protobuf.Duration": str, "google.protobuf.FieldMask": str}


def check_fields(value: Any, descriptor: Descriptor, path: str) -> None:
    """``InvalidParamsError`` naming the first field of ``value`` whose JSON type does not
    fit ``descriptor`` (ProtoJSON), or whose enum name or number is unknown."""
    if not isinstance(value, dict):
        raise InvalidParamsError(message=f"{path or 'the body'} must be an object")
    chosen: dict[str, str] = {}
    for key, item in value.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or item is None:
            continue  # unknown fields are ignored; null means unset
        where = f"{path}.{key}" if path else key
        oneof = field.containing_oneof
        if oneof is not None and len(oneof.fields) > 1:
            if oneof.name in chosen:
                raise InvalidParamsError(message=f"{where}: only one of {chosen[oneof.name]} and {key} may be set")
            chosen[oneof.name] = key
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if not isinstance(item, dict):
                raise InvalidParamsError(message=f"{where} must be an object")
            value_field = field.message_type.fields_by_name["value"]
            for name, entry in item.items():
                _check_value(entry, value_field, f"{where}.{name}")
        elif field.is_repeated:
            if not isinstance(item, list):
                raise InvalidParamsError(message=f"{where} must be a list")
            for n, element in enumerate(item):
                _check_value(element, field, f"{where}[{n}]")
        else:
            _check_value(item, field, where)


def _check_value(item: Any, field: FieldDescriptor, where: str) -> None:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        expected = _WELL_KNOWN.get(field.message_type.full_name)
        if expected is None:
            check_fields(item, field.message_type, where)
        elif not isinstance(item, expected):
            raise InvalidParamsError(message=f"{where} must be a JSON {expected.__name__}")
        elif field.message_type.full_name == "google.protobuf.Timestamp" and not _TIMESTAMP.fullmatch(item):
            raise InvalidParamsError(message=f"{where} must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z")
    elif kind == FieldDescriptor.TYPE_ENUM:
        values = field.enum_type
        known = (item in values.values_by_name) if isinstance(item, str) else \
            (isinstance(item, int) and not isinstance(item, bool) and item in values.values_by_number)
        if not known:
            names = ", ".join(v.name for v in values.values if v.number)
            raise InvalidParamsError(message=f"{where}: {json.dumps(item)[:40]} is not one of {names}")
    elif kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(item, str):
            raise InvalidParamsError(message=f"{where} must be a string")
    elif kind == FieldDescriptor.TYPE_BYTES:
        if not isinstance(item, str) or not _BASE64.fullmatch(item) or len(item.rstrip("=")) % 4 == 1:
            raise InvalidParamsError(message=f"{where} must be base64 text")
    elif kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(item, bool):
            raise InvalidParamsError(message=f"{where} must be true or false")
    elif kind in _INTEGERS:
        low, high = _INTEGER_RANGE[kind]
        if not _is_integer(item) or not low <= int(float(item)) <= high:
            raise InvalidParamsError(message=f"{where} must be an integer from {low} to {high}")
    elif kind in _FLOATS:
        if isinstance(item, bool) or not isinstance(item, (int, float, str)):
            raise InvalidParamsError(message=f"{where} must be a number")


def _is_integer(item: Any) -> bool:
    if isinstance(item, bool):
        return False
    if isinstance(item, int):
        return True
    if isinstance(item, float):
        return item.is_integer()
    if isinstance(item, str):
        return item.strip().lstrip("-").isdigit() and len(item) < 40
    return False


def check_query(query_string: bytes, descriptor: Descriptor) -> None:
    """Refuse query parameters whose text cannot be a value of their field (unknown enum
    names, integers that are not integers)."""
    for key, text in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or field.is_repeated or not text:
            continue
        if field.type == FieldDescriptor.TYPE_ENUM:
            item: Any = int(text) if text.lstrip("-").isdigit() else text
        elif field.type in _INTEGERS:
            item = text
        else:
            continue
        try:
            _check_value(item, field, key)
        except InvalidParamsError as error:
            raise Refusal(error) from None


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
    """A ``receive`` that gives the buffered body once, then what the server sends (disconnects)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
