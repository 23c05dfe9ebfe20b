# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The durable task stores.

With SQLite (one process), the SDK saves a task on every event: each status update, each streamed chunk, each
heartbeat. Writing all of them costs more than the persona's answer. ``BufferedTaskStore``
writes at once what must survive a crash: a task's first save, the first save of a turn that
takes up a task again (``working``), and every save that settles a task: into a final state
or a wait for input of its own (``StoredEnds.settles``). The saves in between stay in memory
(reads see them at once) and reach the database at most every ``flush_interval`` seconds, and
before any listing. A crash loses at most those in-between snapshots of work that is then
marked "interrupted by a restart" anyway, or of a follow-up's turn on a task that waits for
input (its message added, an artifact): the task then still waits, as it was stored.

With PostgreSQL (several replicas) every save goes to the bridge's ``postgres.PostgresTaskStore``,
which holds the progress in between for a few milliseconds, by the same rule; each write bumps
the task's version and appends its events to the shared event log that other replicas'
subscribers read (see ``database.open_stores``).
Either way, a task that a message is about to create is not looked up before its first
save (``new_tasks.NewTasks``), a task a message continues is read once by the message's call
until it is saved (``call_reads.CallReads``), each settled save is reported to the turn that
waits for it (``stored_ends.StoredEnds``), and the bridge reads and writes through the SDK's
``VersionedTaskStore`` interface (a plain store under the SDK's ``LegacyTaskStoreAdapter``),
so ``stored_task.settle_stored_task`` is one compare-and-swap for both.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from a2a.server.cluster import ConcurrentTaskModificationError, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import Task

from ovos_a2a_solver.bridge.storage.call_reads import CallReads
from ovos_a2a_solver.bridge.storage.new_tasks import NewTasks
from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds
from ovos_a2a_solver.states import WAITING_FOR_USER

LOG = logging.getLogger("ovos_a2a_solver.bridge")

#: what else goes when a task is deleted: ``forget(task_id, context)`` (its push configs)
Forget = Callable[[str, ServerCallContext], Awaitable[None]]


async def _nothing_else(_task_id: str, _context: ServerCallContext) -> None:
    return None


class NewTasksUnread(VersionedTaskStore):
    """A versioned store (``inner``) whose reads of the :class:`NewTasks` are answered
    "not found" without asking it, and a call's reads of a task it read already from
    :class:`CallReads`; each save is reported to ``ends``; deleting a task also ``forget``s
    what belongs to it."""

    def __init__(self, inner: VersionedTaskStore, new_tasks: NewTasks, ends: StoredEnds | None = None,
                 forget: Forget = _nothing_else, reads: CallReads | None = None) -> None:
        self.inner = inner
        self.new_tasks = new_tasks
        self.ends = ends or StoredEnds()
        self.forget = forget
        self.reads = reads or CallReads()

    async def save(self, task: Task, *, event, prev, prev_version, context: ServerCallContext):
        self.new_tasks.discard(task.id)
        self.reads.discard(task.id)
        version = await self.inner.save(task, event=event, prev=prev, prev_version=prev_version, context=context)
        self.ends.saved(task, context)
        return version

    async def get(self, task_id: str, context: ServerCallContext):
        if task_id in self.new_tasks:
            return None
        stored = self.reads.recall(task_id, context)
        if stored is None:
            stored = await self.inner.get(task_id, context)
            if stored is not None:
                self.reads.keep(context, stored.task, stored.version)
        return stored

    async def list(self, params, context: ServerCallContext):
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self.reads.discard(task_id)
        await self.inner.delete(task_id, context)
        await self.forget(task_id, context)


class BufferedTaskStore(TaskStore):
    """Write-through for what matters after a crash, write-behind for progress (no read of
    the :class:`NewTasks`, and a call's reads of a task it read already answered from
    :class:`CallReads`); each settled save is reported to ``ends``; deleting a task also
    ``forget``s what belongs to it."""

    def __init__(self, inner: TaskStore, new_tasks: NewTasks, ends: StoredEnds | None = None,
                 flush_interval: float = 10.0, forget: Forget = _nothing_else, reads: CallReads | None = None) -> None:
        self.inner = inner
        self.new_tasks = new_tasks
        self.ends = ends or StoredEnds()
        self.forget = forget
        self.reads = reads or CallReads()
        self.flush_interval = flush_interval
        self._pending: dict[tuple[str, str], tuple[Task, ServerCallContext]] = {}
        self._stored: set[tuple[str, str]] = set()   # tasks this process has written at least once
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._flusher: asyncio.Task | None = None

    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def save(self, task: Task, context: ServerCallContext) -> None:
        self.new_tasks.discard(task.id)
        self.reads.discard(task.id)
        key = (owner_scope(context), task.id)
        async with self._lock(key):
            settles = self.ends.settles(task, context)
            # a task not written here yet is written at once, unless it waits for the user and this
            # save does not settle it: then it is stored, and a follow-up's turn is at work on it
            if settles or (key not in self._stored and task.status.state not in WAITING_FOR_USER):
                self._pending.pop(key, None)
                await self.inner.save(task, context)
                if settles:
                    self._stored.discard(key)
                    self._locks.pop(key, None)
                    self.ends.saved(task, context)
                else:
                    self._stored.add(key)
                return
            snapshot = Task()
            snapshot.CopyFrom(task)
            self._pending[key] = (snapshot, context)
        self._ensure_flusher()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        if task_id in self.new_tasks:
            return None
        pending = self._pending.get((owner_scope(context), task_id))
        if pending is not None:
            task = Task()
            task.CopyFrom(pending[0])
            return task
        recalled = self.reads.recall(task_id, context)
        if recalled is not None:
            return recalled.task
        task = await self.inner.get(task_id, context)
        self.reads.keep(context, task)
        return task

    async def list(self, params, context: ServerCallContext):
        await self.flush()
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self.reads.discard(task_id)
        key = (owner_scope(context), task_id)
        async with self._lock(key):
            self._pending.pop(key, None)
            self._stored.discard(key)
            await self.inner.delete(task_id, context)
        self._locks.pop(key, None)
        await self.forget(task_id, context)

    async def flush(self) -> None:
        """Write every held-back snapshot (one of a task that became final meanwhile, by another
        writer, is dropped: a final task is never changed)."""
        for key in list(self._pending):
            async with self._lock(key):
                entry = self._pending.pop(key, None)
                if entry is not None:
                    with contextlib.suppress(ConcurrentTaskModificationError):
                        await self.inner.save(*entry)

    def _ensure_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_periodically())

    async def _flush_periodically(self) -> None:
        while self._pending:
            await asyncio.sleep(self.flush_interval)
            try:
                await self.flush()
            except Exception as exc:  # the database is unreachable: keep the snapshots, try again later
                LOG.warning("could not write task progress to the store (%s); retrying", exc)

    async def aclose(self) -> None:
        """Write what is held back, and stop the flusher (at shutdown)."""
        if self._flusher is not None:
            self._flusher.cancel()
        await self.flush()
