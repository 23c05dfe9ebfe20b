"""Wire-level bends of real A2A servers, as ASGI middleware in front of the scripted test agent.

Each bend copies what a real server was seen sending; the agents they apply to are named by
path prefix (see the catalogue in a2a_agent.py):

* :class:`LangGraphShapes`: LangGraph's server answers the A2A 1.0 ``SendStreamingMessage`` and
  ``SubscribeToTask`` (JSON-RPC, ``A2A-Version: 1.0``) with A2A 0.3 events inside the JSON-RPC
  result (``{"kind": "status-update", "status": {"state": "working"}, "final": false, ...}``)
  instead of 1.0 ``StreamResponse`` wrappers; its blocking ``SendMessage`` is proper 1.0. Under
  ``/langgraph-garbled`` each streamed event is valid JSON-RPC whose result no A2A version
  reads (LangGraph's own ``{"event": "values", "data": ...}``).
* :class:`Fasta2aLike`: pydantic-ai's fasta2a writes status timestamps without a zone
  (``"2026-12-01T08:30:05.464623"``) and ignores ``blocking``: a ``SendMessage`` is answered
  with the task as soon as it exists (submitted), and the work goes on.

Both keep a log of the JSON-RPC methods and HTTP+JSON paths their agents were called with:
``GET /_admin/calls`` -> ``[{"agent", "call"}, ...]``.
"""
from __future__ import annotations

import contextlib
import json
import re

from a2a.compat.v0_3.conversions import to_compat_stream_response
from a2a.types import StreamResponse
from a2a.utils.proto_utils import parse_lenient
from starlette.responses import JSONResponse

LANGGRAPH_PREFIX = '/langgraph'
GARBLED_PREFIX = '/langgraph-garbled'
FASTA2A_PREFIX = '/fasta2a'
_ZONED = re.compile(rb'("timestamp"\s*:\s*"[0-9T:.-]+)(?:Z|[+-]00:00)"')


async def request_body(receive) -> bytes:
    """The whole request body (read from ``receive``; give it again with :func:`replaying`)."""
    body, more = b'', True
    while more:
        message = await receive()
        body += message.get('body', b'')
        more = message.get('more_body', False)
    return body


def replaying(body: bytes, receive):
    """A ``receive`` that gives ``body`` once, then what ``receive`` gives (a disconnect)."""
    given = False

    async def replay():
        nonlocal given
        if not given:
            given = True
            return {'type': 'http.request', 'body': body, 'more_body': False}
        return await receive()

    return replay


def _method(body: bytes) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        return json.loads(body)['method']
    return ''


class _Bend:
    """Middleware bending the requests under ``prefix``: reads the request body (logged as its
    JSON-RPC method, or its path), and passes each response body message through
    :meth:`bend_events` (for a stream) or :meth:`bend_body` (the whole body otherwise)."""

    prefix = ''

    def __init__(self, app, calls: list):
        self.app = app
        self.calls = calls

    def applies(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + '/') or path.startswith(self.prefix + '-')

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        if scope['path'] == '/_admin/calls' and scope['method'] == 'GET':
            return await JSONResponse(self.calls)(scope, receive, send)
        if not self.applies(scope['path']) or scope['method'] != 'POST' and '/tasks' not in scope['path']:
            return await self.app(scope, receive, send)
        body = await request_body(receive)
        method = _method(body)
        agent = scope['path'].split('/')[1]
        if '.well-known' not in scope['path']:
            self.calls.append({'agent': agent, 'call': method or f"{scope['method']} {scope['path']}"})
        body = self.bend_request(scope, method, body)
        start: dict = {}
        held: list[bytes] = []

        async def bending(message):
            if message['type'] == 'http.response.start':
                start.update(message, stream=b'text/event-stream' in dict(message['headers']).get(b'content-type', b''))
                return
            if message['type'] != 'http.response.body':
                return await send(message)
            if start['stream']:
                if 'type' in start:  # not sent yet
                    await send({k: v for k, v in start.items() if k != 'stream'})
                    start.clear()
                    start['stream'] = True
                return await send({**message, 'body': self.bend_events(agent, message.get('body', b''))})
            held.append(message.get('body', b''))
            if message.get('more_body'):
                return
            answer = self.bend_body(agent, b''.join(held))
            kept = [(k, v) for k, v in start['headers'] if k.lower() != b'content-length']
            await send({'type': 'http.response.start', 'status': start['status'],
                        'headers': [*kept, (b'content-length', str(len(answer)).encode())]})
            await send({'type': 'http.response.body', 'body': answer})

        await self.app(scope, replaying(body, receive), bending)

    def bend_request(self, scope, method: str, body: bytes) -> bytes:
        return body

    def bend_events(self, agent: str, chunk: bytes) -> bytes:
        return chunk

    def bend_body(self, agent: str, body: bytes) -> bytes:
        return body


def _sse_events(chunk: bytes, bend) -> bytes:
    """``chunk`` with the JSON of each ``data:`` line replaced by ``bend(json)`` (the SDK's server
    writes each event whole, in one body message)."""
    lines = chunk.split(b'\n')
    for n, line in enumerate(lines):
        if line.startswith(b'data:'):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                lines[n] = b'data: ' + json.dumps(bend(json.loads(line[5:]))).encode()
    return b'\n'.join(lines)


class LangGraphShapes(_Bend):
    """A2A 0.3 events on an A2A 1.0 stream (see the module's docstring); under
    ``/langgraph-garbled``, events no A2A version reads."""

    prefix = LANGGRAPH_PREFIX

    def bend_events(self, agent: str, chunk: bytes) -> bytes:
        return _sse_events(chunk, self._garbled if agent.startswith(GARBLED_PREFIX[1:]) else self._v03)

    @staticmethod
    def _v03(response: dict) -> dict:
        event = parse_lenient(response['result'], StreamResponse())
        shaped = to_compat_stream_response(event).result.model_dump(mode='json', by_alias=True, exclude_none=True)
        return {**response, 'result': shaped}

    @staticmethod
    def _garbled(response: dict) -> dict:
        return {**response, 'result': {'event': 'values', 'data': {'messages': [], 'step': 1}}}


class Fasta2aLike(_Bend):
    """Timestamps without a zone, and ``blocking`` ignored (see the module's docstring)."""

    prefix = FASTA2A_PREFIX

    def bend_request(self, scope, method: str, body: bytes) -> bytes:
        rest_send = scope['path'].endswith('/message:send')
        if method not in ('SendMessage', 'message/send') and not rest_send:
            return body
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            request = json.loads(body)
            configuration = (request if rest_send else request['params']).setdefault('configuration', {})
            if method == 'message/send':  # A2A 0.3
                configuration['blocking'] = False
            else:
                configuration['returnImmediately'] = True
            return json.dumps(request).encode()
        return body

    def bend_events(self, agent: str, chunk: bytes) -> bytes:
        return _ZONED.sub(rb'\1"', chunk)

    bend_body = bend_events
