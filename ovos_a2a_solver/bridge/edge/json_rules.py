# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The ProtoJSON rules a request's JSON is held to before the a2a-sdk reads it, which parses
leniently (an unknown enum name becomes 0, a list stands for an object): its envelope, its
depth and number of values (:func:`load_json`, counting as it parses), lone UTF-16
surrogates, the JSON type of every field and its enum names, a message's parts, and the
query of an HTTP+JSON request. A broken rule is a :class:`Refusal` carrying the protocol
error to answer."""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError, JSONParseError
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from pydantic import ValidationError


MAX_DEPTH = 64            # JSON nesting a request may have (A2A messages need a handful)


class Refusal(Exception):
    """What is wrong with a request, as the protocol error to answer."""

    def __init__(self, error: A2AError, request_id=None) -> None:
        super().__init__(error.message)
        self.error, self.request_id = error, request_id


def check_v03_params(value: dict, method: str, request_id) -> None:
    """:class:`Refusal` (-32602) for an A2A 0.3 request whose params do not fit its method
    (the SDK's 0.3 layer answers -32600, which JSON-RPC keeps for a malformed envelope).
    A null ``id`` is a malformed envelope (-32600) whatever the params; a missing ``id`` is
    not: the params are checked first (-32602), and only a request whose params fit is
    refused for having no id (-32600), as A2A 0.3 has no notifications."""
    model = JSONRPC03Adapter.METHOD_TO_MODEL.get(method)
    if model is None:
        return
    needs_an_id = InvalidRequestError(message=f"{method} (A2A 0.3) needs an id: a string or an integer")
    has_id = "id" in value
    if has_id and request_id is None:
        raise Refusal(needs_an_id)
    try:
        model.model_validate(value)
    except ValidationError as exc:
        errors = [error for error in exc.errors() if error["loc"][:1] != ("id",)]
        if errors:
            where = ".".join(str(p) for p in errors[0]["loc"])
            raise Refusal(InvalidParamsError(message=f"invalid params for {method}: {where}: {errors[0]['msg']}"),
                          request_id) from None
    if not has_id:
        raise Refusal(needs_an_id)


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
    # every JSON value takes a character at least: a text no longer than the limit is parsed at
    # full speed, without the counting hooks (a message is a few hundred characters)
    counter = _ValueCounter(max_values)
    hooks = {} if len(text) <= max_values else {"object_pairs_hook": counter.object, "parse_int": counter.integer,
                                                  "parse_float": counter.real}
    try:
        value = json.loads(text, **hooks)
    except _TooManyValues:
        raise Refusal(too_many_values(max_values)) from None
    except json.JSONDecodeError as exc:
        raise Refusal(JSONParseError(message=f"the body is not JSON: {exc.msg} at line {exc.lineno} "
                                             f"column {exc.colno}")) from None
    except RecursionError:
        raise Refusal(InvalidRequestError(message=f"the body is nested deeper than {MAX_DEPTH} levels")) from None
    except ValueError:  # an integer of more than 4300 digits
        raise Refusal(InvalidRequestError(message="the body has a number too long to read")) from None
    if len(text) <= max_values and text.count("{") + text.count("[") < MAX_DEPTH:
        return value  # too short to hold more values, too few brackets to nest deeper (a message)
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


def check_parts(message: Any, max_parts: int, request_id, key: str = "parts") -> None:
    """:class:`Refusal` for a message with more than ``max_parts`` parts (under ``key``:
    A2A 0.3 HTTP+JSON names them ``content``)."""
    if isinstance(message, dict) and isinstance(message.get(key), list) and len(message[key]) > max_parts:
        raise Refusal(InvalidParamsError(message=f"message has {len(message[key])} parts; at most {max_parts} "
                                                 f"are accepted"), request_id)


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
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key) or \
            next((f for f in descriptor.fields if f.json_name == key), None)  # a json_name of its own
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
