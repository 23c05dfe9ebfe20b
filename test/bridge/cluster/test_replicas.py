"""Bridge: several replicas on one PostgreSQL database, behind one URL, without sticky routing.

Two real bridge processes (A and B) share the database named by ``OVOS_A2A_TEST_POSTGRES``.
Work started on A is read, listed, streamed, canceled and replayed through B; when A is
killed with -9, B fails A's work once A's lease expired, without A being restarted. Every
call carries a Bearer token, so two owners can be told apart across replicas too.
"""
from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from support.bridge_process import BridgeProcess, BridgeStartError, echo_calls
from support.bridge_rpc import OwnerCalls, Worker, answer, health, message, state, status_text
from support.postgres_relay import CountingRelay
from support.replicas import replica
from support.waiting import wait_until


POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
pytestmark = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                reason="set OVOS_A2A_TEST_POSTGRES to a database URL")

TOKEN_X, TOKEN_Y = "replica-owner-x-4kPw9", "replica-owner-y-7Hn2q"
LEASE = 2.0  # seconds: short, so that a lost replica is noticed within a test's time
#: seconds: a lease no renewal misses (however busy the machine), or finds lost, while a test runs
STEADY_LEASE = "60"
TASK_NOT_FOUND, TASK_NOT_CANCELABLE = -32001, -32002


def replica_with_tokens(name: str, *args: str, call_log=None, **env: str) -> BridgeProcess:
    """A replica on the shared database (:func:`~support.replicas.replica`) that knows the
    tokens :data:`TOKEN_X` and :data:`TOKEN_Y`, with 1 s heartbeats and a lease of :data:`LEASE`."""
    return replica(name, "--heartbeat", "1", *args, call_log=call_log,
                   env={"OVOS_A2A_TOKENS": f"{TOKEN_X},{TOKEN_Y}", "OVOS_A2A_REPLICA_LEASE": str(LEASE), **env})


def leases(replica_name: str) -> list[dict]:
    """The leases of ``replica_name``'s runs, as the database holds them."""
    import asyncio

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    async def read() -> list[dict]:
        engine = create_async_engine(POSTGRES)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(text("SELECT state, expires FROM a2a_bridge_replicas "
                                               "WHERE replica = :name"), {"name": replica_name})
                return [dict(row) for row in rows.mappings()]
        finally:
            await engine.dispose()

    return asyncio.run(read())


class Caller(OwnerCalls):
    """JSON-RPC 1.0 calls to one replica as one owner."""

    def __init__(self, bridge: BridgeProcess, token: str = TOKEN_X) -> None:
        super().__init__(bridge, token)


@pytest.fixture(scope="module")
def call_log(tmp_path_factory):
    return tmp_path_factory.mktemp("replicas") / "echo-calls.jsonl"


@pytest.fixture(scope="module")
def pair(call_log):
    """Replicas A and B on one database (one backend call log for both)."""
    with replica_with_tokens("a", call_log=call_log) as a, replica_with_tokens("b", call_log=call_log) as b:
        yield a, b


def test_a_task_created_on_a_is_read_listed_and_streamed_live_on_b(pair):
    a, b = Caller(pair[0]), Caller(pair[1])
    context = uuid.uuid4().hex
    task = a.send(message("slow:0.4", context_id=context), blocking=False)
    seen = b.get(task["id"])
    assert seen["id"] == task["id"] and state(seen) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    listed = b.task("ListTasks", {"contextId": context})
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    events = b.subscribe(task["id"])
    assert "error" not in events[0], events
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert chunks, events  # A's sentences reached B's subscriber as they were said
    last = events[-1]["statusUpdate"]
    assert last["status"]["state"] == "TASK_STATE_COMPLETED", events
    assert len(chunks) >= 2 and chunks[-1].get("lastChunk") is True, chunks
    done = b.get(task["id"])
    assert answer(done) == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


def test_cancel_on_b_stops_the_turn_running_on_a(pair):
    a, b = Caller(pair[0]), Caller(pair[1])
    task = a.send(message("slow:1"), blocking=False)
    wait_until(lambda: a.get(task["id"]), "the first sentence", until=lambda t: "Sentence 1." in answer(t))
    canceled = b.task("CancelTask", {"id": task["id"]})
    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    wait_until(lambda: health(pair[0])["running"], "A's turn to end", until=lambda running: running == 0)
    marker = a.send(message("marker"))  # A has answered a later message: what the turn left is written
    assert answer(marker) == "echo: marker", marker
    after = b.get(task["id"])
    assert state(after) == "TASK_STATE_CANCELED" and "Sentence 5." not in answer(after), after


def test_a_cancel_that_cannot_stop_the_turn_on_a_is_refused_on_b(call_log):
    with replica_with_tokens("a-stubborn", call_log=call_log, OVOS_A2A_CANCEL_GRACE="0.3") as stubborn, \
            replica_with_tokens("b-asks", call_log=call_log) as asking:
        a, b = Caller(stubborn), Caller(asking)
        task = a.send(message("sleep:2"), blocking=False)  # one step that cannot be interrupted
        a.wait_for_state(task["id"], "TASK_STATE_WORKING")
        error = b.error("CancelTask", {"id": task["id"]})
        assert error["code"] == TASK_NOT_CANCELABLE and "could not be stopped" in error["message"], error
        assert state(b.wait_for_state(task["id"], "TASK_STATE_COMPLETED")) == "TASK_STATE_COMPLETED"


def test_a_replay_of_a_message_on_b_rejoins_the_work_on_a(pair, call_log):
    a, b = Caller(pair[0]), Caller(pair[1])
    text = f"sleep:1 {uuid.uuid4().hex}"
    msg = message(text)
    first = a.send(msg, blocking=False)
    again = b.send(msg)  # the same message, delivered again to the other replica
    assert again["id"] == first["id"] and state(again) == "TASK_STATE_COMPLETED", again
    assert answer(again) == f"echo: {text}"
    assert echo_calls(call_log, text) == 1


def test_another_owner_does_not_find_the_task_on_the_other_replica(pair):
    owner, stranger = Caller(pair[0], TOKEN_X), Caller(pair[1], TOKEN_Y)
    context = uuid.uuid4().hex
    task = owner.send(message("slow:0.5", context_id=context), blocking=False)
    for method in ("GetTask", "CancelTask"):
        assert stranger.error(method, {"id": task["id"]})["code"] == TASK_NOT_FOUND
    assert stranger.subscribe(task["id"])[0]["error"]["code"] == TASK_NOT_FOUND
    assert stranger.task("ListTasks", {"contextId": context})["tasks"] == []
    assert state(Caller(pair[1], TOKEN_X).wait_for_state(task["id"], "TASK_STATE_COMPLETED"))


def test_kill_9_of_a_replica_fails_its_tasks_on_a_survivor_once_its_lease_expired(pair, call_log):
    survivor = Caller(pair[1])
    doomed_process = replica_with_tokens("a-doomed", call_log=call_log)
    try:
        doomed = Caller(doomed_process)
        task = doomed.send(message("sleep:60"), blocking=False)
        doomed.wait_for_state(task["id"], "TASK_STATE_WORKING")
        killed = time.monotonic()
        doomed_process.kill9()
        failed = survivor.wait_for_state(task["id"], "TASK_STATE_FAILED", timeout=LEASE + 8)
        took = time.monotonic() - killed
    finally:
        doomed_process.kill9()
    assert "lease expired" in status_text(failed), failed
    assert took <= LEASE + 4, f"failed {took:.1f} s after the kill; the lease is {LEASE:g} s"
    # the take-over is recorded: the lost run is claimed once, by one survivor, not again at every round
    assert [lease["state"] for lease in leases(doomed_process.replica)] == ["lost"]
    renewed = leases(pair[1].replica)[0]["expires"]
    for _ in range(2):  # two more rounds of the survivor (it renews, then looks for expired leases)
        renewed = wait_until(lambda: leases(pair[1].replica)[0]["expires"], "the survivor to renew its lease",
                             until=lambda expires, after=renewed: expires > after)
    taken_over = f"replica {doomed_process.replica} stopped renewing its lease"
    logs = "".join(bridge.stderr_text() for bridge in pair)
    assert logs.count(taken_over) == 1, logs


def test_the_workers_of_one_bridge_on_postgresql_are_replicas_of_one_another(call_log):
    with replica_with_tokens("w", "--workers", "2", call_log=call_log) as both:
        one, two = Worker(both, 1, TOKEN_X), Worker(both, 2, TOKEN_X)
        try:
            two.running()  # its connection found before the task starts: a finished task refuses subscribers
            streamed = one.send(message("slow:0.5"), blocking=False)
            events = two.subscribe(streamed["id"])
            assert events and events[-1].get("statusUpdate", {}).get("status", {}).get("state") == \
                "TASK_STATE_COMPLETED", events
            task = one.send(message("slow:1"), blocking=False)
            wait_until(lambda: one.get(task["id"]), "the first sentence", until=lambda t: "Sentence 1." in answer(t))
            assert state(two.task("CancelTask", {"id": task["id"]})) == "TASK_STATE_CANCELED"
            wait_until(one.running, "worker 1's turn to end", until=lambda running: running == 0)
            assert Worker(both, 2, TOKEN_Y).error("GetTask", {"id": task["id"]})["code"] == TASK_NOT_FOUND
        finally:
            one.close()
            two.close()


def test_the_shared_event_log_forgets_tasks_that_ended_long_ago():
    import asyncio

    from a2a.server.cluster import TaskVersion, VersionedDatabaseTaskStore
    from a2a.server.context import ServerCallContext
    from a2a.types import Task, TaskState, TaskStatus
    from sqlalchemy.ext.asyncio import create_async_engine

    from ovos_a2a_solver.bridge.storage.postgres import PostgresDatabase
    from ovos_a2a_solver.bridge.storage.operations import OperationLog
    from ovos_a2a_solver.bridge.cluster.replicas import EVENTS_KEPT, ReplicaGroup

    async def events_left() -> dict:
        db = PostgresDatabase(POSTGRES, min_size=1, max_size=4)
        engine = create_async_engine(POSTGRES)  # the a2a-sdk's store, where earlier versions kept events
        store = VersionedDatabaseTaskStore(engine)
        await store.initialize()
        ids = {}
        for label, age in (("old", EVENTS_KEPT + 60), ("recent", 0), ("running", EVENTS_KEPT + 60)):
            task = Task(id=str(uuid.uuid4()), context_id=uuid.uuid4().hex, status=TaskStatus(
                state=TaskState.TASK_STATE_WORKING if label == "running" else TaskState.TASK_STATE_COMPLETED))
            task.status.timestamp.FromSeconds(int(time.time() - age))
            await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING,
                             context=ServerCallContext())
            ids[label] = task.id
        group = ReplicaGroup(db, OperationLog(db, "pruner", single_process=False), lease=5, persona="echo")
        await group.prune_event_log()
        left = {label: (await db.fetch("SELECT count(*) AS n FROM task_events WHERE task_id = :id",
                                       {"id": task_id}))[0]["n"] for label, task_id in ids.items()}
        await db.aclose()
        await engine.dispose()
        return left

    assert asyncio.run(events_left()) == {"old": 0, "recent": 1, "running": 1}


def test_a_replica_under_steady_load_keeps_its_database_connections():
    """As many messages at once as ``--max-concurrent``, round after round, reuse the
    connections the bridge opened: none is closed to be opened again (each such connection
    is a new login and new prepared statements for a message). A connection opened for a
    new peak of demand and kept is growth, not churn.

    The bridge reaches the database through a relay that counts its connections alone
    (:class:`~support.postgres_relay.CountingRelay`); the database's own figures also count the
    replicas of this module's other tests, autovacuum's workers and connections still logging
    in, and its count of sessions arrives late."""
    from concurrent.futures import ThreadPoolExecutor

    at_once = 8
    with CountingRelay(POSTGRES) as relay, \
            replica("steady", "--max-concurrent", str(at_once), db=relay.url,
                    env={"OVOS_A2A_TOKENS": TOKEN_X}) as bridge, ThreadPoolExecutor(at_once) as pool:
        caller = Caller(bridge)

        def rounds(count: int) -> None:
            for _ in range(count):
                answers = list(pool.map(lambda n: caller.send(message(f"steady {n}")), range(at_once)))
                assert [state(task) for task in answers] == ["TASK_STATE_COMPLETED"] * at_once, answers

        rounds(2)  # the bridge opens its connections
        before = relay.counts()
        assert before.logins > 0, "the bridge reached its database some other way than through the relay"
        rounds(10)
        after = relay.counts()
    closed = after.closed - before.closed
    assert closed == 0, (f"{closed} database connection(s) closed in 10 rounds of {at_once} messages "
                         f"({after.logins - before.logins} opened, "
                         f"{after.cancel_requests - before.cancel_requests} statement(s) canceled)")


class Bystander:
    """Another client of the database, on a plain connection of its own: it listens on the
    replicas' channel and notifies on it (what PostgreSQL lets any role with CONNECT do).
    Whatever it hears that asks for a cancel, it answers with a forged refusal at once."""

    FORGED = "forged by a bystander"

    def __init__(self) -> None:
        import asyncio
        import threading

        from ovos_a2a_solver.bridge.cluster.replicas import CHANNEL

        self.channel = CHANNEL
        self.heard: list[str] = []
        self.lock = asyncio.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.listening = self.speaking = None  # two connections: one only listens
        self.answers: list = []

    def __enter__(self) -> "Bystander":
        import asyncpg

        self.thread.start()
        dsn = POSTGRES.replace("+asyncpg", "", 1)
        self.listening = self._run(asyncpg.connect(dsn))
        self.speaking = self._run(asyncpg.connect(dsn))
        self._run(self.listening.add_listener(self.channel, self._heard))
        return self

    def __exit__(self, *_exc) -> None:
        import asyncio

        async def close() -> None:
            await asyncio.gather(*self.answers)
            await self.listening.close()
            await self.speaking.close()

        self._run(close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def _run(self, coroutine):
        import asyncio
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def _heard(self, _connection, _pid, _channel, payload: str) -> None:
        self.heard.append(payload)
        try:
            note = json.loads(payload)
        except ValueError:
            return
        if isinstance(note, dict) and note.get("kind") == "cancel" and "request" in note:
            forged = {"kind": "cancel-answer", "to": note.get("from"), "request": note["request"],
                      "refusal": self.FORGED}
            self.answers.append(self.loop.create_task(self._notify(json.dumps(forged))))

    async def _notify(self, payload: str) -> None:
        async with self.lock:
            await self.speaking.execute("SELECT pg_notify($1, $2)", self.channel, payload)

    def notify(self, payload: str) -> None:
        self._run(self._notify(payload))


def running_operation(task_id: str) -> dict:
    """The boot id and owner of the run working on ``task_id``, as the database holds them."""
    import asyncio

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    async def read() -> dict:
        engine = create_async_engine(POSTGRES)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(text("SELECT boot, owner FROM a2a_bridge_operations "
                                               "WHERE task_id = :id AND state = 'running'"), {"id": task_id})
                return dict(rows.mappings().one())
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_a_listener_on_the_replicas_channel_learns_nothing_and_its_answers_are_not_taken(pair):
    """A cancel between replicas: a bystander listening on the channel hears only empty
    rings (no task id, owner or boot id), and its forged refusal does not answer the cancel."""
    a, b = Caller(pair[0]), Caller(pair[1])
    with Bystander() as bystander:
        task = a.send(message("slow:1"), blocking=False)
        wait_until(lambda: a.get(task["id"]), "the first sentence", until=lambda t: "Sentence 1." in answer(t))
        run = running_operation(task["id"])
        asked = time.monotonic()
        canceled = b.task("CancelTask", {"id": task["id"]})
        took = time.monotonic() - asked
        assert state(canceled) == "TASK_STATE_CANCELED", canceled
        wait_until(lambda: len(bystander.heard), "the rings of the request and of its answer",
                   until=lambda count: count >= 2)
    # answered by the replica doing the task, not given up after the 5 s the asker waits for an
    # answer (cancel grace 2 s + 3 s): 0.8 s here with three other processes using the two cores
    assert took < 3, f"the cancel between replicas took {took:.2f} s"
    for payload in bystander.heard:
        assert task["id"] not in payload and run["boot"] not in payload and run["owner"] not in payload, payload
    assert set(bystander.heard) == {""}, bystander.heard


def test_forged_notifications_on_the_replicas_channel_cancel_nothing(pair):
    """Notifications in the form requests once took, addressed to the run doing a task with
    its real task id and owner, and a flood of empty rings: the task goes on to its end,
    and a real cancel between the replicas still works."""
    a, b = Caller(pair[0]), Caller(pair[1])
    task = a.send(message("slow:0.3"), blocking=False)
    a.wait_for_state(task["id"], "TASK_STATE_WORKING")
    run = running_operation(task["id"])
    with Bystander() as bystander:
        forged = {"kind": "cancel", "to": run["boot"], "from": uuid.uuid4().hex, "request": uuid.uuid4().hex,
                  "task": task["id"], "owner": run["owner"]}
        for payload in (json.dumps(forged), json.dumps(dict(forged, request=uuid.uuid4().hex)), "", "not json"):
            bystander.notify(payload)
        for _ in range(200):
            bystander.notify("")
        done = a.wait_for_state(task["id"], "TASK_STATE_COMPLETED")
    assert answer(done) == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5.", done
    later = a.send(message("slow:1"), blocking=False)
    wait_until(lambda: a.get(later["id"]), "the first sentence", until=lambda t: "Sentence 1." in answer(t))
    assert state(b.task("CancelTask", {"id": later["id"]})) == "TASK_STATE_CANCELED"


def test_a_replica_of_another_persona_is_refused_while_one_is_live(pair):
    """Replicas share tasks, so they must serve one persona: a bridge of another one started on
    the same database would continue their tasks with the wrong persona."""
    with pytest.raises(BridgeStartError) as refused:
        replica_with_tokens("other", "--backend", "scenarios").stop()
    line = refused.value.stderr.strip().splitlines()[-1]
    assert 'the database is in use by a replica of another persona ("echo" on ' in line, line
    assert "--db URL" in line, line
    assert refused.value.returncode == 2, refused.value.stderr
    a = Caller(pair[0])
    assert answer(a.send(message("still one persona"))) == "echo: still one persona"


#: another writer's write of a task's end ($1 its id, $2 its state, $3 the task), at the row's next version
END_WRITE = "UPDATE bridge_tasks SET state = $2, version = version + 1, task = $3 WHERE id = $1 RETURNING version"


def ended(task_id: str, end: str, text: str) -> tuple:
    """The parameters of :data:`END_WRITE` that end task ``task_id`` as stored in state ``end``
    (a ``TaskState`` name), its status saying ``text``."""
    from a2a.types import Message, Part, Role, Task, TaskState

    from support.postgres import run_on

    task = Task()
    task.ParseFromString(run_on(POSTGRES, "SELECT task FROM bridge_tasks WHERE id = $1", task_id))
    task.status.state = TaskState.Value(end)
    task.status.message.CopyFrom(Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex, task_id=task_id,
                                         context_id=task.context_id, parts=[Part(text=text)]))
    return task_id, int(task.status.state), task.SerializeToString()


def lose_lease(replica_name: str) -> None:
    """Mark ``replica_name``'s lease lost in the shared database, as a replica that takes it over
    (having found it expired) does: from then on, nothing that replica writes counts."""
    from support.postgres import run_on

    assert run_on(POSTGRES, "UPDATE a2a_bridge_replicas SET state = 'lost' WHERE replica = $1 AND state = 'live' "
                            "RETURNING boot", replica_name) is not None, f"{replica_name} holds no live lease"


def take_over_as_a_survivor_would(replica_name: str, task_id: str, text: str) -> None:
    """Do in the shared database what a replica does when it takes over a lost one (whose lease
    it found expired): mark that one's lease lost, and write its task ``task_id`` failed,
    saying ``text``, at the row's next version; in one statement, so that the replica finds
    both done or neither (a survivor has failed the task by the time it records the lease lost)."""
    from support.postgres import run_on

    lease_lost_and_task_failed = (
        "WITH lost AS (UPDATE a2a_bridge_replicas SET state = 'lost' WHERE replica = $4 AND state = 'live' "
        "RETURNING boot) " + END_WRITE.replace(" RETURNING", " AND EXISTS (SELECT 1 FROM lost) RETURNING"))
    assert run_on(POSTGRES, lease_lost_and_task_failed, *ended(task_id, "TASK_STATE_FAILED", text),
                  replica_name) is not None, f"task {task_id} is not in the database, or {replica_name} holds no live lease"


class EndNotYetCommitted:
    """Another writer that has written a task's end (:data:`END_WRITE`) in a transaction it has not
    committed yet (a context manager): every other write of that task waits for it, while reads
    still find the task as it was. :meth:`waiting` counts the statements that wait for it;
    :meth:`commit` lets them go on, against the end it wrote."""

    def __init__(self, task_id: str, end: str, text: str) -> None:
        self.parameters = ended(task_id, end, text)

    def __enter__(self) -> "EndNotYetCommitted":
        import asyncio

        import asyncpg

        from support.postgres import plain_dsn

        self.loop = asyncio.new_event_loop()
        self.connection = self.loop.run_until_complete(asyncpg.connect(plain_dsn(POSTGRES)))
        self.transaction = self.connection.transaction()
        self.loop.run_until_complete(self.transaction.start())
        assert self.loop.run_until_complete(self.connection.fetchval(END_WRITE, *self.parameters)) is not None
        return self

    def waiting(self) -> int:
        return self.loop.run_until_complete(self.connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
            self.connection.get_server_pid()))

    def commit(self) -> None:
        self.loop.run_until_complete(self.transaction.commit())

    def __exit__(self, *exc_info) -> None:
        try:
            self.loop.run_until_complete(self.connection.close())
        finally:
            self.loop.close()


@pytest.mark.parametrize("turn", ["ends", "is-given-up"])
def test_a_turn_that_ends_after_its_replica_was_taken_over_is_answered_with_the_survivors_end(call_log, turn):
    """A replica's turn ends just after another replica took it over (its lease had lapsed, as a
    paused one's does) and failed its task, before the replica itself noticed: its end is not
    written (the lease fence), and the caller still waiting on it is answered the task as the
    survivor stored it, not an internal error."""
    import threading

    release, said = f"release-{uuid.uuid4().hex[:8]}", "taken over: this replica's lease lapsed"
    with replica_with_tokens("taken-over", call_log=call_log) as process:
        caller, context = Caller(process), uuid.uuid4().hex
        replies: list = []
        waiting = threading.Thread(target=lambda: replies.append(caller.call(
            "SendMessage", {"message": message(f"hold:{release}", context_id=context)})), daemon=True)
        waiting.start()
        listed = wait_until(lambda: caller.call("ListTasks", {"contextId": context})["result"].get("tasks", []),
                            "the task to be listed", until=lambda tasks: len(tasks) == 1)
        task_id = listed[0]["id"]
        caller.wait_for_state(task_id, "TASK_STATE_WORKING")
        take_over_as_a_survivor_would(process.replica, task_id, said)
        if turn == "ends":  # at once: before the replica's next renewal finds its lease lost
            (call_log.parent / release).write_text("")
        waiting.join(30)  # else the replica finds its lease lost, and gives its turn up
        assert not waiting.is_alive(), "the caller was not answered within 30 s of the turn's end"
    assert "error" not in replies[0], replies[0]
    answered = replies[0]["result"]["task"]
    assert (answered["id"], state(answered), status_text(answered)) == (task_id, "TASK_STATE_FAILED", said), answered


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
def test_a_message_that_comes_after_its_replica_was_taken_over_is_refused_for_a_retry_elsewhere(call_log, method):
    """The replica's lease was taken over (it lapsed, as a paused one's does) and the replica has
    not noticed yet when a message comes: nothing of the message may be written under the lost
    lease, so the caller is told to try again (503, Retry-After), not given an internal error
    with the store's words."""
    import httpx

    # a lease that no renewal of the replica finds lost while the test runs: one of LEASE, renewed a
    # third of it apart, could be found lost, and a new one taken, before the message came
    with replica_with_tokens("taken-over-first", call_log=call_log, OVOS_A2A_REPLICA_LEASE=STEADY_LEASE) as process:
        caller = Caller(process)
        caller.send(message("hello"))  # it serves
        lose_lease(process.replica)
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message("are you there")}}
        reply = httpx.post(caller.url, json=body, headers={**caller.headers, "Accept": "text/event-stream"},
                           timeout=30)
    assert reply.status_code == 503 and reply.headers.get("retry-after"), (reply.status_code, reply.text)
    assert "modified concurrently" not in reply.text and "-32603" not in reply.text, reply.text


@pytest.mark.parametrize("end", ["TASK_STATE_FAILED", "TASK_STATE_CANCELED"])
def test_a_cancel_whose_task_another_writer_ended_meanwhile_is_answered_by_that_end(call_log, end):
    """A cancel finds the task working and stops its turn, but another writer (a replica that took
    this one over and failed the task, or another replica's cancel) stores the task's end just
    before the cancel's own write, which the store then refuses. A task that failed so is not
    cancelable (-32002, A2A's answer for a final task), not answered as if the cancel had
    succeeded; one that another writer canceled is the answer: the cancel asked for that."""
    import threading

    release, said = f"release-{uuid.uuid4().hex[:8]}", f"ended by another writer: {end}"
    with replica_with_tokens("cancel-overtaken", "--heartbeat", "300", call_log=call_log,
                             OVOS_A2A_REPLICA_LEASE=STEADY_LEASE) as process:
        caller = Caller(process)
        task_id = caller.send(message(f"hold:{release}"), blocking=False)["id"]
        caller.wait_for_state(task_id, "TASK_STATE_WORKING")
        replies: list = []
        with EndNotYetCommitted(task_id, end, said) as other_writer:
            canceling = threading.Thread(target=lambda: replies.append(caller.call("CancelTask", {"id": task_id})),
                                         daemon=True)
            canceling.start()
            wait_until(other_writer.waiting, "the cancel's write to wait for the other writer's")
            other_writer.commit()
        canceling.join(30)
        assert not canceling.is_alive(), "the cancel was not answered within 30 s of the other writer's end"
        stored = caller.get(task_id)
    assert replies, "the cancel had no JSON-RPC answer"
    assert (state(stored), status_text(stored)) == (end, said), stored
    if end == "TASK_STATE_CANCELED":
        assert "error" not in replies[0], replies[0]
        answered = replies[0]["result"]
        assert (answered["id"], state(answered), status_text(answered)) == (task_id, end, said), answered
    else:
        error = replies[0].get("error", replies[0])
        assert error.get("code") == TASK_NOT_CANCELABLE and "failed" in error["message"].lower(), replies[0]


def test_a_cancel_on_a_replica_whose_lease_was_taken_over_is_refused_for_a_retry_elsewhere(call_log):
    """The replica's lease was taken over and the replica has not noticed yet when a cancel of a
    task waiting for input comes: the cancel's write is refused, and the task still waits, so
    the caller is told to try again (503, Retry-After), not given the task as it waits as if it
    were the cancel's answer."""
    import httpx

    with replica_with_tokens("cancel-lease-lost", call_log=call_log, OVOS_A2A_REPLICA_LEASE=STEADY_LEASE) as process:
        caller = Caller(process)
        waiting = caller.send(message("ask:which city?"))
        assert state(waiting) == "TASK_STATE_INPUT_REQUIRED", waiting
        lose_lease(process.replica)
        body = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": waiting["id"]}}
        reply = httpx.post(caller.url, json=body, headers=caller.headers, timeout=30)
    assert reply.status_code == 503 and reply.headers.get("retry-after"), (reply.status_code, reply.text)
    assert "modified concurrently" not in reply.text and "-32603" not in reply.text, reply.text
