# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The AgentExecutor: one A2A message -> one persona turn -> task events.

Each sentence becomes an appended chunk of one ``answer`` artifact as soon as the
persona says it; the artifact is closed by an empty last chunk, and the ``completed``
status repeats the whole answer as its message (see :class:`AnswerArtifact` for why). A
backend's typed outputs (``backends``) become artifacts of their own, a message reply, or
the task's end (``rejected``, ``completed`` with the agent's message). Notes are never
text: the ``working`` status that says the message was accepted has no message, only
metadata ``{"note": ...}``, and while the persona is quiet a ``working`` status update goes
out every ``heartbeat`` seconds, its metadata ``{"heartbeat": seconds, "note": "Still
working (N s)."}`` (no message either, so no client reads a note as answer and the task's
history does not fill with them). A relay persona's remote agent's own progress notes
("Searching flights…") go out the same way, as ``{"note": ..., "relayed": true}``, at most
one a second (the newest kept), unless ``relay_progress`` is off. Every ending
is a task state, never a protocol error: ``completed``; ``failed`` with the reason;
``input-required`` when the persona asks back; ``canceled`` only for work that stopped.
When the per-message ``deadline`` passes, the task stays ``working`` with a message that
the outcome is unknown; should the persona answer later, that answer is stored then.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator

from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.cluster import VersionedTaskStore
from a2a.server.tasks import TaskUpdater
from a2a.types import Artifact, Message, Part, Role, Task, TaskState
from a2a.utils.errors import TaskNotCancelableError

from ovos_a2a_solver.bridge.backends.protocols import (AnswersAtOnce, ArtifactOutput, Backend, Completion,
                                                       FollowsProgress, Interruptible, MessageRoutedBackend,
                                                       NoAnswerError, Rejection, Reply)
from ovos_a2a_solver.bridge.config import BACKEND_FAILURES_BEFORE_REST, BridgeSettings
from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.bridge.observe.tracing import headers_of, turn_trace
from ovos_a2a_solver.bridge.storage.lost_work import INTERRUPTED_BY_SHUTDOWN
from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds
from ovos_a2a_solver.bridge.storage.stored_task import BEGUN_BY, settle_stored_task
from ovos_a2a_solver.bridge.turns.admission import Admission, CallMode, OperationTracker
from ovos_a2a_solver.bridge.turns.backend_health import BackendBreaker, RelayEnd
from ovos_a2a_solver.bridge.turns.turn import Turn, TurnEvent, TurnEventKind, TurnRegistry
from ovos_a2a_solver.bridge.turns.validation import user_text
from ovos_a2a_solver.states import state_name

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ANSWER_ARTIFACT = "answer"
#: the ``note`` of the ``working`` status that starts a streamed or polled task (metadata, never a message)
ACCEPTED_NOTE = "Message accepted; the persona is working on it."
#: message-metadata key of the ``completed`` status that repeats the answer: the artifact it repeats
REPEATS = "repeats"
#: how long a finished turn waits for the a2a-sdk to store its end before it lets go of its message
END_STORED_WITHIN = 5.0
HEARTBEAT = "heartbeat"                # status-update metadata key: seconds the turn has been working
RELAYED = "relayed"                    # status-update metadata key: the note is the remote agent's own
#: the fewest seconds between two relayed progress notes of one task
NOTE_INTERVAL = 1.0


def persona_session(owner: str, context_id: str) -> str:
    """The persona's session for one conversation: a digest of (owner, contextId), the owner
    being the caller and its tenant (``owners.owner_scope``), so that a caller who sends another
    caller's contextId reaches a memory of its own."""
    framed = json.dumps([owner, context_id], separators=(",", ":"), ensure_ascii=False)
    return "a2a-" + hashlib.sha256(framed.encode("utf-8")).hexdigest()[:32]


@dataclasses.dataclass
class MessageWork:
    """One message at work: what its outcomes share."""

    context: RequestContext
    event_queue: EventQueue
    admission: Admission | None
    owner: str      # the caller and its tenant (``owners.owner_scope``)
    text: str       # what the persona is asked
    lang: str | None

    @property
    def blocking(self) -> bool:
        """Whether its caller sees only the task's end (a blocking SendMessage)."""
        return self.admission is not None and self.admission.mode is CallMode.BLOCK


class PersonaExecutor(AgentExecutor):
    """Runs persona turns for the a2a-sdk request handler."""

    def __init__(self, backend: Backend, settings: BridgeSettings, turns: TurnRegistry,
                 task_store: VersionedTaskStore, tracker: OperationTracker, metrics: Metrics = NO_METRICS,
                 stored_ends: StoredEnds | None = None) -> None:
        self.backend = backend
        self.metrics = metrics
        self.settings = settings
        self.persona = settings.persona_name
        self.turns = turns
        self.task_store = task_store
        self.tracker = tracker
        self.stored_ends = stored_ends or StoredEnds()
        self.breaker = BackendBreaker(BACKEND_FAILURES_BEFORE_REST, settings.backend_cool_down, metrics=metrics)
        self._late: set[asyncio.Task] = set()
        # what the backend can do besides replying, asked once (an isinstance of a Protocol is not free)
        self._routed = isinstance(backend, MessageRoutedBackend)
        self._answers_at_once = isinstance(backend, AnswersAtOnce)
        self._interruptible = isinstance(backend, Interruptible)
        self._relays_progress = settings.relay_progress and isinstance(backend, FollowsProgress)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        with turn_trace(headers_of(context.call_context)):  # the caller's trace, on to the turn
            await self._execute(context, event_queue)

    async def _execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        admission = Admission.of(context.call_context)
        started, end = time.perf_counter(), None  # how the work ended, for the metrics ("error": it raised)
        try:
            # a task's settled end, awaited in the store once the work is over (see ``StoredEnds``)
            async with contextlib.AsyncExitStack() as settling:
                try:
                    if admission is not None:
                        await self.tracker.executor_started(admission)
                    work = MessageWork(context, event_queue, admission, owner_scope(context.call_context),
                                       user_text(context.message), _lang_of(context))
                    end = await self._work(work, settling)
                finally:
                    self.metrics.turn_ended(time.perf_counter() - started, end.name.lower() if end else "error")
        finally:  # also when the SDK stops this work meanwhile (a cancel)
            if admission is not None and end is not RelayEnd.DEADLINE:  # a late answer lets go of it
                await self.tracker.executor_done(admission)

    async def _work(self, work: MessageWork, settling: contextlib.AsyncExitStack) -> RelayEnd:
        """The message's outcome: an answer as a message (:meth:`_answer_as_message`), a task
        answered at once (:meth:`_answer_at_once`), or a task the turn's events are relayed to
        (:meth:`_relay_task`); how it ended."""
        context = work.context
        task, turn, first = context.current_task, None, None
        if task is None and self._may_reply(context):  # the answer may be a message, not a task
            context_id = context.context_id or context.message.context_id
            turn = self._start_turn(work, persona_session(work.owner, context_id), self._at_once(work.text),
                                    interruptible=False)
            first = await turn.events.get()
            if first.kind is TurnEventKind.OUTPUT and isinstance(first.output, Reply):
                return await self._answer_as_message(work, first.output, context_id)
        new = task is None
        began_from = None if new else task.status  # a follow-up's turn begins on the task as stored
        if new:  # its id was chosen (and claimed) by the request handler
            task = self._new_task(context)
        # the SDK stores the task's settled state after this returns: the work holds its message until then
        awaited = await settling.enter_async_context(
            self.stored_ends.awaiting(work.owner, task.id, END_STORED_WITHIN, began_from))
        if new:
            if turn is None and work.blocking and self._at_once(work.text) and self.breaker.allows():
                turn = self._start_turn(work, persona_session(work.owner, task.context_id), at_once=True)
                answer = whole_answer(turn.events.queued())
                if answer is not None:
                    return await self._answer_at_once(work, task, answer)
            await work.event_queue.enqueue_event(task)
        end = await self._relay_task(work, task, turn, first)
        if end is RelayEnd.DEADLINE:  # the late answer settles the task, on its own
            awaited.hand_on()
        return end

    def _new_task(self, context: RequestContext) -> Task:
        """The task a message that names none creates, under the id the request handler chose."""
        task = new_task_from_user_message(context.message)
        task.status.timestamp.GetCurrentTime()  # every task has a time, so listings put it first
        task.metadata[BEGUN_BY] = self.persona  # only this persona continues it (see the handler)
        return task

    async def _answer_as_message(self, work: MessageWork, reply: Reply, context_id: str) -> RelayEnd:
        """The persona's answer is a message (a routed backend's reply), not a task."""
        await work.event_queue.enqueue_event(_agent_message(reply.text, context_id))
        return RelayEnd.ANSWERED

    async def _answer_at_once(self, work: MessageWork, task: Task, answer: str) -> RelayEnd:
        """A blocking caller sees only the end, and it is known already: the task is enqueued
        answered, one event (completed, the answer artifact whole)."""
        task.status.state = TaskState.TASK_STATE_COMPLETED
        task.artifacts.append(Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT, parts=[Part(text=answer)]))
        await work.event_queue.enqueue_event(task)
        self.breaker.succeeded()
        return RelayEnd.ANSWERED

    async def _relay_task(self, work: MessageWork, task: Task, turn: Turn | None,
                          first: TurnEvent | None) -> RelayEnd:
        """The turn's events, relayed to ``task`` (``turn``, if it began already, and the
        ``first`` event it said); a turn that fails before it says anything is tried again,
        as the breaker allows. A turn past the deadline goes on, and its late answer is adopted."""
        updater = TaskUpdater(work.event_queue, task.id, task.context_id)
        if turn is None and not self.breaker.allows():
            await updater.failed(_agent_message(
                f"The persona failed {self.breaker.failures} times in a row; it gets a rest, and the bridge "
                f"tries it again in {self.breaker.retry_in():.0f} s."))
            return RelayEnd.CIRCUIT_OPEN
        chunked = not work.blocking
        if chunked:  # a blocking caller sees only the end; others see the work start (a note, not text)
            await updater.update_status(TaskState.TASK_STATE_WORKING, metadata={"note": ACCEPTED_NOTE})
        session = persona_session(work.owner, task.context_id)

        async def attempt(retry: bool) -> RelayEnd:
            nonlocal turn, first
            if turn is None:
                turn = self._start_turn(work, session, self._at_once(work.text))
            self.turns.add(task.id, turn)
            end = await self._relay(turn, updater, chunked, first, retry=retry)
            if end is RelayEnd.RETRY:
                self.turns.discard(task.id, turn)
                turn = first = None
                LOG.info("task %s: the persona failed before it said anything; trying again", task.id)
            return end

        end = await self.breaker.tries(attempt, self.settings.backend_retries)
        if end is RelayEnd.DEADLINE:  # the turn goes on; keep it cancellable, adopt its late answer
            self._adopt_late_answer(turn, task.id, work.context.call_context, work.admission)
        else:
            self.turns.discard(task.id, turn)
        return end

    def _start_turn(self, work: MessageWork, session: str, at_once: bool, interruptible: bool = True) -> Turn:
        """The persona's turn on the message, begun (on the event loop when ``at_once``)."""
        return Turn(self._producer(work.context, work.text, session, work.lang), asyncio.get_running_loop(),
                    self._interrupter(session) if interruptible else None,
                    self._note_follower(session)).start(at_once)

    def _producer(self, context: RequestContext, text: str, session: str, lang: str | None):
        backend = self.backend
        if self._routed:  # a backend that routes by messageId, with typed outputs
            message_id = context.message.message_id
            return lambda: backend.reply_to(text, message_id, session, lang)
        return lambda: backend.reply(text, session, lang)

    def _at_once(self, text: str) -> bool:
        """Whether the backend computes its reply to ``text`` without waiting (so the turn
        runs on the event loop, not on a thread)."""
        return self._answers_at_once and self.backend.answers_at_once(text)

    def _interrupter(self, session: str):
        """What ends a turn of ``session`` in the middle of a step, if the backend can (a relay)."""
        backend = self.backend
        return (lambda: backend.interrupt(session)) if self._interruptible else None

    def _note_follower(self, session: str):
        """What hands the backend the taker of ``session``'s progress notes while a turn runs
        (a relay persona's, unless ``relay_progress`` is off)."""
        backend = self.backend
        return (lambda listener: backend.follow_progress(session, listener)) if self._relays_progress else None

    def _may_reply(self, context: RequestContext) -> bool:
        return self._routed and self.backend.answers_with_message(context.message.message_id)

    async def _relay(self, turn: Turn, updater: TaskUpdater, chunked: bool, first: TurnEvent | None = None,
                     retry: bool = False) -> RelayEnd:
        """Turn events -> task events; how the relay ended.

        ``chunked``: each sentence becomes a chunk at once (streaming and polling callers);
        otherwise (a blocking call sees only the end) the answer is one artifact at the end.
        ``retry``: a failure before anything was said is not written but returned as RETRY.
        """
        writer = TaskWriter(updater, chunked, retry)
        notes = RelayedNotes(updater) if chunked else None  # a blocking caller sees only the end
        async for event in self._paced(turn, updater, first, notes):
            if event is None:  # the deadline passed
                await writer.answer.flush()
                await updater.update_status(TaskState.TASK_STATE_WORKING, _agent_message(
                    f"No answer within {self.settings.deadline:g} s: the outcome is unknown; the persona may "
                    f"still be working. Ask for this task again later."))
                return RelayEnd.DEADLINE
            end = await writer.write(event)
            if end is not None:
                return end
        raise AssertionError("a turn's events end with the deadline or an ending event")  # pragma: no cover

    async def _paced(self, turn: Turn, updater: TaskUpdater, first: TurnEvent | None,
                     notes: RelayedNotes | None = None) -> AsyncIterator[TurnEvent | None]:
        """The turn's events (``first`` first) as they come; while none comes, a heartbeat on
        the task every ``heartbeat`` seconds (no message, so it never piles up in the
        history); ``None`` once the turn's ``deadline`` passed, and then nothing more. Progress
        notes are not yielded: they go to ``notes`` (dropped without), whose status update
        counts as a heartbeat; a note still held back when the persona speaks is dropped."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.settings.deadline
        quiet_since = started  # the last event or status update the caller had
        event = first
        while True:
            if event is None:
                now = loop.time()
                if now >= deadline:
                    yield None
                    return
                if not turn.events.empty():  # said already: no timer to arm
                    event = turn.events.get_nowait()
                else:
                    due = quiet_since + self.settings.heartbeat
                    if notes is not None and notes.waiting:
                        due = min(due, notes.due)
                    try:
                        async with asyncio.timeout(max(min(due, deadline) - now, 0)):  # no task per wait
                            event = await turn.events.get()
                    except TimeoutError:
                        now = loop.time()
                        if now >= deadline:
                            continue
                        if notes is not None and notes.waiting and now >= notes.due:
                            await notes.send_waiting(now)
                            quiet_since = now
                        elif now >= quiet_since + self.settings.heartbeat:
                            elapsed = round(now - started)
                            await updater.update_status(TaskState.TASK_STATE_WORKING, metadata={
                                HEARTBEAT: elapsed, "note": f"Still working ({elapsed} s)."})
                            quiet_since = now
                        continue
            if event.kind is TurnEventKind.NOTE:
                if notes is not None and await notes.offer(event.text, loop.time()):
                    quiet_since = loop.time()
                event = None
                continue
            if notes is not None:
                notes.drop()
            yield event
            quiet_since, event = loop.time(), None

    def _adopt_late_answer(self, turn: Turn, task_id: str, call_context: ServerCallContext | None,
                           admission: Admission | None) -> None:
        async def adopt() -> None:
            try:
                sentences = []
                while True:
                    event = await turn.events.get()
                    if event.kind is TurnEventKind.SENTENCE:
                        sentences.append(event.text)
                    elif event.ends:
                        break
                self.turns.discard(task_id, turn)
                if not event.stopped and call_context is not None:
                    await self._store_late_outcome(task_id, call_context, event, sentences)
            finally:
                if admission is not None:
                    await self.tracker.executor_done(admission)

        late = asyncio.get_running_loop().create_task(adopt())
        self._late.add(late)
        late.add_done_callback(self._late.discard)

    async def _store_late_outcome(self, task_id: str, call_context: ServerCallContext, event: TurnEvent,
                                  sentences: list[str]) -> None:
        """The answer that came after the deadline, stored unless the task settled meanwhile."""
        if event.kind is TurnEventKind.DONE and sentences:
            text = " ".join(sentences)

            def add_answer(task: Task) -> None:
                said = [a for a in task.artifacts if a.artifact_id == ANSWER_ARTIFACT]
                if said:  # what came before the deadline is there already: go on from it
                    said[0].parts.append(Part(text=" " + text))
                else:
                    task.artifacts.append(Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT,
                                                   parts=[Part(text=text)]))

            task = await settle_stored_task(self.task_store, task_id, call_context, TaskState.TASK_STATE_COMPLETED,
                                            "Answered after the deadline.", add_answer)
        else:
            if event.kind is TurnEventKind.ERROR:
                reason = _reason(event, task_id)
            elif event.kind is TurnEventKind.INTERRUPTED:
                reason = INTERRUPTED_BY_SHUTDOWN
            else:
                reason = "The persona had no answer."
            task = await settle_stored_task(self.task_store, task_id, call_context, TaskState.TASK_STATE_FAILED,
                                            reason)
        if task is not None:
            LOG.info("task %s: late outcome stored (%s)", task_id, state_name(task.status.state))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        turn = self.turns.get(context.task_id or "")
        if turn is not None and turn.running and not await turn.stop(self.settings.cancel_grace):
            # the request handler checks this before it lets the SDK cancel; this is the backstop
            raise TaskNotCancelableError(message="The persona's current step did not end within the cancel grace.")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(_agent_message("Canceled: the persona stopped before it finished."))


class RelayedNotes:
    """The progress notes of a relay persona's remote agent, forwarded to one task's caller:
    each a ``working`` status update with no message, the note in its metadata
    (``{"note": text, "relayed": true}``), so that no client reads it as answer. At most one
    every ``interval`` seconds: a note that comes sooner waits (:attr:`waiting`) until
    :attr:`due`, and a newer one takes its place; the same note twice in a row goes out once."""

    def __init__(self, updater: TaskUpdater, interval: float = NOTE_INTERVAL) -> None:
        self.updater, self.interval = updater, interval
        self.waiting = ""           # the newest note held back, if any
        self._sent_at: float | None = None
        self._last = ""             # the note last sent

    @property
    def due(self) -> float:
        """When the next note may go out (loop time)."""
        return -1.0 if self._sent_at is None else self._sent_at + self.interval

    async def offer(self, text: str, now: float) -> bool:
        """Take a note at loop time ``now``: sent now (True) or held back."""
        if text == self._last:
            self.waiting = ""
            return False
        if now >= self.due:
            self.waiting = ""
            await self._send(text, now)
            return True
        self.waiting = text
        return False

    async def send_waiting(self, now: float) -> None:
        """Send the note held back (its time has come)."""
        text, self.waiting = self.waiting, ""
        if text:
            await self._send(text, now)

    def drop(self) -> None:
        """Forget the note held back: the persona spoke since."""
        self.waiting = ""

    async def _send(self, text: str, now: float) -> None:
        self._sent_at, self._last = now, text
        await self.updater.update_status(TaskState.TASK_STATE_WORKING, metadata={"note": text, RELAYED: True})


class TaskWriter:
    """Writes one turn's events to its task: sentences to the answer artifact, typed outputs
    to artifacts of their own, and the end of the turn as the task's state."""

    def __init__(self, updater: TaskUpdater, chunked: bool, retry: bool) -> None:
        self.updater, self.retry = updater, retry
        self.answer = AnswerArtifact(updater, chunked)
        self.outputs = 0  # typed outputs written (artifacts of their own)

    async def write(self, event: TurnEvent) -> RelayEnd | None:
        """Write ``event``; how the relay ended if it ends the turn, else ``None``."""
        kind, updater, answer = event.kind, self.updater, self.answer
        if kind is TurnEventKind.SENTENCE:
            await answer.add(event.text)
            return None
        if kind is TurnEventKind.OUTPUT:
            return await self._output(event.output)
        if kind is TurnEventKind.QUESTION:
            question = event.text or " ".join(answer.said)
            await answer.close()
            await updater.requires_input(_agent_message(question or "Please say more."))
            return RelayEnd.ANSWERED
        if kind is TurnEventKind.DONE:
            if answer.said or self.outputs:
                await answer.close()
                await updater.complete(answer.repeated())
                return RelayEnd.ANSWERED
            await updater.failed(_agent_message("The persona had no answer."))
            return RelayEnd.NO_ANSWER
        if kind is TurnEventKind.ERROR:
            if self.retry and not answer.said and not self.outputs:
                return RelayEnd.RETRY
            await answer.close()  # what was said before the failure stays said
            await updater.failed(_agent_message(_reason(event, updater.task_id)))
            return RelayEnd.FAILED
        await answer.flush()
        if kind is TurnEventKind.INTERRUPTED:
            await updater.failed(_agent_message(INTERRUPTED_BY_SHUTDOWN))
        return RelayEnd.STOPPED  # stopped: cancel() reports the canceled state

    async def _output(self, output: object) -> RelayEnd | None:
        updater = self.updater
        if isinstance(output, ArtifactOutput):
            self.outputs += 1
            await updater.add_artifact([output.part], artifact_id=output.artifact_id, name=output.name,
                                       append=output.append, last_chunk=output.last_chunk)
            return None
        await self.answer.close()
        if isinstance(output, Rejection):
            await updater.reject(_agent_message(output.text))
        elif isinstance(output, (Completion, Reply)):  # a reply after other outputs ends the task
            await updater.complete(_agent_message(output.text))
        else:
            await updater.failed(_agent_message(f"The backend gave an unknown output: {type(output).__name__}"))
        return RelayEnd.ANSWERED


class AnswerArtifact:
    """The ``answer`` artifact of one turn: chunk by chunk, or whole at the end.

    Chunks (streaming and polling callers): each sentence goes out as it is said, the
    first with ``append`` false, then " " + each next one appended; the parts joined with
    "" are the answer's text. The artifact is closed by one more chunk that adds nothing
    (an empty text part, ``append`` true, ``lastChunk``), and the ``completed`` status then
    repeats the whole answer as its message (:meth:`repeated`, marked ``{"repeats":
    "answer"}``). So every kind of client reassembles the answer once:

    * one that applies ``append`` reads the artifact whole, as one that concatenates every
      chunk's text ignoring ``append`` does: no chunk rewrites the artifact;
    * ADK's ``RemoteA2aAgent`` keeps only events that are not partial, and an artifact
      chunk is partial unless it is the last one: an empty last chunk gives it nothing, and
      it keeps the ``completed`` status's message, the whole answer (a last chunk that
      carried the last sentence would be all it kept; one that carried the whole text again
      would be said twice by clients that ignore ``append``);
    * a blocking call sees the task at its end: the artifact whole, in one part.

    When the turn is given up (deadline, shutdown, stop) the artifact is left open.
    """

    def __init__(self, updater: TaskUpdater, chunked: bool) -> None:
        self.updater, self.chunked = updater, chunked
        self.said: list[str] = []
        self._written = 0   # sentences already in the artifact
        self._closed = False

    async def add(self, sentence: str) -> None:
        self.said.append(sentence)
        if self.chunked:
            await self.flush()

    async def flush(self) -> None:
        """Write the sentences not written yet, as one chunk (the artifact stays open)."""
        if self._written < len(self.said):
            text = " ".join(self.said[self._written:])
            first = self._written == 0
            self._written = len(self.said)
            await self.updater.add_artifact([Part(text=text if first else " " + text)], artifact_id=ANSWER_ARTIFACT,
                                            name=ANSWER_ARTIFACT, append=not first)

    async def close(self) -> None:
        """Write the rest and close the artifact: whole in one chunk when nothing went out
        yet, else by an empty last chunk."""
        if self._closed or not self.said:
            return
        self._closed = True
        if self._written == 0:
            self._written = len(self.said)
            await self.updater.add_artifact([Part(text=" ".join(self.said))], artifact_id=ANSWER_ARTIFACT,
                                            name=ANSWER_ARTIFACT, append=False, last_chunk=True)
            return
        await self.flush()
        await self.updater.add_artifact([Part(text="")], artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT,
                                        append=True, last_chunk=True)

    def repeated(self) -> Message | None:
        """The message of the ``completed`` status of a streamed answer: its whole text, marked
        as repeating the artifact; ``None`` when the answer was not streamed (a blocking call
        reads the artifact) or nothing was said."""
        if not self.chunked or not self.said:
            return None
        message = _agent_message(" ".join(self.said))
        message.metadata[REPEATS] = ANSWER_ARTIFACT
        return message


def whole_answer(events: list[TurnEvent]) -> str | None:
    """The text of a turn that is over and said only sentences (as the ``answer`` artifact
    holds it whole), or ``None`` when it is not over or did anything else."""
    if len(events) < 2 or events[-1].kind is not TurnEventKind.DONE:
        return None
    if any(event.kind is not TurnEventKind.SENTENCE for event in events[:-1]):
        return None
    return " ".join(event.text for event in events[:-1])


def _agent_message(text: str, context_id: str | None = None) -> Message:
    message = Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    if context_id:
        message.context_id = context_id
    return message


def _reason(event: TurnEvent, task_id: str) -> str:
    """What the caller is told of a failed turn: the error in words, with no address of the
    bridge's side (:func:`without_addresses`); the log keeps it whole."""
    error = event.error
    if isinstance(error, NoAnswerError):
        reason = str(error).capitalize() + "."
    else:
        reason = f"The persona failed: {type(error).__name__}: {error}"
    LOG.warning("task %s failed: %s", task_id, reason)
    return without_addresses(reason)


#: a URL of any scheme, to its last character that is not punctuation ending a sentence
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]*[^\s\"'<>.,:;!?)\]]", re.IGNORECASE)
#: an IPv6 address in brackets or an IPv4 address, with or without a port; localhost; a host name with a port
_HOST = re.compile(r"\[[0-9a-f:.]+\](?::\d+)?|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\blocalhost\b(?::\d+)?"
                   r"|\b[a-z0-9.-]*[a-z][a-z0-9.-]*:\d{1,5}\b", re.IGNORECASE)
ADDRESS_NOT_SHOWN = "(an address not shown)"


def without_addresses(text: str) -> str:
    """``text`` with every URL and host (an IP address, localhost, a name with a port) in it
    replaced by :data:`ADDRESS_NOT_SHOWN`: a failure's words for an A2A caller, who must not
    learn where the persona's agents and services are."""
    return _HOST.sub(ADDRESS_NOT_SHOWN, _URL.sub(ADDRESS_NOT_SHOWN, text))


def _lang_of(context: RequestContext) -> str | None:
    """The user's language: the message's ``metadata["lang"]`` (where this package's plugin
    writes it), else the request's."""
    message = context.message
    if message is not None and "lang" in message.metadata:
        lang = message.metadata["lang"]
        if isinstance(lang, str) and lang:
            return lang
    metadata = context.metadata or {}
    lang = metadata.get("lang") if isinstance(metadata, dict) else None
    return lang if isinstance(lang, str) and lang else None
