# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What a request is, read once at the outermost edge (:class:`ClassifyRequests`, an ASGI
middleware): its binding, the A2A version it asks for, and its A2A method and id when known.

The path, the HTTP method and the headers are read here alone; every layer inside reads the
one :class:`ClassifiedRequest` this puts in the scope (:func:`classified`) instead of asking
the path again. An HTTP+JSON request's method is known from its path at once; a JSON-RPC
request's only from its body, which the wire check (:mod:`.wire`) reads: it puts the
request's classification back with the method and id filled in (:meth:`ClassifiedRequest.called`).
"""
from __future__ import annotations

import enum
import re
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

#: where a request's scope holds its :class:`ClassifiedRequest`
REQUEST = "ovos_a2a.request"
#: the header (and, without it, the query parameter) a request names its A2A version in
VERSION_HEADER = "A2A-Version"
_VERSION_KEY = VERSION_HEADER.lower().encode()
#: where A2A 0.3's HTTP+JSON paths begin, under the interface URL
V03_PREFIX = "/v1"


class Binding(enum.Enum):
    """Which of the bridge's HTTP endpoints a request is for.

    Each also says whether it is the HTTP+JSON binding (``rest``), its name in the access log
    and the metrics (``label``: ``JSON-RPC``, ``HTTP+JSON``, or ``HTTP`` for what is neither)
    and, for HTTP+JSON, the A2A version of its paths (``path_version``; else ``None``): plain
    attributes, read by every layer of every request."""

    JSONRPC = "JSON-RPC"
    HTTP_JSON = "HTTP+JSON 1.0"
    HTTP_JSON_V03 = "HTTP+JSON 0.3"
    CARD = "card"  # the agent card, and its key set
    HEALTH = "health"
    METRICS = "metrics"
    OTHER = "other"

    rest: bool
    label: str
    path_version: str | None


for _binding in Binding:
    _binding.rest = _binding in (Binding.HTTP_JSON, Binding.HTTP_JSON_V03)
    _binding.label = "HTTP+JSON" if _binding.rest else "JSON-RPC" if _binding is Binding.JSONRPC else "HTTP"
    _binding.path_version = {Binding.HTTP_JSON: "1.0", Binding.HTTP_JSON_V03: "0.3"}.get(_binding)


class ClassifiedRequest(NamedTuple):
    """What the edge knows of one HTTP request (immutable: a tuple, cheap to make).

    ``version_asked`` is the value the request names its A2A version with, as it came (the
    ``A2A-Version`` header, else the query parameter, else ``None``; :mod:`.versions` decides
    what it means). ``method`` is the A2A method (``SendMessage``, ``message/send``, ...):
    from the path over HTTP+JSON, from the body over JSON-RPC once it was read and found
    well-formed; ``None`` while unknown. ``request_id`` is a JSON-RPC request's id."""

    binding: Binding
    version_asked: bytes | str | None = None
    method: str | None = None
    request_id: Any = None

    def called(self, method: str, request_id: Any) -> "ClassifiedRequest":
        """This request, its JSON-RPC body read: ``method`` with ``request_id``."""
        return ClassifiedRequest(self.binding, self.version_asked, method, request_id)


def classified(scope) -> ClassifiedRequest | None:
    """The classification :class:`ClassifyRequests` gave the request of ``scope`` (``None``
    for a request that came in past it)."""
    return scope.get(REQUEST)


#: the A2A method of an HTTP+JSON request, by its HTTP method and the end of its path
REST_METHODS = (
    ("POST", re.compile(r"/message:send$"), "SendMessage"),
    ("POST", re.compile(r"/message:stream$"), "SendStreamingMessage"),
    ("POST", re.compile(r"/tasks/[^/]+:cancel$"), "CancelTask"),
    ("GET", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("POST", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("GET", re.compile(r"/tasks$"), "ListTasks"),
    ("GET", re.compile(r"/tasks/[^/:]+$"), "GetTask"),
    ("POST", re.compile(r"/pushNotificationConfigs$"), "CreateTaskPushNotificationConfig"),
    ("GET", re.compile(r"/pushNotificationConfigs$"), "ListTaskPushNotificationConfigs"),
    ("GET", re.compile(r"/pushNotificationConfigs/[^/]+$"), "GetTaskPushNotificationConfig"),
    ("DELETE", re.compile(r"/pushNotificationConfigs/[^/]+$"), "DeleteTaskPushNotificationConfig"),
    ("GET", re.compile(r"/extendedAgentCard$|/card$"), "GetExtendedAgentCard"),
)
#: :data:`REST_METHODS` by HTTP method, in their order: a request tries only its own verb's
_REST_METHODS_BY_VERB: dict[str, tuple] = {}
for _verb, _pattern, _name in REST_METHODS:
    _REST_METHODS_BY_VERB[_verb] = (*_REST_METHODS_BY_VERB.get(_verb, ()), (_pattern.search, _name))


def rest_method(http_method: str, path: str) -> str | None:
    """The A2A method an HTTP+JSON request names by its HTTP method and path, or ``None``."""
    for search, name in _REST_METHODS_BY_VERB.get(http_method, ()):
        if search(path):
            return name
    return None


def version_asked(scope) -> bytes | str | None:
    """The version a request names: its ``A2A-Version`` header, else its ``A2A-Version``
    query parameter, else ``None``."""
    header = next((v for k, v in scope["headers"] if k.lower() == _VERSION_KEY), None)
    if header is not None:
        return header
    query = scope.get("query_string", b"")
    if _VERSION_KEY not in query.lower():
        return None
    return next((v for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
                 if k.lower() == VERSION_HEADER.lower()), None)


class ClassifyRequests:
    """Puts each HTTP request's :class:`ClassifiedRequest` in its scope (:data:`REQUEST`),
    for every layer inside. ``rest_prefix`` is where HTTP+JSON begins (A2A 0.3's under
    ``rest_prefix/v1/``); ``rpc_paths`` are JSON-RPC's, ``card_paths`` the card's and its key
    set's; ``/health`` and ``/metrics`` are the bridge's own."""

    def __init__(self, app, *, rpc_paths, rest_prefix: str, card_paths=()) -> None:
        self.app, self.rest_prefix = app, rest_prefix
        self._rest_under, self._v03_under = rest_prefix + "/", rest_prefix + V03_PREFIX + "/"
        # exact paths -> their binding; HTTP+JSON, a prefix, is asked first
        self._exact = {"/health": Binding.HEALTH, "/metrics": Binding.METRICS,
                       **{path: Binding.CARD for path in card_paths},
                       **{path: Binding.JSONRPC for path in rpc_paths}}

    def __call__(self, scope, receive, send):
        # not a coroutine: the inner app's awaitable is the answer (no frame of this layer
        # stays for a stream's whole life)
        if scope["type"] == "http":
            scope[REQUEST] = self.classify(scope)  # in place: every layer inside shares the scope
        return self.app(scope, receive, send)

    def classify(self, scope) -> ClassifiedRequest:
        """What the HTTP request of ``scope`` is (its path, method and headers read once)."""
        path = scope["path"]
        if path.startswith(self._rest_under) or path == self.rest_prefix:
            binding = Binding.HTTP_JSON_V03 if path.startswith(self._v03_under) else Binding.HTTP_JSON
            return ClassifiedRequest(binding, version_asked(scope), rest_method(scope["method"], path))
        return ClassifiedRequest(self._exact.get(path, Binding.OTHER), version_asked(scope))
