# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The settled ends of tasks that finished turns wait for the a2a-sdk to store."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from a2a.server.context import ServerCallContext
from a2a.types import Task

from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.states import SETTLED

LOG = logging.getLogger("ovos_a2a_solver.bridge")


class AwaitedEnd:
    """One turn's expectation of its task's settled save (see :meth:`StoredEnds.awaiting`)."""

    def __init__(self, owner: str, task_id: str) -> None:
        self.owner, self.task_id = owner, task_id
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
    lost, and the task left ``working``). The stores report each settled save (:meth:`saved`)."""

    def __init__(self) -> None:
        self._awaited: dict[tuple[str, str], AwaitedEnd] = {}

    @contextlib.asynccontextmanager
    async def awaiting(self, owner: str, task_id: str, timeout: float) -> AsyncIterator[AwaitedEnd]:
        """A turn of ``owner``'s task ``task_id`` is about to settle it within the block. Once
        the block ends, the end of the block waits up to ``timeout`` s for the settled save
        (also when the block is canceled meanwhile, the expectation goes); it does not wait
        when the block raised or was stopped (the a2a-sdk stores the end, if any, only after
        the executor returns) or the turn was handed on (:meth:`AwaitedEnd.hand_on`). A later
        turn's expectation of the same task is never dropped by this one's end."""
        awaited = self._awaited[(owner, task_id)] = AwaitedEnd(owner, task_id)
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

    def saved(self, task: Task, context: ServerCallContext) -> None:
        """``task`` was saved; if it is settled, its turn need not wait any longer."""
        if task.status.state in SETTLED:
            awaited = self._awaited.get((owner_scope(context), task.id))
            if awaited is not None:
                awaited.saved.set()

    def _forget(self, awaited: AwaitedEnd) -> None:
        key = (awaited.owner, awaited.task_id)
        if self._awaited.get(key) is awaited:
            del self._awaited[key]
