#!/usr/bin/env python3
"""Scripted A2A test agents, served by the real a2a-sdk 1.3 server stack.

Usage::

    python test/support/a2a_agent.py [PORT] [--grpc-port N] [--foreign-url URL] [--token-url URL] [--issuer URL]

PORT 0 (the default) and N 0 pick free ports. Everything binds to 127.0.0.1.
Once the HTTP and gRPC servers both accept connections, exactly one JSON line
is printed to stdout: ``{"url": "http://127.0.0.1:PORT", "grpc": "127.0.0.1:GPORT"}``.
SIGTERM / SIGINT stop the process within about a second.

Every agent lives under ``{url}/{name}``:
card ``{url}/{name}/.well-known/agent-card.json`` (ETag / 304 from the SDK),
JSON-RPC 1.0 at ``{url}/{name}/`` (also ``{url}/{name}``),
HTTP+JSON 1.0 under ``{url}/{name}/rest``. Each agent has its own
InMemoryTaskStore and DefaultRequestHandler. ``ctx`` below is the context id
the SDK assigned.

Behaviour agents:
  echo             working "working..." -> artifact "echo[ctx]: TEXT" -> completed.
                   "sleep:N" sleeps N seconds first (cancellable); "hold:NAME" works until
                   POST /_admin/release?hold=NAME (cancellable).
  memory           per-context memory: "remember X" -> "ok, I will remember X";
                   "recall" -> "you told me X" / "I remember nothing";
                   "login" -> INPUT_REQUIRED "password?", follow-up -> "logged in";
                   anything else -> "memory[ctx]: TEXT".
  ask              INPUT_REQUIRED "which city?"; follow-up -> "continued[ctx]: TEXT".
                   "sleep:N" works N seconds first; "hold:NAME" works until released, as echo's.
  auth             AUTH_REQUIRED "please sign in"; follow-up -> "signed in[ctx]: TEXT".
  fail             FAILED "the backend exploded".
  reject           REJECTED "I will not do that".
  cancelled        CANCELED "stopped by the agent".
  refuse           echo, but refuses (InvalidParamsError "unknown or expired
                   context") a context id it never issued or that was expired.
Streaming shapes (about 30 ms between events):
  stream-chunks    one artifact in 4 chunks (append) "Hello there. How are you today? Fine."
  stream-cumulative  one artifact re-sent whole: "The answer" .. "The answer is 42."
  stream-rewrite   "The answer is 4" then replaced by "The answer is 42."
  stream-multi     two artifacts "First part." and "Second part."
  stream-message   a single Message "message reply[ctx]" (no task)
  stream-status    no artifacts; "thinking..." twice; COMPLETED message "status answer[ctx]"
  stream-snapshot  a second Task snapshot carrying the answer (see SnapshotScript)
  stream-correction, stream-interim, stream-respace, stream-interleaved, stream-poem,
  stream-bare      rewritten and unpunctuated shapes (see REWRITE_SHAPES)
  stream-repeat    appended chunks, then a final Task snapshot repeating them
  status-cumulative, status-delta
                   the answer streamed in "working" status messages (the text so far / each new chunk)
                   after the notes "Searching…" and "Looking it up.", then the whole as an artifact
                   (see STATUS_SHAPES); "gated" holds the artifact until POST /_admin/release, a
                   number of seconds paces the status messages
  status-notes     the progress notes of NOTES_BEFORE_ANSWER ("Searching flights…", ...) in "working" status
                   messages, then the answer of status-delta as an artifact; paced and gated the same way
  stream-paced     the chunks of status-delta (without its notes) as appended chunks of the artifact,
                   paced and gated the same way
  status-rechunked status-delta, whose artifact then streams the answer again in those chunks
  stream-gated     "First sentence. ", waits for POST /_admin/release, "Second sentence."
  stream-gated-number  the same with "Sentence 1." and "Sentence 2." (the first one's end is unsure: "1.5"?)
  stall            working, then sleeps 600 s (cancellable)
  stall-held       says nothing, not even its task, until POST /_admin/release; then as stall
  push             echo, with push notifications by the a2a-sdk's own config store and sender
  cut              three chunks 0.3 s apart, then completed; a SendStreamingMessage
                   response is cut (connection dropped) after the first; the task goes on
  drip             a chunk "drop N. " every 0.2 s for a minute
  metadata         answers with the message's metadata, as JSON with sorted keys
  parts            "Here is your report." + a file link (report.pdf); data {temperature, unit}; a raw chart.png
  langgraph        stream-chunks, its streams in A2A 0.3 shapes on a 1.0 JSON-RPC stream, as LangGraph's
                   server sends them (see bent_wire.LangGraphShapes); blocking SendMessage is proper 1.0
  langgraph-garbled  the same, each streamed event valid JSON-RPC that no A2A version reads
  data-question    INPUT_REQUIRED with no status message, its question "which city?" only in an
                   "Interrupt" artifact of data {"id", "value"} (as LangGraph sends an interrupt);
                   follow-up -> "continued[ctx]: TEXT"
Answers in odd places, or none:
  history-answer   the answer of status-delta (its notes first) in "working" status messages, then COMPLETED
                   with no artifact and no status message: the final task holds the answer only in its history
  history-question a "working" status message "Sorry, the weather service is down.", then INPUT_REQUIRED
                   with no message (the text only in the task's history); follow-up -> "continued[ctx]: TEXT"
  wordless         COMPLETED with an artifact and a status message of empty parts (a model that raised);
                   "ask": INPUT_REQUIRED without a word anywhere; "hello": "heard[ctx]: hello";
                   follow-up -> "continued[ctx]: TEXT"
  schema-question  INPUT_REQUIRED "Which city do you mean?" in a status message that also holds a data part
                   (the suspended call's payload and the JSON schema of the reply); follow-up ->
                   "continued[ctx]: TEXT"
  forgetful        "login": INPUT_REQUIRED "password?", follow-up -> "logged in"; anything else ->
                   "new task[ctx]: TEXT". A streamed continuation of a task it does not have (after
                   /_admin/forget) opens its SSE response, then breaks it with "Task not found" inside
                   (see ForgetfulStream)
  fasta2a, fasta2a-rest, fasta2a-v03, fasta2a-stream, fasta2a-stream-rest, fasta2a-stream-v03
                   echo after 0.2 s submitted and 0.2 s working ("sleep:N": N s; "hold:NAME": until released, as
                   echo's), as pydantic-ai's fasta2a answers (see
                   bent_wire.Fasta2aLike): status timestamps without a zone, and SendMessage answered at
                   once with the submitted task whatever its blocking; over JSON-RPC / HTTP+JSON 1.0 /
                   JSON-RPC 0.3, the card offering no streaming (-stream: offering it)
  flaky            echo over JSON-RPC; POST /_admin/flaky?count=N&status=S&retry_after=R refuses the
                   next N POSTs with HTTP S (503) and Retry-After R
  stubborn         drip, but CancelTask is refused (TaskNotCancelable)
  flood            "N": N chunks of one artifact without pause (a word each, a sentence every tenth)
  huge             "N [C]": an answer of N characters of short sentences ("Line 12 is here. "), appended
                   in chunks of C characters (64 KiB) without pause; GET /_admin/huge says how many
                   chunks each turn sent
Card / transport variants (echo behaviour):
  jsonrpc-only, rest-only, grpc-only (card: GRPC at 127.0.0.1:GPORT),
  v03 (card: only a JSONRPC 0.3 interface, SDK compat rendering; 0.3 JSON-RPC),
  v03-legacy (same endpoint, card with only the 0.3 fields, as a 0.3 server sends it),
  hybrid (JSONRPC 1.0 + 0.3 on one URL), old (card only at .well-known/agent.json),
  memory-rest, memory-v03-rest (memory behaviour over 1.0 / 0.3 HTTP+JSON only), memory-v03-rest-js and
  memory-v03-js (memory behaviour over 0.3 HTTP+JSON / 0.3 JSON-RPC, their errors worded as the
  A2A JS SDK 0.3 words them: an HTTP+JSON error as {"code", "message"}, a streaming request's
  error as an SSE "event: error"; the real one is in test/interop/test_js_sdk.py),
  cached (Cache-Control: max-age=1),
  upgradable, movable (card and bindings switched in place by /_admin/upgrade),
  huge-card (a 50 MB card, streamed without Content-Length),
  foreign (with --foreign-url: card pointing at URL),
  redirect (with --foreign-url: card answers 307 to URL's card).
Signed cards (echo behaviour; ES256 by a key made at start, kid "test-agent-key", its JWK Set at
{url}/{name}/.well-known/jwks.json, named in the signature's jku):
  signed           a valid signature.
  signed-tampered  signed, then its description changed.
  signed-unknown-key  signed by a second key, whose kid the JWK Set does not hold.
  signed-foreign-jku  jku on another origin (http://localhost:PORT/signed/...: the same
                   server and a valid key set, but another host name).
Security (echo behaviour; the card declares the schemes and requirements; a request that
satisfies none of them gets HTTP 401 before it reaches the agent; the cards stay public):
  secure           HTTP bearer "bearer": "Authorization: Bearer s3cret"
  keyed            API key "key": header "X-Agent-Key: k-123"
  basic            HTTP Basic "basic": user "ada", password "lovelace"
  oauth            OAuth2 client credentials "oauth", scope "chat": a token from
                   POST {url}/token (clients "client-1"/"secret-1", tokens for an hour;
                   "short-lived"/"secret-2", tokens for 1 s), sent as Bearer
  either           "oauth" with scope "chat", or else "key"
  keyed-v03        keyed, speaking A2A 0.3, its card with only the 0.3 fields
  oauth-rest       oauth over HTTP+JSON only
  oauth-plain      OAuth2 whose token URL is plain http on another origin
  oauth-localhost  OAuth2 whose token URL is this server's, named http://localhost:PORT/token (another origin)
  oauth-elsewhere  (with --token-url URL) OAuth2 whose token URL is URL
  keyed-host, keyed-length, keyed-spaced, keyed-crlf, keyed-cookie
                   an API key in a header the transport owns (Host, Content-Length), in a header whose
                   name is no header name ("X Agent Key", one with a line break in it), in a cookie
                   whose name is no cookie name
  keyed-twice      a bearer token and an API key in Authorization, together
  keyed-host-or-key  an API key in Host, or else "key"
  guarded          needs the bearer token, but its card declares no scheme
  grpc-oauth       the card of grpc-only (its gRPC server) requiring "oauth"; over gRPC
                   a revoked token is refused UNAUTHENTICATED (other calls pass)
  foreign-keyed    (with --foreign-url) a card requiring "key" whose interface is URL
Sign-in (with --issuer URL: an OAuth 2.0 authorization server's issuer, support/authorization_server.py;
the token of a request is checked at its introspection endpoint, and the account it is for is what the
agent says):
  signin           OAuth2 with a device-code flow "device" (the issuer's endpoints), scope "calendar";
                   "calendar of ACCOUNT: TEXT"
  signin-oidc      the same, by OpenID Connect "oidc" (the issuer's discovery URL)
  signin-later     declares "device" but requires nothing: a message without a valid token is answered
                   AUTH_REQUIRED "Please sign in to read your calendar."; one with -> "calendar of ACCOUNT: TEXT"
                   (a continuation of that task too)

Admin endpoints (plain JSON):
  GET    /_admin/stats    {"card_fetches": {agent: n}, "messages": {agent: n}, "cancels": {agent: n}}
  GET    /_admin/headers  every request received (admin excluded; gRPC calls too, with
                          their metadata as headers); DELETE clears
  POST   /_admin/forget   empty every task store (agent restart that lost tasks)
  POST   /_admin/finish   mark INPUT_REQUIRED / AUTH_REQUIRED tasks COMPLETED
  POST   /_admin/expire   expire every context issued so far
  POST   /_admin/release  let stream-gated(-number) send its second sentence, a gated status-* its artifact,
                          stall-held its task
  POST   /_admin/release?hold=NAME  end the work of the turns "hold:NAME" of echo, ask and fasta2a*, and of
                          those to come (a name stays released); unreleased, such work ends after 60 s
  POST   /_admin/flaky?count=N&status=S&retry_after=R[&agent=NAME]   see the flaky agent (NAME: refuse
                          another agent's requests instead)
  GET    /_admin/tokens   {"requests": [{"grant_type", "scope", "client"}, ...], "issued": [token, ...]}
  POST   /_admin/revoke   revoke every token issued so far (the agents answer 401 to them)
  GET    /_admin/huge     {"chunks": [n, ...]}: the chunks each turn of the huge agent sent, in order
  GET    /_admin/streams  [{"agent", "events"}, ...]: each streamed reply (SendStreamingMessage) and the
                          events it sent (until the client closed it)
  GET    /_admin/calls    [{"agent", "call"}, ...]: the JSON-RPC methods (HTTP+JSON: method and path) the
                          langgraph* and fasta2a* agents were called with, in order
  GET    /_admin/message-ids  {"processed": {agent: [messageId, ...]}, "refused": [messageId, ...]}
  POST   /_admin/upgrade?agent=NAME[&variant=N]  switch an upgradable agent's card and
                          bindings in place (upgradable: 0.3 -> 1.0; movable: JSON-RPC -> HTTP+JSON)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import signal
import socket
import sys

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import grpc
import httpx

from google.protobuf.json_format import MessageToDict
import uvicorn

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import (
    DefaultRequestHandler,
    GrpcHandler,
    RequestHandler,
)
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import (BasePushNotificationSender, InMemoryPushNotificationConfigStore, InMemoryTaskStore,
                              TaskUpdater)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    APIKeySecurityScheme,
    ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow,
    HTTPAuthSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    a2a_pb2_grpc,
)
from a2a.utils.errors import (A2A_REASON_TO_ERROR, JSON_RPC_ERROR_CODE_MAP, InvalidParamsError, TaskNotCancelableError,
                              UnsupportedOperationError)
from a2a.utils.signing import create_agent_card_signer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from urllib.parse import parse_qs, unquote

from bent_wire import Fasta2aLike, LangGraphShapes, replaying, request_body


STEP = 0.03  # pause between streamed events
BEARER_TOKEN = 's3cret'
API_KEY_HEADER, API_KEY = 'X-Agent-Key', 'k-123'
BASIC_USER, BASIC_PASSWORD = 'ada', 'lovelace'
OAUTH_CLIENTS = {'client-1': ('secret-1', 3600), 'short-lived': ('secret-2', 1)}  # id: (secret, token lifetime)
OAUTH_SCOPE = 'chat'
SIGN_IN_SCOPE = 'calendar'
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


@dataclass
class Observations:
    """State shared by the agents and the admin endpoints."""

    agent_names: list[str] = field(default_factory=list)
    card_fetches: Counter = field(default_factory=Counter)
    messages: Counter = field(default_factory=Counter)
    cancels: Counter = field(default_factory=Counter)
    huge_chunks: list = field(default_factory=list)  # chunks each turn of the huge agent sent
    streams: list = field(default_factory=list)  # each streamed reply: its agent, the events it sent
    message_ids: dict[str, list[str]] = field(default_factory=dict)   # agent -> messageIds it processed
    flaky: dict = field(default_factory=lambda: {'count': 0, 'status': 503, 'retry_after': None, 'refused': []})
    requests: list[dict] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    handlers: dict[str, ObservedHandler] = field(default_factory=dict)
    switches: dict[str, Switch] = field(default_factory=dict)
    token_requests: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # bent_wire's agents: each call's JSON-RPC method (or path)
    tokens: dict[str, bool] = field(default_factory=dict)  # issued token -> still valid


# --------------------------------------------------------------------------
# Executors: a Turn wraps one execute() call; scripts are async functions.
# --------------------------------------------------------------------------


class Turn:
    """One execute() call: the user's text plus helpers to answer."""

    def __init__(self, context: RequestContext, queue: EventQueue):
        self.context = context
        self.queue = queue
        self.text = context.get_user_input()
        self.task: Task | None = context.current_task
        self.is_followup = context.current_task is not None
        self.updater: TaskUpdater | None = None

    @property
    def context_id(self) -> str:
        return self.task.context_id if self.task else self.context.context_id

    async def open(self) -> TaskUpdater:
        """Enqueue the Task first when it is new; return its updater."""
        if self.task is None:
            self.task = new_task_from_user_message(self.context.message)
            await self.queue.enqueue_event(self.task)
        self.updater = TaskUpdater(self.queue, self.task.id, self.task.context_id)
        return self.updater

    def msg(self, text: str) -> Message:
        return self.updater.new_agent_message([Part(text=text)])

    async def artifact(self, text: str, artifact_id: str = 'answer', **kw) -> None:
        await self.updater.add_artifact([Part(text=text)], artifact_id=artifact_id, name=artifact_id, **kw)

    async def answer(self, text: str) -> None:
        await self.artifact(text)
        await self.updater.complete()


Script = Callable[[Turn], Awaitable[None]]


class ScriptedExecutor(AgentExecutor):
    def __init__(self, script: Script, cancelable: bool = True):
        self.script = script
        self.cancelable = cancelable

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await self.script(Turn(context, event_queue))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if not self.cancelable:
            raise TaskNotCancelableError('this work cannot be stopped halfway')
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def pause() -> None:
    await asyncio.sleep(STEP)


#: the work of the turns "hold:NAME", each ended by POST /_admin/release?hold=NAME
HOLDS: dict[str, asyncio.Event] = {}
HOLD_AT_MOST = 60.0  # seconds: a test that failed before its release leaves no turn working for good
WORKS = ('sleep:', 'hold:')  # the texts that ask for work before the answer


async def work(text: str) -> None:
    """The work a turn's text asks for: "sleep:N" N seconds, "hold:NAME" until NAME is released."""
    if text.startswith('sleep:'):
        await asyncio.sleep(float(text[len('sleep:'):]))
    elif text.startswith('hold:'):
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(HOLDS.setdefault(text[len('hold:'):], asyncio.Event()).wait(), HOLD_AT_MOST)


async def echo(turn: Turn) -> None:
    await turn.open()
    await turn.updater.start_work(turn.msg('working...'))
    await work(turn.text)
    await turn.answer(f'echo[{turn.context_id}]: {turn.text}')


async def metadata(turn: Turn) -> None:
    """Answers with the message's metadata, as JSON with sorted keys."""
    await turn.open()
    data = MessageToDict(turn.context.message.metadata) if turn.context.message.HasField('metadata') else {}
    await turn.answer(json.dumps(data, sort_keys=True))


async def more_than_text(turn: Turn) -> None:
    """A text part and a file link in one artifact, a data part in a second, a raw file in a third."""
    from google.protobuf import struct_pb2

    await turn.open()
    data = struct_pb2.Value()
    data.struct_value.update({'temperature': 21, 'unit': 'celsius'})
    await turn.updater.add_artifact([Part(text='Here is your report.'),
                                     Part(url='https://example.com/files/report.pdf', filename='report.pdf',
                                          media_type='application/pdf')], artifact_id='report')
    await turn.updater.add_artifact([Part(data=data)], artifact_id='reading')
    await turn.updater.add_artifact([Part(raw=b'PNG...', media_type='image/png', filename='chart.png')],
                                    artifact_id='chart')
    await turn.updater.complete()


async def drip(turn: Turn) -> None:
    """Streams a short chunk every 0.2 s for a minute: a reader never waits long."""
    await turn.open()
    await turn.updater.start_work(turn.msg('working...'))
    for n in range(300):
        await turn.artifact(f'drop {n}. ', append=n > 0)
        await asyncio.sleep(0.2)
    await turn.updater.complete()


async def flood(turn: Turn) -> None:
    """Streams N chunks (the text is N) as fast as it can: a word each, a sentence every tenth."""
    count = int(turn.text) if turn.text.strip().isdigit() else 100
    await turn.open()
    await turn.updater.start_work()
    for n in range(count):
        word = f'word{n}. ' if n % 10 == 9 else f'word{n} '
        await turn.artifact(word, append=n > 0, last_chunk=n == count - 1)
    await turn.updater.complete()


HUGE_CHUNK = 64 * 1024


def huge_answer(obs: 'Observations') -> Script:
    async def huge(turn: Turn) -> None:
        """N characters of short sentences, appended in chunks of C as fast as it can."""
        words = turn.text.split()
        size = int(words[0]) if words and words[0].isdigit() else HUGE_CHUNK
        chunk_size = int(words[1]) if len(words) > 1 and words[1].isdigit() else HUGE_CHUNK
        await turn.open()
        await turn.updater.start_work()
        sent, line, chunks = 0, 0, obs.huge_chunks
        chunks.append(0)
        while sent < size:
            sentences = []
            length = 0
            while length < min(chunk_size, size - sent):
                sentences.append(f'Line {line} is here. ')
                length += len(sentences[-1])
                line += 1
            chunk = ''.join(sentences)[:size - sent]
            sent += len(chunk)
            await turn.artifact(chunk, append=sent > len(chunk), last_chunk=sent >= size)
            chunks[-1] += 1
            await asyncio.sleep(0)  # a CancelTask ends it between chunks
        await turn.updater.complete()

    return huge


async def cut(turn: Turn) -> None:
    """Three appended chunks, 0.3 s apart, then completed (the ``CutStream`` middleware cuts
    the stream that carries them after the first)."""
    await turn.open()
    await turn.updater.start_work(turn.msg('working...'))
    chunks = ('First part. ', 'Second part. ', 'Third part.')
    for n, chunk in enumerate(chunks):
        await turn.artifact(chunk, append=n > 0, last_chunk=n == len(chunks) - 1)
        await asyncio.sleep(0.3)
    await turn.updater.complete()


async def stall(turn: Turn) -> None:
    await turn.open()
    await turn.updater.start_work(turn.msg('working...'))
    await asyncio.sleep(600)
    await turn.answer(f'echo[{turn.context_id}]: {turn.text}')


def held(release: asyncio.Event, script: Script) -> Script:
    """``script``, once POST /_admin/release came: until then the agent has the message and
    has said nothing of it, not even which task it is (the caller cannot name it yet)."""
    async def hold_then_run(turn: Turn) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(release.wait(), 30)
        release.clear()
        await script(turn)

    return hold_then_run


class MemoryScript:
    """Remembers per context id, in this process (not in the task store)."""

    def __init__(self):
        self.remembered: dict[str, list[str]] = {}

    async def __call__(self, turn: Turn) -> None:
        await turn.open()
        text, ctx = turn.text.strip(), turn.context_id
        if turn.is_followup and turn.task.status.state in INTERRUPTED:
            await turn.answer('logged in')
        elif text.lower().startswith('remember '):
            item = text[len('remember '):]
            self.remembered.setdefault(ctx, []).append(item)
            await turn.answer(f'ok, I will remember {item}')
        elif text.lower() == 'recall':
            items = self.remembered.get(ctx)
            await turn.answer(f'you told me {items[-1]}' if items else 'I remember nothing')
        elif text.lower() == 'login':
            await turn.updater.requires_input(turn.msg('password?'))
        else:
            await turn.answer(f'memory[{ctx}]: {text}')


def interrupting(state: TaskState, question: str, reply: str) -> Script:
    """Pause the new task in `state`; complete it on the follow-up."""

    async def script(turn: Turn) -> None:
        await turn.open()
        if not turn.is_followup:
            if turn.text.startswith(WORKS):  # work a while before asking
                await turn.updater.start_work(turn.msg('working...'))
                await work(turn.text)
            await turn.updater.update_status(state, turn.msg(question))
            return
        await turn.answer(f'{reply}[{turn.context_id}]: {turn.text}')

    return script


def ending(state: TaskState, text: str) -> Script:
    """End the task in a terminal `state` with a status message."""

    async def script(turn: Turn) -> None:
        await turn.open()
        await turn.updater.update_status(state, turn.msg(text))

    return script


async def stream_chunks(turn: Turn) -> None:
    chunks = ['Hello there. ', 'How are ', 'you today? ', 'Fine.']
    await turn.open()
    await turn.updater.start_work()
    for i, chunk in enumerate(chunks):
        await pause()
        # The SDK refuses append=True for an artifact id it has not seen
        # (InvalidAgentResponseError), so the first chunk creates it.
        await turn.artifact(chunk, append=i > 0, last_chunk=i == len(chunks) - 1)
    await pause()
    await turn.updater.complete()


async def stream_cumulative(turn: Turn) -> None:
    texts = ['The answer', 'The answer is', 'The answer is 42.']
    await turn.open()
    await turn.updater.start_work()
    for i, text in enumerate(texts):
        await pause()
        await turn.artifact(text, append=False, last_chunk=i == len(texts) - 1)
    await pause()
    await turn.updater.complete()


async def stream_rewrite(turn: Turn) -> None:
    await turn.open()
    await turn.updater.start_work()
    await pause()
    await turn.artifact('The answer is 4', append=False)
    await pause()
    await turn.artifact('The answer is 42.', append=False, last_chunk=True)
    await pause()
    await turn.updater.complete()


async def stream_multi(turn: Turn) -> None:
    await turn.open()
    await turn.updater.start_work()
    await pause()
    await turn.artifact('First part.', artifact_id='part-1', last_chunk=True)
    await pause()
    await turn.artifact('Second part.', artifact_id='part-2', last_chunk=True)
    await pause()
    await turn.updater.complete()


async def stream_message(turn: Turn) -> None:
    ctx = turn.context_id
    await turn.queue.enqueue_event(new_text_message(f'message reply[{ctx}]', context_id=ctx, role=Role.ROLE_AGENT))


async def stream_status(turn: Turn) -> None:
    await turn.open()
    await turn.updater.start_work(turn.msg('thinking...'))
    await pause()
    await turn.updater.update_status(TaskState.TASK_STATE_WORKING, turn.msg('thinking...'))
    await pause()
    await turn.updater.complete(turn.msg(f'status answer[{turn.context_id}]'))


async def stream_snapshot(turn: Turn) -> None:
    """The final state as a second Task snapshot.

    What DefaultRequestHandler (v2) does with a second Task event: it logs
    "Task ... already exists. Ignoring task replacement." and does NOT store
    it, but still forwards the snapshot unchanged to the stream (and a
    blocking SendMessage returns the snapshot itself, as it is a Task in a
    terminal state). The store would then keep the task WORKING, without the
    artifact, forever. So after the snapshot the same artifact (same id, full
    text, append=False, i.e. idempotent) and COMPLETED are sent as ordinary
    updates, which keeps the store, get_task and the stream consistent.
    """
    await turn.open()
    await turn.updater.start_work()
    await pause()
    snapshot = Task()
    snapshot.CopyFrom(turn.task)
    snapshot.status.state = TaskState.TASK_STATE_COMPLETED
    snapshot.artifacts.append(Artifact(artifact_id='answer', name='answer', parts=[Part(text='snapshot answer')]))
    await turn.queue.enqueue_event(snapshot)
    await pause()
    await turn.artifact('snapshot answer', append=False, last_chunk=True)
    await turn.updater.complete()


Step = tuple[str, str, bool, bool]  # (artifact id, text, append, last chunk)


def artifact_steps(*steps: Step) -> Script:
    """Stream artifact updates exactly as listed, then complete."""

    async def script(turn: Turn) -> None:
        await turn.open()
        await turn.updater.start_work()
        for artifact_id, text, append, last in steps:
            await pause()
            await turn.artifact(text, artifact_id=artifact_id, append=append, last_chunk=last)
        await pause()
        await turn.updater.complete()

    return script


REWRITE_SHAPES: dict[str, tuple[Step, ...]] = {
    # a fact corrected: the whole sentence is rewritten
    'stream-correction': (('answer', 'The capital of Australia is Sydney.', False, False),
                          ('answer', 'The capital of Australia is Canberra.', False, True)),
    # an interim text replaced by the final one
    'stream-interim': (('answer', 'Thinking...', False, False),
                       ('answer', 'The answer is 42. Have a nice day.', False, True)),
    # the same words with other spaces, then more
    'stream-respace': (('answer', 'One sentence. Two', False, False),
                       ('answer', 'One  sentence.\tTwo sentences.', False, True)),
    # two artifacts, interleaved, each rewritten
    'stream-interleaved': (('a', 'Alpha old.', False, False), ('b', 'Beta old.', False, False),
                           ('a', 'Alpha new.', False, True), ('b', 'Beta new.', False, True)),
    # a poem: a line break ends each spoken line
    'stream-poem': (('answer', 'Roses are red\nViolets ', False, False),
                    ('answer', 'are blue\nSugar is sweet\n', True, False),
                    ('answer', 'And so are you', True, True)),
    # no punctuation at all, in two artifacts
    'stream-bare': (('a', 'first part ', False, False), ('a', 'without punctuation', True, False),
                    ('b', 'second part', False, True)),
}


STATUS_SHAPES: dict[str, tuple[str, ...]] = {
    # the answer so far in each status message, after two progress notes
    'status-cumulative': ('Searching…', 'Looking it up.', 'The answer', 'The answer is forty-two.',
                          'The answer is forty-two. Have a nice', 'The answer is forty-two. Have a nice day.'),
    # each new chunk in a status message (strands, ADK's default executor), after two notes
    'status-delta': ('Searching…', 'Looking it up.', 'The answer', ' is forty-two.', ' Have a nice', ' day.'),
}
STATUS_ANSWER = 'The answer is forty-two. Have a nice day.'
#: the status texts of status-notes: progress notes only, each ending in an ellipsis
NOTES_BEFORE_ANSWER = ('Searching flights…', 'Comparing fares…', 'Checking seats…', 'Holding a seat…')


def status_steps(release: asyncio.Event, texts: tuple[str, ...], as_chunks: bool = False,
                 answer: tuple[str, ...] = (STATUS_ANSWER,)) -> Script:
    """Each text as a "working" status message (``as_chunks``: as an appended chunk of the
    artifact instead), then the ``answer`` chunks as an artifact, then completed. The text
    "gated" holds the artifact until POST /_admin/release; a number of seconds paces the texts
    (STEP otherwise)."""

    async def script(turn: Turn) -> None:
        step = float(turn.text) if re.fullmatch(r'\d+(\.\d+)?', turn.text.strip()) else STEP
        await turn.open()
        for n, text in enumerate(texts):
            if as_chunks:
                await turn.artifact(text, append=n > 0)
            else:
                await turn.updater.update_status(TaskState.TASK_STATE_WORKING, turn.msg(text))
            await asyncio.sleep(step)
        if turn.text == 'gated':
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(release.wait(), 30)
            release.clear()
        for n, chunk in enumerate(answer):
            await turn.artifact(chunk, append=n > 0, last_chunk=n == len(answer) - 1)
        await turn.updater.complete()

    return script


async def stream_repeat(turn: Turn) -> None:
    """Appended chunks, then a final Task snapshot that repeats them (see stream_snapshot)."""
    chunks = ['Hello there. ', 'How are ', 'you today?']
    await turn.open()
    await turn.updater.start_work()
    for i, chunk in enumerate(chunks):
        await pause()
        await turn.artifact(chunk, append=i > 0)
    await pause()
    snapshot = Task()
    snapshot.CopyFrom(turn.task)
    snapshot.status.state = TaskState.TASK_STATE_COMPLETED
    snapshot.artifacts.append(Artifact(artifact_id='answer', name='answer', parts=[Part(text=c) for c in chunks]))
    await turn.queue.enqueue_event(snapshot)
    await pause()
    await turn.artifact(''.join(chunks), append=False, last_chunk=True)
    await turn.updater.complete()


async def data_question(turn: Turn) -> None:
    """Asks "which city?" only in an "Interrupt" data artifact (no status message); completes on the follow-up."""
    from google.protobuf import struct_pb2

    await turn.open()
    if turn.is_followup:
        return await turn.answer(f'continued[{turn.context_id}]: {turn.text}')
    interrupt = struct_pb2.Value()
    interrupt.struct_value.update({'id': '9b36c1f04e2d4a8e', 'value': 'which city?'})
    await turn.updater.add_artifact([Part(data=interrupt)], artifact_id='interrupt', name='Interrupt')
    await turn.updater.requires_input()


async def history_answer(turn: Turn) -> None:
    """The answer of status-delta in "working" status messages, then completed without an artifact
    or a status message: an a2a-sdk server moves each status message into the task's history."""
    await turn.open()
    for text in STATUS_SHAPES['status-delta']:
        await turn.updater.update_status(TaskState.TASK_STATE_WORKING, turn.msg(text))
        await pause()
    await turn.updater.complete()


async def history_question(turn: Turn) -> None:
    """Its error text in a "working" status message, then input-required without a message."""
    await turn.open()
    if turn.is_followup:
        return await turn.answer(f'continued[{turn.context_id}]: {turn.text}')
    await turn.updater.update_status(TaskState.TASK_STATE_WORKING, turn.msg('Sorry, the weather service is down.'))
    await pause()
    await turn.updater.requires_input()


async def wordless(turn: Turn) -> None:
    """Completed with an empty artifact and an empty status message; "ask" asks without a word."""
    await turn.open()
    if turn.is_followup:
        return await turn.answer(f'continued[{turn.context_id}]: {turn.text}')
    if turn.text == 'hello':
        return await turn.answer(f'heard[{turn.context_id}]: {turn.text}')
    await turn.updater.start_work()
    if turn.text == 'ask':
        return await turn.updater.requires_input()
    await turn.updater.add_artifact([Part(text='')], artifact_id='answer', name='answer')
    await turn.updater.complete(turn.msg(''))


SCHEMA_QUESTION = 'Which city do you mean?'


async def schema_question(turn: Turn) -> None:
    """Asks in a status message whose data part holds the suspended call and the reply's schema."""
    from google.protobuf import struct_pb2

    await turn.open()
    if turn.is_followup:
        return await turn.answer(f'continued[{turn.context_id}]: {turn.text}')
    data = struct_pb2.Value()
    data.struct_value.update({
        'resumeSchema': {'$schema': 'http://json-schema.org/draft-07/schema#', 'type': 'object',
                         'properties': {'city': {'type': 'string'}}, 'required': ['city']},
        'suspendPayload': {'tool': 'weather', 'callId': 'c-1', 'reason': 'ambiguous city',
                           'candidates': ['Paris, France', 'Paris, Texas'], 'asked': SCHEMA_QUESTION},
    })
    question = turn.updater.new_agent_message([Part(text=SCHEMA_QUESTION), Part(data=data)])
    await turn.updater.requires_input(question)


async def forgetful(turn: Turn) -> None:
    """"login" asks for a password; the follow-up logs in; anything else is a new task's answer."""
    await turn.open()
    if turn.is_followup:
        return await turn.answer('logged in')
    if turn.text.strip() == 'login':
        return await turn.updater.requires_input(turn.msg('password?'))
    await turn.answer(f'new task[{turn.context_id}]: {turn.text}')


async def signed_in_calendar(turn: Turn) -> None:
    """The signed-in person's calendar (the account the request's token is for); without one, a
    sign-in asked for (AUTH_REQUIRED), which a continuation with a token answers."""
    await turn.open()
    account = turn.context.call_context.state.get('headers', {}).get(SIGNED_IN_AS.decode())
    if not account:
        await turn.updater.update_status(TaskState.TASK_STATE_AUTH_REQUIRED,
                                         turn.msg('Please sign in to read your calendar.'))
        return
    asked = turn.task.history[0].parts[0].text if turn.is_followup and turn.task.history else turn.text
    await turn.answer(f'calendar of {account}: {asked}' + (f' ({turn.text})' if turn.text != asked else ''))


async def slow_echo(turn: Turn) -> None:
    """Echo after 0.2 s submitted and 0.2 s working (or the work "sleep:N" or "hold:NAME" asks for)."""
    await turn.open()
    await asyncio.sleep(0.2)
    await turn.updater.start_work(turn.msg('working...'))
    await (work(turn.text) if turn.text.startswith(WORKS) else asyncio.sleep(0.2))
    await turn.answer(f'echo[{turn.context_id}]: {turn.text}')


def gated(release: asyncio.Event, first: str = 'First sentence. ', second: str = 'Second sentence.') -> Script:
    async def script(turn: Turn) -> None:
        await turn.open()
        await turn.updater.start_work()
        await pause()
        await turn.artifact(first, append=False, last_chunk=False)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(release.wait(), 30)
        release.clear()
        await turn.artifact(second, append=True, last_chunk=True)
        await pause()
        await turn.updater.complete()

    return script


# --------------------------------------------------------------------------
# Request handler wrapper: counts messages, tracks and checks contexts.
# --------------------------------------------------------------------------


class ObservedHandler(RequestHandler):
    """Delegates every call to a DefaultRequestHandler.

    It counts messages, remembers the context ids on outgoing tasks and
    messages, and, with ``refuse_unknown_contexts``, rejects a message that
    names a context this agent never issued or that was expired.

    It also rejects a message to a task the store holds in a terminal state.
    The SDK does that itself unless the task is still parked in its
    in-memory ActiveTaskRegistry (input-required tasks are), in which case it
    would run the executor again; /_admin/finish relies on the check here.
    """

    def __init__(self, name: str, inner: DefaultRequestHandler, store: InMemoryTaskStore,
                 obs: Observations, refuse_unknown_contexts: bool = False):
        self.name = name
        self.inner = inner
        self.store = store
        self.obs = obs
        self.refuse_unknown_contexts = refuse_unknown_contexts
        self.issued: set[str] = set()
        self.expired: set[str] = set()

    def expire_contexts(self) -> None:
        self.expired |= self.issued
        self.issued.clear()

    async def _admit(self, params, context: ServerCallContext) -> None:
        self.obs.messages[self.name] += 1
        message = params.message
        self.obs.message_ids.setdefault(self.name, []).append(message.message_id)
        ctx = message.context_id
        if self.refuse_unknown_contexts and ctx and (ctx not in self.issued or ctx in self.expired):
            raise InvalidParamsError('unknown or expired context')
        if message.task_id:
            task = await self.store.get(message.task_id, context)
            if task is not None and task.status.state in TERMINAL:
                state = TaskState.Name(task.status.state)
                raise UnsupportedOperationError(f'Task {task.id} is in terminal state: {state}')

    def _issue(self, context_id: str) -> None:
        if context_id and context_id not in self.expired:
            self.issued.add(context_id)

    async def on_message_send(self, params, context):
        await self._admit(params, context)
        result = await self.inner.on_message_send(params, context)
        self._issue(result.context_id)
        return result

    async def on_message_send_stream(self, params, context):
        await self._admit(params, context)
        record = {'agent': self.name, 'events': 0}
        self.obs.streams.append(record)
        async with contextlib.aclosing(self.inner.on_message_send_stream(params, context)) as events:
            async for event in events:
                self._issue(event.context_id)
                record['events'] += 1
                yield event

    async def on_subscribe_to_task(self, params, context):
        async with contextlib.aclosing(self.inner.on_subscribe_to_task(params, context)) as events:
            async for event in events:
                yield event

    async def on_get_task(self, params, context):
        return await self.inner.on_get_task(params, context)

    async def on_list_tasks(self, params, context):
        return await self.inner.on_list_tasks(params, context)

    async def on_cancel_task(self, params, context):
        self.obs.cancels[self.name] += 1
        return await self.inner.on_cancel_task(params, context)

    async def on_create_task_push_notification_config(self, params, context):
        return await self.inner.on_create_task_push_notification_config(params, context)

    async def on_get_task_push_notification_config(self, params, context):
        return await self.inner.on_get_task_push_notification_config(params, context)

    async def on_list_task_push_notification_configs(self, params, context):
        return await self.inner.on_list_task_push_notification_configs(params, context)

    async def on_delete_task_push_notification_config(self, params, context):
        return await self.inner.on_delete_task_push_notification_config(params, context)

    async def on_get_extended_agent_card(self, params, context):
        return await self.inner.on_get_extended_agent_card(params, context)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def all_tasks(self) -> list[Task]:
        tasks, token, call = [], '', ServerCallContext()
        while True:
            page = await self.store.list(ListTasksRequest(page_size=100, page_token=token), call)
            tasks.extend(page.tasks)
            token = page.next_page_token
            if not token:
                return tasks


# --------------------------------------------------------------------------
# The agent catalogue, cards and routes.
# --------------------------------------------------------------------------

JSONRPC_1, JSONRPC_03, REST, REST_03, GRPC = 'jsonrpc', 'jsonrpc-0.3', 'rest', 'rest-0.3', 'grpc'
DEFAULT_BINDINGS = (JSONRPC_1, REST)
FASTA2A_BINDINGS = {'': JSONRPC_1, '-rest': REST, '-v03': JSONRPC_03}  # name suffix: binding


@dataclass
class AgentSpec:
    name: str
    description: str
    script: Script | None  # None: card only, no endpoint
    examples: tuple[str, ...] = ('hello',)
    bindings: tuple[str, ...] = DEFAULT_BINDINGS
    card_style: str = 'standard'  # standard | legacy-path | legacy-fields | redirect | huge
    cache_control: str | None = None
    security: tuple[tuple[str, ...], ...] = ()  # requirements: alternatives, each of scheme names (SCHEMES)
    declare_security: bool = True  # False: required, but the card does not say so
    refuse_unknown_contexts: bool = False
    cancelable: bool = True  # False: CancelTask is answered TaskNotCancelable
    target_url: str | None = None  # foreign / redirect
    upgrades: tuple[tuple[str, ...], ...] = ()  # bindings after each POST /_admin/upgrade (in place)
    signing: str | None = None  # valid | tampered | unknown-key | foreign-jku
    push: bool = False  # push notifications, with the a2a-sdk's own config store and sender
    streaming: bool = True  # the card's capabilities.streaming
    token_url: str | None = None  # the token URL of the oauth-elsewhere scheme
    declares: tuple[str, ...] = ()  # schemes the card declares without requiring them
    issuer: dict | None = None  # the authorization server's discovery document (the sign-in schemes)


def agent_catalogue(obs: Observations, foreign_url: str | None, token_url: str | None = None,
                    issuer: dict | None = None) -> list[AgentSpec]:
    specs = [
        AgentSpec('echo', 'Echoes the text back; "sleep:N" waits N seconds first.', echo, ('hello', 'sleep:0.5')),
        AgentSpec('memory', 'Remembers things per conversation.', MemoryScript(),
                  ('remember the milk', 'recall', 'login')),
        AgentSpec('ask', 'Asks which city before answering.',
                  interrupting(TaskState.TASK_STATE_INPUT_REQUIRED, 'which city?', 'continued'), ('weather', 'Paris')),
        AgentSpec('auth', 'Needs a sign-in before answering.',
                  interrupting(TaskState.TASK_STATE_AUTH_REQUIRED, 'please sign in', 'signed in'), ('my mail',)),
        AgentSpec('fail', 'Always fails.', ending(TaskState.TASK_STATE_FAILED, 'the backend exploded')),
        AgentSpec('reject', 'Always rejects.', ending(TaskState.TASK_STATE_REJECTED, 'I will not do that')),
        AgentSpec('cancelled', 'Cancels its own task.', ending(TaskState.TASK_STATE_CANCELED, 'stopped by the agent')),
        AgentSpec('refuse', 'Echo that refuses unknown or expired context ids.', echo, refuse_unknown_contexts=True),
        AgentSpec('stream-chunks', 'One artifact streamed in appended chunks.', stream_chunks),
        AgentSpec('stream-cumulative', 'One artifact re-sent whole as it grows.', stream_cumulative),
        AgentSpec('stream-rewrite', 'An artifact that is rewritten once.', stream_rewrite),
        AgentSpec('stream-multi', 'Two artifacts.', stream_multi),
        AgentSpec('stream-message', 'Replies with a single message, no task.', stream_message),
        AgentSpec('stream-status', 'Answers in the final status message only.', stream_status),
        AgentSpec('stream-snapshot', 'Sends the final state as a Task snapshot.', stream_snapshot),
        *(AgentSpec(name, 'A streamed answer of a rewritten shape.', artifact_steps(*steps))
          for name, steps in REWRITE_SHAPES.items()),
        AgentSpec('stream-repeat', 'Chunks, then a Task snapshot repeating them.', stream_repeat),
        *(AgentSpec(name, 'An answer streamed in status messages, then an artifact.', status_steps(obs.release, texts))
          for name, texts in STATUS_SHAPES.items()),
        AgentSpec('status-notes', 'Progress notes in working status messages, then an artifact.',
                  status_steps(obs.release, NOTES_BEFORE_ANSWER)),
        AgentSpec('stream-paced', 'The chunks of status-delta as artifact chunks.',
                  status_steps(obs.release, STATUS_SHAPES['status-delta'][2:], as_chunks=True)),
        AgentSpec('status-rechunked', 'status-delta, its artifact streamed again in chunks.',
                  status_steps(obs.release, STATUS_SHAPES['status-delta'], answer=STATUS_SHAPES['status-delta'][2:])),
        AgentSpec('stream-gated', 'Second sentence only after POST /_admin/release.', gated(obs.release)),
        AgentSpec('stream-gated-number', 'Like stream-gated, its first sentence ending in a number.',
                  gated(obs.release, 'Sentence 1.', 'Sentence 2.')),
        AgentSpec('stall', 'Works for 600 seconds.', stall),
        AgentSpec('stall-held', 'Names its task only after POST /_admin/release, then works for 600 seconds.',
                  held(obs.release, stall)),
        AgentSpec('push', 'Echo with push notifications (the SDK\'s own store and sender).', echo, push=True),
        AgentSpec('cut', 'Streams three chunks; the stream breaks after the first, the task goes on.', cut,
                  bindings=(JSONRPC_1,)),
        AgentSpec('drip', 'Streams a chunk every 0.2 s for a minute.', drip),
        AgentSpec('metadata', "Answers with the message's metadata as JSON.", metadata),
        AgentSpec('parts', 'Answers with a text, a file link, data and a raw file.', more_than_text),
        AgentSpec('langgraph', 'Streams chunks in A2A 0.3 shapes on an A2A 1.0 stream, as LangGraph does.',
                  stream_chunks, bindings=(JSONRPC_1,)),
        AgentSpec('langgraph-garbled', 'Streams events no A2A version reads; answers blocking sends.',
                  stream_chunks, bindings=(JSONRPC_1,)),
        AgentSpec('data-question', 'Asks which city only in an Interrupt data artifact.', data_question,
                  bindings=(JSONRPC_1,)),
        AgentSpec('history-answer', 'Answers in working status messages only: the answer ends in the history.',
                  history_answer),
        AgentSpec('history-question', 'Says its error in a working status message, then asks without one.',
                  history_question),
        AgentSpec('wordless', 'Completes without a word (an empty artifact and status message).', wordless,
                  ('go', 'ask', 'hello')),
        AgentSpec('schema-question', 'Asks which city beside the data of the reply it expects.', schema_question),
        AgentSpec('forgetful', 'Cuts the stream of a continuation of a task it forgot.', forgetful,
                  ('login', 'hello'), bindings=(JSONRPC_1,)),
        *(AgentSpec(f'fasta2a{kind}{binding}', 'Echo with timestamps without a zone; ignores blocking.', slow_echo,
                    bindings=(FASTA2A_BINDINGS[binding],), streaming=bool(kind))
          for kind in ('', '-stream') for binding in FASTA2A_BINDINGS),
        AgentSpec('flaky', 'Echo over JSON-RPC; /_admin/flaky makes its next requests fail.', echo,
                  bindings=(JSONRPC_1,)),
        AgentSpec('stubborn', 'Drips like drip; refuses CancelTask.', drip, cancelable=False),
        AgentSpec('flood', 'Streams N chunks (the text is N) without pause.', flood, ('1000',)),
        AgentSpec('huge', 'Answers N characters (the text is N) of short sentences.', huge_answer(obs),
                  ('1000000',)),
        AgentSpec('jsonrpc-only', 'Echo over JSON-RPC 1.0 only.', echo, bindings=(JSONRPC_1,)),
        AgentSpec('rest-only', 'Echo over HTTP+JSON 1.0 only.', echo, bindings=(REST,)),
        AgentSpec('grpc-only', 'Echo over gRPC 1.0 only.', echo, bindings=(GRPC,)),
        AgentSpec('v03', 'Echo speaking A2A 0.3 JSON-RPC only.', echo, bindings=(JSONRPC_03,)),
        AgentSpec('memory-v03-rest', 'Memory over A2A 0.3 HTTP+JSON only.', MemoryScript(), bindings=(REST_03,)),
        AgentSpec('memory-rest', 'Memory over A2A 1.0 HTTP+JSON only.', MemoryScript(), bindings=(REST,)),
        AgentSpec('memory-v03-rest-js', 'Memory over A2A 0.3 HTTP+JSON, its errors worded as the JS SDK does.',
                  MemoryScript(), bindings=(REST_03,)),
        AgentSpec('memory-v03-js', 'Memory over A2A 0.3 JSON-RPC, its errors worded as the JS SDK does.',
                  MemoryScript(), bindings=(JSONRPC_03,)),
        AgentSpec('v03-legacy', 'Echo with a card holding only 0.3 fields.', echo, bindings=(JSONRPC_03,),
                  card_style='legacy-fields'),
        AgentSpec('hybrid', 'Echo speaking JSON-RPC 1.0 and 0.3 on one URL.', echo, bindings=(JSONRPC_1, JSONRPC_03)),
        AgentSpec('old', 'Echo whose card is only at .well-known/agent.json.', echo, card_style='legacy-path'),
        AgentSpec('cached', 'Echo whose card may be cached for 1 s.', echo, cache_control='max-age=1'),
        AgentSpec('secure', 'Echo that needs a bearer token.', echo, security=(('bearer',),)),
        AgentSpec('keyed', 'Echo that needs an API key in a header.', echo, security=(('key',),)),
        AgentSpec('basic', 'Echo that needs HTTP Basic.', echo, security=(('basic',),)),
        AgentSpec('oauth', 'Echo that needs an OAuth2 client-credentials token.', echo, security=(('oauth',),)),
        AgentSpec('either', 'Echo that needs an OAuth2 token or else an API key.', echo,
                  security=(('oauth',), ('key',))),
        AgentSpec('keyed-v03', 'Echo speaking A2A 0.3 that needs an API key.', echo, bindings=(JSONRPC_03,),
                  card_style='legacy-fields', security=(('key',),)),
        AgentSpec('oauth-rest', 'Echo over HTTP+JSON that needs an OAuth2 token.', echo, bindings=(REST,),
                  security=(('oauth',),)),
        AgentSpec('oauth-plain', 'Echo whose OAuth2 token URL is plain http elsewhere.', echo,
                  security=(('oauth-plain',),)),
        AgentSpec('oauth-localhost', "Echo whose OAuth2 token URL is this server's, by another name.", echo,
                  security=(('oauth-localhost',),)),
        *(AgentSpec(f'keyed-{kind}', 'Echo whose API key goes where no API key may go.', echo,
                    security=((f'key-{kind}',),)) for kind in HOSTILE_KEYS),
        AgentSpec('keyed-twice', 'Echo that needs a bearer token and an API key in Authorization.', echo,
                  security=(('bearer', 'key-authorization'),)),
        AgentSpec('keyed-host-or-key', 'Echo that needs an API key in Host, or else in X-Agent-Key.', echo,
                  security=(('key-host',), ('key',))),
        AgentSpec('guarded', 'Echo that needs a bearer token its card does not mention.', echo,
                  security=(('bearer',),), declare_security=False),
        AgentSpec('grpc-oauth', "grpc-only's gRPC server, with a card requiring an OAuth2 token.", None,
                  bindings=(GRPC,), security=(('oauth',),)),
        AgentSpec('huge-card', 'Echo whose card is 50 MB, streamed.', echo, card_style='huge'),
        AgentSpec('upgradable', 'Echo speaking A2A 0.3; upgraded in place to 1.0 by /_admin/upgrade.', echo,
                  bindings=(JSONRPC_03,), upgrades=((JSONRPC_1,),)),
        AgentSpec('movable', 'Echo over JSON-RPC; /_admin/upgrade moves it to HTTP+JSON only.', echo,
                  bindings=(JSONRPC_1,), upgrades=((REST,),)),
        AgentSpec('signed', 'Echo with a signed card.', echo, signing='valid'),
        AgentSpec('signed-tampered', 'Echo whose card was changed after it was signed.', echo, signing='tampered'),
        AgentSpec('signed-unknown-key', 'Echo whose card is signed by a key not in its key set.', echo,
                  signing='unknown-key'),
        AgentSpec('signed-foreign-jku', 'Echo whose signature names keys on another origin.', echo,
                  signing='foreign-jku'),
    ]
    if token_url:
        specs.append(AgentSpec('oauth-elsewhere', 'Echo whose OAuth2 token URL is given.', echo,
                               security=(('oauth-elsewhere',),), token_url=token_url))
    if issuer:
        specs += [
            AgentSpec('signin', "Reads the signed-in person's calendar (device-code sign-in).", signed_in_calendar,
                      ('my day',), security=(('device',),), issuer=issuer),
            AgentSpec('signin-oidc', "Reads the signed-in person's calendar (OpenID Connect).", signed_in_calendar,
                      ('my day',), security=(('oidc',),), issuer=issuer),
            AgentSpec('signin-later', 'Asks for a sign-in (auth-required) when the calendar is asked for.',
                      signed_in_calendar, ('my day',), declares=('device',), issuer=issuer),
        ]
    if foreign_url:
        specs += [
            AgentSpec('foreign', 'Card pointing at another server.', None, bindings=(), target_url=foreign_url),
            AgentSpec('redirect', 'Card redirecting to another server.', None, bindings=(),
                      card_style='redirect', target_url=foreign_url),
            AgentSpec('foreign-keyed', 'Card requiring an API key, pointing at another server.', None,
                      bindings=(), target_url=foreign_url, security=(('key',),)),
        ]
    return specs


def build_card(spec: AgentSpec, base: str, grpc_address: str) -> AgentCard:
    home = f'{base}/{spec.name}'
    urls = {
        JSONRPC_1: ('JSONRPC', '1.0', f'{home}/'),
        JSONRPC_03: ('JSONRPC', '0.3', f'{home}/'),
        REST: ('HTTP+JSON', '1.0', f'{home}/rest'),
        REST_03: ('HTTP+JSON', '0.3', f'{home}/rest03'),
        GRPC: ('GRPC', '1.0', grpc_address),
    }
    interfaces = [
        AgentInterface(protocol_binding=b, protocol_version=v, url=u)
        for b, v, u in (urls[kind] for kind in spec.bindings)
    ]
    if spec.target_url:
        interfaces = [AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=spec.target_url)]
    skill = AgentSkill(id=spec.name, name=spec.name, description=spec.description,
                       tags=['test'], examples=list(spec.examples))
    card = AgentCard(
        name=spec.name, description=spec.description, version='1.0.0',
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=spec.streaming, push_notifications=spec.push),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[skill],
    )
    if spec.declare_security:
        schemes = security_schemes(base, spec.token_url, spec.issuer)
        for name in spec.declares:
            card.security_schemes[name].CopyFrom(schemes[name])
        for requirement in spec.security:
            for name in requirement:
                card.security_schemes[name].CopyFrom(schemes[name])
            card.security_requirements.append(SecurityRequirement(
                schemes={name: StringList(list=SCOPES.get(name, [])) for name in requirement}))
    if spec.signing:
        sign_card(card, spec, base)
    return card


class CardKey:
    """An EC P-256 key made at start-up, and its public JWK with ``kid``."""

    def __init__(self, kid: str):
        self.kid = kid
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.pem = self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption())
        self.jwk = {**ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True), 'kid': kid, 'alg': 'ES256'}


KEY = CardKey('test-agent-key')           # the key every signed agent's key set holds
STRANGER_KEY = CardKey('stranger-key')    # signs signed-unknown-key's card; in no key set
JWKS_PATH = '/.well-known/jwks.json'


def sign_card(card: AgentCard, spec: AgentSpec, base: str) -> None:
    """Sign ``card`` (once) as ``spec.signing`` says, with the a2a-sdk's signer."""
    key = STRANGER_KEY if spec.signing == 'unknown-key' else KEY
    jku = f'{base}/{spec.name}{JWKS_PATH}'
    if spec.signing == 'foreign-jku':  # the same server and a valid key set, but another origin
        jku = f"{base.replace('127.0.0.1', 'localhost')}/signed{JWKS_PATH}"
    create_agent_card_signer(key.pem, {'alg': 'ES256', 'kid': key.kid, 'jku': jku, 'typ': 'JOSE'})(card)
    if spec.signing == 'tampered':
        card.description = 'Changed after it was signed.'


SCOPES = {'oauth': [OAUTH_SCOPE], 'oauth-plain': [OAUTH_SCOPE], 'oauth-localhost': [OAUTH_SCOPE],
          'oauth-elsewhere': [OAUTH_SCOPE], 'device': [SIGN_IN_SCOPE], 'oidc': [SIGN_IN_SCOPE]}
#: the schemes whose tokens the authorization server of --issuer gives, checked by introspection
SIGN_IN_SCHEMES = frozenset({'device', 'oidc'})
#: API keys where none may go: (location, name) by kind
HOSTILE_KEYS = {'host': ('header', 'Host'), 'length': ('header', 'Content-Length'),
                'spaced': ('header', 'X Agent Key'), 'crlf': ('header', 'X-Agent-Key\r\nX-Injected'),
                'cookie': ('cookie', 'session=x; key')}


def security_schemes(base: str, token_url: str | None = None, issuer: dict | None = None) -> dict[str, SecurityScheme]:
    """The schemes the agents' cards may require, by name (the sign-in ones with ``issuer``'s discovery document)."""
    def oauth(token_url: str) -> SecurityScheme:
        flow = ClientCredentialsOAuthFlow(token_url=token_url, scopes={OAUTH_SCOPE: 'talk to the agent'})
        return SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(flows=OAuthFlows(client_credentials=flow)))

    return {
        'bearer': SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme='bearer')),
        'basic': SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme='Basic')),
        'key': SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location='header', name=API_KEY_HEADER)),
        'oauth': oauth(f'{base}/token'),
        'oauth-plain': oauth('http://127.0.0.1:9/token'),  # the discard port: another origin
        'oauth-localhost': oauth(f"{base.replace('127.0.0.1', 'localhost')}/token"),
        'oauth-elsewhere': oauth(token_url or 'https://127.0.0.1:9/token'),
        'key-authorization': SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(
            location='header', name='Authorization')),
        **{f'key-{kind}': SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location=where, name=name))
           for kind, (where, name) in HOSTILE_KEYS.items()},
        **(sign_in_schemes(issuer) if issuer else {}),
    }


def sign_in_schemes(issuer: dict) -> dict[str, SecurityScheme]:
    """The schemes of a person's sign-in at the authorization server whose discovery document is ``issuer``."""
    flow = DeviceCodeOAuthFlow(device_authorization_url=issuer['device_authorization_endpoint'],
                               token_url=issuer['token_endpoint'], scopes={SIGN_IN_SCOPE: 'read your calendar'})
    return {
        'device': SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(
            flows=OAuthFlows(device_code=flow), oauth2_metadata_url=f"{issuer['issuer']}/.well-known/openid-configuration")),
        'oidc': SecurityScheme(open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
            open_id_connect_url=f"{issuer['issuer']}/.well-known/openid-configuration")),
    }


def card_routes(spec: AgentSpec, card: AgentCard) -> list[BaseRoute]:
    """Card routes, relative to the agent's mount point."""
    well_known = '/.well-known/agent-card.json'
    if spec.card_style == 'legacy-path':
        return create_agent_card_routes(card, card_url='/.well-known/agent.json')
    if spec.card_style == 'legacy-fields':
        legacy = to_compat_agent_card(card).model_dump(mode='json', by_alias=True, exclude_none=True)
        return [Route(well_known, lambda request: JSONResponse(legacy), methods=['GET'])]
    if spec.card_style == 'huge':
        return [Route(well_known, lambda request: huge_card_response(card), methods=['GET'])]
    if spec.card_style == 'redirect':
        target = f"{spec.target_url.rstrip('/')}{well_known}"
        return [Route(well_known, lambda request: RedirectResponse(target, status_code=307), methods=['GET'])]
    routes = create_agent_card_routes(card, card_url=well_known, cache_control=spec.cache_control)
    if spec.signing:
        routes.append(Route(JWKS_PATH, lambda request: JSONResponse({'keys': [KEY.jwk]}), methods=['GET']))
    return routes


HUGE_CARD_BYTES = 50 * 1024 * 1024


def huge_card_response(card: AgentCard) -> StreamingResponse:
    """The card with a 50 MB description, streamed without a Content-Length."""
    head = json.dumps(MessageToDict(card))[:-1] + ', "description": "'
    piece = 'x' * 65536

    async def body():
        yield head.encode()
        for _ in range(HUGE_CARD_BYTES // len(piece)):
            yield piece.encode()
        yield b'"}'

    return StreamingResponse(body(), media_type='application/json')


def protocol_routes(spec: AgentSpec, handler: RequestHandler | None) -> list[BaseRoute]:
    """JSON-RPC at '/', REST under '/rest' (last: it ends with a /{tenant} mount)."""
    routes: list[BaseRoute] = []
    if handler is None:
        return routes
    compat = JSONRPC_03 in spec.bindings
    if compat or JSONRPC_1 in spec.bindings:
        routes += create_jsonrpc_routes(handler, rpc_url='/', enable_v0_3_compat=compat)
    if REST_03 in spec.bindings:
        routes += create_rest_routes(handler, path_prefix='/rest03', enable_v0_3_compat=True)
    if REST in spec.bindings:
        routes += create_rest_routes(handler, path_prefix='/rest')
    return routes


def no_slash_routes(spec: AgentSpec, handler: RequestHandler | None) -> list[BaseRoute]:
    """JSON-RPC also at '/{name}' without the trailing slash."""
    if handler is None or not ({JSONRPC_1, JSONRPC_03} & set(spec.bindings)):
        return []
    return create_jsonrpc_routes(handler, rpc_url=f'/{spec.name}', enable_v0_3_compat=JSONRPC_03 in spec.bindings)


# --------------------------------------------------------------------------
# Middleware and admin endpoints.
# --------------------------------------------------------------------------

CARD_PATH = re.compile(r'^/([^/]+)/\.well-known/agent(?:-card)?\.json$')


class RequestRecorder:
    """Records every non-admin request and counts card fetches (status < 400)."""

    def __init__(self, app, obs: Observations):
        self.app, self.obs = app, obs

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or scope['path'].startswith('/_admin'):
            return await self.app(scope, receive, send)
        headers: dict[str, str] = {}
        for key, value in scope['headers']:
            name = key.decode('latin-1').lower()
            text = value.decode('latin-1')
            headers[name] = f'{headers[name]}, {text}' if name in headers else text
        entry = {'path': scope['path'], 'method': scope['method'], 'headers': headers}
        self.obs.requests.append(entry)
        card = CARD_PATH.match(scope['path'])

        async def observe(message):
            if message['type'] == 'http.response.start':
                entry['status'] = message['status']
                if card and scope['method'] == 'GET' and message['status'] < 400 \
                        and card.group(1) in self.obs.agent_names:
                    self.obs.card_fetches[card.group(1)] += 1
            await send(message)

        await self.app(scope, receive, observe)


class GrpcRecorder(grpc.aio.ServerInterceptor):
    """Records gRPC calls in the same log: path = the gRPC method, headers = its metadata.
    A call that carries a revoked OAuth2 token is refused UNAUTHENTICATED."""

    def __init__(self, obs: Observations):
        self.obs = obs

    async def intercept_service(self, continuation, handler_call_details):
        headers = {k: v for k, v in handler_call_details.invocation_metadata if isinstance(v, str)}
        self.obs.requests.append({'path': handler_call_details.method, 'method': 'GRPC', 'headers': headers})
        handler = await continuation(handler_call_details)
        token = headers.get('authorization', '').removeprefix('Bearer ')
        if handler is None or self.obs.tokens.get(token, True):
            return handler
        return refusing(handler)


def refusing(handler):
    """A handler of the same kind as ``handler`` that refuses the call UNAUTHENTICATED."""
    async def refuse(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, 'token revoked')

    async def refuse_stream(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, 'token revoked')
        yield  # pragma: no cover (a generator: the stream's handler)

    kinds = dict(request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(refuse_stream, **kinds)
    return grpc.unary_unary_rpc_method_handler(refuse, **kinds)


class Flaky:
    """Refuses the next ``obs.flaky['count']`` POSTs under /flaky (or under the agent named by
    ``obs.flaky['agent']``) with an HTTP status (503 by default) and ``Retry-After``, noting
    each refused messageId; then lets them through."""

    def __init__(self, app, obs: Observations):
        self.app, self.obs = app, obs

    async def __call__(self, scope, receive, send):
        flaky = self.obs.flaky
        prefix = '/' + flaky.get('agent', 'flaky')
        if scope['type'] == 'http' and scope['method'] == 'POST' and flaky['count'] > 0 \
                and (scope['path'] == prefix or scope['path'].startswith(prefix + '/')):
            flaky['count'] -= 1
            body = b''
            while True:
                message = await receive()
                body += message.get('body', b'')
                if not message.get('more_body'):
                    break
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                flaky['refused'].append(json.loads(body)['params']['message']['messageId'])
            headers = {} if flaky['retry_after'] is None else {'Retry-After': str(flaky['retry_after'])}
            response = JSONResponse({'error': 'try again later'}, status_code=flaky['status'], headers=headers)
            return await response(scope, receive, send)
        await self.app(scope, receive, send)


class JsSdkErrors:
    """Words errors as the A2A JS SDK does, for the agents whose names end in ``-js``: an
    HTTP+JSON error as ``{"code", "message"}`` with the JSON-RPC code (the a2a-sdk's 0.3 REST
    transport reads only a ``type`` field), and the JSON-RPC error of a streaming request as
    an SSE ``event: error`` whose data is the JSON-RPC error response (the a2a-sdk's 0.3
    JSON-RPC transport has no handler for it). The answer is buffered whole."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or not re.match(r'^/[^/]+-js(/|$)', scope['path']):
            return await self.app(scope, receive, send)
        body = b''
        while True:
            message = await receive()
            body += message.get('body', b'')
            if not message.get('more_body'):
                break
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {'type': 'http.request', 'body': body, 'more_body': False}

        streamed = False
        with contextlib.suppress(ValueError, AttributeError):
            streamed = json.loads(body or b'{}').get('method') == 'message/stream'
        rest = '/rest' in scope['path']
        start, chunks, held = {}, [], []

        async def hold(message):
            if message['type'] == 'http.response.start':
                start.update(message)
                kind = dict(message.get('headers', [])).get(b'content-type', b'')
                held.append((rest and message['status'] >= 400) or (streamed and kind.startswith(b'application/json')))
                if not held[0]:
                    await send(message)
            elif held[0]:
                chunks.append(message.get('body', b''))
            else:
                await send(message)

        await self.app(scope, replay, hold)
        if not held or not held[0]:
            return
        answer = b"".join(chunks)
        with contextlib.suppress(ValueError, AttributeError, TypeError, KeyError, StopIteration):
            if rest:
                error = json.loads(answer)['error']
                reason = next(d['reason'] for d in error.get('details', []) if 'reason' in d)
                code = JSON_RPC_ERROR_CODE_MAP[A2A_REASON_TO_ERROR[reason]]
                answer = json.dumps({'code': code, 'message': error.get('message', '')}).encode()
            elif json.loads(answer).get('error'):
                start = {**start, 'status': 200, 'headers': [
                    *[(k, v) for k, v in start['headers'] if k.lower() != b'content-type'],
                    (b'content-type', b'text/event-stream')]}
                answer = b'event: error\ndata: ' + answer + b'\n\n'
        headers = [(k, v) for k, v in start['headers'] if k.lower() != b'content-length']
        await send({**start, 'headers': [*headers, (b'content-length', str(len(answer)).encode())]})
        await send({'type': 'http.response.body', 'body': answer})


class CutStream:
    """Breaks every SendStreamingMessage response under /cut right after the event that
    carries "First part" (the connection is dropped mid-body); the task goes on."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or scope['method'] != 'POST' or not scope['path'].startswith('/cut'):
            return await self.app(scope, receive, send)
        body = await request_body(receive)
        streaming = False
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            streaming = json.loads(body)['method'] == 'SendStreamingMessage'

        async def cutting(message):
            await send(message)
            if streaming and message['type'] == 'http.response.body' and b'First part' in message.get('body', b''):
                raise ConnectionAbortedError('the stream is cut here (test agent)')

        await self.app(scope, replaying(body, receive), cutting)


class ForgetfulStream:
    """Under /forgetful, a SendStreamingMessage the agent answers with an error (the a2a-sdk
    says "Task not found" for a continuation of a task it does not have) opens its SSE response
    all the same, then breaks it: the error is raised inside the stream, and the connection is
    dropped mid-body before any event, as a restarted agent of another framework was seen to do."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or scope['method'] != 'POST' or not scope['path'].startswith('/forgetful'):
            return await self.app(scope, receive, send)
        body = await request_body(receive)
        streaming = False
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            streaming = json.loads(body)['method'] == 'SendStreamingMessage'
        held: dict = {}  # the response's start, held until its body says whether it is an error

        async def breaking(message):
            if not streaming:
                return await send(message)
            if message['type'] == 'http.response.start':
                held.update(message)
                return
            if held:
                start = dict(held)
                held.clear()
                if re.search(rb'"error".*Task .*not found', message.get('body', b'')):
                    headers = [(k, v) for k, v in start['headers']
                               if k.lower() not in (b'content-type', b'content-length')]
                    headers.append((b'content-type', b'text/event-stream'))
                    await send({**start, 'status': 200, 'headers': headers})
                    await send({'type': 'http.response.body', 'body': b': stream opened\n\n', 'more_body': True})
                    raise RuntimeError('Task not found (raised inside the stream, test agent)')
                await send(start)
            await send(message)

        await self.app(scope, replaying(body, receive), breaking)


def satisfies(scheme: str, headers: dict[str, str], obs: Observations) -> bool:
    """Whether request headers (lower-case names) carry the credential of one scheme."""
    authorization = headers.get('authorization', '')
    if scheme == 'bearer':
        return authorization == f'Bearer {BEARER_TOKEN}'
    if scheme == 'basic':
        return authorization == 'Basic ' + base64.b64encode(f'{BASIC_USER}:{BASIC_PASSWORD}'.encode()).decode()
    if scheme == 'key':
        return headers.get(API_KEY_HEADER.lower()) == API_KEY
    if scheme.startswith('key-'):
        return False  # no API key where none may go
    if scheme in SIGN_IN_SCHEMES:
        return bool(headers.get(SIGNED_IN_AS.decode()))
    if scheme.startswith('oauth'):
        token = authorization.removeprefix('Bearer ')
        return authorization.startswith('Bearer ') and obs.tokens.get(token, False)
    raise ValueError(f'unknown scheme {scheme!r}')


class SchemeGuard:
    """401 for a request to an agent with security requirements that satisfies none of them
    (cards stay public). A request to an agent with a sign-in scheme carries, in its
    ``x-signed-in-as`` header, the account its token is for (introspected; none without one)."""

    def __init__(self, app, specs: list[AgentSpec], obs: Observations):
        self.app, self.obs = app, obs
        self.requirements = {f'/{spec.name}': spec.security for spec in specs if spec.security}
        self.sign_in = {f'/{spec.name}': spec.issuer for spec in specs if spec.issuer}

    async def __call__(self, scope, receive, send):
        path = scope.get('path', '')
        prefix = '/' + path.split('/')[1] if scope['type'] == 'http' and path.count('/') else ''
        requirements = self.requirements.get(prefix)
        issuer = self.sign_in.get(prefix)
        if issuer and not CARD_PATH.match(path):
            account = await signed_in_as(scope, issuer)
            scope = {**scope, 'headers': [(k, v) for k, v in scope['headers'] if k.lower() != SIGNED_IN_AS]
                     + ([(SIGNED_IN_AS, account.encode())] if account else [])}
        if requirements and not CARD_PATH.match(path):
            headers = {k.decode('latin-1').lower(): v.decode('latin-1') for k, v in scope['headers']}
            if not any(all(satisfies(name, headers, self.obs) for name in requirement)
                       for requirement in requirements):
                response = JSONResponse({'error': 'unauthorized', 'detail': 'missing or wrong credential'},
                                        status_code=401, headers={'WWW-Authenticate': 'Bearer'})
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


SIGNED_IN_AS = b'x-signed-in-as'
#: the agents' own client at the authorization server, to introspect the tokens they are sent
INTROSPECTING_CLIENT = ('calendar-agent', 'agent-secret')


async def signed_in_as(scope, issuer: dict) -> str:
    """The account the request's bearer token is for, by the authorization server's
    introspection (RFC 7662); '' without a token, or for one it does not know as active."""
    authorization = next((v.decode('latin-1') for k, v in scope['headers'] if k.lower() == b'authorization'), '')
    if not authorization.startswith('Bearer '):
        return ''
    async with httpx.AsyncClient(timeout=5) as http:
        answer = await http.post(issuer['introspection_endpoint'], auth=INTROSPECTING_CLIENT,
                                 data={'token': authorization.removeprefix('Bearer ')})
    checked = answer.json() if answer.status_code == 200 else {}
    return checked.get('sub', '') if checked.get('active') else ''


def token_route(obs: Observations) -> Route:
    """The OAuth2 token endpoint (client-credentials grant, client authenticated with HTTP Basic)."""

    async def token(request: Request):
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        user, _, secret = base64.b64decode(
            request.headers.get('authorization', 'Basic ').removeprefix('Basic ') or b'').decode().partition(':')
        client = unquote(user)
        obs.token_requests.append({'grant_type': form.get('grant_type'), 'scope': form.get('scope'),
                                   'client': client})
        if form.get('grant_type') != 'client_credentials':
            return JSONResponse({'error': 'unsupported_grant_type'}, status_code=400)
        if OAUTH_CLIENTS.get(client, (None,))[0] != unquote(secret):
            return JSONResponse({'error': 'invalid_client', 'error_description': 'unknown client or secret'},
                                status_code=401)
        token = f'tok-{len(obs.tokens) + 1}'
        obs.tokens[token] = True
        return JSONResponse({'access_token': token, 'token_type': 'Bearer',
                             'expires_in': OAUTH_CLIENTS[client][1], 'scope': form.get('scope', '')})

    return Route('/token', token, methods=['POST'])


class Switch:
    """An agent's endpoints, one variant at a time: an in-place upgrade swaps them all."""

    def __init__(self, variants: list):
        self.variants = variants
        self.current = 0

    async def __call__(self, scope, receive, send):
        await self.variants[self.current](scope, receive, send)


def admin_routes(obs: Observations) -> list[BaseRoute]:
    async def stats(request: Request):
        return JSONResponse({
            'card_fetches': {n: obs.card_fetches[n] for n in obs.agent_names},
            'messages': {n: obs.messages[n] for n in obs.agent_names},
            'cancels': {n: obs.cancels[n] for n in obs.agent_names},
        })

    async def headers(request: Request):
        if request.method == 'DELETE':
            obs.requests.clear()
            return JSONResponse({'cleared': True})
        return JSONResponse(obs.requests)

    async def forget(request: Request):
        count, call = 0, ServerCallContext()
        for handler in obs.handlers.values():
            for task in await handler.all_tasks():
                await handler.store.delete(task.id, call)
                count += 1
        return JSONResponse({'forgotten': count})

    async def finish(request: Request):
        count, call = 0, ServerCallContext()
        for handler in obs.handlers.values():
            for task in await handler.all_tasks():
                if task.status.state in INTERRUPTED:
                    task.status.state = TaskState.TASK_STATE_COMPLETED
                    task.status.timestamp.GetCurrentTime()
                    await handler.store.save(task, call)
                    count += 1
        return JSONResponse({'finished': count})

    async def expire(request: Request):
        for handler in obs.handlers.values():
            handler.expire_contexts()
        return JSONResponse({'expired': True})

    async def release(request: Request):
        if 'hold' in request.query_params:
            HOLDS.setdefault(request.query_params['hold'], asyncio.Event()).set()
            return JSONResponse({'released': True})
        obs.release.set()
        return JSONResponse({'released': True})

    async def flaky(request: Request):
        q = request.query_params
        obs.flaky.update(count=int(q.get('count', 1)), status=int(q.get('status', 503)),
                         retry_after=q.get('retry_after'), refused=[], agent=q.get('agent', 'flaky'))
        return JSONResponse(obs.flaky)

    async def tokens(request: Request):
        return JSONResponse({'requests': obs.token_requests, 'issued': list(obs.tokens)})

    async def revoke(request: Request):
        for token in obs.tokens:
            obs.tokens[token] = False
        return JSONResponse({'revoked': len(obs.tokens)})

    async def message_ids(request: Request):
        return JSONResponse({'processed': obs.message_ids, 'refused': obs.flaky['refused']})

    async def huge(request: Request):
        return JSONResponse({'chunks': obs.huge_chunks})

    async def streams(request: Request):
        return JSONResponse(obs.streams)

    async def upgrade(request: Request):
        switch = obs.switches[request.query_params['agent']]
        switch.current = int(request.query_params.get('variant', switch.current + 1)) % len(switch.variants)
        return JSONResponse({'variant': switch.current})

    return [
        Route('/_admin/stats', stats, methods=['GET']),
        Route('/_admin/headers', headers, methods=['GET', 'DELETE']),
        Route('/_admin/forget', forget, methods=['POST']),
        Route('/_admin/finish', finish, methods=['POST']),
        Route('/_admin/expire', expire, methods=['POST']),
        Route('/_admin/release', release, methods=['POST']),
        Route('/_admin/upgrade', upgrade, methods=['POST']),
        Route('/_admin/flaky', flaky, methods=['POST']),
        Route('/_admin/message-ids', message_ids, methods=['GET']),
        Route('/_admin/tokens', tokens, methods=['GET']),
        Route('/_admin/revoke', revoke, methods=['POST']),
        Route('/_admin/huge', huge, methods=['GET']),
        Route('/_admin/streams', streams, methods=['GET']),
    ]


def build_app(specs: list[AgentSpec], obs: Observations, base: str, grpc_server, grpc_address: str):
    top: list[BaseRoute] = admin_routes(obs) + [token_route(obs)]
    mounts: list[BaseRoute] = []
    for spec in specs:
        obs.agent_names.append(spec.name)
        card = build_card(spec, base, grpc_address)
        handler = None
        if spec.script is not None:
            store = InMemoryTaskStore()
            push = {}
            if spec.push:
                configs = InMemoryPushNotificationConfigStore()
                push = {'push_config_store': configs,
                        'push_sender': BasePushNotificationSender(httpx.AsyncClient(timeout=15), configs)}
            inner = DefaultRequestHandler(agent_executor=ScriptedExecutor(spec.script, spec.cancelable), task_store=store,
                                          agent_card=card, **push)
            handler = ObservedHandler(spec.name, inner, store, obs, spec.refuse_unknown_contexts)
            obs.handlers[spec.name] = handler
            if GRPC in spec.bindings:
                a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        if spec.upgrades:
            variants = [spec] + [replace(spec, bindings=b) for b in spec.upgrades]
            switch = obs.switches[spec.name] = Switch([
                Starlette(routes=card_routes(v, build_card(v, base, grpc_address)) + protocol_routes(v, handler))
                for v in variants])
            mounts.append(Mount(f'/{spec.name}', app=switch))
            continue
        top += no_slash_routes(spec, handler)
        mounts.append(Mount(f'/{spec.name}', routes=card_routes(spec, card) + protocol_routes(spec, handler)))
    app = Starlette(routes=top + mounts)
    app = SchemeGuard(app, specs, obs)
    app = Fasta2aLike(LangGraphShapes(app, obs.calls), obs.calls)
    app = CutStream(app)
    app = ForgetfulStream(app)
    app = JsSdkErrors(app)
    app = Flaky(app, obs)
    return RequestRecorder(app, obs)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('port', nargs='?', type=int, default=0, help='HTTP port (0: pick a free one)')
    parser.add_argument('--grpc-port', type=int, default=0, help='gRPC port (0: pick a free one)')
    parser.add_argument('--foreign-url', default=None, help='URL for the foreign / redirect agents')
    parser.add_argument('--token-url', default=None, help='the token URL of the oauth-elsewhere agent')
    parser.add_argument('--issuer', default=None, help="an OAuth 2.0 authorization server's issuer: the sign-in agents")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # proto set: asyncio then enables TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', args.port))
    base = f'http://127.0.0.1:{sock.getsockname()[1]}'

    obs = Observations()
    grpc_server = grpc.aio.server(interceptors=[GrpcRecorder(obs)])
    grpc_port = grpc_server.add_insecure_port(f'127.0.0.1:{args.grpc_port}')
    grpc_address = f'127.0.0.1:{grpc_port}'
    issuer = None
    if args.issuer:
        async with httpx.AsyncClient(timeout=10) as http:
            discovery = await http.get(f'{args.issuer}/.well-known/openid-configuration')
            issuer = discovery.raise_for_status().json()
    app = build_app(agent_catalogue(obs, args.foreign_url, args.token_url, issuer), obs, base, grpc_server,
                    grpc_address)
    config = uvicorn.Config(app, log_level='warning', access_log=False, lifespan='off',
                            timeout_graceful_shutdown=0.5)
    server = uvicorn.Server(config)

    def stop(*_):
        server.should_exit = True

    # uvicorn installs its own handlers while serving, then restores these and
    # re-raises the signal; ours only set a flag, so the process exits with 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)

    await grpc_server.start()
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    if server.started:
        print(json.dumps({'url': base, 'grpc': grpc_address}), flush=True)
    try:
        await serving
    finally:
        await grpc_server.stop(grace=0.2)
        closing = asyncio.gather(*(h.aclose() for h in obs.handlers.values()), return_exceptions=True)
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(closing, 1.0)


def main(argv=None) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format='%(asctime)s %(levelname)s %(name)s: %(message)s')
    asyncio.run(serve(parse_args(argv)))


if __name__ == '__main__':
    main()
    # Everything is shut down by now. Tearing down the interpreter (the SDK
    # pulls in fastapi, sqlalchemy, pydantic) would take another ~0.5 s.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
