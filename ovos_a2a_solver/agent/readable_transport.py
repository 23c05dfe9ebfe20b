# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What real agents send, made readable before the a2a-sdk parses it: an httpx transport.

The SDK parses each body strictly, as the version the card names; real agents bend it:

* LangGraph's server answers an A2A 1.0 stream (``SendStreamingMessage``, ``SubscribeToTask``)
  with A2A 0.3 events (``{"kind": "status-update", ...}``), which the SDK's 1.0 parser reads
  as empty events. Such an event is converted to its 1.0 form with the SDK's own 0.3 -> 1.0
  conversions (``a2a.compat.v0_3``).
* pydantic-ai's fasta2a writes timestamps without a zone (``"2026-12-01T08:30:05.464623"``),
  which protobuf refuses, failing the whole answer for one informational field. They are
  read as UTC.

Only responses of A2A calls (not cards) are touched, and an event or body is parsed again
only when its bytes show one of these bends; a normal answer passes with a byte search.
"""
from __future__ import annotations

import json
import logging
import re
from typing import AsyncIterator

import httpx

LOG = logging.getLogger("ovos_a2a_solver")

#: A timestamp that ends right after its seconds: no zone, read as UTC.
_ZONELESS = re.compile(rb'("timestamp"\s*:\s*"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)"')
#: The members of an A2A 1.0 stream event: one of them marks an event as 1.0 already.
_V10_EVENT = ("task", "message", "statusUpdate", "artifactUpdate")


def with_zones(body: bytes) -> bytes:
    """``body`` with each timestamp that names no zone read as UTC."""
    return _ZONELESS.sub(rb'\1Z"', body) if b'"timestamp"' in body else body


def v10_event(data: bytes) -> bytes:
    """One stream event's JSON (bare, or a JSON-RPC response), its A2A 0.3 result in its 1.0
    form; anything else as it was."""
    try:
        envelope = json.loads(data)
        rpc = isinstance(envelope, dict) and "jsonrpc" in envelope
        event = envelope.get("result") if rpc else envelope
        if not isinstance(event, dict) or "kind" not in event or any(key in event for key in _V10_EVENT):
            return data
        converted = _converted(event)
    except Exception as exc:  # noqa: BLE001 - whatever it is, the SDK then reads the event as it came
        LOG.debug("a stream event in an unknown shape, left as it came: %s", exc)
        return data
    return json.dumps({**envelope, "result": converted} if rpc else converted).encode()


def _converted(event: dict) -> dict:
    """A 0.3 stream event (a dict with ``kind``) as a 1.0 ``StreamResponse`` dict."""
    from google.protobuf.json_format import MessageToDict
    from a2a.compat.v0_3 import conversions, types as v03

    model = {"task": v03.Task, "message": v03.Message, "status-update": v03.TaskStatusUpdateEvent,
             "artifact-update": v03.TaskArtifactUpdateEvent}[event["kind"]]
    wrapped = v03.SendStreamingMessageSuccessResponse(result=model.model_validate(event))
    return MessageToDict(conversions.to_core_stream_response(wrapped))


class _ReadableEvents(httpx.AsyncByteStream):
    """An SSE body, line by line (an event's lines are never split), each ``data`` line made
    readable: zone-less timestamps, and (on an A2A 1.0 call) 0.3 events."""

    def __init__(self, stream: httpx.AsyncByteStream, v10: bool) -> None:
        self._stream = stream
        self._v10 = v10

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending: list[bytes] = []  # the start of a line not ended yet (kept in pieces: a long line costs no copies)
        async for chunk in self._stream:
            end = chunk.rfind(b"\n") + 1
            if not end:
                pending.append(chunk)
                continue
            lines = b"".join([*pending, chunk[:end]]) if pending else chunk[:end]
            pending = [chunk[end:]] if end < len(chunk) else []
            yield self._readable(lines)
        if pending:
            yield self._readable(b"".join(pending))

    def _readable(self, lines: bytes) -> bytes:
        lines = with_zones(lines)
        if self._v10 and b'"kind"' in lines:
            lines = b"\n".join(b"data: " + v10_event(line[5:]) if line.startswith(b"data:") else line
                               for line in lines.split(b"\n"))
        return lines

    async def aclose(self) -> None:
        await self._stream.aclose()


class _ReadableBody(httpx.AsyncByteStream):
    """A JSON body, whole, its zone-less timestamps read as UTC."""

    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield with_zones(b"".join([chunk async for chunk in self._stream]))

    async def aclose(self) -> None:
        await self._stream.aclose()


class ReadableTransport(httpx.AsyncBaseTransport):
    """Wraps a transport: the bodies of A2A calls come out readable (see the module)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        if request.method == "GET" and request.url.path.endswith(".json"):  # a card or a key set
            return response
        kind = response.headers.get("content-type", "")
        if kind.startswith("text/event-stream"):
            v10 = request.headers.get("a2a-version", "").startswith("1")
            stream: httpx.AsyncByteStream = _ReadableEvents(response.stream, v10)
        elif "json" in kind:
            stream = _ReadableBody(response.stream)
        else:
            return response
        response.stream = stream  # as httpx's own client wraps it (its Content-Length was checked below)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
