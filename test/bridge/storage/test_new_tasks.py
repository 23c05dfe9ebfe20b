"""Bridge: the task a message is about to create is not looked up in the database.

The a2a-sdk reads a message's task three times before it first saves it. For a task whose
id the request handler has only just made up, those reads can only miss, so the stores
answer them without a statement (``storage.new_tasks.NewTasks``). These tests count the statements a
real SQLite store runs, and check that the shortcut ends at the first save and when the
handler lets go of the id: from then on every read is a real one.
"""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from a2a.server.cluster import LegacyTaskStoreAdapter, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState, TaskStatus

from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, SqliteTaskStore
from ovos_a2a_solver.bridge.storage.new_tasks import NewTasks
from ovos_a2a_solver.bridge.storage.tasks import BufferedTaskStore, NewTasksUnread
from support.bridge_rpc import message, send, stream, task_of


class CountedDatabase(SqliteDatabase):
    """A SQLite database that counts the statements run on the event loop (reads and writes)."""

    statements = 0

    def on_loop(self, fn, *args):
        self.statements += 1
        return super().on_loop(fn, *args)

    async def write(self, fn, *args):
        self.statements += 1
        return await super().write(fn, *args)


def task(task_id: str, state=TaskState.TASK_STATE_SUBMITTED) -> Task:
    return Task(id=task_id, context_id="ctx", status=TaskStatus(state=state))


@pytest.fixture
def counted_database(tmp_path):
    """A SQLite task database with its table, counting statements from here on."""
    db = CountedDatabase(tmp_path / "tasks.sqlite3")
    asyncio.run(SqliteTaskStore(db).initialize())
    yield db
    asyncio.run(db.aclose())


def buffered(db: CountedDatabase, new_tasks: NewTasks):
    """(read, write) of the store of one SQLite process, as the SDK's handler and the bridge use it."""
    store = BufferedTaskStore(SqliteTaskStore(db), new_tasks)

    async def read(task_id, context):
        return await store.get(task_id, context)

    async def write(t, context):
        await store.save(t, context)

    return read, write


def versioned(db: CountedDatabase, new_tasks: NewTasks):
    """(read, write) of a versioned store (as on PostgreSQL) over the same database."""
    store = NewTasksUnread(LegacyTaskStoreAdapter(SqliteTaskStore(db)), new_tasks)

    async def read(task_id, context):
        stored = await store.get(task_id, context)
        return stored.task if stored is not None else None

    async def write(t, context):
        await store.save(t, event=t, prev=None, prev_version=TaskVersion.MISSING, context=context)

    return read, write


@pytest.mark.parametrize("open_store", [buffered, versioned], ids=["buffered", "versioned"])
def test_a_new_task_is_read_without_a_statement_until_its_first_save(counted_database, open_store):
    async def scenario():
        new_tasks = NewTasks()
        read, write = open_store(counted_database, new_tasks)
        context, task_id = ServerCallContext(), new_tasks.make()
        before = counted_database.statements
        assert [await read(task_id, context) for _ in range(3)] == [None, None, None]
        assert counted_database.statements == before, "a new task was looked up in the database"
        await write(task(task_id), context)
        assert counted_database.statements == before + 1
        assert (await read(task_id, context)).status.state == TaskState.TASK_STATE_SUBMITTED
        assert counted_database.statements == before + 2, "the saved task was not read from the database"

    asyncio.run(scenario())


@pytest.mark.parametrize("open_store", [buffered, versioned], ids=["buffered", "versioned"])
def test_once_the_handler_lets_go_of_a_new_task_every_read_asks_the_database(counted_database, open_store):
    """A message refused before its task was saved (or replayed onto an earlier task): the
    id is let go, and a read of it is a real read again."""
    async def scenario():
        new_tasks = NewTasks()
        read, write = open_store(counted_database, new_tasks)
        context, task_id = ServerCallContext(), new_tasks.make()
        new_tasks.discard(task_id)
        before = counted_database.statements
        assert await read(task_id, context) is None
        assert counted_database.statements == before + 1
        # written by someone else meanwhile (another worker, say): it is found
        await SqliteTaskStore(counted_database).save(task(task_id, TaskState.TASK_STATE_WORKING), context)
        assert (await read(task_id, context)).status.state == TaskState.TASK_STATE_WORKING

    asyncio.run(scenario())


def test_every_new_task_id_is_different_and_known_only_to_its_maker():
    new_tasks = NewTasks()
    made = {new_tasks.make() for _ in range(1000)}
    assert len(made) == 1000
    assert all(task_id in new_tasks for task_id in made)
    assert "some-task-of-a-caller" not in new_tasks
    for task_id in made:
        new_tasks.discard(task_id)
    assert not any(task_id in new_tasks for task_id in made)


def test_a_reserved_id_is_let_go_of_on_every_way_out_of_its_block():
    """A message's reserved id goes when its work is done: returned, raised or canceled; a
    message that names its task reserves nothing."""
    new_tasks = NewTasks()
    with new_tasks.reserved() as returned:
        assert returned in new_tasks
    with pytest.raises(ValueError):
        with new_tasks.reserved() as raised:
            assert raised in new_tasks
            raise ValueError("refused")

    async def canceled_meanwhile() -> str:
        with new_tasks.reserved() as task_id:
            work = asyncio.get_running_loop().create_task(asyncio.sleep(60))
            asyncio.get_running_loop().call_soon(work.cancel)
            try:
                await work
            finally:
                assert task_id in new_tasks
        return task_id  # pragma: no cover

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(canceled_meanwhile())
    assert returned not in new_tasks and raised not in new_tasks
    with new_tasks.reserved(needed=False) as none:
        assert none is None


@pytest.mark.parametrize("call", ["send", "stream"])
def test_the_ids_the_bridge_makes_are_uuids_that_grow_with_time(echo_bridge, call):
    """New tasks and new contexts get UUIDs of version 7, later ones sorting after earlier ones,
    so that each index of the tables takes them at its end (``storage.ids``); a contextId the
    caller sends is kept as it is."""
    made = []
    for text in ("one", "two", "three"):
        if call == "send":
            made.append(task_of(send(echo_bridge.url, message(text))))
        else:
            made.append(next(event["task"] for event in stream(echo_bridge.url, message(text)) if "task" in event))
        time.sleep(0.002)  # the next millisecond: ids made within one are ordered only by chance
    for key in ("id", "contextId"):
        ids = [task[key] for task in made]
        assert [uuid.UUID(one).version for one in ids] == [7, 7, 7], ids
        assert ids == sorted(ids) and len(set(ids)) == 3, ids
    theirs = "a-context-of-the-caller"
    assert task_of(send(echo_bridge.url, message("four", context_id=theirs)))["contextId"] == theirs
