# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One persona turn, running in a worker thread, stoppable between sentences.

The backend's generator runs on a thread of :data:`TURN_THREADS`; each sentence is handed
to the event loop as it comes (what comes while the loop has not yet taken the last
hand-off goes with it, one wake-up for a burst). A reply the backend computes without
waiting (``answers_at_once``) runs right on the event loop instead. A stop request is honoured at the next
sentence boundary; whoever asked learns within ``grace`` seconds whether the turn really
stopped, so the bridge only reports ``canceled`` for work that was stopped.
"""
from __future__ import annotations

import asyncio
import contextvars
import enum
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ovos_a2a_solver.bridge.backends.protocols import Question

LOG = logging.getLogger("ovos_a2a_solver.bridge")


class TurnEventKind(enum.Enum):
    """What happened in a turn. SENTENCE, QUESTION, OUTPUT and NOTE may repeat; the others end it."""

    SENTENCE = "sentence"   # the persona said a sentence
    OUTPUT = "output"       # a typed output of the backend (an artifact part, a reply, a rejection...)
    NOTE = "note"           # a progress note of the agent a relay persona asks ("Searching…"), never answer
    QUESTION = "question"   # the persona asks back: the task waits for the user's answer (ends the reply)
    DONE = "done"           # the reply is complete
    STOPPED = "stopped"     # a stop request was honoured
    ERROR = "error"         # the backend raised
    INTERRUPTED = "interrupted"  # the bridge is shutting down: the turn is given up


@dataclass(frozen=True)
class TurnEvent:
    """One thing a turn did; ``text`` for a sentence or question, ``output`` for a typed
    output, ``error`` for an error."""

    kind: TurnEventKind
    text: str = ""
    error: BaseException | None = None
    output: object = None

    @property
    def ends(self) -> bool:
        return self.kind not in (TurnEventKind.SENTENCE, TurnEventKind.QUESTION, TurnEventKind.OUTPUT,
                                 TurnEventKind.NOTE)

    @property
    def stopped(self) -> bool:
        return self.kind is TurnEventKind.STOPPED


class Flag:
    """What ``asyncio.Event`` does (``set``, ``clear``, ``is_set``, ``wait``), without its
    waiters' deque (some 700 bytes) made up front: a message in progress keeps a few of these
    for its whole life, and most are never waited on. Used on the event loop only."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            waiters, self._waiters = self._waiters, None
            for waiter in waiters or ():
                if not waiter.done():
                    waiter.set_result(True)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)


class Mailbox:
    """A turn's events on their way to the one coroutine relaying them: ``asyncio.Queue``'s
    ``put_nowait``, ``get``, ``get_nowait`` and ``empty``, with a plain list and at most one
    waiting future instead of the queue's four deques (some 3 KiB per turn). One reader at a
    time; used on the event loop only."""

    __slots__ = ("_items", "_head", "_waiter")

    def __init__(self) -> None:
        self._items: list[TurnEvent] = []
        self._head = 0          # the next item to read: items before it were read
        self._waiter: asyncio.Future | None = None

    def empty(self) -> bool:
        return self._head == len(self._items)

    def qsize(self) -> int:
        return len(self._items) - self._head

    def put_nowait(self, event: "TurnEvent") -> None:
        self._items.append(event)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def queued(self) -> list["TurnEvent"]:
        """The events not read yet, in order (they stay queued)."""
        return self._items[self._head:]

    def get_nowait(self) -> "TurnEvent":
        if self.empty():
            raise asyncio.QueueEmpty
        return self._take()

    async def get(self) -> "TurnEvent":
        while self.empty():
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._take()

    def _take(self) -> "TurnEvent":
        """The next item, in constant time however many wait (a slow reader of a long answer):
        read items are let go of, and dropped from the list once they are half of it."""
        item = self._items[self._head]
        self._items[self._head] = None
        self._head += 1
        if self._head == len(self._items):
            self._items.clear()
            self._head = 0
        elif self._head > 32 and self._head * 2 > len(self._items):
            del self._items[:self._head]
            self._head = 0
        return item


class DaemonThreads:
    """Daemon threads that run jobs, each kept ``idle_seconds`` after its job for the next
    one (starting a thread per turn costs more than an echo's answer). Daemon threads,
    unlike a ``ThreadPoolExecutor``'s, are not joined at exit: a persona step that never
    returns must not keep the bridge from shutting down. There is no upper bound: the
    request handler's ``max_concurrent`` bounds the turns."""

    def __init__(self, name: str, idle_seconds: float = 30.0) -> None:
        self.name = name
        self.idle_seconds = idle_seconds
        # a Queue, not a SimpleQueue: a SimpleQueue getter that wakes for a job another thread
        # took, after its timeout passed, waits on with no timeout at all (CPython 3.11 at least),
        # so that an idle thread would not end until the next job came
        self._jobs: queue.Queue[Callable[[], object]] = queue.Queue()
        self._lock = threading.Lock()
        self._idle = 0      # threads waiting for a job (each job put is taken by one of them)

    @property
    def idle(self) -> int:
        """Threads waiting for a job now."""
        with self._lock:
            return self._idle

    def submit(self, job: Callable[[], object]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return
        threading.Thread(target=self._work, args=(job,), name=self.name, daemon=True).start()

    def _work(self, job: Callable[[], object] | None) -> None:
        while job is not None:
            try:
                job()
            except BaseException as exc:  # a job handles its own errors; this one must not end the thread
                LOG.error("a %s job raised %r", self.name, exc)
            job = None
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:  # a job put meanwhile counted on this thread: take it
                    try:
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        self._idle -= 1


#: The threads persona turns run on.
TURN_THREADS = DaemonThreads("ovos-a2a-turn")


class Turn:
    """A backend reply being produced in a worker thread."""

    def __init__(self, produce: Callable[[], Iterator[object]], loop: asyncio.AbstractEventLoop,
                 interrupt: Callable[[], object] | None = None,
                 follow_notes: Callable[[Callable[[str], None] | None], None] | None = None) -> None:
        self._produce = produce
        # while the reply runs, hands the backend what takes its progress notes (and None after)
        self._follow_notes = follow_notes
        self._noting = False  # progress notes are taken (the reply runs on a thread and has not ended)
        self._context = contextvars.copy_context()  # the turn runs within its message's (its trace)
        self._loop = loop
        self._interrupt = interrupt  # asks the backend to end a step it is blocked in (a relay's remote task)
        self.events = Mailbox()
        self.ended = Flag()               # set on the loop once the worker has finished, however
        self.outcome: TurnEvent | None = None
        self._stop = False                   # a stop was asked for (read by the worker between sentences)
        self._on_loop = False                # the reply runs on the event loop (no hand-off)
        self._outbox: list[TurnEvent] = []   # posted by the worker, not yet taken by the loop
        self._outbox_lock = threading.Lock()

    def start(self, at_once: bool = False) -> "Turn":
        """Run the backend on one of :data:`TURN_THREADS`, or, with ``at_once`` (the backend
        computes this reply without waiting), right here: its events are queued on return."""
        if at_once:
            self._on_loop = True
            self._run()
        else:
            TURN_THREADS.submit(lambda: self._context.run(self._run))
        return self

    @property
    def running(self) -> bool:
        return not self.ended.is_set()

    def _post(self, event: TurnEvent) -> None:
        """Hand ``event`` to the loop (from the worker thread): the loop is woken only when
        the outbox was empty; otherwise the wake-up already on its way takes this one too."""
        if event.ends:
            self._noting = False  # no note after the end
        if self._on_loop:
            self._outbox.append(event)
            self._deliver()
            return
        with self._outbox_lock:
            self._outbox.append(event)
            if len(self._outbox) > 1:
                return
        try:
            self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop is gone (shutdown): nobody is listening any more
            pass

    def note(self, text: str) -> None:
        """A progress note of the backend's remote agent (from any thread), queued as a NOTE
        event while the reply runs; dropped once it has ended."""
        if self._noting and text:
            self._post(TurnEvent(TurnEventKind.NOTE, text))

    def _deliver(self) -> None:
        with self._outbox_lock:
            events, self._outbox = self._outbox, []
        for event in events:
            self.events.put_nowait(event)
            if event.ends:
                self.outcome = event
                self.ended.set()

    def _run(self) -> None:
        generator = None
        following = self._follow_notes is not None and not self._on_loop
        try:
            if following:
                self._noting = True
                try:
                    self._follow_notes(self.note)
                except Exception as exc:  # the reply goes on without its notes
                    LOG.warning("following a turn's progress notes raised %r", exc)
            generator = self._produce()
            for item in generator:
                if self._stop:
                    self._post(TurnEvent(TurnEventKind.STOPPED))
                    return
                if isinstance(item, Question):
                    self._post(TurnEvent(TurnEventKind.QUESTION, item.text))
                elif isinstance(item, str):
                    self._post(TurnEvent(TurnEventKind.SENTENCE, item))
                else:
                    self._post(TurnEvent(TurnEventKind.OUTPUT, output=item))
                if self._stop:
                    self._post(TurnEvent(TurnEventKind.STOPPED))
                    return
            self._post(TurnEvent(TurnEventKind.STOPPED if self._stop else TurnEventKind.DONE))
        except Exception as exc:  # the backend failed (or was ended by a stop): the turn's outcome
            self._post(TurnEvent(TurnEventKind.STOPPED) if self._stop
                       else TurnEvent(TurnEventKind.ERROR, error=exc))
        finally:
            if generator is not None:
                try:
                    generator.close()
                except Exception as exc:  # closing a stopped backend generator: log, nothing else to do
                    LOG.debug("closing a stopped persona turn raised %r", exc)
            if following:
                self._noting = False
                try:
                    self._follow_notes(None)
                except Exception as exc:  # the turn is over anyway
                    LOG.debug("letting go of a turn's progress notes raised %r", exc)

    def interrupt(self) -> None:
        """Give the turn up (the bridge shuts down): whoever relays it sees INTERRUPTED now, the
        backend is asked to end its step (a relay cancels its remote task), and the worker stops
        at its next sentence boundary if it gets there."""
        if self.running:
            self._stop = True
            if self._interrupt is not None:  # e.g. a relay cancels its remote task too
                self._loop.run_in_executor(None, self._interrupt)
            event = TurnEvent(TurnEventKind.INTERRUPTED)
            self.events.put_nowait(event)
            self.outcome = event
            self.ended.set()

    async def stop(self, grace: float) -> bool:
        """Ask the turn to stop at its next sentence boundary.

        True when it stopped (or had already finished) within ``grace`` seconds. If not,
        the request is withdrawn and the turn goes on undisturbed.
        """
        if not self.running:
            return True
        self._stop = True
        if self._interrupt is not None:  # a step that would not reach a sentence boundary by itself
            self._loop.run_in_executor(None, self._interrupt)
        try:
            await asyncio.wait_for(self.ended.wait(), grace)
            return True
        except asyncio.TimeoutError:
            self._stop = False
            return not self.running


class TurnRegistry:
    """The turns running in this process, by task id."""

    #: the fewest turns kept before ended ones are looked for
    SWEEP_FROM = 64

    def __init__(self) -> None:
        self._turns: dict[str, Turn] = {}
        self._sweep_at = self.SWEEP_FROM

    def __len__(self) -> int:
        return sum(1 for t in self._turns.values() if t.running)

    def interrupt_all(self) -> int:
        """Interrupt every running turn; return how many there were."""
        running = [turn for turn in self._turns.values() if turn.running]
        for turn in running:
            turn.interrupt()
        return len(running)

    def add(self, task_id: str, turn: Turn) -> None:
        """Register ``turn`` for ``task_id``. Turns that have ended are forgotten here, so one
        whose relay ended by an exception (before it could discard it) is not kept forever: they
        are looked for once the registry has doubled since the last look, so that adding stays
        cheap (constant on average) with thousands of turns running."""
        if len(self._turns) >= self._sweep_at:
            for ended in [key for key, old in self._turns.items() if not old.running]:
                del self._turns[ended]
            self._sweep_at = max(self.SWEEP_FROM, 2 * len(self._turns))
        self._turns[task_id] = turn

    def get(self, task_id: str) -> Turn | None:
        return self._turns.get(task_id)

    def discard(self, task_id: str, turn: Turn) -> None:
        if self._turns.get(task_id) is turn:
            del self._turns[task_id]
