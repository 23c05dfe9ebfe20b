"""What one SendMessage asks of the task store, statement by statement, on a real bridge.

A message is claimed (one insert), the task it creates or continues is saved when the turn
starts and when it settles, and its claim is marked done (one update, for many messages at
once). That is what the invariants need: an acknowledged task ends or waits, a final task
never changes, a replayed message never runs the persona twice. Nothing else should reach
the database: a new task is never looked up before its first save (``storage.new_tasks``);
the task a follow-up continues is read once by its call (``storage.call_reads``), where the
request handler, the a2a-sdk's set-up, the request's context and the SDK's producer each read
it; and the saves of a follow-up's turn that leave its task waiting for input as it was (the
SDK adds the follow-up's message, and a blocking turn's artifact) are its progress, written
with its end (``StoredEnds.settles``).

The bridge runs in this process (its ASGI app through httpx), on its own SQLite file, and on
a PostgreSQL database of its own when ``OVOS_A2A_TEST_POSTGRES`` is set. Each statement its
database runs is counted with what asked for it: a task read or a task write (the task
store's ``get`` or ``save`` in progress), a task write behind (PostgreSQL's progress, held a
few milliseconds and written by its timer: how many depends on the machine's pace, so they
are not counted), else the operation log's claim or finish. (PostgreSQL's doorbell, a
``NOTIFY`` after the saves of a few milliseconds on a connection of its own, is not counted.)
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
import uuid
from collections import Counter

import httpx
import pytest

from ovos_a2a_solver.bridge.app import Bridge
from ovos_a2a_solver.bridge.backends.echo import EchoBackend
from ovos_a2a_solver.bridge.config import BridgeSettings
from support.asgi_lifespan import lifespan
from support.postgres import new_database
from support.waiting import WAIT

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
BASE = "http://bridge.test"
HEADERS = {"A2A-Version": "1.0"}

#: the task store's call a statement is made for: (what, the call's token); the token is in
#: ``_calls_in_progress`` until the call returns
_STORE_CALL: contextvars.ContextVar[tuple[str, object] | None] = contextvars.ContextVar("store_call", default=None)
_calls_in_progress: set[object] = set()

#: the operation log's statements, by how they begin
OPERATION_STATEMENTS = {"INSERT INTO a2a_bridge_operations": "claim",
                        "UPDATE a2a_bridge_operations SET state": "finish"}


class Visits:
    """Every statement ``bridge``'s database runs from now on, by what asked for it."""

    def __init__(self, bridge: Bridge) -> None:
        self.seen: list[str] = []
        store = bridge.database_store
        store.get = self._store_call("task read", store.get)
        store.save = self._store_call("task write", store.save)
        db = bridge.db
        if hasattr(db, "on_loop"):  # SQLite: statements on the event loop, writes committed in groups, listings
            for name in ("on_loop", "write", "fetch", "call"):
                setattr(db, name, self._statement(getattr(db, name)))
        else:  # PostgreSQL: each statement through the pool
            pool = db.pool

            async def counted_pool():
                return _CountedPool(await pool(), self)

            db.pool = counted_pool

    @staticmethod
    def _store_call(what: str, call):
        @functools.wraps(call)
        async def counted(*args, **kwargs):
            token = object()
            _calls_in_progress.add(token)
            reset = _STORE_CALL.set((what, token))
            try:
                return await call(*args, **kwargs)
            finally:
                _STORE_CALL.reset(reset)
                _calls_in_progress.discard(token)

        return counted

    def note(self, args) -> None:
        store_call = _STORE_CALL.get()
        if store_call is not None:
            what, token = store_call
            self.seen.append(what if token in _calls_in_progress else what + " behind")
            return
        sql = next((arg for arg in args if isinstance(arg, str)), "")
        self.seen.append(next((name for start, name in OPERATION_STATEMENTS.items() if sql.startswith(start)),
                              " ".join(sql.split())[:80]))

    def _statement(self, call):
        if asyncio.iscoroutinefunction(call):
            @functools.wraps(call)
            async def counted(*args, **kwargs):
                self.note(args)
                return await call(*args, **kwargs)
        else:
            @functools.wraps(call)
            def counted(*args, **kwargs):
                self.note(args)
                return call(*args, **kwargs)
        return counted

    def counted(self) -> Counter:
        """The statements seen so far, by kind (the timed writes behind left out), and forget them."""
        seen, self.seen = Counter(self.seen), []
        seen.pop("task write behind", None)
        return seen


class _CountedPool:
    """An asyncpg pool whose statements a :class:`Visits` sees."""

    def __init__(self, pool, visits: Visits) -> None:
        self._pool, self._visits = pool, visits

    def __getattr__(self, name):
        attribute = getattr(self._pool, name)
        if name not in ("execute", "executemany", "fetch", "fetchrow", "fetchval", "acquire"):
            return attribute

        def counted(*args, **kwargs):
            self._visits.note(args)
            return attribute(*args, **kwargs)

        return counted


def settings_for(tmp_path, db: str | None) -> BridgeSettings:
    # a lease (and the sweep for stranded tasks) far longer than the test: no statement of theirs comes between
    values = {"backend": "echo", "state_dir": str(tmp_path / "state"), "port": 0, "replica_lease": 600}
    if db:
        values["db"] = db
    return BridgeSettings.load(values, env={})


def user_message(text: str, task_id: str = "") -> dict:
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    return message


class Caller:
    """SendMessage and SendStreamingMessage to the bridge in this process; each call's statements."""

    def __init__(self, bridge: Bridge, client: httpx.AsyncClient) -> None:
        self.bridge, self.client = bridge, client
        self.visits = Visits(bridge)

    async def send(self, message: dict, streaming: bool = False) -> tuple[dict, Counter]:
        """The task the message ended in, and the statements its call made (its claim's finish
        included, once its work let go of it)."""
        self.visits.counted()
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage" if streaming else "SendMessage",
                "params": {"message": message}}
        if streaming:
            task = await self._streamed(body)
        else:
            response = await self.client.post("/a2a/", json=body, headers=HEADERS)
            task = response.json()["result"]["task"]
        await self._work_over()
        return task, self.visits.counted()

    async def _streamed(self, body: dict) -> dict:
        """The task's id and its last status, as the stream told them."""
        task: dict = {}
        async with self.client.stream("POST", "/a2a/", json=body,
                                      headers={**HEADERS, "Accept": "text/event-stream"}) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    result = json.loads(line[5:])["result"]
                    if "task" in result:
                        task = {"id": result["task"]["id"], "status": result["task"]["status"]}
                    elif "statusUpdate" in result:
                        task = {"id": result["statusUpdate"]["taskId"], "status": result["statusUpdate"]["status"]}
        return task

    async def _work_over(self) -> None:
        """Once no message holds a slot (its work let go of its claim), write the claims
        finished since (they are written within half a second, many at once)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while self.bridge.tracker.running:
            assert loop.time() < deadline, "the message's work did not end"
            await asyncio.sleep(0.01)
        await self.bridge.operations.flush()


def run_with_bridge(tmp_path, db: str | None, scenario) -> None:
    async def go() -> None:
        bridge = Bridge(settings_for(tmp_path, db), EchoBackend())
        async with lifespan(bridge.app), httpx.AsyncClient(transport=httpx.ASGITransport(app=bridge.app),
                                                         base_url=BASE, timeout=WAIT) as client:
            caller = Caller(bridge, client)
            await caller.send(user_message("warm up"))  # the first message of a run prepares what it reuses
            await scenario(caller)

    asyncio.run(go())


def databases():
    yield pytest.param(None, id="sqlite")
    yield pytest.param("postgresql", id="postgresql", marks=pytest.mark.skipif(
        not POSTGRES, reason="set OVOS_A2A_TEST_POSTGRES to a database URL"))


@pytest.fixture(params=list(databases()))
def database(request):
    """None (a SQLite file of the bridge's own) or the URL of a new PostgreSQL database."""
    if request.param is None:
        yield None
        return
    with new_database() as url:
        yield url


def state(task: dict) -> str:
    return task["status"]["state"]


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_new_task_is_claimed_saved_and_finished_and_never_read(tmp_path, database, streaming):
    """Answered at once (the echo answers on the event loop), a blocking message's task is
    saved once, at its end; a streamed one's when its work starts and when it ends."""
    async def scenario(caller: Caller) -> None:
        task, visits = await caller.send(user_message("hello"), streaming)
        assert state(task) == "TASK_STATE_COMPLETED"
        assert visits == Counter({"claim": 1, "task write": 1 if not streaming else 2, "finish": 1}), visits

    run_with_bridge(tmp_path, database, scenario)


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_follow_up_reads_its_task_once_and_writes_it_when_its_turn_starts_and_ends(tmp_path, database,
                                                                                      streaming):
    """The request handler reads the task a follow-up continues (may it be continued?), and
    every later read of it in the same call is answered from that read: the a2a-sdk's set-up,
    the request's context (its contextId) and the SDK's producer reach no database. A blocking
    follow-up's task is written once, at its end; a streamed one's also when its turn starts
    (``working``: a crash meanwhile fails the task) on SQLite, where PostgreSQL holds that
    progress a few milliseconds, as it holds a new task's."""
    async def scenario(caller: Caller) -> None:
        asked, _ = await caller.send(user_message("ask:Which city?"))
        assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
        task, visits = await caller.send(user_message("Paris", task_id=asked["id"]), streaming)
        assert state(task) == "TASK_STATE_COMPLETED"
        writes = 1 if not streaming or database else 2
        assert visits == Counter({"claim": 1, "task read": 1, "task write": writes, "finish": 1}), visits

    run_with_bridge(tmp_path, database, scenario)


def test_a_follow_up_that_is_asked_back_waits_again_written_at_once(tmp_path, database):
    """A turn that ends in a question of its own settles its task: written at once, as the
    end of every turn is (the wait it began from was another one), and the next follow-up
    finds it."""
    async def scenario(caller: Caller) -> None:
        asked, _ = await caller.send(user_message("ask:Which city?"))
        again, visits = await caller.send(user_message("ask:Which one, Paris or Lyon?", task_id=asked["id"]))
        assert state(again) == "TASK_STATE_INPUT_REQUIRED"
        assert again["status"]["message"]["parts"][0]["text"] == "Which one, Paris or Lyon?"
        assert visits == Counter({"claim": 1, "task read": 1, "task write": 1, "finish": 1}), visits
        answered, _ = await caller.send(user_message("Lyon", task_id=asked["id"]))
        assert state(answered) == "TASK_STATE_COMPLETED"

    run_with_bridge(tmp_path, database, scenario)


def test_a_follow_up_turn_waits_for_its_own_end_not_for_the_save_that_adds_its_message():
    """A follow-up's turn begins on a task waiting for input; the a2a-sdk saves that task with
    the follow-up's message added (the question moved into its history) before the turn's end.
    Only the end settles it, so the turn holds its message until the end is stored."""
    from a2a.server.context import ServerCallContext
    from a2a.types import Task, TaskState, TaskStatus

    from ovos_a2a_solver.bridge.storage.owners import owner_scope
    from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds

    async def scenario() -> None:
        ends, context = StoredEnds(), ServerCallContext()
        waiting = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED))
        waiting.status.timestamp.FromSeconds(1_700_000_000)
        waiting.status.message.parts.add().text = "Which city?"
        async with ends.awaiting(owner_scope(context), "t", WAIT, began_from=waiting.status) as awaited:
            taken_up = Task()
            taken_up.CopyFrom(waiting)
            taken_up.history.append(taken_up.status.message)
            taken_up.status.ClearField("message")
            assert not ends.settles(taken_up, context)
            ends.saved(taken_up, context)
            assert not awaited.saved.is_set(), "a follow-up's message, added, was taken for its turn's end"
            answered = Task()
            answered.CopyFrom(taken_up)
            answered.status.state = TaskState.TASK_STATE_INPUT_REQUIRED
            answered.status.timestamp.GetCurrentTime()
            assert ends.settles(answered, context)
            ends.saved(answered, context)
            assert awaited.saved.is_set()
        assert ends.settles(taken_up, context), "with no turn at work, a wait for input is one of its own"

    asyncio.run(scenario())
