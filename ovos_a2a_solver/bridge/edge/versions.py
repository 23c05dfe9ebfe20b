# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which A2A protocol version a request speaks (A2A 1.0 §3.6): one rule for every binding.

A client names the version in the ``A2A-Version`` header (HTTP), the ``A2A-Version``
query parameter (HTTP, when there is no header) or the ``a2a-version`` metadata (gRPC).
The version is ``Major.Minor``; a patch number is ignored (``1.0.3`` is 1.0). An absent
or empty value means 0.3. A version the binding does not serve, or a value that is not
a version at all, is VersionNotSupported: JSON-RPC -32009, HTTP 400 and gRPC
``FAILED_PRECONDITION``, each with the ``google.rpc.ErrorInfo`` reason
``VERSION_NOT_SUPPORTED``.

What each binding serves is what the agent card offers (:func:`served_versions`): the
bridge serves 1.0 on every binding and 0.3 on JSON-RPC and HTTP+JSON. Over JSON-RPC the
method names a version too (``SendMessage`` is 1.0, ``message/send`` 0.3), over HTTP+JSON
the path (0.3's begin with ``/v1``): a request whose version is not its method's or path's
is VersionNotSupported as well.

:class:`VersionCheck` (an ASGI middleware) holds every JSON-RPC and HTTP+JSON request to this
rule; the gRPC interceptor of :mod:`.grpc_rules` holds gRPC calls to it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

# the SDK's routes before its 0.3 adapter: they import each other, and only in this order
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.utils.errors import VersionNotSupportedError

from ovos_a2a_solver.bridge.edge.classify import VERSION_HEADER as HEADER
from ovos_a2a_solver.bridge.edge.classify import classified
from ovos_a2a_solver.bridge.edge.errors import jsonrpc_error_body, rest_error_body, send_json

#: what an absent or empty version means (A2A 1.0 §3.6.2)
UNNAMED = "0.3"
_VERSION = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.\d{1,9})?")
_SHOWN = 40  # characters of a bad value repeated in an error


def requested_version(value: str | bytes | None) -> str:
    """The ``Major.Minor`` version ``value`` names (``"1.0"`` for ``" 1.0.3 "``), ``"0.3"``
    for an absent or empty one; VersionNotSupportedError for a value that is not a version."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = (value or "").strip()
    if not text:
        return UNNAMED
    match = _VERSION.fullmatch(text)
    if match is None:
        raise VersionNotSupportedError(
            message=f"A2A version {text[:_SHOWN]!r} is not a version: send Major.Minor, e.g. 1.0")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def negotiate(value: str | bytes | None, served: Iterable[str], where: str) -> str:
    """The version of a request that names ``value``, if ``served`` includes it; else
    VersionNotSupportedError saying what is served ``where`` (e.g. "over gRPC")."""
    version = requested_version(value)
    served = tuple(served)
    if version not in served:
        named = value.decode("latin-1") if isinstance(value, bytes) else value
        shown = f"A2A version {version}" if (named or "").strip() else f"A request without A2A-Version (A2A {version})"
        raise VersionNotSupportedError(message=f"{shown} is not served {where}: send A2A-Version "
                                               f"{' or '.join(served)}")
    return version


def served_versions(interfaces) -> dict[str, tuple[str, ...]]:
    """Binding (``JSONRPC``, ``HTTP+JSON``, ``GRPC``) → the ``Major.Minor`` versions the
    agent card's ``supported_interfaces`` offer on it, in the card's order."""
    served: dict[str, tuple[str, ...]] = {}
    for interface in interfaces:
        version = requested_version(interface.protocol_version)
        if version not in served.get(interface.protocol_binding, ()):
            served[interface.protocol_binding] = (*served.get(interface.protocol_binding, ()), version)
    return served


#: the A2A version each JSON-RPC method name belongs to
METHOD_VERSIONS = {**{name: "1.0" for name in JsonRpcDispatcher.METHOD_TO_MODEL},
                   **{name: "0.3" for name in JSONRPC03Adapter.METHOD_TO_MODEL}}


class VersionCheck:
    """The A2A version of every JSON-RPC and HTTP+JSON request, by this module's rule.

    The version is the one the request asks for (its classification's ``version_asked``:
    the ``A2A-Version`` header, else the ``A2A-Version`` query parameter). One the binding
    does not serve (``served``, from the card), or over JSON-RPC one that is not the version
    of the method (known once :mod:`.wire` read the body), is refused with
    VersionNotSupported (-32009; HTTP+JSON: 400); so is, over HTTP+JSON, one whose version is
    not its path's (A2A 0.3's paths begin with ``/v1``). A request that passes goes on with the
    header ``A2A-Version: Major.Minor`` alone, so the a2a-sdk reads the version decided here
    (it would not read the query, and counts any 1.x as 1.0)."""

    def __init__(self, app, *, served: dict[str, tuple[str, ...]]) -> None:
        self.app, self.served = app, served
        # (value named, method or path version) -> the version decided: requests repeat a few
        self._decided: dict[tuple, str] = {}

    def __call__(self, scope, receive, send):
        # not a coroutine: the inner app's (or the refusal's) awaitable is the answer, and no
        # frame of this layer stays for as long as the request (a stream's whole life)
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        request = classified(scope)
        rest = request.binding.rest
        method = request.method
        if not rest and method is None:  # the cards, /health, and what the SDK refuses as it is
            return self.app(scope, receive, send)
        value = request.version_asked
        try:
            if rest:
                path_version = request.binding.path_version
                version = self._decided.get((value, path_version))
                if version is None:
                    negotiate(value, self.served.get("HTTP+JSON", ()), "over HTTP+JSON")
                    version = negotiate(value, (path_version,),
                                        f"at {scope['path'][:80]} (an A2A {path_version} path)")
                    self._remember((value, path_version), version)
            else:
                if method not in METHOD_VERSIONS:  # the SDK answers -32601
                    return self.app(scope, receive, send)
                version = self._decided.get((value, method))
                if version is None:
                    negotiate(value, self.served.get("JSONRPC", ()), "over JSON-RPC")
                    version = negotiate(value, (METHOD_VERSIONS[method],),
                                        f"for {method} (an A2A {METHOD_VERSIONS[method]} method)")
                    self._remember((value, method), version)
        except VersionNotSupportedError as error:
            if rest:
                return send_json(send, *rest_error_body(error))
            return send_json(send, 200, jsonrpc_error_body(error, request.request_id))
        encoded = version.encode()
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != VERSION_KEY]
        if value != encoded or len(headers) != len(scope["headers"]) - 1:
            # the scope is this request's own: its headers are replaced in place (a copy of the
            # scope would live as long as the request, a stream's whole life). When the one header
            # already names the version decided (as most clients send it), it stays as it is.
            scope["headers"] = [*headers, (VERSION_KEY, encoded)]
        return self.app(scope, receive, send)

    def _remember(self, key: tuple, version: str) -> None:
        """Keep a decision passed, for the next request naming the same; a few hundred at most
        (a client may send any value)."""
        if len(self._decided) >= REMEMBERED:
            self._decided.clear()
        self._decided[key] = version


REMEMBERED = 256  # version decisions kept (see ``VersionCheck._remember``)


VERSION_KEY = HEADER.lower().encode()
