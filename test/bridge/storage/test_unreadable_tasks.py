"""Bridge: a task row whose stored bytes are damaged is named, not contagious.

Reading that task, by whatever operation, is refused with an A2A error that names it (not an
internal error); ListTasks lists every other task, pages and totals as they were, with a
stand-in for the damaged one in its place; the bridge logs the row once; ``ovos-a2a store
check`` lists such rows and ``--move-aside`` moves them, bytes and all, into a side table, after
which the task is not found and the listing is clean. On SQLite (a real bridge process and file,
damaged by a second connection while it runs) and on PostgreSQL when the tests have one.
"""
from __future__ import annotations

import asyncio
import json
import os
import sqlite3

import httpx
import pytest
from a2a.types import Task

from ovos_a2a_solver.bridge.config import STORE_FILE_NAME
from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import (HEADERS, answer, get_task, grpc_client, message, rpc, send, state, task_of,
                                wait_for_state)
from support.cli_run import Cli
from support.postgres import POSTGRES_VAR, new_database, run_on

GARBAGE = b"\xff\xff\xff\xff not a task"
UNSUPPORTED_OPERATION = -32004
TASK_NOT_FOUND = -32001


def damage_sqlite(state_dir, task_id: str, raw: bytes = GARBAGE) -> None:
    """Overwrite the stored bytes of ``task_id`` from a second connection (the bridge may run:
    SQLite's WAL lets it)."""
    conn = sqlite3.connect(os.path.join(state_dir, STORE_FILE_NAME), timeout=30)
    try:
        assert conn.execute("UPDATE bridge_tasks SET task = ? WHERE id = ?", (raw, task_id)).rowcount == 1
        conn.commit()
    finally:
        conn.close()


def send_tasks(url: str, count: int) -> list[str]:
    """``count`` completed tasks; their ids, newest first (ListTasks' order)."""
    ids = []
    for n in range(count):
        task = task_of(send(url, message(f"hello {n}")))
        assert state(task) == "TASK_STATE_COMPLETED"
        ids.append(task["id"])
    return ids[::-1]


def assert_names_unreadable(error: dict, task_id: str) -> None:
    """A JSON-RPC error saying ``task_id`` cannot be read."""
    assert error["code"] == UNSUPPORTED_OPERATION, error
    assert task_id in error["message"] and "cannot be read" in error["message"], error
    assert error["data"][0]["metadata"] == {"taskId": task_id, "storedCopy": "unreadable"}, error


def is_stand_in(task: dict) -> bool:
    return task.get("metadata", {}).get("unreadable") is True


def jsonrpc_pages(url: str, page_size: int) -> tuple[list[dict], set[int]]:
    """Every task of ListTasks over JSON-RPC in pages of ``page_size``, and the totals the pages gave."""
    tasks, totals, token = [], set(), ""
    while True:
        params = {"pageSize": page_size, **({"pageToken": token} if token else {})}
        response = rpc(url, "ListTasks", params)
        assert "result" in response, response
        page = response["result"]
        assert len(page.get("tasks", [])) <= page_size
        tasks += page.get("tasks", [])
        totals.add(page["totalSize"])
        token = page["nextPageToken"]
        if not token:
            return tasks, totals


def rest_pages(url: str, page_size: int) -> tuple[list[dict], set[int]]:
    """The same over HTTP+JSON."""
    tasks, totals, token = [], set(), ""
    while True:
        params = {"pageSize": page_size, **({"pageToken": token} if token else {})}
        response = httpx.get(url + "/rest/tasks", params=params, headers=HEADERS, timeout=30)
        assert response.status_code == 200, response.text
        page = response.json()
        tasks += page.get("tasks", [])
        totals.add(page["totalSize"])
        token = page["nextPageToken"]
        if not token:
            return tasks, totals


def check_listing(tasks: list[dict], totals: set[int], ids: list[str], damaged: str) -> None:
    """All of ``ids`` in order, each once, the damaged one as a stand-in, the rest as they are."""
    assert [t["id"] for t in tasks] == ids
    assert totals == {len(ids)}
    for task in tasks:
        if task["id"] == damaged:
            assert is_stand_in(task), task
            assert task["status"].get("state", "TASK_STATE_UNSPECIFIED") == "TASK_STATE_UNSPECIFIED", task
            assert "cannot be read" in task["status"]["message"]["parts"][0]["text"]
            assert task["metadata"]["storedState"] == "TASK_STATE_COMPLETED"
        else:
            assert not is_stand_in(task) and state(task) == "TASK_STATE_COMPLETED", task


def check_every_way_of_reading(url: str, task_id: str, context_id: str) -> None:
    """GetTask, a follow-up message, CancelTask, SubscribeToTask and the push config calls on
    the damaged task: each the same named error over JSON-RPC."""
    assert_names_unreadable(get_task(url, task_id)["error"], task_id)
    assert_names_unreadable(send(url, message("again", task_id=task_id, context_id=context_id))["error"], task_id)
    assert_names_unreadable(rpc(url, "CancelTask", {"id": task_id})["error"], task_id)
    for method, params in (("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": "https://example.com/h"}),
                           ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
                           ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
                           ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})):
        assert_names_unreadable(rpc(url, method, params)["error"], task_id)
    body = {"jsonrpc": "2.0", "id": "s", "method": "SubscribeToTask", "params": {"id": task_id}}
    response = httpx.post(url + "/", json=body, headers={**HEADERS, "Accept": "text/event-stream"}, timeout=30)
    events = ([json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
              if response.headers["content-type"].startswith("text/event-stream") else [response.json()])
    assert len(events) == 1, events
    assert_names_unreadable(events[0]["error"], task_id)


def test_a_damaged_task_is_named_and_every_other_task_is_listed_over_every_binding(tmp_path):
    state_dir = tmp_path / "state"
    with BridgeProcess("--grpc-port", "0", state_dir=state_dir) as bridge:
        ids = send_tasks(bridge.url, 7)
        damaged = ids[3]
        context_id = task_of(get_task(bridge.url, damaged))["contextId"]
        damage_sqlite(state_dir, damaged)

        check_every_way_of_reading(bridge.url, damaged, context_id)
        rest = httpx.get(f"{bridge.url}/rest/tasks/{damaged}", headers=HEADERS, timeout=30)
        assert rest.status_code == 400, rest.text
        assert damaged in rest.json()["error"]["message"] and rest.json()["error"]["status"] == "FAILED_PRECONDITION"
        # pages of every size: the damaged one on a page's end (1, 2), its middle (3), alone (1)
        for size in (1, 2, 3, 4, 50):
            check_listing(*jsonrpc_pages(bridge.url, size), ids, damaged)
            check_listing(*rest_pages(bridge.url, size), ids, damaged)
        for n, task_id in enumerate(ids):
            if task_id != damaged:
                assert answer(task_of(get_task(bridge.url, task_id))) == f"echo: hello {6 - n}"

        async def over_grpc():
            from a2a.types import GetTaskRequest, ListTasksRequest
            from a2a.utils.errors import UnsupportedOperationError

            async with grpc_client(bridge.url) as client:
                with pytest.raises(UnsupportedOperationError) as refused:
                    await client.get_task(GetTaskRequest(id=damaged))
                assert damaged in str(refused.value)
                listed, token = [], ""
                while True:
                    page = await client.list_tasks(ListTasksRequest(page_size=2, page_token=token))
                    listed += page.tasks
                    assert page.total_size == len(ids)
                    token = page.next_page_token
                    if not token:
                        break
                assert [t.id for t in listed] == ids
                assert [t.metadata["unreadable"] for t in listed if t.id == damaged] == [True]

        asyncio.run(over_grpc())
        # the operator hears of it once, with its id, owner, size and why
        reports = [line for line in bridge.stderr_text().splitlines() if f"task {damaged} of owner" in line]
        assert len(reports) == 1, bridge.stderr_text()
        assert f"({len(GARBAGE)} bytes)" in reports[0] and "Error parsing message" in reports[0]


def test_store_check_lists_and_moves_aside_then_the_task_is_not_found(tmp_path):
    state_dir = tmp_path / "state"
    cli = Cli(tmp_path / "cli-state")
    with InProcessBridge(state_dir=state_dir) as bridge:
        ids = send_tasks(bridge.url, 5)
    damaged, other = ids[1], ids[3]
    damage_sqlite(state_dir, damaged)
    # bytes that parse, but as another task (the first's): not this row's task either
    stranger = Task(id=ids[0]).SerializeToString()
    damage_sqlite(state_dir, other, stranger)

    found = cli.run("store", "check", "--state-dir", str(state_dir))
    assert found.returncode == 1, found
    assert damaged in found.stdout and other in found.stdout and "2 of 5 task(s) cannot be read" in found.stdout
    as_json = cli.run("store", "check", "--state-dir", str(state_dir), "--json")
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and report["tasks"] == 5 and report["remaining"] == 2, as_json
    assert {(row["id"], row["owner"], row["size"]) for row in report["unreadable"]} == {
        (damaged, "", len(GARBAGE)), (other, "", len(stranger))}

    moved = cli.run("store", "check", "--state-dir", str(state_dir), "--move-aside")
    assert moved.returncode == 0 and "moved aside into bridge_tasks_unreadable: 2" in moved.stdout, moved
    again = cli.run("store", "check", "--state-dir", str(state_dir))
    assert again.returncode == 0 and "every task can be read (3 task(s))" in again.stdout, again
    conn = sqlite3.connect(state_dir / STORE_FILE_NAME)
    try:
        kept = conn.execute("SELECT id, task, error, moved_at FROM bridge_tasks_unreadable ORDER BY id").fetchall()
    finally:
        conn.close()
    assert sorted((row[0], bytes(row[1])) for row in kept) == sorted(
        [(damaged, GARBAGE), (other, stranger)])
    assert all(row[2] and row[3] for row in kept)

    with InProcessBridge(state_dir=state_dir) as bridge:
        assert get_task(bridge.url, damaged)["error"]["code"] == TASK_NOT_FOUND
        tasks, totals = jsonrpc_pages(bridge.url, 2)
        assert [t["id"] for t in tasks] == [i for i in ids if i not in (damaged, other)] and totals == {3}
        assert not any(is_stand_in(t) for t in tasks)


def test_a_task_whose_work_was_lost_and_whose_row_is_damaged_does_not_stop_the_next_start(tmp_path):
    state_dir = tmp_path / "state"
    with BridgeProcess(state_dir=state_dir) as first:
        running = task_of(send(first.url, message("sleep:30"), blocking=False))
        wait_for_state(first.url, running["id"], "TASK_STATE_WORKING")
        done = task_of(send(first.url, message("hello")))
        first.kill9()
    damage_sqlite(state_dir, running["id"])
    with InProcessBridge(state_dir=state_dir) as second:
        assert_names_unreadable(get_task(second.url, running["id"])["error"], running["id"])
        assert answer(task_of(get_task(second.url, done["id"]))) == "echo: hello"
        assert state(task_of(send(second.url, message("still serving")))) == "TASK_STATE_COMPLETED"


POSTGRES = os.environ.get(POSTGRES_VAR)


@pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"), reason=f"set {POSTGRES_VAR} to a database URL")
def test_on_postgresql_too(tmp_path):
    assert POSTGRES, f"CI must provide {POSTGRES_VAR} (see .ci/run)"
    cli = Cli(tmp_path / "cli-state")
    with new_database() as url:
        with InProcessBridge("--db", url) as bridge:
            ids = send_tasks(bridge.url, 5)
            damaged = ids[2]
            context_id = task_of(get_task(bridge.url, damaged))["contextId"]
            run_on(url, "UPDATE bridge_tasks SET task = $1 WHERE id = $2", GARBAGE, damaged)

            check_every_way_of_reading(bridge.url, damaged, context_id)
            for size in (1, 2, 3, 50):
                check_listing(*jsonrpc_pages(bridge.url, size), ids, damaged)
                check_listing(*rest_pages(bridge.url, size), ids, damaged)

            found = cli.run("store", "check", "--db", url)
            assert found.returncode == 1 and damaged in found.stdout, found
            moved = cli.run("store", "check", "--db", url, "--move-aside")  # while the bridge serves
            assert moved.returncode == 0 and "moved aside" in moved.stdout, moved
            assert get_task(bridge.url, damaged)["error"]["code"] == TASK_NOT_FOUND
            tasks, totals = jsonrpc_pages(bridge.url, 2)
            assert [t["id"] for t in tasks] == [i for i in ids if i != damaged] and totals == {4}
        assert run_on(url, "SELECT task FROM bridge_tasks_unreadable WHERE id = $1", damaged) == GARBAGE
