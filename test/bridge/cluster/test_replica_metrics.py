"""The leases of replicas on PostgreSQL in ``/metrics``: a replica counts its renewals, and the
replica that takes over one that died counts it and the tasks it failed for it."""
from __future__ import annotations

import os

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.bridge_process import BridgeProcess
from support.bridge_rpc import health, message, send, task_of
from support.replicas import replica
from support.waiting import wait_until

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
pytestmark = pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"),
                                reason="set OVOS_A2A_TEST_POSTGRES to a database URL")
LEASE = "1"  # seconds (renewed every third of it): the least, so that a death is noticed at once


def replica_with_metrics(name: str) -> BridgeProcess:
    """A replica on the shared database (:func:`~support.replicas.replica`) serving
    ``/metrics``, with a lease of :data:`LEASE`."""
    return replica(name, "--metrics", env={"OVOS_A2A_REPLICA_LEASE": LEASE})


def values(bridge: BridgeProcess) -> dict:
    text = httpx.get(bridge.root + "/metrics", timeout=10).text
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_a_replica_counts_its_renewals_and_the_replica_it_took_over():
    with replica_with_metrics("doomed") as doomed, replica_with_metrics("survivor") as survivor:
        task_of(send(doomed.url, message("sleep:30"), blocking=False))
        wait_until(lambda: health(doomed)["running"] == 1, "the long turn to run on the doomed replica")
        doomed.kill9()
        found = wait_until(lambda: values(survivor), "the survivor to take the doomed replica over",
                           until=lambda found: found.get(("ovos_a2a_replicas_taken_over_total", frozenset())))
    assert found[("ovos_a2a_replicas_taken_over_total", frozenset())] == 1, found
    assert found[("ovos_a2a_replica_tasks_failed_total", frozenset())] == 1, found
    assert found[("ovos_a2a_replica_lease_renewals_total", frozenset({("outcome", "renewed")}))] >= 1, found
