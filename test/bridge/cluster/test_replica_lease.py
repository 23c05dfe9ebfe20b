"""Bridge replicas on PostgreSQL: a replica that cannot renew its lease says so before it ends.

One replica on a PostgreSQL server of the test's own, stopped under it: within two thirds of
its lease (before the lease can expire and be taken over) the replica answers ``/health`` 503
and refuses messages at once with 503 and ``Retry-After``, not after a hang; when the database
is back it serves again by itself, and what it answers then is stored.
"""
from __future__ import annotations

import os
import time

import httpx
import pytest

from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, message, send, state, task_of
from support.postgres import run_on
from support.postgres_server import PostgresServer, postgres_bin
from support.waiting import wait_until

pytestmark = pytest.mark.skipif(postgres_bin() is None and not os.environ.get("CI"),
                                reason="needs PostgreSQL's server programs (initdb, pg_ctl)")

LEASE = 3.0


def health_status(bridge) -> tuple[int, dict]:
    response = httpx.get(bridge.root + "/health", timeout=5)
    return response.status_code, response.json()


def test_a_replica_that_cannot_renew_its_lease_says_so_before_it_ends_and_serves_again_after():
    with PostgresServer() as server, BridgeProcess(
            "--db", server.url("127.0.0.1"), env={"OVOS_A2A_REPLICA_LEASE": str(LEASE)}) as bridge:
        assert state(task_of(send(bridge.url, message("before")))) == "TASK_STATE_COMPLETED"
        left = run_on(server.url("127.0.0.1"), "SELECT max(expires) - EXTRACT(EPOCH FROM clock_timestamp()) "
                                              "FROM a2a_bridge_replicas WHERE state = 'live'")
        lease_ends = time.monotonic() + float(left)  # by the database's clock: no sooner can it be taken over
        server.stop(mode="immediate")
        cut = time.monotonic()
        status, report = wait_until(lambda: health_status(bridge), "/health to say 503", timeout=LEASE * 3,
                                    interval=0.05, until=lambda got: got[0] == 503)
        said = time.monotonic()
        assert said < lease_ends, (f"/health said 503 {said - cut:.1f} s after the cut, {said - lease_ends:.1f} s "
                                   f"after the lease ended")
        assert report["store"] == "unavailable", report

        began = time.monotonic()
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("during")}}
        refused = httpx.post(bridge.url + "/", json=body, headers=HEADERS, timeout=30)
        assert time.monotonic() - began < 2, "a message to a replica without its lease was not refused at once"
        assert refused.status_code == 503 and refused.headers.get("Retry-After"), refused.text
        assert "postgres" not in refused.text.lower() and "127.0.0.1" not in refused.text, refused.text

        server.start()
        wait_until(lambda: health_status(bridge), "/health to say 200 again", timeout=LEASE * 5,
                   until=lambda got: got[0] == 200)
        again = task_of(send(bridge.url, message("after"), timeout=30))
        assert state(again) == "TASK_STATE_COMPLETED", again
        stored = run_on(server.url("127.0.0.1"), "SELECT state FROM bridge_tasks WHERE id = $1", again["id"])
        assert stored == 3, f"the answer given after the database came back is not stored as completed: {stored}"
