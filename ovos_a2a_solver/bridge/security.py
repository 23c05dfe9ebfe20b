# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Who may call, and how much they may send.

``Guard`` is one ASGI middleware: it refuses request bodies over ``max_body`` (HTTP 413,
with a JSON-RPC error body), and, when credentials are configured, requires HTTP Basic
(``username``/``password``) or a Bearer token on everything but the cards and
``/health`` (HTTP 401 otherwise). A caller's identity becomes the a2a-sdk ``user``, so
tasks are stored and listed per caller. Secrets are compared in constant time and never
logged.
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


class BodyTooLarge(Exception):
    """The request body passed the limit while it was being read."""


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
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return await _refuse(send, 413, -32600, f"request body over {self.max_body} bytes")
        path = scope["path"]
        if self.required and not (path in PUBLIC_PATHS or path.endswith(PUBLIC_SUFFIXES)):
            user = self._authenticate(headers.get("authorization", ""))
            if user is None:
                return await _refuse(send, 401, -32600, "authentication required",
                                     [(b"www-authenticate", b'Basic realm="a2a", charset="UTF-8"')])
            scope["user"], scope["auth"] = SimpleUser(user), AuthCredentials(["authenticated"])

        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise BodyTooLarge()
            return message

        started = False

        async def tracked_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await _refuse(send, 413, -32600, f"request body over {self.max_body} bytes")

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


async def _refuse(send, status: int, code: int, message: str, extra_headers=()) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra_headers]})
    await send({"type": "http.response.body", "body": body})
