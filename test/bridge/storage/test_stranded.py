"""Bridge: never stranded. Every task the bridge acknowledged ends or waits for input, whatever
the store did while its turn ran.

A task is stranded when it is still ``submitted`` or ``working`` and no turn of any live bridge
process works on it: its turn ended while the store could not take the end (the database
restarted, the disk was full), and its operation was marked ended without it. The store is
left in that state here as such a run leaves it, with the bridge stopped; then a real bridge is
started on it and must end the task (a sweep once a lease) and answer a resend of its message
with that end, never with a task that no turn works on.
"""
from __future__ import annotations

import sqlite3
import time
import uuid


from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

from ovos_a2a_solver.bridge.storage.operations import content_digest, operation_key
from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import get_task, message, send, state, status_text, task_of
from support.waiting import wait_until

STORE_FILE = "bridge.sqlite3"


def strand_a_task(store: str, text: str, age: float, operation: str | None = "done") -> tuple[dict, str]:
    """Write into the SQLite store of a stopped bridge a task left ``working`` (its status
    ``age`` seconds old) by a message ``text``, and that message's operation in ``operation``'s
    state (None: no operation at all), as a run whose store failed under it leaves them.
    Returns the message (as JSON-RPC sends it) and the task's id."""
    msg = message(text)
    task_id, context_id = uuid.uuid4().hex, uuid.uuid4().hex
    status = TaskStatus(state=TaskState.TASK_STATE_WORKING)
    status.timestamp.FromNanoseconds(time.time_ns() - int(age * 1e9))
    task = Task(id=task_id, context_id=context_id, status=status,
                history=[Message(role=Role.ROLE_USER, message_id=msg["messageId"], task_id=task_id,
                                 context_id=context_id, parts=[Part(text=text)])])
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO bridge_tasks (id, owner, context_id, state, updated, task) VALUES (?, '', ?, ?, ?, ?)",
                   (task_id, context_id, int(status.state), status.timestamp.ToNanoseconds(), task.SerializeToString()))
        if operation is not None:
            sent = Message(role=Role.ROLE_USER, message_id=msg["messageId"], parts=[Part(text=text)])
            key = operation_key("", "", msg["messageId"], "", content_digest(sent))
            db.execute("INSERT INTO a2a_bridge_operations (key, owner, message_id, sent_task_id, content, context_id, "
                       "task_id, state, replica, boot, created, updated) VALUES (?, '', ?, '', ?, NULL, ?, ?, "
                       "'gone', 'gone', ?, ?)", (key, msg["messageId"], content_digest(sent), task_id, operation,
                                                 time.time() - age, time.time() - age))
    return msg, task_id


def a_stopped_store(tmp_path) -> str:
    """A state directory whose bridge made its store, answered once and stopped; the store's path."""
    with InProcessBridge(state_dir=tmp_path) as bridge:
        assert state(task_of(send(bridge.url, message("hello")))) == "TASK_STATE_COMPLETED"
    return str(tmp_path / STORE_FILE)


def test_a_task_whose_work_ended_without_its_end_is_failed_within_a_lease(tmp_path):
    """A task left ``working`` whose operation ended (and one with no operation at all) is failed by
    the next sweep, within one lease of the bridge's start, and says why; a task waiting for no
    one is never left so."""
    store = a_stopped_store(tmp_path)
    _, ended = strand_a_task(store, "the end was lost", age=5)
    _, unclaimed = strand_a_task(store, "no operation", age=5, operation=None)
    lease = 1.0
    with InProcessBridge(state_dir=tmp_path, env={"OVOS_A2A_REPLICA_LEASE": str(lease)}) as bridge:
        started = time.monotonic()
        for task_id in (ended, unclaimed):
            task = wait_until(lambda: get_task(bridge.url, task_id)["result"],
                              f"task {task_id} to end", timeout=10,
                              until=lambda task: state(task) != "TASK_STATE_WORKING")
            assert state(task) == "TASK_STATE_FAILED", task
            assert "store was unavailable" in status_text(task), task
        assert time.monotonic() - started < 2 * lease + 3, "the sweep took more than a lease and a margin"


def test_a_resend_of_a_message_whose_end_was_lost_is_answered_with_an_end(tmp_path):
    """A blocking SendMessage that replays a message whose work ended but whose task was left
    ``working`` answers with the task failed (and says why), never with a task no turn works on.
    (The lease is long: the sweep does not reach the task first.)"""
    store = a_stopped_store(tmp_path)
    msg, task_id = strand_a_task(store, "the end was lost", age=1)
    with InProcessBridge(state_dir=tmp_path, env={"OVOS_A2A_REPLICA_LEASE": "600"}) as bridge:
        task = task_of(send(bridge.url, msg, timeout=30))
        assert task["id"] == task_id, "the resend was not replayed from its first delivery"
        assert state(task) == "TASK_STATE_FAILED", task
        assert "store was unavailable" in status_text(task), task
        assert state(get_task(bridge.url, task_id)["result"]) == "TASK_STATE_FAILED"


def test_a_resend_of_a_message_whose_task_was_never_stored_is_answered_with_its_end_not_run_again(tmp_path):
    """A message whose first delivery was claimed and worked on, but whose task never reached the
    store (it was away), is answered when sent again as it is: its task, failed, saying why, under
    the id its claim holds; the persona is not asked a second time (a message runs once)."""
    store = a_stopped_store(tmp_path)
    msg = message("claimed, never stored")
    sent = Message(role=Role.ROLE_USER, message_id=msg["messageId"], parts=[Part(text="claimed, never stored")])
    claimed = uuid.uuid4().hex
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO a2a_bridge_operations (key, owner, message_id, sent_task_id, content, context_id, "
                   "task_id, state, replica, boot, created, updated) VALUES (?, '', ?, '', ?, NULL, ?, 'done', "
                   "'gone', 'gone', ?, ?)", (operation_key("", "", msg["messageId"], "", content_digest(sent)),
                                             msg["messageId"], content_digest(sent), claimed,
                                             time.time() - 5, time.time() - 5))
    calls = tmp_path / "calls.jsonl"
    with InProcessBridge(state_dir=tmp_path, call_log=calls) as bridge:
        task = task_of(send(bridge.url, msg, timeout=30))
        assert task["id"] == claimed, task
        assert state(task) == "TASK_STATE_FAILED" and "store was unavailable" in status_text(task), task
        assert state(task_of(send(bridge.url, msg, timeout=30))) == "TASK_STATE_FAILED"
        assert state(get_task(bridge.url, claimed)["result"]) == "TASK_STATE_FAILED"
    assert not calls.exists() or "claimed, never stored" not in calls.read_text(), "the message ran a second time"
