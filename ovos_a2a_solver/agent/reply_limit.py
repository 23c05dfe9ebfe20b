# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The most bytes the client reads of one reply, counted as they arrive: an httpx transport.

Every response the client's httpx client receives passes through :class:`ReplyLimitTransport`
before anything holds it whole (the a2a-sdk's parsers, the bodies made readable, a card): a
JSON body (a blocking answer, GetTask, ListTasks, a card, a token) may have ``limit`` bytes
in all, an event stream ``limit`` bytes in each line (its whole length is bounded by what is
said and by the turn's deadline). The chunk that passes the limit raises
:class:`~ovos_a2a_solver.agent.exceptions.ReplyTooLargeError` instead of being given, so
reading stops there and httpx closes the connection.
"""
from __future__ import annotations

from typing import AsyncIterator

import httpx

from ovos_a2a_solver.agent.exceptions import ReplyTooLargeError


class _BoundedBody(httpx.AsyncByteStream):
    """A body of at most ``limit`` bytes."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._stream:
            read += len(chunk)
            if read > self._limit:
                raise ReplyTooLargeError(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _BoundedLines(httpx.AsyncByteStream):
    """An event stream whose every line has at most ``limit`` bytes (a line ends at LF or CR)."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        line = 0  # bytes of the line not ended yet
        async for chunk in self._stream:
            start = 0
            while True:
                ends = [i for i in (chunk.find(b"\n", start), chunk.find(b"\r", start)) if i >= 0]
                if not ends:
                    line += len(chunk) - start
                    break
                end = min(ends)
                line += end - start
                if line > self._limit:
                    break
                line, start = 0, end + 1
            if line > self._limit:
                raise ReplyTooLargeError(self._limit, "event stream line")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class ReplyLimitTransport(httpx.AsyncBaseTransport):
    """Wraps a transport: no response body gives more than ``limit`` bytes (an event stream:
    no line), see the module."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:  # said at once: nothing of it is read
            await response.aclose()
            raise ReplyTooLargeError(self._limit)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            response.stream = _BoundedLines(response.stream, self._limit)
        else:
            response.stream = _BoundedBody(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
