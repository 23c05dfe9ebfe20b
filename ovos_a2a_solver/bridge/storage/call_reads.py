# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The tasks a message's call has read, answered again from memory to that call until the
task is saved or the call is over."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from a2a.server.cluster import StoredTask, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import Task


class CallReads:
    """What each message's call read of the tasks it continues, until each is saved.

    A message that names its task has it read up to five times before anything is written:
    by the request handler (may it be continued, and by this persona?), by the a2a-sdk when
    it sets the task up (is the message's context the task's?), by the builder of the
    request's context (the task's context, for a message that names none), when the SDK
    starts the task's work (unless it kept the task in memory since its last turn), and by the
    SDK's producer, as the work begins. Until the task is saved, nothing in this process
    changes it, for every save lets go of it first (:meth:`discard`): those reads can only
    find what the first one found. So within the block of a message's call
    (:meth:`remembered`) the stores keep what the call read (:meth:`keep`), and answer that
    call's next reads of the task with a copy of it (:meth:`recall`), without the database.

    Nothing else is answered from memory: another call's read (a GetTask meanwhile) goes to
    the database, and so does every read once the task was saved here (by any call), or once
    the message's call is over. Another process (a replica, a sibling worker) that writes the
    task meanwhile is found out as it would be after reads a moment apart: the versioned
    save of the task is refused, and the SDK reads it again; a final task is never changed."""

    def __init__(self) -> None:
        self._calls: dict[int, list[str]] = {}  # each remembered call (its context's id) -> the tasks it kept
        self._kept: dict[str, tuple[ServerCallContext, Task, TaskVersion]] = {}  # task id -> its reader, as read

    @contextlib.contextmanager
    def remembered(self, context: ServerCallContext) -> Iterator[None]:
        """For the block, what the call of ``context`` reads is kept for its next reads; on every
        way out of it (returned, raised or canceled) that is forgotten."""
        call = id(context)  # unique while the block holds the context
        self._calls[call] = []
        try:
            yield
        finally:
            for task_id in self._calls.pop(call):
                kept = self._kept.get(task_id)
                if kept is not None and kept[0] is context:
                    del self._kept[task_id]

    def keep(self, context: ServerCallContext, task: Task | None, version: TaskVersion = TaskVersion.MISSING) -> None:
        """The call of ``context`` read ``task`` (at ``version``) from the store: kept, if the
        call is remembered (a copy: the reader may change its own)."""
        kept = self._calls.get(id(context))
        if kept is None or task is None:
            return
        copy = Task()
        copy.CopyFrom(task)
        kept.append(task.id)
        self._kept[task.id] = (context, copy, version)

    def recall(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """A copy of ``task_id`` as the call of ``context`` last read it, if that is kept."""
        kept = self._kept.get(task_id)
        if kept is None or kept[0] is not context:
            return None
        task = Task()
        task.CopyFrom(kept[1])
        return StoredTask(task, kept[2])

    def discard(self, task_id: str) -> None:
        """``task_id`` is being saved or deleted: its next read goes to the store."""
        self._kept.pop(task_id, None)
