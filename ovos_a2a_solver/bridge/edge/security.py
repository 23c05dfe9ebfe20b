# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Who may call, and what of their credentials travels on.

* :class:`CredentialsBackend` is a Starlette ``AuthenticationBackend``: when credentials
  are configured, every request but the cards, their key set and ``/health`` needs HTTP Basic
  (``username``/``password``) or one of the Bearer tokens. The caller becomes the
  request's user, which the a2a-sdk uses as the owner of tasks, so tasks are kept per
  caller. Secrets are compared in constant time. Starlette's ``AuthenticationMiddleware``
  runs it; :func:`unauthenticated` answers its refusals (HTTP 401, in the binding's shape).
* :class:`ScrubCredentials` drops credential-like headers (``Authorization``, ``Cookie``,
  ``Proxy-Authorization``, ``X-API-Key``, anything named like a token, key, secret, password
  or session: :mod:`~ovos_a2a_solver.credential_headers`) once authentication is done, so nothing downstream (the SDK's call context,
  debug logs) ever holds them.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from a2a.utils.errors import InvalidRequestError
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.requests import HTTPConnection
from starlette.responses import Response

from ovos_a2a_solver.bridge.config import CARD_PATHS, JWKS_PATH, BridgeSettings
from ovos_a2a_solver.bridge.edge.classify import classified
from ovos_a2a_solver.bridge.edge.errors import jsonrpc_error_body, status_body
from ovos_a2a_solver.credential_headers import credential_header

PUBLIC_SUFFIXES = (*CARD_PATHS, JWKS_PATH)
PUBLIC_PATHS = ("/health",)
CHALLENGE = 'Basic realm="a2a", charset="UTF-8"'


class CredentialsBackend(AuthenticationBackend):
    """HTTP Basic and Bearer credentials from the bridge's settings."""

    def __init__(self, settings: BridgeSettings) -> None:
        self.username = settings.username
        self._password = settings.password
        self._tokens = [hashlib.sha256(t.encode()).hexdigest() for t in settings.tokens]
        self.required = settings.requires_auth

    async def authenticate(self, conn: HTTPConnection):
        if not self.required:
            return None
        path = conn.url.path
        if path in PUBLIC_PATHS or path.endswith(PUBLIC_SUFFIXES):
            return None
        user = self.caller(conn.headers.get("authorization", ""))
        if user is None:
            raise AuthenticationError("authentication required")
        return AuthCredentials(["authenticated"]), SimpleUser(user)

    def caller(self, header: str) -> str | None:
        """Who the ``Authorization`` header names, or ``None`` if it is not a valid credential."""
        scheme, _, value = header.partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer" and self._tokens:
            digest = hashlib.sha256(value.strip().encode("utf-8", "surrogateescape")).hexdigest()
            for known in self._tokens:
                if hmac.compare_digest(digest, known):
                    return "token-" + known[:12]
        if scheme == "basic" and self._password:
            try:
                decoded = base64.b64decode(value.strip().encode("ascii"), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeError):  # not base64, not ASCII, or not UTF-8 inside
                return None
            user, _, password = decoded.partition(":")
            if hmac.compare_digest(user.encode(), self.username.encode()) & \
                    hmac.compare_digest(password.encode(), self._password.encode()):
                return user
        return None


def unauthenticated():
    """The ``on_error`` of ``AuthenticationMiddleware``: HTTP 401 shaped for the request's
    binding (JSON-RPC's error for all but HTTP+JSON); a request the edge did not classify
    (the ``/health`` and ``/metrics`` several personas share) is answered as HTTP+JSON."""
    def on_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
        headers = {"www-authenticate": CHALLENGE}
        request = classified(conn.scope)
        if request is None or request.binding.rest:
            body = status_body(401, "UNAUTHENTICATED", "UNAUTHENTICATED", str(exc))
        else:
            body = jsonrpc_error_body(InvalidRequestError(message=str(exc)))
        return Response(body, status_code=401, media_type="application/json", headers=headers)
    return on_error


class ScrubCredentials:
    """Drops credential-like request headers before the app sees the request."""

    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, scope, receive, send):
        # not a coroutine: the inner app's own awaitable is the answer, and no frame of this
        # layer stays for as long as the request (a stream's whole life)
        if scope["type"] == "http":
            if any(_is_credential(k) for k, _ in scope["headers"]):
                # in place: what the layers inside note stays visible
                scope["headers"] = [(k, v) for k, v in scope["headers"] if not _is_credential(k)]
        return self.app(scope, receive, send)


#: header names seen, and whether each is credential-like: requests repeat a few names
_CREDENTIAL_NAMES: dict[bytes, bool] = {}
CREDENTIAL_NAMES_KEPT = 512  # names remembered at most (a client may send any)


def _is_credential(name: bytes) -> bool:
    """Whether a header ``name`` is credential-like (:func:`~ovos_a2a_solver.credential_headers.credential_header`),
    remembered."""
    known = _CREDENTIAL_NAMES.get(name)
    if known is None:
        known = credential_header(name.decode("latin-1"))
        if len(_CREDENTIAL_NAMES) >= CREDENTIAL_NAMES_KEPT:
            _CREDENTIAL_NAMES.clear()
        _CREDENTIAL_NAMES[name] = known
    return known
