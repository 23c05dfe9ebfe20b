# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How long the store keeps a task that ended: ``retention_days``, or for ever.

A bridge that serves for a year would otherwise keep every message it was ever sent. With a
retention, tasks that ended (completed, failed, canceled, rejected) more than that long ago go,
with what belongs to them: their events in the shared event log (PostgreSQL), their webhooks, and
the claims of the messages that made them (a message sent again after that is new work). A task
still worked on, or waiting for input, is kept however old.

The deletes run in batches of :data:`BATCH` tasks, each a short write of its own, with a pause
between them, so that serving never waits long behind them; on PostgreSQL one replica at a time
deletes (each batch is serialized on one advisory lock), the others find nothing left to do.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ovos_a2a_solver.bridge.storage.database import Sql
from ovos_a2a_solver.states import TERMINAL

LOG = logging.getLogger("ovos_a2a_solver.bridge")

BATCH = 200             # tasks deleted in one write
PAUSE_SECONDS = 0.05    # between two batches: the requests waiting meanwhile go first
EVERY_SECONDS = 600.0   # between two rounds, the first one soon after the start
FIRST_AFTER_SECONDS = 1.0
#: the states of a task that ended (``rows.ENDED_TASKS_INDEX`` holds them by age)
ENDED_STATES = ", ".join(str(int(state)) for state in sorted(TERMINAL))


async def delete_ended_tasks(db: Sql, days: float, events: bool) -> int:
    """Delete the tasks that ended more than ``days`` days ago, and what belongs to them (their
    events too, with ``events``: PostgreSQL's shared log), in batches; return how many."""
    before = time.time_ns() - int(days * 86400 * 1e9)
    deleted = 0
    while True:
        rows = await db.fetch(f"SELECT id FROM bridge_tasks WHERE state IN ({ENDED_STATES}) AND updated >= 0 "
                              f"AND updated < :before ORDER BY updated LIMIT :batch", {"before": before, "batch": BATCH})
        if not rows:
            return deleted
        ids = {f"t{n}": row["id"] for n, row in enumerate(rows)}
        listed = ", ".join(":" + key for key in ids)
        # the task last, each statement on its own: a round cut short leaves the task, and the next
        # round takes it again
        for table, column in (("a2a_bridge_push_configs", "task_id"), ("a2a_bridge_operations", "task_id"),
                              *((("bridge_task_events", "task_id"),) if events else ())):
            await db.execute_serialized("retention", f"DELETE FROM {table} WHERE {column} IN ({listed})", ids)
        deleted += await db.execute_serialized(
            "retention", f"DELETE FROM bridge_tasks WHERE id IN ({listed}) AND state IN ({ENDED_STATES})", ids)
        await asyncio.sleep(PAUSE_SECONDS)


async def keep_deleting(db: Sql, days: float, events: bool) -> None:
    """Delete the tasks past their retention now and then, for ever (cancel to stop)."""
    await asyncio.sleep(FIRST_AFTER_SECONDS)
    while True:
        try:
            count = await delete_ended_tasks(db, days, events)
            if count:
                LOG.info("deleted %d task(s) that ended more than %g day(s) ago", count, days)
        except Exception as exc:  # the store is away: the next round deletes them
            LOG.warning("could not delete the tasks past their retention (%s); trying again in %g s", exc,
                        EVERY_SECONDS)
        await asyncio.sleep(EVERY_SECONDS)
