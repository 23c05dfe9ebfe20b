# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""HTTP 413 for a request body over ``max_body`` bytes: at once when ``Content-Length`` says
so, else as soon as a chunked body grows past the limit (:class:`BodyLimit`, an ASGI middleware)."""
from __future__ import annotations

from a2a.utils.errors import InvalidRequestError

from ovos_a2a_solver.bridge.edge.classify import classified
from ovos_a2a_solver.bridge.edge.errors import jsonrpc_error_body, send_json, status_body


class BodyTooLarge(Exception):
    """A request body grew past the limit while it was read."""


class BodyLimit:
    """HTTP 413 for a body over ``max_body`` bytes (also a chunked one), in the shape of the
    request's binding."""

    def __init__(self, app, *, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
        if length.isdigit() and int(length) > self.max_body:
            return await self._refuse(scope, send)
        received, started, read = 0, False, False

        def counted_receive():
            # once the body is in, the server's receive() itself (no frame of this one waits
            # for a stream's disconnect)
            return receive() if read else counting()

        async def counting():
            nonlocal received, read
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                raise BodyTooLarge
            read = message["type"] != "http.request" or not message.get("more_body", False)
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
        if classified(scope).binding.rest:
            await send_json(send, 413, status_body(413, "INVALID_ARGUMENT", "INVALID_REQUEST", message))
        else:
            await send_json(send, 413, jsonrpc_error_body(InvalidRequestError(message=message)))
