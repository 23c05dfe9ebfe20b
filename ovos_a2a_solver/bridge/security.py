# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Who may call, and how much they may send.

``Guard`` is one ASGI middleware: it refuses request bodies over ``max_body`` (HTTP 413,
also for chunked bodies, which it reads up to the limit first), and, when credentials are
configured, requires HTTP Basic (``username``/``password``) or a Bearer token on
everything but the cards and ``/health`` (HTTP 401 otherwise). Errors take the shape of
the binding (JSON-RPC, or google.rpc.Status under ``/rest/``). A caller's identity
becomes the a2a-sdk ``user``, so tasks are stored and listed per caller. Secrets are
compared in constant time, and the ``Authorization`` header is dropped once checked, so
nothing downstream (the SDK's call context, debug logs) ever holds it.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json

from starlette.authentication import AuthCredentials, SimpleUser

from ovos_a2a_solver.bridge.config import BridgeSettings

PUBLIC_SUFFIXES = ("/.well-known/agent-card.json", "/.well-known/agent.json")
PUBLIC_PATHS = ("/health",)


class Guard:
    """Body size limit and authentication, in front of the whole app."""

    def __init__(self, app, settings: BridgeSettings) -> None:
        self.app = app
        self.max_body = settings.max_body
        self.username = settings.username
        self._password = settings.password
        self._tokens = {hashlib.sha256(t.encode()).hexdigest(): t for t in settings.tokens}
        self.required = settings.requires_auth

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        rest = "/rest/" in scope["path"]
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return await _refuse(send, rest, 413, f"request body over {self.max_body} bytes")
        path = scope["path"]
        if self.required and not (path in PUBLIC_PATHS or path.endswith(PUBLIC_SUFFIXES)):
            user = self._authenticate(headers.get("authorization", ""))
            if user is None:
                return await _refuse(send, rest, 401, "authentication required",
                                     [(b"www-authenticate", b'Basic realm="a2a", charset="UTF-8"')])
            scope["user"], scope["auth"] = SimpleUser(user), AuthCredentials(["authenticated"])
        # the credential has done its job: it must not travel on (the SDK copies headers into
        # every call context, which debug logging prints)
        scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"])
        if not length.isdigit() and scope["method"] in ("POST", "PUT", "PATCH"):
            body = await self._read_limited(receive)
            if body is None:
                return await _refuse(send, rest, 413, f"request body over {self.max_body} bytes")
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _read_limited(self, receive) -> bytes | None:
        """The whole body of a request sent without Content-Length, or None past the limit."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _authenticate(self, header: str) -> str | None:
        scheme, _, value = header.partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer" and self._tokens:
            digest = hashlib.sha256(value.strip().encode()).hexdigest()
            for known in self._tokens:
                if hmac.compare_digest(digest, known):
                    return "token-" + known[:12]
        if scheme == "basic" and self._password:
            try:
                user, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            if hmac.compare_digest(user.encode(), self.username.encode()) & \
                    hmac.compare_digest(password.encode(), self._password.encode()):
                return user
        return None


def _replay(body: bytes, receive):
    """A ``receive`` that gives the buffered body once, then what the server sends (disconnects)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send, rest: bool, status: int, message: str, extra_headers=()) -> None:
    """An error in the shape of the binding: google.rpc.Status for REST, JSON-RPC otherwise."""
    if rest:
        name = {401: "UNAUTHENTICATED", 413: "INVALID_ARGUMENT"}.get(status, "INVALID_ARGUMENT")
        payload = {"error": {"code": status, "status": name, "message": message}}
    else:
        payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra_headers]})
    await send({"type": "http.response.body", "body": body})
