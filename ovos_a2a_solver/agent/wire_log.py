# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The raw exchange with an agent, for a person who wants to see it (``ovos-a2a -v``): an httpx
transport that logs each request and response as they go over the wire, at DEBUG on the
logger ``ovos_a2a_solver.wire``; a streamed response is logged chunk by chunk as it arrives.

Credentials never reach the log: the values of credential-like headers (``Authorization``,
cookies, anything named like a token, key, secret, password or session:
:mod:`~ovos_a2a_solver.credential_headers`) are replaced. When the logger is not enabled for DEBUG (always, unless asked), a
request costs one check.
"""
from __future__ import annotations

import logging
from typing import AsyncIterator

import httpx

from ovos_a2a_solver.credential_headers import credential_header

LOG = logging.getLogger("ovos_a2a_solver.wire")


def _headers(headers: httpx.Headers) -> str:
    return "\n".join(f"{name}: {'<hidden>' if credential_header(name) else value}"
                     for name, value in headers.items())


def _text(body: bytes) -> str:
    return body.decode("utf-8", "replace")


class _LoggedStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            LOG.debug("< %s", _text(chunk).rstrip("\n"))
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class LoggedTransport(httpx.AsyncBaseTransport):
    """Wraps a transport: requests and responses logged as sent and received (see the module)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not LOG.isEnabledFor(logging.DEBUG):
            return await self._inner.handle_async_request(request)
        body = request.read()
        LOG.debug("> %s %s\n%s%s", request.method, request.url, _headers(request.headers),
                  f"\n\n{_text(body)}" if body else "")
        response = await self._inner.handle_async_request(request)
        LOG.debug("< %s %s\n%s", response.status_code, response.reason_phrase or "", _headers(response.headers))
        response.stream = _LoggedStream(response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
