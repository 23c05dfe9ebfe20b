# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's metrics, in the Prometheus text format at ``GET /metrics`` (``metrics`` on).

Each room records what it sees through the :class:`Metrics` it was given: the base class
records nothing (metrics off, the default, at no cost but a method call), and
:class:`PrometheusMetrics` keeps them with ``prometheus_client`` (imported only then).

=====================================================  ===========================================================
``ovos_a2a_requests_total``                            requests by ``binding`` (JSON-RPC, HTTP+JSON, gRPC, HTTP for
                                                       the rest), A2A ``version`` (1.0, 0.3, ``-``), ``method`` (the
                                                       A2A method, ``-`` when none) and ``outcome`` (ok, rejected,
                                                       unauthenticated, busy, error)
``ovos_a2a_messages_in_flight``                        messages being worked on now (what "busy" counts)
``ovos_a2a_busy_refusals_total``                       messages refused for now, by ``reason`` (busy, shutting_down)
``ovos_a2a_turn_duration_seconds``                     a message's work, from its start to its end, by ``end``
``ovos_a2a_backend_circuit_open``                      1 while the backend's circuit is open (or probing), else 0
``ovos_a2a_backend_circuit_opened_total``              how often it opened
``ovos_a2a_push_deliveries_total``                     webhook deliveries by ``outcome`` (delivered, refused,
                                                       undeliverable, not_sent)
``ovos_a2a_push_attempts_failed_total``                delivery attempts that failed and were tried again
``ovos_a2a_replica_lease_renewals_total``              this replica's lease renewals by ``outcome`` (renewed, lost,
                                                       error); PostgreSQL only
``ovos_a2a_replicas_taken_over_total``                 replicas whose lease expired and that this one took over
``ovos_a2a_replica_tasks_failed_total``                their unfinished tasks, failed here
=====================================================  ===========================================================

With ``--workers N`` the workers share one directory of ``prometheus_client``'s
multiprocess mode (see :func:`share_between_workers`): whichever worker answers
``/metrics`` shows the sum of all of them, counters of workers that died and were started
again included; ``ovos_a2a_backend_circuit_open`` is shown per worker (a ``pid`` label),
as each worker has its own circuit.
"""
from __future__ import annotations

import os

#: where ``prometheus_client`` keeps the values of several processes (its multiprocess mode)
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: the exposition's media type (Prometheus text format 0.0.4)
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
#: seconds; a persona's turn takes from milliseconds (an echo) to minutes (a relay's remote work)
TURN_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


class Metrics:
    """What the bridge counts. This base records nothing: metrics are off."""

    enabled = False

    def request(self, binding: str, version: str, method: str, outcome: str) -> None:
        """A request was answered (a stream: it ended)."""

    def message_began(self) -> None:
        """A message took a slot."""

    def message_ended(self) -> None:
        """A message let go of its slot."""

    def refused_busy(self, shutting_down: bool) -> None:
        """A message was refused for now."""

    def turn_ended(self, seconds: float, end: str) -> None:
        """A message's work ended, after ``seconds``, as ``end`` says."""

    def circuit(self, is_open: bool, opened: bool = False) -> None:
        """The backend's circuit is open (or probing) or closed; ``opened``: it opened just now."""

    def push_delivery(self, outcome: str) -> None:
        """A webhook delivery ended: delivered, refused, undeliverable (tries used up), not_sent."""

    def push_attempt_failed(self) -> None:
        """A delivery attempt failed and is tried again."""

    def lease_renewal(self, outcome: str) -> None:
        """This replica renewed its lease (renewed), found it lost, or could not (error)."""

    def took_over(self, tasks_failed: int) -> None:
        """This replica took over one whose lease expired, failing ``tasks_failed`` tasks."""

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in the text format, and its media type."""
        return b"", TEXT_FORMAT


#: the metrics of a bridge that keeps none
NO_METRICS = Metrics()


class PrometheusMetrics(Metrics):
    """The metrics kept with ``prometheus_client``, each bridge in a registry of its own (so
    that several in one process do not collide), or, with workers, in the shared directory."""

    enabled = True

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter("ovos_a2a_requests", "Requests answered, by binding, A2A version, method and outcome",
                                ("binding", "version", "method", "outcome"), registry=registry)
        self.in_flight = Gauge("ovos_a2a_messages_in_flight", "Messages being worked on now",
                               registry=registry, multiprocess_mode="livesum")
        self.busy = Counter("ovos_a2a_busy_refusals", "Messages refused for now (busy, or shutting down)",
                            ("reason",), registry=registry)
        self.turns = Histogram("ovos_a2a_turn_duration_seconds", "A message's work from its start to its end, "
                               "by how it ended", ("end",), buckets=TURN_BUCKETS, registry=registry)
        self.circuit_open = Gauge("ovos_a2a_backend_circuit_open", "1 while the backend's circuit is open or "
                                  "probing, else 0", registry=registry, multiprocess_mode="liveall")
        self.circuit_opened = Counter("ovos_a2a_backend_circuit_opened", "How often the backend's circuit opened",
                                      registry=registry)
        self.deliveries = Counter("ovos_a2a_push_deliveries", "Webhook deliveries, by outcome", ("outcome",),
                                  registry=registry)
        self.attempts_failed = Counter("ovos_a2a_push_attempts_failed",
                                       "Webhook delivery attempts that failed and were tried again", registry=registry)
        self.renewals = Counter("ovos_a2a_replica_lease_renewals", "This replica's lease renewals, by outcome",
                                ("outcome",), registry=registry)
        self.taken_over = Counter("ovos_a2a_replicas_taken_over",
                                  "Replicas whose lease expired, taken over by this one", registry=registry)
        self.lost_tasks = Counter("ovos_a2a_replica_tasks_failed",
                                  "Unfinished tasks of replicas taken over, failed by this one", registry=registry)
        self.circuit_open.set(0)

    def request(self, binding: str, version: str, method: str, outcome: str) -> None:
        self.requests.labels(binding, version, method, outcome).inc()

    def message_began(self) -> None:
        self.in_flight.inc()

    def message_ended(self) -> None:
        self.in_flight.dec()

    def refused_busy(self, shutting_down: bool) -> None:
        self.busy.labels("shutting_down" if shutting_down else "busy").inc()

    def turn_ended(self, seconds: float, end: str) -> None:
        self.turns.labels(end).observe(seconds)

    def circuit(self, is_open: bool, opened: bool = False) -> None:
        self.circuit_open.set(1 if is_open else 0)
        if opened:
            self.circuit_opened.inc()

    def push_delivery(self, outcome: str) -> None:
        self.deliveries.labels(outcome).inc()

    def push_attempt_failed(self) -> None:
        self.attempts_failed.inc()

    def lease_renewal(self, outcome: str) -> None:
        self.renewals.labels(outcome).inc()

    def took_over(self, tasks_failed: int) -> None:
        self.taken_over.inc()
        self.lost_tasks.inc(tasks_failed)

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CollectorRegistry, generate_latest

        if os.environ.get(MULTIPROCESS_DIR):  # every worker's values, from the shared directory
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry), TEXT_FORMAT
        return generate_latest(self.registry), TEXT_FORMAT


def metrics_for(on: bool) -> Metrics:
    """The metrics a bridge keeps: :class:`PrometheusMetrics` when ``on``, else none."""
    return PrometheusMetrics() if on else NO_METRICS


def share_between_workers(directory: str) -> None:
    """Have the workers forked after this keep their metrics in ``directory`` (empty, this
    run's own), so that each one's ``/metrics`` shows all of them. Call before any worker
    imports ``prometheus_client`` (it reads the setting at import)."""
    os.environ[MULTIPROCESS_DIR] = directory


def worker_ended(pid: int) -> None:
    """Forget the gauges of a worker that ended (its counters stay in the sums)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)
