"""Replicas that start together on a new PostgreSQL database all serve: the schema is made once,
whoever comes first, as a compose file or an orchestrator starts them (and as --workers does)."""
from __future__ import annotations

import os
import threading
import uuid

import pytest

from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import answer, message, send, task_of
from support.postgres import new_database, run_statement

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
pytestmark = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                reason="set OVOS_A2A_TEST_POSTGRES to a database URL")
TRIES = 2


def start_together(*argvs: tuple[str, ...]) -> list[BridgeProcess | BaseException]:
    """One bridge per argv, all started at the same moment; each a process or what its start raised."""
    results: list[BridgeProcess | BaseException | None] = [None] * len(argvs)
    gate = threading.Barrier(len(argvs))

    def start(n: int) -> None:
        gate.wait()
        try:
            results[n] = BridgeProcess(*argvs[n], env={"OVOS_A2A_REPLICA": f"together-{n}-{uuid.uuid4().hex[:6]}"})
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            results[n] = exc

    threads = [threading.Thread(target=start, args=(n,)) for n in range(len(argvs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


@pytest.mark.parametrize("attempt", range(TRIES))
def test_replicas_started_together_on_a_new_database_all_serve(attempt):
    with new_database() as url:
        started = start_together(("--db", url), ("--db", url), ("--db", url))
        try:
            failures = [str(p) for p in started if not isinstance(p, BridgeProcess)]
            assert not failures, failures
            for replica in started:
                assert answer(task_of(send(replica.url, message("hello")))) == "echo: hello"
        finally:
            for replica in started:
                if isinstance(replica, BridgeProcess):
                    replica.stop()


@pytest.mark.parametrize("attempt", range(TRIES))
def test_workers_on_a_new_database_all_serve(attempt):
    with new_database() as url:
        with BridgeProcess("--db", url, "--workers", "3") as bridge:
            assert "3 workers" in bridge.stdout_text()
            assert answer(task_of(send(bridge.url, message("hello")))) == "echo: hello"


def test_a_store_the_bridge_cannot_prepare_is_said_in_the_databases_words(tmp_path):
    with new_database() as url:
        run_statement(url, "CREATE TABLE a2a_bridge_operations (unrelated INTEGER)")  # a table of the same name
        with pytest.raises(BridgeStartError) as failed:
            BridgeProcess("--db", url).stop()
    line = failed.value.stderr.strip().splitlines()[-1]
    assert failed.value.returncode == 1, failed.value.stderr
    assert line.startswith("ovos-a2a: cannot prepare the task store (postgresql+asyncpg://"), line
    assert 'column "task_id" does not exist' in line, line  # PostgreSQL's own message
    assert "sqlalche.me" not in line and "Traceback" not in failed.value.stderr, failed.value.stderr
    assert "ovos_a2a:ovos_a2a@" not in line, line  # the password is not shown
