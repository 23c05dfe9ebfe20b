# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The settled ends of tasks that finished turns wait for the a2a-sdk to store."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskStatus

from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.states import TERMINAL, WAITING_FOR_USER

LOG = logging.getLogger("ovos_a2a_solver.bridge")


class AwaitedEnd:
    """One turn's expectation of its task's settled save (see :meth:`StoredEnds.awaiting`);
    ``began_from``: the status of the stored task the turn continues, if any."""

    def __init__(self, owner: str, task_id: str, began_from: TaskStatus | None = None) -> None:
        self.owner, self.task_id = owner, task_id
        self.began_from = None
        if began_from is not None:  # a copy: the a2a-sdk changes the task it read as the turn goes on
            self.began_from = TaskStatus()
            self.began_from.CopyFrom(began_from)
        self.saved = asyncio.Event()
        self.handed_on = False

    def hand_on(self) -> None:
        """The turn goes on past the block (its late answer settles the task on its own): the
        block's end does not wait for the save."""
        self.handed_on = True


class StoredEnds:
    """The settled states (final, or waiting for the user) that turns await in the store.

    A turn's executor hands its last event to the a2a-sdk, whose own task saves it a moment
    later. The turn holds its message until then (:meth:`awaiting`): a bridge that drains
    for a shutdown waits for the messages it holds, so it tears the SDK down only after the
    end of every finished turn is stored, not while it is being saved (the answer would be
    lost, and the task left ``working``). The stores report each save (:meth:`saved`), and ask
    which saves settle a task (:meth:`settles`): those they write at once."""

    def __init__(self) -> None:
        self._awaited: dict[tuple[str, str], AwaitedEnd] = {}

    @contextlib.asynccontextmanager
    async def awaiting(self, owner: str, task_id: str, timeout: float,
                       began_from: TaskStatus | None = None) -> AsyncIterator[AwaitedEnd]:
        """A turn of ``owner``'s task ``task_id`` is about to settle it within the block; a turn
        that continues a stored task (a follow-up) says the status it ``began_from``. Once
        the block ends, the end of the block waits up to ``timeout`` s for the settled save
        (also when the block is canceled meanwhile, the expectation goes); it does not wait
        when the block raised or was stopped (the a2a-sdk stores the end, if any, only after
        the executor returns) or the turn was handed on (:meth:`AwaitedEnd.hand_on`). A later
        turn's expectation of the same task is never dropped by this one's end."""
        awaited = self._awaited[(owner, task_id)] = AwaitedEnd(owner, task_id, began_from)
        try:
            yield awaited
        except BaseException:
            self._forget(awaited)
            raise
        try:
            if not awaited.handed_on and not awaited.saved.is_set():
                async with asyncio.timeout(timeout):
                    await awaited.saved.wait()
        except TimeoutError:
            LOG.debug("task %s: its end was not stored within %g s", task_id, timeout)
        finally:
            self._forget(awaited)

    def settles(self, task: Task, context: ServerCallContext) -> bool:
        """Whether a save of ``task`` settles it: a final state, or a wait for the user of its own.
        A follow-up's turn begins on a task that waits for the user, and the a2a-sdk saves it in
        that status as it adds the follow-up's message (the question it answers goes into the
        history) and, unless the turn streams, at the turn's artifacts: those saves are the
        turn's progress, not its end, which comes with a status of its own (its time)."""
        state = task.status.state
        if state in TERMINAL:
            return True
        if state not in WAITING_FOR_USER:
            return False
        awaited = self._awaited.get((owner_scope(context), task.id))
        began = awaited.began_from if awaited is not None else None
        return began is None or state != began.state or task.status.timestamp != began.timestamp

    def saved(self, task: Task, context: ServerCallContext) -> None:
        """``task`` was saved; if that settles it, its turn need not wait any longer."""
        if self.settles(task, context):
            awaited = self._awaited.get((owner_scope(context), task.id))
            if awaited is not None:
                awaited.saved.set()

    def _forget(self, awaited: AwaitedEnd) -> None:
        key = (awaited.owner, awaited.task_id)
        if self._awaited.get(key) is awaited:
            del self._awaited[key]
