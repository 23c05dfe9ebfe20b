"""The bridge's PostgreSQL task store keeps the a2a-sdk's ``VersionedTaskStore`` rules, on a real database.

A first write loses to a task already there; a later write of a version that is no longer
the stored one is refused; a cancel overwrites a task not yet final and is refused on a final
or absent one. Progress held for a moment is read back at once here, reaches another process
(another store on the same database) with the next save, and is dropped, with the next save
refused, when a cancel from elsewhere overtook it.
"""
from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.types import Artifact, Part, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent

from support.postgres import new_database

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
pytestmark = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                reason="set OVOS_A2A_TEST_POSTGRES to a database URL")

OWNER = "store-owner"


@pytest.fixture(scope="module")
def database():
    with new_database() as url:
        yield url


def run(url: str, scenario) -> None:
    """``scenario(store, other, context)``: two stores (two replicas) on the database of ``url``."""
    from ovos_a2a_solver.bridge.storage.database import open_stores
    from ovos_a2a_solver.bridge.storage.owners import call_context_for

    async def go() -> None:
        db, store = open_stores(url, 2)
        other_db, other = open_stores(url, 2)
        try:
            await store.initialize()
            await scenario(store, other, call_context_for(OWNER))
        finally:
            await db.aclose()
            await other_db.aclose()

    asyncio.run(go())


def new_task(state: int = TaskState.TASK_STATE_SUBMITTED) -> Task:
    return Task(id=str(uuid.uuid4()), context_id=uuid.uuid4().hex, status=TaskStatus(state=state))


def with_state(task: Task, state: int) -> tuple[Task, TaskStatusUpdateEvent]:
    changed = Task()
    changed.CopyFrom(task)
    changed.status.state = state
    return changed, TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=changed.status)


def with_sentence(task: Task, text: str) -> tuple[Task, TaskArtifactUpdateEvent]:
    changed = Task()
    changed.CopyFrom(task)
    changed.status.state = TaskState.TASK_STATE_WORKING
    artifact = Artifact(artifact_id="answer", parts=[Part(text=text)])
    changed.artifacts.append(artifact)
    return changed, TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id, artifact=artifact)


def test_a_first_write_loses_to_a_task_already_there_and_a_stale_version_is_refused(database):
    async def scenario(store, other, context):
        task = new_task()
        first = await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        with pytest.raises(ConcurrentTaskModificationError):
            await other.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        done, event = with_state(task, TaskState.TASK_STATE_COMPLETED)
        second = await other.save(done, event=event, prev=task, prev_version=first, context=context)
        assert second.is_after(first)
        with pytest.raises(ConcurrentTaskModificationError):  # written from the version before
            await store.save(done, event=event, prev=task, prev_version=first, context=context)
        stored = await store.get(task.id, context)
        assert stored.task.status.state == TaskState.TASK_STATE_COMPLETED and stored.version == second

    run(database, scenario)


def test_a_cancel_overwrites_a_task_not_yet_final_and_is_refused_on_a_final_or_absent_one(database):
    async def scenario(store, other, context):
        task = new_task()
        await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        canceled, event = with_state(task, TaskState.TASK_STATE_CANCELED)
        # another replica cancels, from a version it never read: a cancel needs none
        await other.save(canceled, event=event, prev=None, prev_version=TaskVersion.MISSING, context=context)
        assert (await store.get(task.id, context)).task.status.state == TaskState.TASK_STATE_CANCELED
        for stored_or_absent in (canceled, new_task()):
            again, event = with_state(stored_or_absent, TaskState.TASK_STATE_CANCELED)
            with pytest.raises(ConcurrentTaskModificationError):
                await other.save(again, event=event, prev=None, prev_version=TaskVersion.MISSING, context=context)

    run(database, scenario)


def test_progress_held_for_a_moment_is_read_here_at_once_and_reaches_others_with_the_next_save(database):
    from ovos_a2a_solver.bridge.storage.postgres import PostgresEventStream

    async def scenario(store, other, context):
        task = new_task()
        version = await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        said, event = with_sentence(task, "Sentence 1.")
        held = await store.save(said, event=event, prev=task, prev_version=version, context=context)
        assert (await store.get(task.id, context)).task.artifacts[0].parts[0].text == "Sentence 1."
        done, end = with_state(said, TaskState.TASK_STATE_COMPLETED)
        final = await store.save(done, event=end, prev=said, prev_version=held, context=context)
        seen = await other.get(task.id, context)
        assert seen.version == final and seen.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert seen.task.artifacts[0].parts[0].text == "Sentence 1."
        # both events are in the shared log, each with its own version, in order
        stream = PostgresEventStream(other.db)
        events = []
        async for versioned in stream.subscribe(task.id, after=version):
            events.append(versioned)
            if len(events) == 2:
                break
        assert [type(e.event).__name__ for e in events] == ["TaskArtifactUpdateEvent", "TaskStatusUpdateEvent"]
        assert events[0].version == held and events[1].version == final

    run(database, scenario)


def test_held_progress_overtaken_by_a_cancel_elsewhere_is_dropped_and_the_next_save_refused(database):
    async def scenario(store, other, context):
        task = new_task()
        version = await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        said, event = with_sentence(task, "Sentence 1.")
        held = await store.save(said, event=event, prev=task, prev_version=version, context=context)
        canceled, cancel = with_state(task, TaskState.TASK_STATE_CANCELED)
        await other.save(canceled, event=cancel, prev=None, prev_version=TaskVersion.MISSING, context=context)
        # the held progress is tried after HOLD_SECONDS, and loses to the cancel: its version is the
        # cancel's too, so only the record that it lost keeps the next save from overwriting the cancel
        await asyncio.sleep(0.2)
        done, end = with_state(said, TaskState.TASK_STATE_COMPLETED)
        with pytest.raises(ConcurrentTaskModificationError):
            await store.save(done, event=end, prev=said, prev_version=held, context=context)
        stored = await other.get(task.id, context)
        assert stored.task.status.state == TaskState.TASK_STATE_CANCELED and not stored.task.artifacts

    run(database, scenario)


def test_the_event_log_forgets_the_events_of_tasks_that_ended_long_ago(database):
    from ovos_a2a_solver.bridge.cluster.replicas import EVENTS_KEPT, ReplicaGroup
    from ovos_a2a_solver.bridge.storage.operations import OperationLog

    async def scenario(store, other, context):
        ids = {}
        for label, state_now in (("old", TaskState.TASK_STATE_COMPLETED), ("recent", TaskState.TASK_STATE_COMPLETED),
                                 ("running", TaskState.TASK_STATE_WORKING)):
            task = new_task(state_now)
            await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
            ids[label] = task.id
        for label in ("old", "running"):  # their events were written long ago
            await store.db.execute("UPDATE bridge_task_events SET at = now() - make_interval(secs => :age) "
                                   "WHERE task_id = :id", {"age": EVENTS_KEPT + 60, "id": ids[label]})
        group = ReplicaGroup(store.db, OperationLog(store.db, "pruner", single_process=False), lease=5, persona="echo")
        await group.prune_event_log()
        left = {label: (await store.db.fetch("SELECT count(*) AS n FROM bridge_task_events WHERE task_id = :id",
                                             {"id": task_id}))[0]["n"] for label, task_id in ids.items()}
        assert left == {"old": 0, "recent": 1, "running": 1}

    run(database, scenario)


def test_the_saves_of_a_moment_ring_the_doorbell_once_after_they_committed(database):
    """The doorbell rings after the saves, not inside them (PostgreSQL lets one transaction
    that notified commit at a time in the whole server, so saves that rang waited for each
    other's disk writes): many saves at once ring a few times, and a ring comes after the last."""
    import asyncpg

    from ovos_a2a_solver.bridge.storage.postgres import EVENTS_CHANNEL, asyncpg_dsn

    async def scenario(store, other, context):
        rings: list[float] = []
        heard = asyncio.Event()
        listener = await asyncpg.connect(asyncpg_dsn(database))

        def rung(*_args) -> None:
            rings.append(asyncio.get_running_loop().time())
            heard.set()

        await listener.add_listener(EVENTS_CHANNEL, rung)
        try:
            tasks = [new_task() for _ in range(20)]
            await asyncio.gather(*(store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING,
                                              context=context) for task in tasks))
            saved = asyncio.get_running_loop().time()
            await asyncio.wait_for(heard.wait(), 5)
            for _ in range(50):  # the rings of these saves are all sent within a few milliseconds
                await asyncio.sleep(0.01)
                if rings and asyncio.get_running_loop().time() - rings[-1] > 0.1:
                    break
            assert rings[-1] >= saved, "no ring came after the saves committed"
            assert len(rings) < len(tasks) / 2, f"{len(rings)} rings for {len(tasks)} saves"
            assert all(await asyncio.gather(*(other.get(task.id, context) for task in tasks)))
        finally:
            await listener.close()

    run(database, scenario)
