# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``A2AClient`` and ``AsyncA2AClient``: talk to one A2A agent, from ordinary or asyncio Python.

>>> with A2AClient("http://127.0.0.1:8337/a2a") as client:
...     print(client.fetch_agent_card().name)
...     print(client.send_task("hello", session_id="my-session"))

>>> async with AsyncA2AClient("http://127.0.0.1:8337/a2a") as client:
...     print(await client.send_task("hello", session_id="my-session"))

Both are faces of one core (:class:`_BaseClient`), as httpx builds ``Client`` and
``AsyncClient`` on one base: the async face awaits it on the caller's event loop, the
sync face runs it on the one background loop of ``_loop``.

Each call has one overall deadline, ``timeout`` seconds, covering card resolution and
the whole answer (also a streamed one), and every look-up made for it (an earlier task's
answer, its continuation): they share the one deadline. A ``session_id`` names a conversation: its
first message goes without a contextId, and every later one carries the contextId the
agent gave. While the agent waits for the user (input-required / auth-required), the
next message of that session continues the same task.

An agent that acts for a person signs them in first (``_sign_in_turns``): the turn says
where to go and which code to enter, and the answer follows once they have.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import uuid
from contextlib import aclosing
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass

from a2a.client import A2AClientError, A2AClientTimeoutError
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
                       SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task, TaskState)
from a2a.utils.errors import A2AError, TaskNotFoundError

from ovos_a2a_solver._defaults import DEFAULT_TIMEOUT, AnswerLimits, BreakerPolicy, CardTrust, RetryPolicy
from ovos_a2a_solver._loop import BACKGROUND
from ovos_a2a_solver.agent.cards import AgentCard, AgentInterface, AgentSkill
from ovos_a2a_solver.agent.connection import AgentConnection
from ovos_a2a_solver.agent.credentials import Credentials, OriginCredentials, origin_of, token_origins_of
from ovos_a2a_solver.agent.exceptions import (AgentTaskError, CardSignatureError, CircuitOpenError,
                                              IncompleteAnswerError, MissingCredentialError, NoAnswerError,
                                              ReplyTooLargeError, SignInError, SignInPendingError,
                                              SignInRequiredError, StillWorkingError)
from ovos_a2a_solver.agent.request_failures import (Attempts, CircuitBreaker, agent_answered, connection_lost,
                                                    peer_error, refused_for_good)
from ovos_a2a_solver.agent.sign_in import SignInEvent, SignInPrompt
from ovos_a2a_solver._sign_in_turns import SignInTurns
from ovos_a2a_solver.agent.signatures import signature_check
from ovos_a2a_solver.agent.tokens import TokenStore, for_person
from ovos_a2a_solver.answers.assembler import ARTIFACT_SEPARATOR, AnswerAssembler, TextPieces
from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.conversations.conversation_store import Conversation, ConversationStore
from ovos_a2a_solver.conversations.effects import (ENDED_WITHOUT_ANSWER, KEPT, Effect, FailedContinuations, Kept,
                                                   Outcome, effect_of_error, outcome_of)
from ovos_a2a_solver.conversations.outliving import OutlivingTasks
from ovos_a2a_solver.states import SETTLED, TERMINAL, WAITING_FOR_USER, state_name

LOG = logging.getLogger("ovos_a2a_solver")

__all__ = ["A2AClient", "AsyncA2AClient", "AgentCard", "AgentInterface", "AgentSkill", "AgentTaskError",
           "AnswerLimits", "BreakerPolicy", "CardSignatureError", "CardTrust", "CircuitOpenError", "Credentials",
           "IncompleteAnswerError", "MissingCredentialError", "NoAnswerError", "ReplyTooLargeError", "RetryPolicy",
           "SignInError", "SignInEvent", "SignInPendingError", "SignInPrompt", "SignInRequiredError",
           "StillWorkingError", "TaskUpdate", "TokenStore"]


@dataclass(frozen=True)
class TaskUpdate:
    """Where the agent's task stands after one event of an exchange."""

    task_id: str
    context_id: str
    state: int        # the task's ``a2a.types.TaskState`` (``TASK_STATE_UNSPECIFIED`` before any); see ``states``
    progress: str     # the agent's "working" message of this event, if any and not read as the answer
    note: str = ""    # the event's metadata "note", if any (the bridge's heartbeats: "Still working (N s).")

    @property
    def state_name(self) -> str:
        """The state as people say it: "working", "input-required", ... ("" before any)."""
        return state_name(self.state) if self.state else ""


#: Seconds a stopped turn waits for the agent to confirm its CancelTask.
CANCEL_TIMEOUT = 5.0
#: Seconds between GetTask reads of a task whose stream broke (doubling), where it
#: cannot be subscribed to again.
FOLLOW_POLL_MIN, FOLLOW_POLL_MAX = 0.2, 2.0
#: Tasks waiting for the user whose artifacts said so far are kept (the oldest forgotten first).
GIVEN_TASKS = 256


@dataclass(eq=False)
class _Running:
    """One exchange under way: whose, how far, and the asyncio task that runs it."""

    session_id: str | None
    answer: AnswerAssembler
    task: "asyncio.Task | None"
    stopped: "asyncio.Future | None" = None  # set by stop(): True once the agent canceled the task
    sent: bool = False                       # the message went out: the agent may be working on it
    unnamed: "_Reply | None" = None          # left while its reply had not named the task yet (see _Reply)


async def _next_event(events: AsyncIterator[StreamResponse]) -> StreamResponse | None:
    """The reply's next event; ``None`` once it ended."""
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None


class _Reply:
    """The events of the agent's reply to one message, closed on leaving (``async with``).

    Until an event names the agent's task, each is read on an asyncio task of its own that the
    turn only waits for (shielded): a turn canceled in that gap (the agent has the message, the
    client not yet the id of its task) leaves that read going, handed to ``running.unnamed``,
    for the cancel it owes (:meth:`_BaseClient._cancel_remote`) to learn the id from.
    """

    def __init__(self, events: AsyncIterator[StreamResponse], running: _Running) -> None:
        self._events, self._running = events, running
        self._reading: asyncio.Task | None = None

    async def __aenter__(self) -> "_Reply":
        return self

    async def __aexit__(self, exc_type, exc, traceback) -> None:
        if exc_type is asyncio.CancelledError and self._reading is not None:
            self._running.unnamed = self  # whoever canceled the turn decides what becomes of the read
        else:
            await self.aclose()

    def __aiter__(self) -> "_Reply":
        return self

    async def __anext__(self) -> StreamResponse:
        if self._running.answer.task_id:
            return await anext(self._events)
        if self._reading is None:
            self._reading = asyncio.ensure_future(_next_event(self._events))
        event = await asyncio.shield(self._reading)  # canceled: the read goes on, see __aexit__
        self._reading = None
        if event is None:
            raise StopAsyncIteration
        return event

    async def named(self) -> str:
        """Read on until an event names the agent's task (fed to the answer, as the turn would
        have); its id, "" when the reply ended, or was a message, without naming one. Closes the reply."""
        answer = self._running.answer
        try:
            while not answer.task_id and not answer.message_reply:
                reading, self._reading = self._reading, None
                event = await (reading if reading is not None else _next_event(self._events))
                if event is None:
                    break
                answer.feed(event)
        finally:
            await self.aclose()
        return answer.task_id

    async def aclose(self) -> None:
        """Stop reading (a read under way is canceled) and release the reply's stream."""
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.cancel()
            await asyncio.wait([reading])  # an error it ended with was taken by the shield's or named()'s await
        await self._events.aclose()


def _task_goes_on(answer: AnswerAssembler) -> bool:
    """Whether the agent named a task for the message that has not settled yet (it works on)."""
    return bool(answer.task_id) and answer.state not in SETTLED and not answer.message_reply


def conversation_key(agent_url: str, namespace: str = "", caller: str | None = None) -> str:
    """The key a client's conversations are stored under: agent, namespace, and who is calling
    (``caller``: the credentials, hashed)."""
    origin = origin_of(agent_url)
    path = agent_url.split("://", 1)[-1].partition("/")[2].rstrip("/")
    key = f"{origin[0]}://{origin[1]}:{origin[2]}/{path}" if origin else agent_url
    if namespace:
        key += "#" + namespace
    if caller:
        key += "@" + hashlib.sha256(caller.encode()).hexdigest()[:12]
    return key


class _BaseClient:
    """What both clients are: one A2A agent (1.0 or 0.3; JSON-RPC, HTTP+JSON or gRPC), the
    deadline and transport of each call, the session -> conversation policy, and the
    async core every call runs.

    Args:
        base_url: the agent's URL; its card is looked up under it (or it is the card's URL).
        auth_header: sent as ``Authorization`` (``"Bearer abc"``), or ``"Name: value"`` for
            another header; only ever to ``base_url``'s origin and ``trusted_origins``.
        credentials: :class:`Credentials` sent in the form the card's security requirements
            name (bearer, API key, Basic, OAuth2 client credentials), to the same origins;
            when the card requires a scheme that neither these nor ``auth_header`` satisfy,
            calls raise :class:`MissingCredentialError` before anything is sent.
        timeout: overall deadline of each call in seconds (``DEFAULT_TIMEOUT``, 30).
        streaming: use streaming (SSE / server streaming) when the agent offers it.
        trusted_origins: other origins (``https://host:port``, ``host:port`` for gRPC) that
            may receive ``auth_header`` and ``credentials``.
        oauth2_token_origins: origins (``https://host:port``) of OAuth2 token endpoints that
            may receive the client secret, besides the agent's own and ``trusted_origins``; a
            card naming a ``tokenUrl`` elsewhere gets :class:`MissingCredentialError`, and
            nothing is sent there.
        conversations: where session -> contextId is kept; in memory by default.
        namespace: keeps this client's sessions apart from another client's on the same agent.
        retries: :class:`RetryPolicy`: how a request is tried again after a transient failure
            (``max_retries``, ``retry_base_delay``).
        breaker: :class:`BreakerPolicy`: after how many failed turns in a row turns fail at
            once (``CircuitOpenError``), for how long (``threshold``, ``cooldown``).
        card_trust: :class:`CardTrust`: which cards are believed (``require_signed_card``,
            ``card_public_key``, ``card_jwks_url``, or your own ``signature_verifier``).
        limits: :class:`AnswerLimits`: how much of an answer is read (``max_answer_chars``,
            ``answer_cut``, ``max_reply_bytes``).
        clock: the monotonic seconds the breaker's cool-down and the card's freshness are
            measured in (``time.monotonic`` unless given).
        tokens: where the tokens people sign in for are kept (:class:`TokenStore`); in memory by
            default. A card that requires (or declares) OAuth2 with a device-code flow, or OpenID
            Connect offering one, signs the person a turn is for in, with ``credentials``'
            ``oauth2_client_id``: see ``_sign_in_turns``.
        on_sign_in: called with each :class:`SignInEvent` (a sign-in started, said again, ended),
            on the client's event loop: e.g. to show ``verification_uri_complete`` on a screen.
    """

    def __init__(self, base_url: str, auth_header: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 streaming: bool = False, *, credentials: Credentials | None = None,
                 trusted_origins: Iterable[str] = (), oauth2_token_origins: Iterable[str] = (),
                 conversations: ConversationStore | None = None, namespace: str = "",
                 retries: RetryPolicy = RetryPolicy(), breaker: BreakerPolicy = BreakerPolicy(),
                 card_trust: CardTrust = CardTrust(), limits: AnswerLimits = AnswerLimits(),
                 clock: Callable[[], float] | None = None, tokens: TokenStore | None = None,
                 on_sign_in: Callable[[SignInEvent], None] | None = None) -> None:
        if origin_of(base_url) is None or "://" not in base_url:
            raise ValueError(f"agent URL must be an http(s) URL: {base_url!r}")
        if not timeout or timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        for name, policy, kind in (("retries", retries, RetryPolicy), ("breaker", breaker, BreakerPolicy),
                                   ("card_trust", card_trust, CardTrust), ("limits", limits, AnswerLimits)):
            if not isinstance(policy, kind):
                raise ValueError(f"{name} must be an ovos_a2a_solver.{kind.__name__}, not {type(policy).__name__}")
        self.retries, self.limits = retries, limits
        self.base_url = base_url
        self.timeout = float(timeout)
        self.streaming = bool(streaming)
        self.conversations = conversations if conversations is not None else ConversationStore()
        if credentials is not None and not isinstance(credentials, Credentials):
            raise ValueError(f"credentials must be an ovos_a2a_solver.Credentials, not {type(credentials).__name__}")
        caller = "\n".join(filter(None, (auth_header, credentials.identity() if credentials else "")))
        self.conversation_key = conversation_key(base_url, namespace, caller)
        token_origins = tuple(oauth2_token_origins)
        token_origins_of(token_origins)  # a bad one is an error now, with or without credentials
        self._credentials = (OriginCredentials(auth_header, base_url, trusted_origins, credentials, token_origins)
                             if auth_header or credentials else None)
        self._signature_check = signature_check(base_url, card_trust)
        self._connection: AgentConnection | None = None
        self._failed_continuations = FailedContinuations()
        self._lock = threading.Lock()
        self._closed = False
        self._running: set[_Running] = set()  # exchanges under way (touched on their event loop only)
        self._owed: set[asyncio.Task] = set()  # cancels owed by turns stopped before their task was named
        self._clock = clock
        self._breaker = CircuitBreaker(base_url, breaker, clock=clock)
        self._outliving = OutlivingTasks(_OutlivingSide(self))
        self.tokens = tokens if tokens is not None else TokenStore()
        self._sign_in_turns = SignInTurns(_SignInSide(self), self.tokens, self._outliving, on_sign_in)
        # task id -> its artifacts' texts when it asked the user: its next reply repeats them (see _ending)
        self._given: dict[str, dict[str, str]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, timeout={self.timeout}, streaming={self.streaming})"

    def conversation(self, session_id: str) -> Conversation | None:
        """Where ``session_id`` stands with the agent: its contextId and open taskId, if any."""
        return self.conversations.get(self.conversation_key, session_id)

    def reset(self, session_id: str) -> None:
        """Start a new remote conversation on the session's next message."""
        self.conversations.forget(self.conversation_key, session_id)

    @property
    def card_fetches(self) -> int:
        """How many card requests this client made (a cached card costs none)."""
        connection = self._connection
        return connection.cards.fetches if connection else 0

    # ---- internals ----------------------------------------------------------------

    def _get_connection(self) -> AgentConnection:
        with self._lock:
            if self._closed:
                raise A2AClientError("this A2AClient is closed")
            if self._connection is None:
                self._connection = AgentConnection(self.base_url, timeout=self.timeout,
                                                   credentials=self._credentials,
                                                   signature_check=self._signature_check, clock=self._clock,
                                                   max_reply_bytes=self.limits.max_reply_bytes, tokens=self.tokens)
            return self._connection

    def _turn_deadline(self) -> float:
        """The event loop's time at which a call or turn starting now must end."""
        return asyncio.get_running_loop().time() + self.timeout

    async def _deadline(self, coro, until: float | None = None):
        """``coro`` within ``timeout`` seconds from now, or by ``until`` (the loop's time at
        which the turn it is part of ends)."""
        try:
            async with asyncio.timeout_at(self._turn_deadline() if until is None else until):
                return await coro
        except asyncio.TimeoutError:
            raise A2AClientTimeoutError(f"no answer from {self.base_url} within {self.timeout:g} s") from None

    async def _card(self) -> AgentCard:
        return AgentCard.from_proto(await self._get_connection().card())

    def _checked_text(self, text: str) -> str:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
        return text

    @staticmethod
    def _get_request(task_id: str, history_length: int | None) -> GetTaskRequest:
        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return request

    @staticmethod
    def _list_request(context_id: str, state: int | None, page_size: int, page_token: str) -> ListTasksRequest:
        request = ListTasksRequest(context_id=context_id, page_size=page_size, page_token=page_token)
        if state is not None:
            request.status = state
        return request

    async def _aclose(self) -> None:
        if self._owed:  # each is bounded (CANCEL_TIMEOUT): the tasks they cancel are not left running
            await asyncio.wait(list(self._owed))
        with self._lock:
            connection, self._connection, self._closed = self._connection, None, True
        self._sign_in_turns.close()
        if connection is not None:
            await connection.aclose()

    async def _when_ready(self, session_id: str, task_id: str, within: float) -> str | None:
        with for_person(self._person(session_id)):
            return await self._outliving.answer_when_ready(session_id, task_id, within)

    def _person(self, session_id: str | None) -> str:
        """Who a session's requests are for: its tokens are kept under it (``agent.tokens``)."""
        return f"{self.conversation_key}|{session_id or ''}"

    async def _sign_out(self, session_id: str | None) -> int:
        sign_in = None
        try:
            sign_in = await self._deadline(self._get_connection().sign_in())
        except A2AError as exc:  # the agent cannot be asked now: forget the tokens all the same
            LOG.info("signing out of %s without revoking: its card could not be read (%s)", self.base_url, exc)
        return await self._sign_in_turns.sign_out(session_id, sign_in)

    def _attempts(self, connection: AgentConnection) -> Attempts:
        """The tries of one request, within one timeout from now."""
        return Attempts(connection, asyncio.get_running_loop().time() + self.timeout, self.retries, self.base_url)

    async def _call(self, method: str, request):
        connection = self._get_connection()
        attempts = self._attempts(connection)
        while True:
            try:
                client = await connection.client(streaming=self.streaming)
                return await getattr(client, method)(request)
            except A2AError as caught:
                exc = peer_error(caught)
                # reading a known task twice changes nothing: a transient failure is tried again
                wait = attempts.next_try(exc, transient_again=method == "get_task")
                if wait is None:
                    if exc is caught:
                        raise
                    raise exc from caught
                await asyncio.sleep(wait)
            except NotImplementedError as exc:
                raise A2AClientError(f"{method} is not available over this agent's transport "
                                     f"(A2A 0.3 agents cannot list tasks)") from exc

    async def _revisions(self, answer: AnswerAssembler, text: str, session_id: str | None,
                         streaming: bool, lang: str | None = None,
                         until: float | None = None) -> AsyncIterator[Revision]:
        """One message to the agent; its answer as revisions, as they arrive, within the turn's
        deadline; the breaker told how the turn went, and the conversation what it keeps.

        Left before the answer ended (the caller closed the stream, or :meth:`stop`), the
        agent's task is canceled with CancelTask and the HTTP stream released.
        """
        conv = self.conversation(session_id) if session_id is not None else None
        if conv and conv.task_id:
            answer.given = self._given.pop(conv.task_id, {})
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                          context_id=conv.context_id if conv else "",
                          task_id=(conv.task_id or "") if conv else "")
        if lang:
            message.metadata.update({"lang": lang})  # the user's language (the bridge reads metadata["lang"])
        answer.asked_id = message.message_id
        connection = self._get_connection()
        self._breaker.before_turn()
        running = _Running(session_id, answer, asyncio.current_task())
        self._running.add(running)
        try:
            async with asyncio.timeout_at(self._turn_deadline() if until is None else until):
                async with aclosing(self._exchange(connection, message, running, streaming, conv)) as revisions:
                    async for revision in revisions:
                        yield revision
        except asyncio.TimeoutError:
            raise self._deadline_passed(running, conv, message) from None
        except (GeneratorExit, asyncio.CancelledError):
            self._running.discard(running)
            self._breaker.abandoned()
            await self._cancel_remote(running, conv)
            raise
        except BaseException as exc:
            self._breaker.failed(exc)
            if agent_answered(exc):
                self._breaker.succeeded()  # the agent answered, with an error of its own
            raise
        finally:
            self._running.discard(running)
            if running.unnamed is not None:  # e.g. the deadline passed: nothing to cancel, the read ends
                reply, running.unnamed = running.unnamed, None
                await reply.aclose()
        self._breaker.succeeded()
        for revision in self._ending(answer, session_id, conv):
            yield revision

    async def _exchange(self, connection: AgentConnection, message: Message, running: "_Running", streaming: bool,
                        conv: Conversation | None) -> AsyncIterator[Revision]:
        """Send ``message`` and read its answer, within the tries of :class:`Attempts` (the same
        message again is still one turn, while nothing came back). A reply that ends, or a
        stream that breaks, before the task the agent named settled is followed instead
        (:meth:`_follow`): a blocking send answered "submitted" is too.

        A stream of which nothing could be read (no A2A event of any version) is not asked
        for again from this agent until its card changes: the message goes again, blocking,
        unless the agent named its task (then that is followed).

        A continuation whose reply broke before its first event is looked up (GetTask): when
        the agent no longer has the task (it restarted, and said so inside a stream it then
        cut), the task is let go and the message goes again at once as a new task in the same
        context."""
        answer, attempts = running.answer, self._attempts(connection)
        while True:
            streaming = streaming and connection.streams_readable
            unreadable = 0  # events of no A2A shape
            try:
                client = await connection.client(streaming)
                streamed = streaming and (await connection.card()).capabilities.streaming
                running.sent = True  # from here on the agent may be working on the message
                async with _Reply(client.send_message(SendMessageRequest(message=message)), running) as events:
                    async for event in events:
                        unreadable += not event.WhichOneof("payload")
                        for revision in answer.feed(event):
                            yield revision
                        if answer.cut:
                            break  # the rest is not read: leaving closes the stream
            except A2AError as caught:
                exc = peer_error(caught)
                if _task_goes_on(answer) and connection_lost(exc):
                    LOG.info("the stream of task %s from %s broke (%s); following the task instead",
                             answer.task_id, self.base_url, exc)
                    async for revision in self._follow(answer):
                        yield revision
                    return
                if message.task_id and not answer.events and connection_lost(exc) \
                        and await self._task_gone(message.task_id):
                    LOG.info("the continuation of task %s broke before its first event (%s), and %s no longer "
                             "has the task: the message goes as a new task in the same context", message.task_id,
                             exc, self.base_url)
                    self._as_new_task(message, running)
                    conv = self.conversation(running.session_id) if running.session_id is not None else None
                    continue
                wait = attempts.next_try(exc, send_again=answer.events == 0)
                if wait is None:
                    self._after_error(exc, running.session_id, conv)
                    if exc is caught:
                        raise
                    raise exc from caught
                await asyncio.sleep(wait)
                continue
            if answer.cut or answer.message_reply or answer.state in SETTLED:
                return
            if streamed and (unreadable or not answer.events):
                LOG.warning("the stream from %s could not be read; asking it without streams until its card "
                            "changes", self.base_url)
                connection.streams_unreadable()
            if answer.task_id:
                LOG.info("the reply of %s ended while task %s was %s; following the task", self.base_url,
                         answer.task_id, state_name(answer.state) if answer.state else "unknown")
                async for revision in self._follow(answer):
                    yield revision
                return
            if connection.streams_readable or not streamed:
                return
            # the message again, blocking: the stream named no task to follow

    async def _task_gone(self, task_id: str) -> bool:
        """Whether the agent says it has no task ``task_id`` (GetTask answered TaskNotFoundError)."""
        try:
            await self._call("get_task", GetTaskRequest(id=task_id))
        except TaskNotFoundError:
            return True
        except A2AError as exc:
            LOG.debug("task %s could not be looked up at %s: %s", task_id, self.base_url, exc)
        return False

    def _as_new_task(self, message: Message, running: "_Running") -> None:
        """Make ``message`` the first of a new task in its context (a new messageId: the agent took
        nothing of it); the session's open task is let go, and the answer read afresh."""
        message.task_id = ""
        message.message_id = uuid.uuid4().hex
        running.answer.asked_id = message.message_id
        running.answer.given = {}
        if running.session_id is not None:
            self.conversations.forget_task(self.conversation_key, running.session_id)

    def _deadline_passed(self, running: "_Running", conv: Conversation | None, message: Message) -> Exception:
        """What a turn whose deadline passed raises: :class:`StillWorkingError` while the agent
        works on (its task, or the message it has not named a task for, stays pending in the
        conversation), else a timeout."""
        answer, session_id = running.answer, running.session_id
        late = f"no answer from {self.base_url} within {self.timeout:g} s"
        context_id = answer.context_id or (conv.context_id if conv else "")
        if _task_goes_on(answer):  # the agent is alive and working: the task outlives the turn
            self._breaker.succeeded()
            self._record(session_id, Outcome.STILL_WORKING, context_id, answer.task_id)
            return StillWorkingError(f"{late}; it is still working on task {answer.task_id}", answer.task_id,
                                     context_id)
        error = A2AClientTimeoutError(late)
        self._breaker.failed(error)
        if running.sent and not answer.events and session_id is not None:
            # the agent has the message but has not said which task it is (a blocking exchange)
            self._record(session_id, Outcome.UNNAMED, context_id, message_id=message.message_id)
            return StillWorkingError(f"{late}; it may still be working on the message", "", context_id)
        return error

    def _ending(self, answer: AnswerAssembler, session_id: str | None,
                conv: Conversation | None) -> Iterator[Revision]:
        """The last revisions of an answer that arrived, and what the conversation keeps of it."""
        if answer.cut and _task_goes_on(answer):
            # not canceled: the reply to CancelTask would carry the whole task, all it wrote
            LOG.warning("the answer from %s passed %d characters: cut there, and the rest of task %s not read",
                        self.base_url, self.limits.max_answer_chars, answer.task_id)
            self._record(session_id, Outcome.CUT, answer.context_id or (conv.context_id if conv else ""))
            return
        yield from answer.finish()
        if answer.state in WAITING_FOR_USER and answer.task_id:  # said once, not again when the task goes on
            self._given[answer.task_id] = answer.artifact_texts()
            while len(self._given) > GIVEN_TASKS:
                del self._given[next(iter(self._given))]
        self._after_answer(answer, session_id, conv)

    async def _follow(self, answer: AnswerAssembler) -> AsyncIterator[Revision]:
        """The rest of a task whose stream broke: subscribed to again (SubscribeToTask, whose
        first event is the task as it stands), or, where that is not possible, read with
        GetTask until it settles. Bounded by the turn's deadline, like the stream was."""
        task_id, delay = answer.task_id, FOLLOW_POLL_MIN
        connection = self._get_connection()
        while True:
            try:
                if not connection.streams_readable:
                    raise NotImplementedError("this agent's streams cannot be read")
                client = await connection.client(True)
                async with aclosing(client.subscribe(SubscribeToTaskRequest(id=task_id))) as events:
                    async for event in events:
                        for revision in answer.feed(event):
                            yield revision
                        if answer.cut:
                            return
                if answer.state in SETTLED:
                    return
            except (A2AError, NotImplementedError) as exc:  # no streams here, the task ended, or it broke again
                LOG.debug("subscribing to task %s again failed: %s", task_id, exc)
            task = await self._call("get_task", GetTaskRequest(id=task_id))
            for revision in answer.feed(StreamResponse(task=task)):
                yield revision
            if task.status.state in SETTLED or answer.cut:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, FOLLOW_POLL_MAX)

    async def _cancel_remote(self, running: "_Running", conv: Conversation | None) -> None:
        """The turn was left before its answer ended: cancel the agent's task (CancelTask).

        Left before the agent named its task (it has the message), the turn ends now and the
        cancel is owed: it reads the reply on until the task is named, within ``CANCEL_TIMEOUT``,
        then cancels it; :meth:`stop` returns once it did, and closing the client waits for it."""
        reply, running.unnamed = running.unnamed, None
        if reply is None:
            await self._cancel_named(running, conv)
            return
        owed = asyncio.ensure_future(self._cancel_named(running, conv, reply))
        self._owed.add(owed)
        owed.add_done_callback(self._owed.discard)

    async def _cancel_named(self, running: "_Running", conv: Conversation | None,
                            unnamed: "_Reply | None" = None) -> None:
        """Cancel the task the agent named for the turn's message, if it goes on: named already,
        or by the reply ``unnamed`` still reads; settle what :meth:`stop` waits for."""
        answer, ok = running.answer, True
        if unnamed is not None:
            try:
                async with asyncio.timeout(min(self.timeout, CANCEL_TIMEOUT)):
                    await unnamed.named()
            except Exception as exc:  # A2AError, TimeoutError: what stop() waits for is settled all the same
                ok = False
                LOG.error("stopped before %s named the task of the message, and it named none (%s): its work on "
                          "it may go on", self.base_url, str(exc) or "not in time")
        if answer.task_id and answer.state not in TERMINAL and not answer.message_reply:  # not yet ended
            try:
                async with asyncio.timeout(min(self.timeout, CANCEL_TIMEOUT)):
                    task = await self._call("cancel_task", CancelTaskRequest(id=answer.task_id))
                ok = task.status.state == TaskState.TASK_STATE_CANCELED
                if ok:
                    LOG.info("stopped: task %s at %s canceled", answer.task_id, self.base_url)
                else:
                    LOG.error("stopped, but %s did not cancel task %s: it is %s", self.base_url, answer.task_id,
                              state_name(task.status.state))
            except (A2AError, asyncio.TimeoutError) as exc:
                ok = await self._canceled_already(answer.task_id)  # e.g. the caller canceled it too
                if not ok:
                    LOG.error("stopped, but %s refused to cancel task %s: %s", self.base_url, answer.task_id,
                              exc or "no answer in time")
            except Exception as exc:  # a cleanup must not hide why the turn ended
                ok = False
                LOG.error("stopped, but cancelling task %s at %s failed: %r", answer.task_id, self.base_url, exc)
            self._record(running.session_id, Outcome.STOPPED, answer.context_id or (conv.context_id if conv else ""))
        if running.stopped is not None and not running.stopped.done():
            running.stopped.set_result(ok)

    async def _canceled_already(self, task_id: str) -> bool:
        try:
            async with asyncio.timeout(min(self.timeout, CANCEL_TIMEOUT)):
                task = await self._call("get_task", GetTaskRequest(id=task_id))
        except (A2AError, asyncio.TimeoutError):
            return False
        return task.status.state == TaskState.TASK_STATE_CANCELED

    async def _stop(self, session_id: str | None) -> bool:
        targets = [r for r in list(self._running) if session_id is None or r.session_id == session_id]
        loop = asyncio.get_running_loop()
        for running in targets:
            running.stopped = loop.create_future()
            running.task.cancel()
        results = [await running.stopped for running in targets]
        return all(results)

    def _assembler(self, on_update: Callable[[TaskUpdate], None] | None) -> AnswerAssembler:
        """An answer's assembler within this client's limits; ``on_update`` sees each event's :class:`TaskUpdate`."""
        def report(a: AnswerAssembler) -> None:
            on_update(TaskUpdate(a.task_id, a.context_id, a.state or TaskState.TASK_STATE_UNSPECIFIED, a.progress,
                                 a.note))

        return AnswerAssembler(on_update=report if on_update is not None else None,
                               max_chars=self.limits.max_answer_chars, cut_line=self.limits.answer_cut)

    async def _answer(self, text: str, session_id: str | None, lang: str | None = None) -> str:
        """The whole answer, asked the way ``streaming`` says (after an earlier one that is now
        ready, see :meth:`~ovos_a2a_solver.conversations.outliving.OutlivingTasks.earlier_answer`)."""
        until = self._turn_deadline()  # one deadline for the turn: its look-ups and its answer
        with for_person(self._person(session_id)):
            earlier = await self._outliving.earlier_answer(session_id, until)
            if earlier is not None and earlier.waiting:
                return earlier.text
            said: list[str] = [earlier.text] if earlier is not None else []
            try:
                async with aclosing(self._sign_in_turns.revisions(
                        self._assembler(None), text, session_id, self.streaming, lang, until, said,
                        lambda: self._assembler(None))) as revisions:
                    async for _ in revisions:
                        pass
            except NoAnswerError:
                if not "".join(said).strip():
                    raise
            except SignInPendingError as pending:
                pending.said = ARTIFACT_SEPARATOR.join(part for part in said if part.strip())
                raise
        return ARTIFACT_SEPARATOR.join(part for part in said if part.strip())

    async def _answer_revisions(self, text: str, session_id: str | None,
                                on_update: Callable[[TaskUpdate], None] | None,
                                lang: str | None, blocking: bool = False) -> AsyncIterator[Revision]:
        """The revisions of an earlier answer that is now ready (see
        :meth:`~ovos_a2a_solver.conversations.outliving.OutlivingTasks.earlier_answer`), then of this message's
        answer, streamed whenever the card offers streaming (unless ``blocking``). When the
        earlier task asks a question, only that: the user answers it next."""
        until = self._turn_deadline()  # one deadline for the turn: its look-ups and its answer
        with for_person(self._person(session_id)):
            earlier = await self._outliving.earlier_answer(session_id, until)
            if earlier is not None:
                for revision in earlier.revisions:
                    yield revision
                if earlier.waiting:
                    return
            async with aclosing(self._sign_in_turns.revisions(
                    self._assembler(on_update), text, session_id, not blocking, lang, until, [],
                    lambda: self._assembler(on_update))) as revisions:
                async for revision in revisions:
                    yield revision

    async def _pieces(self, text: str, session_id: str | None, on_update: Callable[[TaskUpdate], None] | None,
                      lang: str | None = None, blocking: bool = False) -> AsyncIterator[str]:
        """The answer's text as it arrives (streamed whenever the card offers streaming, unless ``blocking``)."""
        pieces = TextPieces()
        async with aclosing(self._answer_revisions(text, session_id, on_update, lang, blocking)) as revisions:
            async for revision in revisions:
                for piece in pieces.add(revision):
                    yield piece

    async def _sentences(self, text: str, session_id: str | None, on_update: Callable[[TaskUpdate], None] | None,
                         lang: str | None = None) -> AsyncIterator[str]:
        """The answer's sentences (and lines), each as soon as it is complete: one whose end
        is unsure ("It costs 3.") once no more text came within ``SENTENCE_GRACE``."""
        from ovos_a2a_solver.answers.read_ahead import QUIET, read_ahead
        from ovos_a2a_solver.answers.sentences import SENTENCE_GRACE, SentenceSpeaker

        speaker = SentenceSpeaker()
        revisions = read_ahead(self._answer_revisions(text, session_id, on_update, lang),
                               lambda: SENTENCE_GRACE if speaker.unsure() else None)
        async with aclosing(revisions):
            async for revision in revisions:
                for sentence in speaker.settle() if revision is QUIET else speaker.add(revision):
                    yield sentence
        for sentence in speaker.finish():
            yield sentence

    def _after_error(self, exc: BaseException, session_id: str | None, conv: Conversation | None) -> None:
        if session_id is None or conv is None:
            return
        failed_before = bool(conv.task_id) and self._failed_continuations.failed(session_id, conv.task_id)
        effect = effect_of_error(exc, named_task=bool(conv.task_id), named_context=bool(conv.context_id),
                                 refused=refused_for_good(exc), failed_before=failed_before)
        if effect is Effect.FORGET_TASK:
            self.conversations.forget_task(self.conversation_key, session_id)
        elif effect is Effect.NEW_CONVERSATION:
            self.conversations.forget(self.conversation_key, session_id, refused=True)

    def _after_answer(self, answer: AnswerAssembler, session_id: str | None, conv: Conversation | None) -> None:
        context_id = answer.context_id or (conv.context_id if conv else "")
        outcome = outcome_of(answer.state, answer.message_reply, answer.has_words)
        self._record(session_id, outcome, context_id, answer.task_id)
        if outcome is Outcome.ENDED:
            raise AgentTaskError(ENDED_WITHOUT_ANSWER[answer.state], answer.ending_reason(),
                                 answer.task_id, context_id)
        if outcome is Outcome.SILENT:
            LOG.info("%s gave no answer: neither its artifacts, its status messages nor its history held any "
                     "text (task %s)", self.base_url, answer.task_id or "none: a message reply")
            raise NoAnswerError("" if answer.message_reply or answer.state is None else state_name(answer.state),
                                answer.task_id, context_id)
        if outcome is Outcome.INCOMPLETE:
            state = "unknown" if answer.state is None else state_name(answer.state)
            raise IncompleteAnswerError(f"the agent's reply ended while its task was {state}")

    def _record(self, session_id: str | None, outcome: Outcome, context_id: str, task_id: str | None = None,
                message_id: str | None = None) -> None:
        """Keep of the session's conversation what ``outcome`` leaves of it (``conversations.effects.KEPT``)."""
        if session_id is None:
            return
        self._failed_continuations.ended(session_id)
        kept, key = KEPT[outcome], self.conversation_key
        if kept is Kept.PENDING_TASK:
            self.conversations.set_pending(key, session_id, context_id, task_id)
        elif kept is Kept.PENDING_MESSAGE:
            self.conversations.set_pending(key, session_id, context_id, None, message_id)
        else:
            self.conversations.remember(key, session_id, context_id, task_id if kept is Kept.OPEN_TASK else None)


class _OutlivingSide:
    """A client as its :class:`OutlivingTasks` sees it (an ``OutlivingClient``): the agent's tasks
    read within the client's deadline, and the conversation kept as an outcome says."""

    def __init__(self, client: _BaseClient) -> None:
        self._client = client

    @property
    def base_url(self) -> str:
        return self._client.base_url

    @property
    def conversation_key(self) -> str:
        return self._client.conversation_key

    @property
    def conversations(self) -> ConversationStore:
        return self._client.conversations

    @property
    def closed(self) -> bool:
        return self._client._closed

    def conversation(self, session_id: str) -> Conversation | None:
        return self._client.conversation(session_id)

    async def read_task(self, task_id: str, until: float | None = None) -> Task:
        client = self._client
        return await client._deadline(client._call("get_task", GetTaskRequest(id=task_id)), until)

    async def newest_tasks(self, context_id: str, count: int, until: float | None = None):
        client = self._client
        return await client._deadline(client._call("list_tasks", client._list_request(context_id, None, count, "")),
                                      until)

    def new_assembler(self) -> AnswerAssembler:
        return self._client._assembler(None)

    def record(self, session_id: str, outcome: Outcome, context_id: str, task_id: str) -> None:
        self._client._record(session_id, outcome, context_id, task_id)


class _SignInSide:
    """A client as its :class:`SignInTurns` sees it (a ``SignInClient``)."""

    def __init__(self, client: _BaseClient) -> None:
        self._client = client

    @property
    def base_url(self) -> str:
        return self._client.base_url

    def assembler(self) -> AnswerAssembler:
        return self._client._assembler(None)

    def revisions(self, answer: AnswerAssembler, text: str, session_id: str | None, streaming: bool,
                  lang: str | None, until: float) -> AsyncIterator[Revision]:
        return self._client._revisions(answer, text, session_id, streaming, lang, until)

    async def sign_in(self):
        return await self._client._get_connection().sign_in()

    @property
    def sign_in_http(self):
        return self._client._get_connection().sign_in_http

    async def answer(self, text: str, session_id: str | None, lang: str | None) -> str:
        return await self._client._answer(text, session_id, lang)

    def waits_for_user(self, session_id: str | None) -> bool:
        conversation = self._client.conversation(session_id) if session_id is not None else None
        return bool(conversation and conversation.task_id)

    def person(self, session_id: str | None) -> str:
        return self._client._person(session_id)


class AsyncA2AClient(_BaseClient):
    """An asyncio client for one A2A agent; use it from one event loop.

    The same arguments and methods as :class:`A2AClient`, awaited (``stream_task`` is an
    async iterator); ``aclose()`` (or ``async with``) closes its connections.
    """

    async def __aenter__(self) -> "AsyncA2AClient":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close connections; safe to call more than once."""
        await self._aclose()

    async def fetch_agent_card(self) -> AgentCard:
        """The agent's card (cached; fetched again only when it expires or the agent moved)."""
        return await self._deadline(self._card())

    async def send_task(self, text: str, session_id: str | None = None, *, lang: str | None = None) -> str:
        """Send ``text``; return the agent's answer (or its question, if it needs more input)."""
        return await self._answer(self._checked_text(text), session_id, lang)

    def stream_task(self, text: str, session_id: str | None = None, *,
                    on_update: Callable[[TaskUpdate], None] | None = None,
                    lang: str | None = None, blocking: bool = False) -> AsyncIterator[str]:
        """Send ``text``; the answer's text as it arrives (see :meth:`A2AClient.stream_task`)."""
        return self._pieces(self._checked_text(text), session_id, on_update, lang, blocking)

    def stream_sentences(self, text: str, session_id: str | None = None, *,
                         on_update: Callable[[TaskUpdate], None] | None = None,
                         lang: str | None = None) -> AsyncIterator[str]:
        """Send ``text``; each sentence or line of the answer as soon as it is complete."""
        return self._sentences(self._checked_text(text), session_id, on_update, lang)

    async def answer_when_ready(self, session_id: str, task_id: str = "", within: float = 3600) -> str | None:
        """The answer of the task that outlived a turn of ``session_id`` (:class:`StillWorkingError`;
        ``task_id`` if it named one), once the agent settles it; it is then no longer
        delivered with the session's next answer. ``None``: it ended without an answer,
        was delivered already, or took longer than ``within`` seconds."""
        return await self._when_ready(session_id, task_id, within)

    async def sign_out(self, session_id: str | None = None) -> int:
        """Forget what the person of ``session_id`` (every session's, when ``None``) signed in for
        with this agent, revoke it at the provider where it says how, and stop their sign-ins
        under way: the next turn that needs it asks them to sign in again. How many were forgotten."""
        return await self._sign_out(session_id)

    async def stop(self, session_id: str | None = None) -> bool:
        """End the turns under way (of ``session_id``, or all) and cancel their tasks on the agent.

        True when every such task was canceled (or there was none); False when the agent
        refused or could not be asked (logged as an error, with its reason).
        """
        return await self._stop(session_id)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        """The task as the agent has it now (a2a-sdk ``Task``)."""
        return await self._deadline(self._call("get_task", self._get_request(task_id, history_length)))

    async def cancel_task(self, task_id: str) -> Task:
        """Ask the agent to cancel a task; returns the task (canceled, if the agent could)."""
        return await self._deadline(self._call("cancel_task", CancelTaskRequest(id=task_id)))

    async def list_tasks(self, context_id: str = "", state: int | None = None, page_size: int = 50,
                         page_token: str = ""):
        """One page of the caller's tasks (a2a-sdk ``ListTasksResponse``)."""
        return await self._deadline(self._call("list_tasks",
                                                self._list_request(context_id, state, page_size, page_token)))


class A2AClient(_BaseClient):
    """A client for one A2A agent, for ordinary (synchronous) Python: OVOS plugins, scripts.

    Every call runs the async core on one background event loop shared by the process.
    """

    def __enter__(self) -> "A2AClient":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close connections; safe to call more than once."""
        BACKGROUND.run(self._aclose())

    def fetch_agent_card(self) -> AgentCard:
        """The agent's card (cached; fetched again only when it expires or the agent moved)."""
        return BACKGROUND.run(self._deadline(self._card()))

    def send_task(self, text: str, session_id: str | None = None, *, lang: str | None = None) -> str:
        """Send ``text``; return the agent's answer (or its question, if it needs more input).

        ``lang`` (e.g. ``"en-US"``), if given, travels as the message's ``metadata["lang"]``.
        Raises the a2a-sdk errors, and :class:`AgentTaskError` when the agent failed,
        rejected or canceled the task.
        """
        return BACKGROUND.run(self._answer(self._checked_text(text), session_id, lang))

    def stream_task(self, text: str, session_id: str | None = None, *,
                    on_update: Callable[[TaskUpdate], None] | None = None,
                    lang: str | None = None, blocking: bool = False) -> Iterator[str]:
        """Send ``text``; yield the answer's text as it arrives.

        The answer is streamed whenever the agent's card offers streaming, whatever
        ``streaming`` says (that chooses how :meth:`send_task` asks): each appended chunk
        is given as sent, once and in order. A part the agent rewrote differently is given
        again on a new line, from the start of the sentence that changed.

        ``on_update``, if given, sees every event's :class:`TaskUpdate` (task id, state,
        progress message), e.g. to show progress or to cancel the task. Closing the
        iterator early ends the exchange and releases its connection. ``blocking`` asks with
        one blocking SendMessage instead, even where the card offers streaming.
        """
        text = self._checked_text(text)
        return BACKGROUND.iterate(lambda: self._pieces(text, session_id, on_update, lang, blocking))

    def stream_sentences(self, text: str, session_id: str | None = None, *,
                         on_update: Callable[[TaskUpdate], None] | None = None,
                         lang: str | None = None) -> Iterator[str]:
        """Send ``text``; yield each sentence (or line) of the answer as soon as it is complete.

        Streamed whenever the card offers streaming. Only whole sentences are given: a
        part the agent rewrote differently is said again from the first sentence that
        changed.
        """
        text = self._checked_text(text)
        return BACKGROUND.iterate(lambda: self._sentences(text, session_id, on_update, lang))

    def answer_when_ready(self, session_id: str, task_id: str = "", within: float = 3600) -> str | None:
        """The answer of the task that outlived a turn of ``session_id`` (:class:`StillWorkingError`;
        ``task_id`` if it named one), once the agent settles it; it is then no longer
        delivered with the session's next answer. ``None``: it ended without an answer,
        was delivered already, or took longer than ``within`` seconds. Blocks."""
        return BACKGROUND.run(self._when_ready(session_id, task_id, within))

    def sign_out(self, session_id: str | None = None) -> int:
        """Forget what the person of ``session_id`` (every session's, when ``None``) signed in for
        with this agent, revoke it at the provider where it says how, and stop their sign-ins
        under way: the next turn that needs it asks them to sign in again. How many were forgotten."""
        return BACKGROUND.run(self._sign_out(session_id))

    def stop(self, session_id: str | None = None) -> bool:
        """End the turns under way (of ``session_id``, or all): their streams end, and their
        tasks are canceled on the agent (CancelTask).

        True when every such task was canceled (or there was none); False when the agent
        refused or could not be asked (logged as an error, with its reason).
        """
        return BACKGROUND.run(self._stop(session_id))

    def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        """The task as the agent has it now (a2a-sdk ``Task``)."""
        return BACKGROUND.run(self._deadline(self._call("get_task", self._get_request(task_id, history_length))))

    def cancel_task(self, task_id: str) -> Task:
        """Ask the agent to cancel a task; returns the task (canceled, if the agent could)."""
        return BACKGROUND.run(self._deadline(self._call("cancel_task", CancelTaskRequest(id=task_id))))

    def list_tasks(self, context_id: str = "", state: int | None = None, page_size: int = 50,
                   page_token: str = ""):
        """One page of the caller's tasks (a2a-sdk ``ListTasksResponse``)."""
        return BACKGROUND.run(self._deadline(self._call(
            "list_tasks", self._list_request(context_id, state, page_size, page_token))))
