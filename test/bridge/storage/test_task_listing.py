"""Bridge: ListTasks on the SQLite store answers exactly, page after page.

The store keeps how many tasks each owner has in each state (triggers on the task table), so
that ``total_size`` is a lookup and not a count of all of an owner's tasks. These tests hold
the answers to what a plain count and a plain sort of the same tasks say, through inserts,
changes of state and deletes, with every filter, for every page; a cursor keeps its place
while tasks come and go; and a store made before the counts existed is counted once, on its
first start.
"""
from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus

from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, SqliteTaskStore
from ovos_a2a_solver.bridge.storage.owners import call_context_for, owner_scope
from ovos_a2a_solver.states import TERMINAL

STATES = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED,
          TaskState.TASK_STATE_FAILED]
ALICE, BOB = call_context_for("alice"), call_context_for("bob")
ALICE_NORTH = ServerCallContext(user=ALICE.user, tenant="north")  # the same caller, another tenant


def make_task(rng: random.Random, n: int, contexts: list[str]) -> Task:
    task = Task(id=f"task-{n:04d}", context_id=rng.choice(contexts), status=TaskStatus(state=rng.choice(STATES)))
    if rng.random() < 0.9:  # some tasks have no status timestamp: they come last
        task.status.timestamp.FromNanoseconds(1_780_000_000_000_000_000 + rng.randrange(50) * 1000)  # ties too
    return task


def sort_key(task: Task):
    """ListTasks' order (newest first, then by id, descending), as a key for ``sorted``."""
    updated = task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else -1
    return updated, task.id


def expected(tasks: dict[str, Task], request: ListTasksRequest) -> list[str]:
    """The ids ``request`` selects from ``tasks``, in ListTasks' order."""
    chosen = [t for t in tasks.values()
              if (not request.context_id or t.context_id == request.context_id)
              and (not request.status or t.status.state == request.status)
              and (not request.HasField("status_timestamp_after") or sort_key(t)[0]
                   >= request.status_timestamp_after.ToNanoseconds())]
    return [t.id for t in sorted(chosen, key=sort_key, reverse=True)]


async def every_page(store: SqliteTaskStore, request: ListTasksRequest, context) -> tuple[list[str], set[int]]:
    """The ids of all pages of ``request``, and the totals the pages gave."""
    ids, totals = [], set()
    while True:
        page = await store.list(request, context)
        ids += [t.id for t in page.tasks]
        totals.add(page.total_size)
        assert len(page.tasks) <= request.page_size
        if not page.next_page_token:
            return ids, totals
        following = ListTasksRequest()
        following.CopyFrom(request)
        following.page_token = page.next_page_token
        request = following


def requests_for(tasks: dict[str, Task], contexts: list[str]) -> list[ListTasksRequest]:
    """ListTasks with no filter, and each filter alone and together, in pages of 7."""
    after = sorted(sort_key(t)[0] for t in tasks.values())[len(tasks) // 2] if tasks else 0
    out = []
    for context_id, status, since in itertools.product(["", contexts[0]], [0, *STATES], [None, after]):
        request = ListTasksRequest(page_size=7, context_id=context_id, status=status)
        if since is not None:
            request.status_timestamp_after.FromNanoseconds(since)
        out.append(request)
    return out


@pytest.fixture
def store(tmp_path):
    db = SqliteDatabase(tmp_path / "tasks.sqlite3")
    store = SqliteTaskStore(db)
    asyncio.run(store.initialize())
    yield store
    asyncio.run(db.aclose())


async def check_all(store: SqliteTaskStore, kept: list[tuple], contexts: list[str]) -> None:
    """Every request of :func:`requests_for` of each (call context, its tasks by id) in ``kept``."""
    for context, tasks in kept:
        for request in requests_for(tasks, contexts):
            ids, totals = await every_page(store, request, context)
            want = expected(tasks, request)
            assert ids == want, request
            assert totals == {len(want)}, request


def test_every_filter_gives_the_exact_total_and_pages_through_inserts_changes_and_deletes(store):
    rng = random.Random(5)
    contexts = ["c1", "c2", "c3"]
    kept = [(ALICE, {}), (BOB, {}), (ALICE_NORTH, {})]  # what each owner has, as the store should say

    async def run():
        n = itertools.count()
        for context, tasks in kept:  # tasks of three owners, saved in no particular order
            for _ in range(40):
                task = make_task(rng, next(n), contexts)
                await store.save(task, context)
                tasks[task.id] = task
        await check_all(store, kept, contexts)
        for number, (context, tasks) in enumerate(kept):  # some change state (and time), some go
            for task_id in rng.sample(sorted(tasks), 15):
                task = Task()
                task.CopyFrom(tasks[task_id])
                task.status.state = rng.choice(STATES)
                task.status.timestamp.FromNanoseconds(task.status.timestamp.ToNanoseconds() + 7)
                if tasks[task_id].status.state in TERMINAL:  # a final task never changes
                    with pytest.raises(ConcurrentTaskModificationError):
                        await store.save(task, context)
                    continue
                await store.save(task, context)
                tasks[task_id] = task
            for task_id in rng.sample(sorted(tasks), 10):
                await store.delete(task_id, context)
                del tasks[task_id]
            await store.delete("no-such-task", context)
            # another owner's id: neither changed nor deleted, nor counted twice
            stranger = next(iter(kept[number - 1][1].values()))
            await store.delete(stranger.id, context)
            foreign = Task()
            foreign.CopyFrom(stranger)
            foreign.status.state = TaskState.TASK_STATE_REJECTED
            with pytest.raises(ConcurrentTaskModificationError):
                await store.save(foreign, context)
        await check_all(store, kept, contexts)

    asyncio.run(run())


def test_a_cursor_keeps_its_place_while_tasks_come_and_go(store):
    """Tasks newer than the page already read, and tasks on it, do not move the next page:
    it begins right after the last task read, and the total says how many there are now."""
    def at(n: int, second: int) -> Task:
        task = Task(id=f"t{n:03d}", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        task.status.timestamp.FromSeconds(1_780_000_000 + second)
        return task

    async def run():
        for n in range(30):
            await store.save(at(n, n), ALICE)
        first = await store.list(ListTasksRequest(page_size=10), ALICE)
        assert [t.id for t in first.tasks] == [f"t{n:03d}" for n in range(29, 19, -1)]
        for n in range(30, 35):  # newer tasks arrive
            await store.save(at(n, n), ALICE)
        await store.delete("t025", ALICE)  # one already read goes
        await store.delete("t015", ALICE)  # one not yet read goes
        second = await store.list(ListTasksRequest(page_size=10, page_token=first.next_page_token), ALICE)
        assert [t.id for t in second.tasks] == [f"t{n:03d}" for n in (19, 18, 17, 16, 14, 13, 12, 11, 10, 9)]
        assert second.total_size == 33
        rest = await store.list(ListTasksRequest(page_size=10, page_token=second.next_page_token), ALICE)
        assert [t.id for t in rest.tasks] == [f"t{n:03d}" for n in range(8, -1, -1)]
        assert rest.next_page_token == ""

    asyncio.run(run())


def test_a_store_made_before_the_counts_is_counted_once_on_its_first_start(tmp_path):
    """A task table of an earlier version (no counts, no triggers) is counted when the store
    first starts, once, however many times it starts; tasks saved later count too."""
    path = tmp_path / "earlier.sqlite3"
    rng = random.Random(9)
    tasks = [make_task(rng, n, ["c1", "c2"]) for n in range(50)]
    with sqlite3.connect(path) as conn:  # the schema of the store before it kept counts
        conn.execute("CREATE TABLE bridge_tasks (id TEXT PRIMARY KEY, owner TEXT NOT NULL, context_id TEXT NOT NULL, "
                     "state INTEGER NOT NULL, updated INTEGER NOT NULL, task BLOB NOT NULL)")
        conn.executemany("INSERT INTO bridge_tasks VALUES (?, ?, ?, ?, ?, ?)",
                         [(t.id, owner_scope(ALICE), t.context_id, int(t.status.state), sort_key(t)[0],
                           t.SerializeToString()) for t in tasks])
    conn.close()

    async def run():
        for _start in range(2):
            db = SqliteDatabase(path)
            store = SqliteTaskStore(db)
            await store.initialize()
            await db.aclose()
        db = SqliteDatabase(path)
        store = SqliteTaskStore(db)
        await store.initialize()
        try:
            kept = {t.id: t for t in tasks}
            extra = make_task(rng, 50, ["c1"])
            await store.save(extra, ALICE)
            kept[extra.id] = extra
            await check_all(store, [(ALICE, kept), (BOB, {})], ["c1", "c2"])
        finally:
            await db.aclose()

    asyncio.run(run())


def test_a_bad_page_token_is_refused(store):
    from a2a.utils.errors import InvalidParamsError

    with pytest.raises(InvalidParamsError):
        asyncio.run(store.list(ListTasksRequest(page_token="not a token"), ALICE))
