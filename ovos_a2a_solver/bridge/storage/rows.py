# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the SQLite and the PostgreSQL stores share: a task's row in ``bridge_tasks`` (its sort
position, its bytes read back, and ListTasks on the rows) and the name of the bridge's advisory
locks.

A row whose bytes cannot be read back as its task (damaged on disk, or written by something
else) is named, not contagious: a read of that task is refused with an error that names it
(:func:`unreadable_task_error`), and a listing shows it in its place as a stand-in
(:func:`unreadable_stand_in`), so that every other task is listed and the pages stay as they
are. The operator hears of each such row once (its id, owner, size and the parse error), and
``ovos-a2a store check`` lists them and moves them aside (:mod:`.unreadable`).
"""
from __future__ import annotations

import logging
from collections import OrderedDict

from a2a.types import ListTasksResponse, Message, Part, Role, Task, TaskState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from google.protobuf.message import DecodeError

from ovos_a2a_solver.states import TERMINAL

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ADVISORY_LOCK_PREFIX = "ovos-a2a-bridge:"  # the bridge's PostgreSQL advisory locks, apart from others'
#: the tasks that ended (completed, failed, canceled, rejected), by age: what a round of the
#: retention reads (``storage.retention``); SQLite and PostgreSQL alike
ENDED_TASKS_INDEX = ("CREATE INDEX IF NOT EXISTS ix_bridge_tasks_ended ON bridge_tasks (updated) WHERE state IN ("
                     + ", ".join(str(int(state)) for state in sorted(TERMINAL)) + ")")

#: what an unreadable task's error says of it (``ErrorInfo`` metadata, beside ``taskId``)
UNREADABLE = {"storedCopy": "unreadable"}
#: the rows whose damage was logged already, at most this many remembered (then logged again)
REPORTED_ROWS_KEPT = 1024
_reported: OrderedDict[tuple[str, str], None] = OrderedDict()


def updated_position(task: Task) -> int:
    """The sort position ListTasks uses: the status timestamp (ns); -1 (last) without one."""
    return task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else -1


class TaskRowUnreadable(Exception):
    """A row of ``bridge_tasks`` whose bytes are not its task; ``str()`` says why."""


def parse_task_row(task_id: str, raw: bytes) -> Task:
    """The task of the row of ``task_id`` from its bytes ``raw``; :class:`TaskRowUnreadable`
    when they do not parse, or hold another task (bytes that were never a task may parse)."""
    try:
        task = Task.FromString(raw)
    except DecodeError as exc:
        raise TaskRowUnreadable(str(exc) or type(exc).__name__) from None
    if task.id != task_id:
        raise TaskRowUnreadable(f"the bytes hold a task with id {task.id!r}, not this row's")
    return task


def unreadable_task_error(task_id: str) -> A2AError:
    """What a caller hears of a task whose stored copy cannot be read, whatever it asked of it
    (get, continue, cancel, subscribe, push configs): UnsupportedOperationError (-32004, HTTP
    400, gRPC FAILED_PRECONDITION), naming the task, with ``taskId`` and :data:`UNREADABLE` in
    its ``ErrorInfo`` metadata. Not TaskNotFound (the task exists: a caller must not take it
    for purged), nor an internal error (nothing to retry: it stays so until an operator acts)."""
    return UnsupportedOperationError(
        message=f"Task {task_id} cannot be read: its stored copy is damaged, so it cannot be shown, continued, "
                f"canceled or subscribed to. The bridge's operator can set it aside (ovos-a2a store check).",
        data={"taskId": task_id, **UNREADABLE})


def is_unreadable_task_error(exc: BaseException) -> bool:
    """Whether ``exc`` is :func:`unreadable_task_error`'s."""
    return isinstance(exc, UnsupportedOperationError) and isinstance(exc.data, dict) and all(
        exc.data.get(key) == value for key, value in UNREADABLE.items())


def report_unreadable(task_id: str, owner: str, size: int, why: str) -> None:
    """Log an unreadable row for the operator, once per row (of the last
    :data:`REPORTED_ROWS_KEPT`), not at each read of it."""
    key = (owner, task_id)
    if key in _reported:
        _reported.move_to_end(key)
        return
    _reported[key] = None
    if len(_reported) > REPORTED_ROWS_KEPT:
        _reported.popitem(last=False)
    LOG.error("task %s of owner %r cannot be read: its stored copy (%d bytes) is damaged (%s); it is answered "
              "as unreadable until it is set aside with 'ovos-a2a store check --move-aside'",
              task_id, owner, size, why)


def read_task_row(task_id: str, owner: str, raw: bytes) -> Task:
    """The stored task of the row (``task_id``, ``owner``, bytes ``raw``) for a read of that
    task: :func:`unreadable_task_error` (and a line in the log, once) when it cannot be read."""
    try:
        return parse_task_row(task_id, raw)
    except TaskRowUnreadable as exc:
        report_unreadable(task_id, owner, len(raw), str(exc))
        raise unreadable_task_error(task_id) from None


def unreadable_stand_in(task_id: str, context_id: str, updated_ns: int, stored_state: int) -> Task:
    """What a listing shows in the place of a task that cannot be read: its id and context, its
    time (it keeps its place), the state ``unspecified`` (its state is not known), a status message
    that says it cannot be read, and the metadata ``{"unreadable": true, "storedState": ...}``
    (the state its row was written with). No history, no artifacts."""
    task = Task(id=task_id, context_id=context_id)
    task.status.state = TaskState.TASK_STATE_UNSPECIFIED
    if updated_ns >= 0:
        task.status.timestamp.FromNanoseconds(updated_ns)
    task.status.message.CopyFrom(Message(
        role=Role.ROLE_AGENT, message_id=f"unreadable-{task_id}", task_id=task_id, context_id=context_id,
        parts=[Part(text="This task cannot be read: its stored copy is damaged. The bridge's operator can set it "
                         "aside (ovos-a2a store check).")]))
    task.metadata["unreadable"] = True
    task.metadata["storedState"] = TaskState.Name(stored_state) if stored_state in TaskState.values() \
        else str(stored_state)
    return task


def list_statements(params, owner: str, counted: bool = False) -> tuple[str, str, dict, int]:
    """ListTasks on ``bridge_tasks`` (SQLite and PostgreSQL alike): the statement that counts
    the owner's tasks that match ``params``, the one that reads the page (``updated``, ``id``,
    ``context_id``, ``state``, ``task``), their parameters, and the page size. With ``counted``
    (a store that keeps ``bridge_task_counts``: tasks per owner and state), a listing without a
    filter or by status alone reads its total there; another filter is counted on the index it
    uses."""
    where, args = ["owner = :owner"], {"owner": owner}
    count = "SELECT coalesce(sum(n), 0) AS n FROM bridge_task_counts WHERE owner = :owner" if counted else ""
    if params.status:
        where.append("state = :state")
        args["state"] = int(params.status)
        count += " AND state = :state" if count else ""
    if params.context_id:
        where.append("context_id = :context")
        args["context"] = params.context_id
        count = ""
    if params.HasField("status_timestamp_after"):
        where.append("updated >= :after")
        args["after"] = params.status_timestamp_after.ToNanoseconds()
        count = ""
    count = count or f"SELECT count(*) AS n FROM bridge_tasks WHERE {' AND '.join(where)}"
    page = list(where)
    if params.page_token:
        cursor = decode_list_tasks_cursor(params.page_token)
        if cursor is None:
            raise InvalidParamsError(message="invalid page token")
        page.append("(updated, id) < (:cts, :cid)")  # after the cursor's task, in the listing's order
        args["cts"] = -1 if cursor.timestamp_ns is None else cursor.timestamp_ns
        args["cid"] = cursor.task_id
    size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
    args["limit"] = size + 1
    return (count, f"SELECT updated, id, context_id, state, task FROM bridge_tasks WHERE {' AND '.join(page)} "
                   f"ORDER BY updated DESC, id DESC LIMIT :limit", args, size)


def list_response(rows, total: int, size: int, owner: str) -> ListTasksResponse:
    """The ListTasks answer of the rows the page statement of :func:`list_statements` read for
    ``owner`` (each a mapping with its columns): one more than ``size`` means there is a next
    page. A row that cannot be read is listed in its place as :func:`unreadable_stand_in` (and
    logged, once): the others are all there, and the pages and the total are as they would be."""
    tasks = []
    for row in rows[:size]:
        try:
            tasks.append(parse_task_row(row["id"], row["task"]))
        except TaskRowUnreadable as exc:
            report_unreadable(row["id"], owner, len(row["task"]), str(exc))
            tasks.append(unreadable_stand_in(row["id"], row["context_id"], row["updated"], row["state"]))
    token = ""
    if len(rows) > size:
        last_updated, last_id = rows[size - 1]["updated"], rows[size - 1]["id"]
        token = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=None if last_updated < 0 else last_updated,
                                                         task_id=last_id))
    return ListTasksResponse(tasks=tasks, total_size=total, next_page_token=token, page_size=size)
