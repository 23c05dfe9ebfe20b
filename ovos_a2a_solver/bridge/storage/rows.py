# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the SQLite and the PostgreSQL stores share: a task's row in ``bridge_tasks`` (its sort
position, and ListTasks on the rows) and the name of the bridge's advisory locks."""
from __future__ import annotations

from a2a.types import ListTasksResponse, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor

ADVISORY_LOCK_PREFIX = "ovos-a2a-bridge:"  # the bridge's PostgreSQL advisory locks, apart from others'


def updated_position(task: Task) -> int:
    """The sort position ListTasks uses: the status timestamp (ns); -1 (last) without one."""
    return task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else -1


def list_statements(params, owner: str, counted: bool = False) -> tuple[str, str, dict, int]:
    """ListTasks on ``bridge_tasks`` (SQLite and PostgreSQL alike): the statement that counts
    the owner's tasks that match ``params``, the one that reads the page (``updated``, ``task``),
    their parameters, and the page size. With ``counted`` (a store that keeps
    ``bridge_task_counts``: tasks per owner and state), a listing without a filter or by status
    alone reads its total there; another filter is counted on the index it uses."""
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
    return (count, f"SELECT updated, task FROM bridge_tasks WHERE {' AND '.join(page)} "
                   f"ORDER BY updated DESC, id DESC LIMIT :limit", args, size)


def list_response(rows: list[tuple[int, bytes]], total: int, size: int) -> ListTasksResponse:
    """The ListTasks answer of the rows (``updated``, ``task``) the page statement of
    :func:`list_statements` read: one more than ``size`` means there is a next page."""
    tasks = [Task.FromString(task) for _updated_ns, task in rows[:size]]
    token = ""
    if len(rows) > size:
        last = rows[size - 1][0]
        token = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=None if last < 0 else last,
                                                         task_id=tasks[-1].id))
    return ListTasksResponse(tasks=tasks, total_size=total, next_page_token=token, page_size=size)
