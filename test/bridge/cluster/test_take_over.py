"""Bridge replicas on PostgreSQL: taking over a lost run, when failing its work breaks off.

A module of its own: the replicas of other tests would take the lost run over first (every
live replica looks for expired leases), so no other bridge may run on the database here.
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

    asyncio.run(scenario())
