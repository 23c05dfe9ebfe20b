# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The request handler: the a2a-sdk's ``DefaultRequestHandler``, wrapped (never patched).

A message is checked first (``validation``): one the persona cannot be asked is refused
before anything is claimed. Then it is admitted (``admission``): claimed as an operation,
given a slot. A message delivered again (a retry, a reconnect, 20 concurrent duplicates)
is replayed from its first delivery, never worked on twice; the same messageId with
other content or in another context is another message (its identity includes both).
A delivery is a retry only while the caller may not have seen the answer: once it
continued the task with a later message, or canceled it, the same message again is new
work (``_answer_seen``). A message naming a task that is still
working is refused (only a task waiting for input takes a follow-up), so a late result
can never overwrite a newer one. Past ``max_concurrent`` admitted messages the answer is
"busy", at once (``on_busy`` says so in the binding's words, before the error is raised).

A cancel is honest: the persona turn is stopped first, and only once it stopped does the
SDK record ``canceled``; a turn that cannot stop in time gets TaskNotCancelable and goes
on. A cancel whose task another process ended meanwhile is TaskNotCancelable too, unless
that end is ``canceled``. A task running in another process (a replica on one PostgreSQL
database, see ``replicas``, or a sibling worker on one SQLite file, see ``siblings``) is
canceled the same way: that process is asked to stop the turn, and the answer waits for it. A
subscription to such a task gets its live events relayed from there (workers), or from
the shared event log (replicas). Work cut short by a crash or ``kill -9`` is marked
``failed`` on the next start (a worker's, when it is started again), or, with several
replicas, by a surviving one once the lost one's lease expired.

A push config's secrets (its ``token`` and its ``authentication.credentials``) are
write-only: every answer that shows a config (create, get, list; over every binding)
leaves them out. Deliveries still send them.

A task store that is away (unreachable, restarting, read-only, full: see
``storage.availability``) fails no call with its own words: every method answers
:class:`StoreUnavailableError` instead, "unavailable, retry shortly" in the binding's words
(``on_busy`` says so, as for a busy bridge), and a stream that had begun ends with that
error. A message refused so was not taken: sent again once the store is back, it is new
work, or the replay of its first delivery.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator
from typing import NoReturn, TypeVar

from a2a.server.agent_execution import RequestContextBuilder, SimpleRequestContextBuilder
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsResponse, Message, Part,
                       Role, SendMessageRequest, SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskState,
                       TaskStatus, TaskStatusUpdateEvent)
from a2a.utils.errors import (A2AError, InternalError, InvalidParamsError, TaskNotCancelableError, TaskNotFoundError,
                              UnsupportedOperationError)

from ovos_a2a_solver.bridge.cluster.peers import Peers, PeerUnreachable
from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.storage.availability import StoreAvailability, StoreOutOfReach, store_unavailable
from ovos_a2a_solver.bridge.storage.call_reads import CallReads
from ovos_a2a_solver.bridge.storage.ids import TimeOrderedIds, time_ordered_id
from ovos_a2a_solver.bridge.storage.lost_work import (INTERRUPTED_BY_LOST_REPLICA, INTERRUPTED_BY_RESTART,
                                                      INTERRUPTED_BY_SHUTDOWN, INTERRUPTED_UNATTENDED,
                                                      fail_operations, fail_tasks)
from ovos_a2a_solver.bridge.storage.new_tasks import NewTasks
from ovos_a2a_solver.bridge.storage.operations import Operation
from ovos_a2a_solver.bridge.storage.owners import call_context_for, owner_scope
from ovos_a2a_solver.bridge.storage.push_configs import without_secrets
from ovos_a2a_solver.bridge.storage.stored_task import BEGUN_BY, read_task, settle_stored_task
from ovos_a2a_solver.bridge.turns.admission import (Admission, BusyError, CallMode, OperationTracker,
                                                     StoreUnavailableError)
from ovos_a2a_solver.bridge.turns.turn import TurnRegistry
from ovos_a2a_solver.bridge.turns.validation import check_list_tasks, check_send
from ovos_a2a_solver.states import SETTLED, TERMINAL, state_name

LOG = logging.getLogger("ovos_a2a_solver.bridge")

POLL_SECONDS = 0.25  # how often a replay of another process's operation looks at the database
REPLICA_ANSWER_MARGIN = 3.0  # seconds a cancel waits for another replica beyond its cancel grace
#: seconds a replay waits, once the first delivery's work ended, for the end of its task to be
#: stored (its executor waits up to ``executor.END_STORED_WITHIN`` for that before it ends)
STORED_END_GRACE = 2.0

T = TypeVar("T")


def _store_away_is_temporary(method):
    """A handler method whose call, should the task store be away, is answered
    :class:`StoreUnavailableError` (see :meth:`BridgeRequestHandler.refuse_for_now`)."""

    @functools.wraps(method)
    async def call(self: "BridgeRequestHandler", params, context: ServerCallContext):
        try:
            return await method(self, params, context)
        except Exception as exc:
            refused = refused_write(exc)
            if refused is not None:
                return await self.stored_end_of(refused, context)
            if not store_unavailable(exc):
                raise
            await self.refuse_for_now(exc, context)

    return call


#: what the SDK's refusal of a write says around the task's id: its message processing passes it
#: on as an ``InternalError`` with these words (taken from the SDK's own exception, not copied)
_REFUSED_BEFORE_ID, _REFUSED_AFTER_ID = str(ConcurrentTaskModificationError("\0")).split("\0")


def refused_write(exc: BaseException) -> str | None:
    """The id of the task whose write ``exc`` (or an exception it was raised from or while
    handling, unless raised ``from None``: an answer to the refusal already) is the store's
    refusal of: another writer's write stands (a replica that took over this one's lapsed lease
    and failed its tasks, a cancel), or this replica's lease is lost, so that nothing it writes
    counts. ``None`` for any other exception."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ConcurrentTaskModificationError):
            return exc.task_id
        if isinstance(exc, InternalError):  # the SDK's consumer passes the refusal on as one
            said = str(getattr(exc, "message", None) or exc)
            if said.startswith(_REFUSED_BEFORE_ID) and said.endswith(_REFUSED_AFTER_ID):
                return said[len(_REFUSED_BEFORE_ID):len(said) - len(_REFUSED_AFTER_ID)] or None
        seen.add(id(exc))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return None


def _store_away_ends_stream(method):
    """A handler method's stream, should the task store be away: before its first event the
    call is refused with :class:`StoreUnavailableError`, as a busy one is; after it (the answer's
    status was sent) the stream ends cleanly with a last status of the task as it stood, whose
    metadata says why (a note, as the heartbeats are): a client reads the task again or
    subscribes again, as after any stream that ended before the task did. An error event would
    be JSON-RPC's internal error, -32603, for the a2a-sdk passes no other code on mid-stream."""

    @functools.wraps(method)
    async def stream(self: "BridgeRequestHandler", params, context: ServerCallContext) -> AsyncGenerator:
        last = None
        try:
            # closed on every way out, its ``finally`` included (a bare async-for, as the SDK's
            # routes iterate, does not close what it iterates)
            async with contextlib.aclosing(method(self, params, context)) as events:
                async for event in events:
                    yield event
                    last = event
        except Exception as exc:
            refused = refused_write(exc)
            if refused is not None:
                if last is None:
                    yield await self.stored_end_of(refused, context)
                else:
                    yield await self.stored_end_event(refused, last, context)
                return
            if not store_unavailable(exc):
                raise
            if last is None:
                await self.refuse_for_now(exc, context)
            self.availability.failed(exc)
            yield _stream_cut_short(last)

    return stream


#: what the last event of a stream that the task store's absence cut short says, in its metadata
STREAM_CUT_SHORT = ("The task store is unavailable; this stream ends before the task did. Read the task again "
                    "(GetTask) or subscribe to it again shortly.")


def _stream_cut_short(last) -> TaskStatusUpdateEvent:
    """The status event that ends a stream cut short after ``last`` (a task or one of its events)."""
    task_id = getattr(last, "id", "") if isinstance(last, Task) else getattr(last, "task_id", "")
    status = TaskStatus()
    if isinstance(last, Task):
        status.state = last.status.state
    elif isinstance(last, TaskStatusUpdateEvent):
        status.state = last.status.state
    else:
        status.state = TaskState.TASK_STATE_WORKING
    status.timestamp.GetCurrentTime()
    event = TaskStatusUpdateEvent(task_id=task_id, context_id=getattr(last, "context_id", ""), status=status)
    event.metadata.update({"note": STREAM_CUT_SHORT, "storeUnavailable": True})
    return event


class ChosenTaskIds(RequestContextBuilder):
    """Gives a new task the id the request handler chose (and claimed) for it, and a
    follow-up that names its task but no contextId the task's context: the SDK would
    generate a new context, and then refuse its own events for not matching the stored
    task's (unless the task happened to be still parked in its memory)."""

    def __init__(self, task_store: VersionedTaskStore) -> None:
        self._inner = SimpleRequestContextBuilder(context_id_generator=TimeOrderedIds())  # see storage.ids
        self._task_store = task_store

    async def build(self, context: ServerCallContext, params=None, task_id=None, context_id=None, task=None):
        admission = Admission.of(context)
        chosen = admission.task_id if admission is not None else None
        if task_id and not context_id:
            stored = task or await read_task(self._task_store, task_id, context)
            context_id = stored.context_id if stored is not None else None
        return await self._inner.build(context=context, params=params, task_id=task_id or chosen,
                                       context_id=context_id, task=task)


class BridgeRequestHandler(RequestHandler):
    """Checks, admission, replay, supersession and honest cancel around the SDK's handler."""

    def __init__(self, inner: RequestHandler, tracker: OperationTracker, turns: TurnRegistry,
                 task_store: VersionedTaskStore, settings: BridgeSettings, new_tasks: NewTasks,
                 peers: Peers | None = None,
                 on_busy: Callable[[ServerCallContext, BusyError], Awaitable[None]] | None = None,
                 availability: StoreAvailability | None = None, call_reads: CallReads | None = None) -> None:
        self.inner = inner
        self.tracker = tracker
        self.turns = turns
        self.task_store = task_store
        self.settings = settings
        self.persona = settings.persona_name  # the only persona that continues the tasks it began
        self.new_tasks = new_tasks  # the stores answer reads of these without the database
        self.call_reads = call_reads or CallReads()  # and a message's call's reads of its task, after the first
        # the other processes on the same store (replicas on PostgreSQL, workers on one SQLite
        # file); None when alone
        self.peers = peers
        self.on_busy = on_busy  # tells the binding a message was refused for now
        # what was last seen of the task store (``/health`` reads it)
        self.availability = availability if availability is not None else StoreAvailability()
        # a call waits for its turn only while this process keeps the right to run it (a replica's
        # lease): watching for that costs two tasks a call and a hop an event, paid only where it may end
        self._may_give_up = peers is not None and peers.gives_up_turns
        self._given_up = asyncio.Event()  # set when the turns running now are given up (then replaced)
        self._let_go: set[asyncio.Task] = set()  # the work of calls answered when their turns were given up

    async def refuse_for_now(self, exc: BaseException, context: ServerCallContext) -> NoReturn:
        """The task store failed the call with ``exc``, which says it is away for now: log it
        (rate-limited, see ``StoreAvailability``) and answer "unavailable, retry shortly",
        without the database's words."""
        self.availability.failed(exc)
        refusal = StoreUnavailableError()
        if self.on_busy is not None:
            await self.on_busy(context, refusal)
        raise refusal from None

    async def stored_end_of(self, task_id: str, context: ServerCallContext,
                            ends: frozenset[int] = SETTLED) -> Task:
        """The answer to a call whose write of task ``task_id`` the store refused (see
        :func:`refused_write`): the task as stored, once it is in one of the states ``ends`` (by
        default: it has ended or waits for input; the write that stands is its end); otherwise
        "unavailable, retry shortly", as for a store that is away, since nothing this replica
        writes may count (on another replica, the same message is answered with its end)."""
        try:
            task = await read_task(self.task_store, task_id, context)
        except Exception:  # noqa: BLE001 - the store is away as well: the caller tries again
            task = None
        if task is not None and task.status.state in ends:
            return task
        refusal = StoreUnavailableError()
        if self.on_busy is not None:
            await self.on_busy(context, refusal)
        raise refusal from None

    async def stored_end_event(self, task_id: str, last, context: ServerCallContext) -> TaskStatusUpdateEvent:
        """The last event of a stream whose write of task ``task_id`` the store refused after
        ``last`` was sent: the status the task has as stored once it has ended or waits for
        input, else one that says the stream ends before the task did (read it again)."""
        try:
            task = await read_task(self.task_store, task_id, context)
        except Exception:  # noqa: BLE001 - the store is away as well
            task = None
        if task is None or task.status.state not in SETTLED:
            return _stream_cut_short(last)
        return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    # ---- messages ----------------------------------------------------------------------

    @_store_away_is_temporary
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        call = self._message_send(params, context)
        return await (self._unless_given_up(call) if self._may_give_up else call)

    async def _message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        mode = CallMode.POLL if params.configuration.return_immediately else CallMode.BLOCK
        check_send(params, self.settings.max_parts)
        with self._at_work(params, context) as new_task:
            admitted = await self._admit(params, context, mode, new_task)
            if not isinstance(admitted, Operation):
                try:
                    return await self.inner.on_message_send(params, context)
                finally:
                    await self.tracker.handler_done(admitted)
        return await self._replay_delivery(admitted, params, context)  # delivered before

    @_store_away_ends_stream
    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator:
        # the fields are checked in _admit, not by the SDK's generic walk of the request (the
        # inner handler makes that walk once)
        events = self._message_stream(params, context)
        if self._may_give_up:
            events = self._events_unless_given_up(events)
        async with contextlib.aclosing(events) as events:
            async for event in events:
                yield event

    # A call waits for its turn's end (a blocking SendMessage) or events (a stream). Should this
    # process give its turns up (its replica's lease ended unrenewed, see ``give_up_turns``), a
    # call whose turn's end was not answered within a cancel's grace waits no longer: nothing this
    # process writes counts any more, and its database may be out of reach, so that its writes and
    # reads wait for the statement's time-out, again and again. The call is answered as when the
    # store is away ("unavailable, retry shortly"), and another replica answers its retry with the
    # task's end. So a call in flight on a replica cut off from its database is answered at the
    # latest a cancel's grace after its lease ends by the replica's own clock, which is one lease
    # after its last renewal, less than a third of a lease before the cut: within a lease and a
    # cancel's grace of the cut, whatever the turn's deadline.

    async def _unless_given_up(self, call: Coroutine[object, object, T]) -> T:
        """What ``call`` returns, unless the turns are given up first: then
        :class:`StoreOutOfReach` at once, and ``call`` is cancelled in the background (its clean-up
        may wait for the store)."""
        given_up = asyncio.ensure_future(self._given_up.wait())
        work = asyncio.ensure_future(call)
        try:
            await asyncio.wait((work, given_up), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller went away: the call's clean-up runs first, as without this
            work.cancel()
            await asyncio.wait((work,))
            raise
        finally:
            given_up.cancel()
        if work.done():
            return work.result()
        self._leave(work)
        raise StoreOutOfReach()

    async def _events_unless_given_up(self, events: AsyncGenerator) -> AsyncGenerator:
        """``events``, unless the turns are given up first: then :class:`StoreOutOfReach` at once
        (before the first event, the call is answered "unavailable"; after it, the stream ends with
        a last status, see :func:`_store_away_ends_stream`), and ``events`` are closed in the
        background. A task of their own reads them, one event when one is wanted (so that, when
        the stream is closed, they are closed where they yielded, as without this), and it can be
        left to end alone."""
        wanted, read = asyncio.Event(), asyncio.Queue()

        async def reading() -> None:
            async with contextlib.aclosing(events):
                while True:
                    await wanted.wait()
                    wanted.clear()
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                    read.put_nowait(event)

        given_up = asyncio.ensure_future(self._given_up.wait())
        reader = asyncio.ensure_future(reading())
        try:
            while True:
                wanted.set()
                got = asyncio.ensure_future(read.get())
                try:
                    await asyncio.wait((got, reader, given_up), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    got.cancel()
                if got.done() and not got.cancelled():
                    yield got.result()
                elif reader.done():
                    reader.result()  # raises what the events raised
                    return
                else:
                    self._leave(reader)
                    raise StoreOutOfReach()
        finally:
            given_up.cancel()
            if reader not in self._let_go and not reader.done():  # closed: they are, before this returns
                reader.cancel()
                await asyncio.wait((reader,))

    def _leave(self, work: asyncio.Task) -> None:
        """Cancel the work of a call answered because its turn was given up, and let it end in
        the background."""
        work.cancel()
        self._let_go.add(work)
        work.add_done_callback(self._let_go.discard)
        work.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved: it is over

    async def _message_stream(self, params: SendMessageRequest, context: ServerCallContext) -> AsyncGenerator:
        check_send(params, self.settings.max_parts)
        with self._at_work(params, context) as new_task:
            admitted = await self._admit(params, context, CallMode.STREAM, new_task)
            if not isinstance(admitted, Operation):
                try:
                    async for event in self.inner.on_message_send_stream(params, context):
                        yield event
                finally:
                    await self.tracker.handler_done(admitted)
                return
        await self._adopt_push_config(admitted, params, context)  # delivered before
        async for event in self._replay_delivery_stream(admitted, context):
            yield event

    @contextlib.contextmanager
    def _at_work(self, params: SendMessageRequest, context: ServerCallContext) -> Iterator[str | None]:
        """The block of a message's admission and work (a replay comes after it): the id reserved
        for the task it creates, ``None`` when it names its task (``NewTasks.reserved``), and the
        task it continues read from the database once by its call (``CallReads.remembered``)."""
        with self.new_tasks.reserved(needed=not params.message.task_id) as new_task, \
                self.call_reads.remembered(context):
            yield new_task

    async def _admit(self, params: SendMessageRequest, context: ServerCallContext, mode: CallMode,
                     new_task: str | None) -> Admission | Operation:
        """Admit the message (checked already), under ``new_task`` (the id reserved for the task it
        creates, ``None`` when it names its task); return the earlier claim if it was delivered before."""
        message = params.message
        owner = owner_scope(context)

        async def answer_seen(earlier: Operation) -> bool:
            return await self._answer_seen(earlier, context)

        try:
            admitted = await self.tracker.admit(owner, message, message.task_id or new_task, mode, answer_seen)
        except BusyError as busy:
            if self.on_busy is not None:
                await self.on_busy(context, busy)
            raise
        if isinstance(admitted, Operation):  # delivered before: its task is the earlier one's
            return admitted
        self.availability.works()  # its claim was written
        try:
            if message.task_id:
                task = await read_task(self.task_store, message.task_id, context)
                begun_by = task.metadata[BEGUN_BY] if task is not None and BEGUN_BY in task.metadata else None
                if begun_by is not None and begun_by != self.persona:
                    raise InvalidParamsError(
                        message=f"Task {message.task_id} was begun by the persona \"{begun_by}\", and this bridge "
                                f"serves \"{self.persona}\": only that persona continues it. Send the message "
                                f"without taskId to start a new task.")
                if task is not None and task.status.state not in SETTLED:
                    raise UnsupportedOperationError(
                        message=f"Task {message.task_id} is still working on an earlier message; send a "
                                f"follow-up once it is answered, or without taskId in the same context.")
        except BaseException:
            await self.tracker.refuse(admitted)
            raise
        admitted.put_in(context)
        return admitted

    async def _answer_seen(self, earlier: Operation, context: ServerCallContext) -> bool:
        """Whether the caller evidently saw the answer to ``earlier`` (so a delivery of the
        same message is not a retry): it has since continued the task, or canceled it."""
        if await self.tracker.log.continued(earlier):
            return True
        task = await read_task(self.task_store, earlier.task_id, context)
        return task is not None and task.status.state == TaskState.TASK_STATE_CANCELED

    async def _stored_task(self, claim: Operation, context: ServerCallContext, settled: bool) -> Task:
        """The operation's task from the store, once it is there (and, with ``settled``, once
        it is final or waits for input; or, if the work ended undecided, as it stands)."""
        delay, over_since = 0.01, None
        loop = asyncio.get_running_loop()
        while True:
            task = await read_task(self.task_store, claim.task_id, context)
            if task is not None and (not settled or task.status.state in SETTLED):
                return task
            current = await self.tracker.log.get(claim.key)
            if current is None:
                raise InvalidParamsError(message="the first delivery of this message was refused; send it again")
            if current.done:  # the executor is done; give the SDK a moment to store its last events
                over_since = over_since or loop.time()
                if loop.time() - over_since > STORED_END_GRACE:
                    if task is None:  # its turn ran, and nothing of it was stored: its end is that
                        return await self._store_lost_first_delivery(claim, context)
                    if settled and task.status.state not in SETTLED:  # its turn is over, its end was not stored
                        ended = await settle_stored_task(self.task_store, claim.task_id, context,
                                                         TaskState.TASK_STATE_FAILED, INTERRUPTED_UNATTENDED)
                        return ended or await self._stored_task(claim, context, settled=False)
                    return task
            if self.tracker.get(claim.key) is not None:
                await self.tracker.wait_ended(claim.key, POLL_SECONDS)
                continue
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_SECONDS)

    async def _store_lost_first_delivery(self, claim: Operation, context: ServerCallContext) -> Task:
        """The end of a message whose first delivery's turn ran but whose task never reached the
        store (it was away): a ``failed`` task under the id the claim holds, saying why. A message
        runs once: sent again, it is answered with this end, never worked on a second time."""
        status = TaskStatus(state=TaskState.TASK_STATE_FAILED)
        status.timestamp.GetCurrentTime()
        status.message.CopyFrom(Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex, task_id=claim.task_id,
                                        parts=[Part(text=INTERRUPTED_UNATTENDED)]))
        task = Task(id=claim.task_id, context_id=claim.context_id or time_ordered_id(), status=status)
        task.status.message.context_id = task.context_id
        task.metadata[BEGUN_BY] = self.persona
        try:
            await self.task_store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING,
                                       context=context)
        except ConcurrentTaskModificationError:  # stored meanwhile, after all: that is its end
            return await self._stored_task(claim, context, settled=False)
        return task

    async def _adopt_push_config(self, claim: Operation, params: SendMessageRequest,
                                 context: ServerCallContext) -> None:
        """A delivery that is replayed registers the push config it names for the task it
        rejoins, as its first delivery did (the SDK's checks apply; the same config id
        replaces the earlier one)."""
        if not params.configuration.HasField("task_push_notification_config"):
            return
        config = TaskPushNotificationConfig()
        config.CopyFrom(params.configuration.task_push_notification_config)
        config.task_id = claim.task_id
        await self._stored_task(claim, context, settled=False)  # the task exists once its first event is stored
        await self.inner.on_create_task_push_notification_config(config, context)

    async def _replay_delivery(self, claim: Operation, params: SendMessageRequest, context: ServerCallContext) -> Task:
        await self._adopt_push_config(claim, params, context)
        task = await self._stored_task(claim, context, settled=not params.configuration.return_immediately)
        if params.configuration.HasField("history_length"):
            return await self.inner.on_get_task(
                GetTaskRequest(id=claim.task_id, history_length=params.configuration.history_length), context)
        return task

    async def _replay_delivery_stream(self, claim: Operation, context: ServerCallContext) -> AsyncGenerator:
        task = await self._stored_task(claim, context, settled=False)
        if task.status.state not in SETTLED:
            try:
                async for event in self.inner.on_subscribe_to_task(SubscribeToTaskRequest(id=claim.task_id),
                                                                   context):
                    yield event
                    if _settles(event):
                        return
                return
            except (UnsupportedOperationError, TaskNotFoundError):
                pass  # finished meanwhile: the stored task is the answer
        yield await self._stored_task(claim, context, settled=True)

    # ---- cancel ------------------------------------------------------------------------

    @_store_away_is_temporary
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task = await read_task(self.task_store, params.id, context)
        if task is None:
            raise TaskNotFoundError(message=f"Task {params.id} not found")
        if task.status.state in TERMINAL:
            raise TaskNotCancelableError(message=f"Task {params.id} is already {state_name(task.status.state)}")
        turn = self.turns.get(params.id)
        if turn is None or not turn.running:
            elsewhere = await self.tracker.log.running_for_task(params.id)
            if elsewhere is not None and not self.tracker.log.is_mine(elsewhere):
                return await self._cancel_elsewhere(elsewhere, context)
        if turn is not None and turn.running:
            if not await turn.stop(self.settings.cancel_grace):
                raise TaskNotCancelableError(
                    message=f"The persona could not be stopped within {self.settings.cancel_grace:g} s (its current "
                            f"step takes longer than that to end); the task goes on.")
            if turn.outcome is not None and not turn.outcome.stopped:
                task = await self._task_once_settled(params.id, context)
                raise _ended_before_canceled(params.id, "gone" if task is None else state_name(task.status.state))
        try:
            task = await self.inner.on_cancel_task(params, context)
        except Exception as exc:
            refused = refused_write(exc)
            if refused is None:
                raise
            # the cancel's write was refused: a task still going, or waiting for input, was not
            # canceled (on another replica, the cancel is carried out): "retry shortly"
            task = await self.stored_end_of(refused, context, ends=TERMINAL)
        # another writer (a replica that took this one over, another replica's cancel) ended the
        # task meanwhile; the SDK answers with that end: only ``canceled`` is what was asked
        if task.status.state != TaskState.TASK_STATE_CANCELED:
            raise _ended_before_canceled(params.id, state_name(task.status.state))
        return task

    async def _cancel_elsewhere(self, operation: Operation, context: ServerCallContext) -> Task:
        """Cancel a task whose turn runs in another process: ask it to stop the turn (it
        records ``canceled`` itself), then answer with the stored task."""
        if self.peers is None:
            raise TaskNotCancelableError(
                message=f"Task {operation.task_id} is being worked on by another bridge process "
                        f"({operation.replica}); send the cancel to the one serving this conversation.")
        wait = self.settings.cancel_grace + REPLICA_ANSWER_MARGIN
        try:
            refusal = await self.peers.ask_to_cancel(operation, wait)
        except PeerUnreachable:
            raise TaskNotCancelableError(
                message=f"Task {operation.task_id} is worked on by another bridge process ({operation.replica}), "
                        f"which did not answer the cancel within {wait:g} s; the task goes on (should that "
                        f"process be gone, the task fails once the bridge notices: a replica's lease expires, "
                        f"a worker restarts).") from None
        if refusal is not None:
            raise TaskNotCancelableError(message=refusal)
        task = await read_task(self.task_store, operation.task_id, context)
        if task is None:
            raise TaskNotFoundError(message=f"Task {operation.task_id} not found")
        return task

    async def cancel_here(self, task_id: str, owner: str) -> str | None:
        """Another replica asks this one to cancel ``task_id`` for ``owner`` (it checked
        that the caller is the owner): ``None`` once canceled, else why not."""
        try:
            await self.on_cancel_task(CancelTaskRequest(id=task_id), call_context_for(owner))
        except A2AError as exc:
            return exc.message or type(exc).__name__
        return None

    async def _task_once_settled(self, task_id: str, context: ServerCallContext, within: float = 1.0) -> Task | None:
        """The stored task once the executor has recorded the end its turn reached (final or
        waiting for input); after ``within`` s, as it stands."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            task = await read_task(self.task_store, task_id, context)
            if task is None or task.status.state in SETTLED or loop.time() >= deadline:
                return task
            await asyncio.sleep(0.01)

    # ---- start-up recovery -------------------------------------------------------------

    async def recover_interrupted(self) -> int:
        """At start-up: fail the tasks whose work an earlier run of the bridge left unfinished
        (it crashed, was killed, or ran out of shutdown grace); return how many."""
        count = await self._fail_unfinished(await self.tracker.log.interrupted(), INTERRUPTED_BY_RESTART)
        if count:
            LOG.warning("%d task(s) were interrupted by a restart and are now failed", count)
        return count

    async def fail_unfinished_at_shutdown(self) -> int:
        """At shutdown, once the turns were given up: fail every task this run still works on."""
        return await self._fail_unfinished(await self.tracker.log.running_here(), INTERRUPTED_BY_SHUTDOWN)

    async def fail_lost(self, operations: list[Operation]) -> int:
        """Fail the tasks of another replica's run whose lease expired (it was killed, or
        stalled); return how many."""
        return await self._fail_unfinished(operations, INTERRUPTED_BY_LOST_REPLICA)

    async def _fail_unfinished(self, operations: list[Operation], reason: str) -> int:
        return await fail_operations(self.task_store, self.tracker.log, operations, reason)

    async def fail_stranded(self, live_runs: str | None, older_than: float) -> int:
        """Fail the tasks still submitted or working that no live run works on, untouched for
        ``older_than`` seconds (see ``storage.lost_work``); return how many."""
        before = time.time_ns() - int(older_than * 1e9)
        count = await fail_tasks(self.task_store, await self.tracker.log.stranded(live_runs, before),
                                 INTERRUPTED_UNATTENDED)
        if count:
            LOG.warning("%d stranded task(s) that no bridge process worked on are now failed", count)
        return count

    async def give_up_turns(self) -> int:
        """Stop every turn running here, and wait (a cancel's grace) for them to end; the calls
        still waiting for them then are answered at once (see :meth:`_unless_given_up`)."""
        count = self.turns.interrupt_all()
        await self.tracker.wait_idle(self.settings.cancel_grace)
        given_up, self._given_up = self._given_up, asyncio.Event()
        given_up.set()
        return count

    # ---- everything else: the SDK's own ----------------------------------------------------

    @_store_away_is_temporary
    async def on_get_task(self, params, context):
        return await self.inner.on_get_task(params, context)

    @_store_away_is_temporary
    async def on_list_tasks(self, params, context):
        check_list_tasks(params)
        return await self.inner.on_list_tasks(params, context)

    @_store_away_ends_stream
    async def on_subscribe_to_task(self, params, context):
        if self.peers is not None and self.peers.relays_streams:
            async for event in self._subscribe_among_workers(params.id, context):
                yield event
            return
        async for event in self.inner.on_subscribe_to_task(params, context):
            yield event

    async def _subscribe_among_workers(self, task_id: str, context: ServerCallContext) -> AsyncGenerator:
        """SubscribeToTask when sibling workers share the store: the live events come from the
        worker running the task's turn, here (the SDK's own subscription) or on a sibling
        (relayed). A task waiting for input runs nowhere: the subscriber gets it as it stands,
        then the events of whichever worker takes the follow-up, until the task settles."""
        task = await read_task(self.task_store, task_id, context)
        if task is None:
            raise TaskNotFoundError(message=f"Task {task_id} not found")
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: "
                                                    f"{state_name(task.status.state)}")
        yielded_task = False
        while True:
            operation = await self.tracker.log.running_for_task(task_id)
            if operation is not None:
                source = (self.follow_here(task_id, operation.owner) if self.tracker.log.is_mine(operation)
                          else self.peers.follow(operation))
                first = True
                try:
                    # closed on every way out (settled, the subscriber gone): a relay holds a connection
                    async with contextlib.aclosing(source) as events:
                        async for event in events:
                            snapshot, first = first and isinstance(event, Task), False
                            if snapshot and yielded_task:
                                continue  # the task as it stands was sent already
                            yield event
                            yielded_task = True
                            if _settles(event) and not snapshot:  # a snapshot may predate the follow-up's turn
                                return
                except PeerUnreachable:
                    pass  # its worker died: it is started again and fails the task; the poll below sees it
            elif not yielded_task:
                yield task  # A2A: a subscription's first event is the task
                yielded_task = True
            await asyncio.sleep(POLL_SECONDS)
            current = await read_task(self.task_store, task_id, context)
            if current is None or current.status.state in TERMINAL:  # ended meanwhile (a cancel, say)
                if current is not None:
                    yield current
                return

    async def follow_here(self, task_id: str, owner: str) -> AsyncGenerator:
        """The live events of a task whose turn runs here, for a subscriber on this worker or
        one a sibling relays (either checked that the caller is the owner); nothing when its
        turn no longer runs here (the subscriber looks again)."""
        operation = await self.tracker.log.running_for_task(task_id)
        if operation is None or not self.tracker.log.is_mine(operation):
            return
        async for event in self.inner.on_subscribe_to_task(SubscribeToTaskRequest(id=task_id),
                                                           call_context_for(owner)):
            yield event

    # ---- push configs: their secrets are write-only ----------------------------------------

    @_store_away_is_temporary
    async def on_create_task_push_notification_config(self, params, context):
        return without_secrets(await self.inner.on_create_task_push_notification_config(params, context))

    @_store_away_is_temporary
    async def on_get_task_push_notification_config(self, params, context):
        return without_secrets(await self.inner.on_get_task_push_notification_config(params, context))

    @_store_away_is_temporary
    async def on_list_task_push_notification_configs(self, params, context):
        listed = await self.inner.on_list_task_push_notification_configs(params, context)
        answer = ListTaskPushNotificationConfigsResponse()
        answer.CopyFrom(listed)
        del answer.configs[:]
        answer.configs.extend(without_secrets(config) for config in listed.configs)
        return answer

    @_store_away_is_temporary
    async def on_delete_task_push_notification_config(self, params, context):
        return await self.inner.on_delete_task_push_notification_config(params, context)

    async def on_get_extended_agent_card(self, params, context):
        return await self.inner.on_get_extended_agent_card(params, context)


def _ended_before_canceled(task_id: str, state: str) -> TaskNotCancelableError:
    """The answer to a cancel of a task that ended (in ``state``) while the cancel was under way."""
    return TaskNotCancelableError(message=f"Task {task_id} finished before it could be canceled: {state}")


def _settles(event) -> bool:
    if isinstance(event, Task):
        return event.status.state in SETTLED
    status = getattr(event, "status", None)
    return status is not None and status.state in SETTLED
