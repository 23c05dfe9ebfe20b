# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The A2A version of every JSON-RPC and HTTP+JSON request, by the rule of
:mod:`.versions` (:class:`VersionCheck`, an ASGI middleware): a version the binding or the
method does not serve is refused with VersionNotSupported (-32009; HTTP+JSON: 400)."""
from __future__ import annotations

from urllib.parse import parse_qsl

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.errors import VersionNotSupportedError

from ovos_a2a_solver.bridge.edge.errors import is_rest, jsonrpc_error_body, rest_error_body, send_json
from ovos_a2a_solver.bridge.edge.rest_v03 import is_v03_rest
from ovos_a2a_solver.bridge.edge.versions import HEADER as VERSION_HEADER
from ovos_a2a_solver.bridge.edge.versions import negotiate


#: the A2A version each JSON-RPC method name belongs to
METHOD_VERSIONS = {**{name: "1.0" for name in JsonRpcDispatcher.METHOD_TO_MODEL},
                   **{name: "0.3" for name in JSONRPC03Adapter.METHOD_TO_MODEL}}


#: where :class:`WireCheck` leaves a JSON-RPC request's (method, id) for :class:`VersionCheck`
JSONRPC_CALL = "ovos_a2a.jsonrpc_call"


class VersionCheck:
    """The A2A version of every JSON-RPC and HTTP+JSON request, by :mod:`versions`' rule.

    The version comes from the ``A2A-Version`` header, else the ``A2A-Version`` query
    parameter. One the binding does not serve (``served``, from the card), or over
    JSON-RPC one that is not the version of the method (from :class:`WireCheck`), is
    refused with VersionNotSupported (-32009; HTTP+JSON: 400); so is, over HTTP+JSON, one whose
    version is not its path's (A2A 0.3's paths begin with ``/v1``). A request that passes goes
    on with the header ``A2A-Version: Major.Minor`` alone, so the a2a-sdk reads the version
    decided here (it would not read the query, and counts any 1.x as 1.0)."""

    def __init__(self, app, *, rest_prefix: str, served: dict[str, tuple[str, ...]]) -> None:
        self.app, self.rest_prefix, self.served = app, rest_prefix, served
        # (value named, method or path version) -> the version decided: requests repeat a few
        self._decided: dict[tuple, str] = {}

    def __call__(self, scope, receive, send):
        # not a coroutine: the inner app's (or the refusal's) awaitable is the answer, and no
        # frame of this layer stays for as long as the request (a stream's whole life)
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        rest = is_rest(scope["path"], self.rest_prefix)
        call = scope.get(JSONRPC_CALL)
        if not rest and call is None:  # the cards, /health, and what the SDK refuses as it is
            return self.app(scope, receive, send)
        value = requested_value(scope)
        try:
            if rest:
                path_version = "0.3" if is_v03_rest(scope["path"], self.rest_prefix) else "1.0"
                version = self._decided.get((value, path_version))
                if version is None:
                    negotiate(value, self.served.get("HTTP+JSON", ()), "over HTTP+JSON")
                    version = negotiate(value, (path_version,),
                                        f"at {scope['path'][:80]} (an A2A {path_version} path)")
                    self._remember((value, path_version), version)
            else:
                method, request_id = call
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
            return send_json(send, 200, jsonrpc_error_body(error, request_id))
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
