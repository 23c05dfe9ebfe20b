"""Bridge: a retention (``OVOS_A2A_RETENTION_DAYS``) deletes the tasks that ended long ago.

A store written as a bridge that served for days leaves it: tasks that ended two days ago (each
with a webhook and the claim of its message), a task that ended an hour ago, a task still
working two days on, a task waiting for input two days on. A bridge started on it with a
retention of one day deletes the two-day-old ended tasks with their webhooks and claims, and
keeps every other; a caller then gets TaskNotFound for a deleted task, and a message sent again
is new work. Without a retention nothing goes.
"""
from __future__ import annotations

import sqlite3
import time
import uuid

from a2a.types import Task, TaskState, TaskStatus

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import get_task, message, send, state, task_of
from support.waiting import wait_until

DAY = 86400.0
TASK_NOT_FOUND = -32001


def old_task(db: sqlite3.Connection, task_state: int, age: float, webhook: bool = False) -> str:
    """A task of the anonymous caller in ``task_state`` since ``age`` seconds, with a webhook and
    its message's claim if ``webhook``."""
    task_id = uuid.uuid4().hex
    status = TaskStatus(state=task_state)
    status.timestamp.FromNanoseconds(time.time_ns() - int(age * 1e9))
    task = Task(id=task_id, context_id="c", status=status)
    db.execute("INSERT INTO bridge_tasks (id, owner, context_id, state, updated, task) VALUES (?, '', 'c', ?, ?, ?)",
               (task_id, int(task_state), status.timestamp.ToNanoseconds(), task.SerializeToString()))
    if webhook:
        db.execute("INSERT INTO a2a_bridge_push_configs (task_id, owner, config_id, config, live) VALUES (?, '', 'w', "
                   "'{}', 0)", (task_id,))
        db.execute("INSERT INTO a2a_bridge_operations (key, owner, message_id, sent_task_id, content, context_id, "
                   "task_id, state, replica, boot, created, updated) VALUES (?, '', ?, '', 'x', NULL, ?, 'done', "
                   "'gone', 'gone', ?, ?)", (uuid.uuid4().hex, uuid.uuid4().hex, task_id, time.time() - age,
                                             time.time() - age))
    return task_id


def a_store_of_days(state_dir) -> dict[str, str]:
    with InProcessBridge(state_dir=state_dir) as bridge:  # makes the store
        assert state(task_of(send(bridge.url, message("hello")))) == "TASK_STATE_COMPLETED"
    with sqlite3.connect(state_dir / "bridge.sqlite3") as db:
        return {
            "completed long ago": old_task(db, TaskState.TASK_STATE_COMPLETED, 2 * DAY, webhook=True),
            "failed long ago": old_task(db, TaskState.TASK_STATE_FAILED, 3 * DAY, webhook=True),
            "completed lately": old_task(db, TaskState.TASK_STATE_COMPLETED, 3600),
            "waiting long": old_task(db, TaskState.TASK_STATE_INPUT_REQUIRED, 2 * DAY),
        }


def rows(state_dir, table: str, task_id: str) -> int:
    with sqlite3.connect(state_dir / "bridge.sqlite3") as db:
        return db.execute(f"SELECT count(*) FROM {table} WHERE task_id = ?", (task_id,)).fetchone()[0]


def test_a_retention_deletes_the_tasks_that_ended_before_it_with_their_webhooks_and_claims(tmp_path):
    tasks = a_store_of_days(tmp_path)
    with InProcessBridge(state_dir=tmp_path, env={"OVOS_A2A_RETENTION_DAYS": "1"}) as bridge:
        for name in ("completed long ago", "failed long ago"):
            gone = wait_until(lambda: get_task(bridge.url, tasks[name]), f"the task {name} to be deleted",
                              timeout=15, until=lambda answer: "error" in answer)
            assert gone["error"]["code"] == TASK_NOT_FOUND, gone
            assert rows(tmp_path, "a2a_bridge_push_configs", tasks[name]) == 0, f"the webhook of {name} was kept"
            assert rows(tmp_path, "a2a_bridge_operations", tasks[name]) == 0, f"the claim of {name} was kept"
        for name in ("completed lately", "waiting long"):
            assert "result" in get_task(bridge.url, tasks[name]), f"the task {name} was deleted"


def test_without_a_retention_nothing_is_deleted(tmp_path):
    tasks = a_store_of_days(tmp_path)
    with InProcessBridge(state_dir=tmp_path) as bridge:
        time.sleep(2)  # the first round would have run by now (one second after the start)
        for name, task_id in tasks.items():
            assert "result" in get_task(bridge.url, task_id), f"the task {name} was deleted without a retention"
