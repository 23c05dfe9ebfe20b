# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Work a bridge run left unfinished: every way a task whose turn was lost is failed.

A run's turns are lost when it crashed or was killed (found by the next run on the same
store at start-up: :func:`fail_earlier_runs` for ``--workers``, the handler's recovery for
one process), when it ran out of its shutdown grace, or, with replicas, when its lease
expired (a survivor fails them). A task can also be stranded with no run that knows of it:
its turn ended while the store could not take its end (the database restarted, the disk was
full), or its run's work was marked ended without it. A sweep, at start and once a lease (a
minute on SQLite), fails every task still submitted or working that no live run works on
(:func:`fail_tasks`). Each case says so in the failed task's status message, and each is a
compare-and-swap on the stored task, so a task that settled meanwhile is never overwritten.
"""
from __future__ import annotations

from a2a.server.cluster import LegacyTaskStoreAdapter, VersionedTaskStore
from a2a.types import TaskState

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.storage.database import open_stores
from ovos_a2a_solver.bridge.storage.operations import Operation, OperationLog
from ovos_a2a_solver.bridge.storage.owners import call_context_for
from ovos_a2a_solver.bridge.storage.stored_task import settle_stored_task

#: What a task that lost its work says (the status message of the ``failed`` state).
INTERRUPTED_BY_RESTART = ("Interrupted by a restart of the bridge before the persona answered; the answer was lost. "
                          "Please ask again.")
INTERRUPTED_BY_SHUTDOWN = ("Interrupted by a shutdown of the bridge before the persona answered; the answer was "
                           "lost. Please ask again.")
INTERRUPTED_UNATTENDED = ("Interrupted: the bridge lost this task's turn while its task store was unavailable, "
                          "before the persona's answer could be stored; the answer was lost. Please ask again.")
INTERRUPTED_BY_LOST_REPLICA = ("Interrupted: the bridge process working on it stopped answering (its lease expired) "
                               "before the persona answered; the answer was lost. Please ask again.")


async def fail_operations(task_store: VersionedTaskStore, log: OperationLog, operations: list[Operation],
                          reason: str) -> int:
    """Fail the tasks of ``operations`` whose work was lost (``reason`` is what they say),
    and mark the operations finished; return how many tasks were failed."""
    count = 0
    for operation in operations:
        task = await settle_stored_task(task_store, operation.task_id, call_context_for(operation.owner),
                                        TaskState.TASK_STATE_FAILED, reason)
        count += task is not None
        await log.finish(operation.key)
    return count


async def fail_tasks(task_store: VersionedTaskStore, tasks: list[tuple[str, str]], reason: str) -> int:
    """Fail ``tasks`` ((task id, owner) each) that are still submitted or working, saying
    ``reason``; return how many were failed (one that settled meanwhile is left as it is)."""
    count = 0
    for task_id, owner in tasks:
        count += await settle_stored_task(task_store, task_id, call_context_for(owner), TaskState.TASK_STATE_FAILED,
                                          reason) is not None
    return count


async def fail_earlier_runs(settings: BridgeSettings) -> int:
    """Fail the tasks every earlier run on this SQLite file left unfinished; return how
    many. The parent of ``serve --workers N`` calls it before any worker starts: a worker
    fails only its own earlier runs' work (its siblings' is theirs)."""
    db, store = open_stores(settings.database_url)
    try:
        await store.initialize()
        log = OperationLog(db, settings.replica, single_process=True)
        await log.initialize()
        count = await fail_operations(LegacyTaskStoreAdapter(store), log, await log.interrupted(),
                                      INTERRUPTED_BY_RESTART)
        await log.flush()
        return count
    finally:
        await db.aclose()
