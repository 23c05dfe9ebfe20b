"""Bridge replicas on PostgreSQL: taking over a lost run, when failing its work breaks off, and
when the sweep for stranded tasks comes first.

A module of its own: the replicas of other tests would take the lost run over first (every
live replica looks for expired leases), so no other bridge may run on the database here; the
sweep's test takes a new database of its own besides.
"""
from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest
from a2a.types import Message, Part, Role

from ovos_a2a_solver.bridge.storage.postgres import PostgresDatabase
from ovos_a2a_solver.bridge.storage.operations import OperationLog
from ovos_a2a_solver.bridge.cluster.replicas import NOW, LeaseState, ReplicaGroup
from support.bridge_rpc import message, send, state, status_text, task_of, wait_for_state
from support.postgres import new_database, run_on
from support.replicas import replica

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
pytestmark = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                reason="set OVOS_A2A_TEST_POSTGRES to a database URL")


def test_a_take_over_that_breaks_off_is_taken_over_again_once_its_claim_expires():
    """A survivor claims a lost run, and failing that run's work breaks off (the database
    went away): the claim expires after the survivor's lease and the run is taken over
    again, its work failed then; after that it is lost, and nobody takes it over again."""
    lease = 1.0
    lost_name, taker_name = f"gone-{uuid.uuid4().hex[:8]}", f"taker-{uuid.uuid4().hex[:8]}"
    attempts: list[float] = []
    lost_boot: list[str] = []

    async def fail_lost(operations) -> int:
        if not any(operation.boot in lost_boot for operation in operations):
            return 0  # another test's run, lost for real: not this test's business
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            raise ConnectionError("the database went away")
        return len(operations)

    class TurnsOfTheTaker:  # what the taker does for its own turns (LocalTurns): it runs none
        async def cancel_here(self, _task_id: str, _owner: str) -> str:
            return "no turn runs here"

        async def follow_here(self, _task_id: str, _owner: str):
            return
            yield

        async def fail_lost(self, operations) -> int:
            return await fail_lost(operations)

        async def fail_stranded(self, _live_runs, _older_than) -> int:
            return 0

        async def give_up_turns(self) -> int:
            return 0

    async def scenario() -> None:
        db = PostgresDatabase(POSTGRES, min_size=1, max_size=4)

        async def lease_of(name: str) -> dict:
            rows = await db.fetch("SELECT state, expires FROM a2a_bridge_replicas WHERE replica = :name",
                                  {"name": name})
            return rows[0]

        async def until(probe, what: str, check=bool):
            deadline = time.monotonic() + 10 * lease
            while not check(value := await probe()):
                assert time.monotonic() < deadline, f"gave up waiting for {what}; last seen: {value!r}"
                await asyncio.sleep(0.05)
            return value

        async def attempts_made() -> int:
            return len(attempts)

        log = OperationLog(db, taker_name, single_process=False)
        await log.initialize()
        lost_log = OperationLog(db, lost_name, single_process=False)  # the lost run, with a message at work
        lost_boot.append(lost_log.boot)
        await lost_log.claim("owner", Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                              parts=[Part(text="hello")]), str(uuid.uuid4()))
        taker = ReplicaGroup(db, log, lease=lease, persona="echo")
        await taker.start(TurnsOfTheTaker())
        try:
            await db.execute(f"INSERT INTO a2a_bridge_replicas (boot, replica, state, expires) "
                             f"VALUES (:boot, :replica, :live, {NOW} - 1)",
                             {"boot": lost_log.boot, "replica": lost_name, "live": LeaseState.LIVE})
            await until(attempts_made, "the first take-over", lambda n: n >= 1)
            assert (await lease_of(lost_name))["state"] == "taking-over"
            await until(attempts_made, "the take-over to be tried again", lambda n: n >= 2)
            assert attempts[1] - attempts[0] >= lease * 0.9, "tried again before the first claim expired"
            await until(lambda: lease_of(lost_name), "the run to be recorded lost", lambda row: row["state"] == "lost")
            for _ in range(3):  # three more rounds of the taker: it renews, then looks for expired runs
                renewed = (await lease_of(taker_name))["expires"]
                await until(lambda: lease_of(taker_name), "the taker to renew its lease",
                            lambda row, after=renewed: row["expires"] > after)
            assert len(attempts) == 2, f"taken over {len(attempts)} times"
        finally:
            await taker.stop()
            await db.aclose()

    # every wait above has its own bound; this one says where the scenario hung if one did not hold
    asyncio.run(asyncio.wait_for(scenario(), 90))


#: how the lease of a killed replica's run stands when a survivor sweeps for stranded tasks, as a
#: statement on it ($1: the replica's name): a take-over fails its task, or (it ended) the sweep does
LEASE_WHEN_SWEPT = {
    "expired": f"UPDATE a2a_bridge_replicas SET expires = {NOW} - 1 WHERE replica = $1 RETURNING boot",
    # another survivor claimed it and is failing its work (for a lease of its own)
    "being taken over": f"UPDATE a2a_bridge_replicas SET state = 'taking-over', expires = {NOW} + 600 "
                        f"WHERE replica = $1 RETURNING boot",
    # it ended (its row says so) and left a task working: no take-over comes for it
    "stopped": "UPDATE a2a_bridge_replicas SET state = 'stopped' WHERE replica = $1 RETURNING boot",
    "lost": "UPDATE a2a_bridge_replicas SET state = 'lost' WHERE replica = $1 RETURNING boot",
}
TAKE_OVER_SAYS, SWEEP_SAYS = "its lease expired", "store was unavailable"
UNFINISHED = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


@pytest.mark.parametrize("lease", list(LEASE_WHEN_SWEPT))
def test_a_killed_replicas_task_says_its_lease_expired_even_when_a_survivor_sweeps_before_taking_it_over(
        tmp_path, lease):
    """A replica is killed with a task at work. A survivor's sweep for stranded tasks comes before
    any take-over of the killed run (another survivor's round comes first, or the lease expires
    between a round's take-over and its sweep): the sweep leaves the task to the take-over, which
    fails it saying the replica's lease expired, not that the store was unavailable. A run that
    ended leaves a task the sweep's, as ever: nothing else would end it."""
    from ovos_a2a_solver.bridge.app import Bridge
    from ovos_a2a_solver.bridge.backends.echo import EchoBackend
    from ovos_a2a_solver.bridge.config import BridgeSettings

    import httpx
    from support.asgi_lifespan import lifespan
    from support.waiting import WAIT

    with new_database() as url:
        with replica("killed", db=url) as killed:
            task_id = task_of(send(killed.url, message("sleep:60"), blocking=False))["id"]
            wait_for_state(killed.url, task_id, "TASK_STATE_WORKING")
            killed.kill9()
        # untouched for longer than the survivor's lease, as a task is when a lease of its replica ran out
        assert run_on(url, "UPDATE bridge_tasks SET updated = updated - $2 WHERE id = $1 RETURNING id",
                      task_id, 3600 * 10**9) == task_id
        assert run_on(url, LEASE_WHEN_SWEPT[lease], killed.replica) is not None
        # the survivor's own rounds (a third of its lease apart) come long after this test: it sweeps and
        # takes over when the test says, in that order
        settings = BridgeSettings.load({"backend": "echo", "state_dir": str(tmp_path), "port": 0, "replica_lease": 600},
                                       env={"OVOS_A2A_DB": url, "OVOS_A2A_REPLICA": f"survivor-{uuid.uuid4().hex[:8]}"})

        async def survivor() -> tuple[dict, dict, int]:
            bridge = Bridge(settings, EchoBackend())
            async with lifespan(bridge.app), httpx.AsyncClient(transport=httpx.ASGITransport(app=bridge.app),
                                                             base_url="http://bridge.test", timeout=WAIT) as client:
                async def task() -> dict:
                    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
                    return (await client.post("/a2a/", json=body, headers={"A2A-Version": "1.0"})).json()["result"]

                await bridge.peers.sweep_stranded()
                swept = await task()
                if lease == "being taken over":  # its taker died before it was done: its claim expires
                    await bridge.db.execute(f"UPDATE a2a_bridge_replicas SET expires = {NOW} - 1 "
                                            f"WHERE replica = :name", {"name": killed.replica})
                taken_over = await bridge.peers.take_over_expired()
                return swept, await task(), taken_over

        swept, final, taken_over = asyncio.run(survivor())
    if lease in ("expired", "being taken over"):
        # as its replica last stored it (its progress may have been held back a moment when it was killed)
        assert state(swept) in UNFINISHED, f"the sweep ended the task: {status_text(swept)!r}"
        assert taken_over == 1
        assert state(final) == "TASK_STATE_FAILED" and TAKE_OVER_SAYS in status_text(final), final
    else:
        assert state(swept) == "TASK_STATE_FAILED" and SWEEP_SAYS in status_text(swept), swept
        assert taken_over == 0 and final == swept, final
