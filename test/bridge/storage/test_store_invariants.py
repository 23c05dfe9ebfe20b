"""The task stores' two rules, against generated sequences of writes on real stores:

* a final task (completed, failed, canceled, rejected) never changes, whoever writes and
  whatever version the writer read;
* on PostgreSQL, a replica writes nothing once its lease is lost, expired or taken again in a
  later epoch, however late its write reaches the database.

Each example is a fresh task, written by two writers (two replicas' stores on one database, or
two stores on one SQLite file) in an order hypothesis chooses, with the versions each read last.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, LegacyTaskStoreAdapter, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from hypothesis import HealthCheck, given, settings, strategies as st

from ovos_a2a_solver.states import TERMINAL

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
STATES = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED,
          TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
          TaskState.TASK_STATE_REJECTED]
CONTEXT = ServerCallContext()

#: one step: (writer 0 or 1, the state it writes, whether it reads the task first)
steps = st.lists(st.tuples(st.integers(0, 1), st.sampled_from(STATES), st.booleans()), min_size=2, max_size=8)


def task_in(task_id: str, state: int, text: str) -> Task:
    status = TaskStatus(state=state)
    status.timestamp.GetCurrentTime()
    return Task(id=task_id, context_id="ctx", status=status, metadata={"written by": text})


async def write(store, task_id: str, state: int, read_first: bool, seen: dict, who: int) -> None:
    """One writer's save of ``state``: with the version it read now, or the one it read last."""
    if read_first or who not in seen:
        stored = await store.get(task_id, CONTEXT)
        seen[who] = stored.version if stored is not None else TaskVersion.MISSING
    task = task_in(task_id, state, f"writer {who}")
    event = TaskStatusUpdateEvent(task_id=task_id, context_id="ctx", status=task.status)
    try:
        seen[who] = await store.save(task, event=event, prev=None, prev_version=seen[who], context=CONTEXT)
    except ConcurrentTaskModificationError:
        seen.pop(who, None)


async def check_final_never_changes(stores, reader, sequence) -> None:
    task_id = uuid.uuid4().hex
    seen: dict = {}
    final: bytes | None = None
    for who, state, read_first in sequence:
        await write(stores[who], task_id, state, read_first, seen, who)
        stored = await reader.get(task_id, CONTEXT)
        if final is not None:
            assert stored.task.SerializeToString() == final, \
                f"a final task changed: {TaskState.Name(stored.task.status.state)} after writing {sequence}"
        elif stored is not None and stored.task.status.state in TERMINAL:
            final = stored.task.SerializeToString()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_a_final_task_never_changes_on_sqlite(tmp_path, sequence):
    from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, SqliteTaskStore

    async def scenario() -> None:
        path = tmp_path / "tasks.sqlite3"
        dbs = [SqliteDatabase(path), SqliteDatabase(path)]
        stores = [SqliteTaskStore(db) for db in dbs]
        try:
            for store in stores:
                await store.initialize()
            versioned = [LegacyTaskStoreAdapter(store) for store in stores]
            await check_final_never_changes(versioned, LegacyTaskStoreAdapter(stores[0]), sequence)
        finally:
            for db in dbs:
                await db.aclose()

    asyncio.run(scenario())


needs_postgres = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                    reason="set OVOS_A2A_TEST_POSTGRES to a database URL")


@pytest.fixture(scope="module")
def database():
    from support.postgres import new_database

    with new_database(POSTGRES, prefix="ovos_a2a_invariants") as url:
        yield url


async def replicas_on(url: str):
    """Two replicas' task stores on ``url``, each with a live lease of its own, and a third store
    that only reads (what any replica reads from the database: no progress held back)."""
    from ovos_a2a_solver.bridge.storage.postgres import PostgresDatabase, PostgresTaskStore

    db = PostgresDatabase(url, min_size=1, max_size=4)
    stores = [PostgresTaskStore(db), PostgresTaskStore(db), PostgresTaskStore(db)]
    await stores[0].initialize()
    for number, store in enumerate(stores[:2]):
        boot = uuid.uuid4().hex
        await db.execute("INSERT INTO a2a_bridge_replicas (boot, replica, state, expires, epoch) VALUES "
                         "(:boot, :name, 'live', EXTRACT(EPOCH FROM clock_timestamp()) + 600, 1)",
                         {"boot": boot, "name": f"writer-{number}"})
        store.fenced, store.lease = True, (boot, 1)
    return db, stores


async def close(db, stores) -> None:
    for store in stores:
        await store.aclose()  # progress held back is written (or refused) first
    await db.aclose()


@needs_postgres
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_a_final_task_never_changes_on_postgresql(database, sequence):
    async def scenario() -> None:
        db, stores = await replicas_on(database)
        try:
            await check_final_never_changes(stores[:2], stores[2], sequence)
        finally:
            await close(db, stores)

    asyncio.run(scenario())


#: how a replica's lease ends: taken over by another replica, expired unrenewed, or taken again
#: by the replica itself in a later epoch (after it found it lost)
LEASE_ENDINGS = {
    "taken over": "UPDATE a2a_bridge_replicas SET state = 'lost' WHERE boot = :boot",
    "expired": "UPDATE a2a_bridge_replicas SET expires = EXTRACT(EPOCH FROM clock_timestamp()) - 1 WHERE boot = :boot",
    "taken again": "UPDATE a2a_bridge_replicas SET epoch = epoch + 1 WHERE boot = :boot",
}


@needs_postgres
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=steps, ending=st.sampled_from(sorted(LEASE_ENDINGS)),
       late=st.lists(st.sampled_from(STATES), min_size=1, max_size=3))
def test_a_replica_whose_lease_ended_writes_nothing(database, before, ending, late):
    """Writer 0's lease ends (``ending``) after the writes ``before``; nothing it writes then, with
    the version of the task as it stood, changes the task."""
    async def scenario() -> None:
        db, stores = await replicas_on(database)
        try:
            task_id = uuid.uuid4().hex
            seen: dict = {}
            await write(stores[1], task_id, TaskState.TASK_STATE_WORKING, True, seen, 1)
            for who, state, read_first in before:
                await write(stores[who], task_id, state, read_first, seen, who)
            await stores[0].write_held()
            await stores[1].write_held()
            stored = await stores[2].get(task_id, CONTEXT)
            await db.execute(LEASE_ENDINGS[ending], {"boot": stores[0].lease[0]})
            for state in late:
                task = task_in(task_id, state, "the replica whose lease ended")
                event = TaskStatusUpdateEvent(task_id=task_id, context_id="ctx", status=task.status)
                with contextlib.suppress(ConcurrentTaskModificationError):  # progress is refused when written
                    await stores[0].save(task, event=event, prev=None, prev_version=stored.version, context=CONTEXT)
            await stores[0].write_held()
            after = await stores[2].get(task_id, CONTEXT)
            assert after.task.SerializeToString() == stored.task.SerializeToString(), \
                f"a replica whose lease was {ending} changed a task: {TaskState.Name(after.task.status.state)}"
        finally:
            await close(db, stores)

    asyncio.run(scenario())
