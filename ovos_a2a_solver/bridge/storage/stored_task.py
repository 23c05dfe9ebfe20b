# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One stored task, read, or settled outside the a2a-sdk's event flow: the one way the
bridge edits a task itself (a late answer, a restart, a shutdown, a replica that was lost)."""
from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from a2a.server.cluster import ConcurrentTaskModificationError, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.types import Message, Part, Role, Task, TaskStatusUpdateEvent
from a2a.utils.errors import UnsupportedOperationError

from ovos_a2a_solver.bridge.storage.rows import is_unreadable_task_error
from ovos_a2a_solver.states import ACTIVE

LOG = logging.getLogger("ovos_a2a_solver.bridge")

#: a task's metadata key naming the persona that began it: only that persona continues it
BEGUN_BY = "persona"


async def read_task(store: VersionedTaskStore, task_id: str, context: ServerCallContext) -> Task | None:
    """The stored task (as ``context``'s owner sees it), or ``None``."""
    stored = await store.get(task_id, context)
    return stored.task if stored is not None else None


async def settle_stored_task(store: VersionedTaskStore, task_id: str, context: ServerCallContext, state: int,
                             text: str, edit: Callable[[Task], None] | None = None) -> Task | None:
    """Write an outcome the SDK's event flow did not see (a late answer, a restart, a
    shutdown, a replica that was lost): the task gets ``state`` with the agent message
    ``text`` (and ``edit``, if given, may change its artifacts). Only a task still
    submitted or working is changed: one that settled meanwhile (canceled, say) is never
    overwritten. The write is a compare-and-swap on the task's version, read again after
    a concurrent write; the event goes to the shared event log, so subscribers on other
    replicas see it (the whole task when ``edit`` changed more than its status). Returns
    the saved task, or ``None`` when nothing was written (also when the stored task cannot
    be read: it stays as it is, answered as unreadable, and the log says what was not written)."""
    while True:
        try:
            stored = await store.get(task_id, context)
        except UnsupportedOperationError as exc:
            if not is_unreadable_task_error(exc):
                raise
            LOG.warning("task %s cannot be read, so its outcome was not written: %s", task_id, text)
            return None
        if stored is None or stored.task.status.state not in ACTIVE:
            return None
        task = Task()
        task.CopyFrom(stored.task)
        if edit is not None:
            edit(task)
        task.status.state = state
        task.status.message.CopyFrom(Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex, task_id=task.id,
                                             context_id=task.context_id, parts=[Part(text=text)]))
        task.status.timestamp.GetCurrentTime()
        event = task if edit is not None else TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id,
                                                                     status=task.status)
        try:
            await store.save(task, event=event, prev=stored.task, prev_version=stored.version, context=context)
        except ConcurrentTaskModificationError:
            continue  # written meanwhile (by the SDK or another replica): look again
        return task
