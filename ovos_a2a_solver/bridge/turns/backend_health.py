# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""When the backend fails: a turn that fails before it said anything is tried again, and a
backend that keeps failing is given a rest.

* :meth:`BackendBreaker.tries`: a turn that fails before it said anything (it ends
  ``RETRY``) is tried again, ``backend_retries`` more times at most, after exponential
  backoff with full jitter (:func:`~ovos_a2a_solver.resilience.tried_again`); a turn that
  already said something is never tried again, so nobody hears an answer twice.
* :class:`BackendBreaker`: after ``threshold`` failed turns in a row the circuit opens: every
  message is answered ``failed`` at once, without calling the backend, for ``cool_down``
  seconds; then one message is let through as a probe, and its outcome closes the circuit
  or opens it again. ``/health`` shows the state.
"""
from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable

from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.resilience import Breaker, tried_again

LOG = logging.getLogger("ovos_a2a_solver.bridge")

BACKOFF_BASE = 0.25  # seconds; the n-th retry waits up to BACKOFF_BASE * 2**n


class RelayEnd(enum.Enum):
    """How one message's work ended (its name, in lower case, is the metrics' label)."""

    ANSWERED = "answered"    # completed, a question back, or a typed ending (rejection, completion)
    NO_ANSWER = "no answer"  # the persona said nothing (the task is failed)
    FAILED = "failed"        # the persona raised (the task is failed)
    RETRY = "retry"          # it failed before saying anything, and may be tried again
    STOPPED = "stopped"      # canceled or interrupted by a shutdown
    DEADLINE = "deadline"    # the deadline passed with the turn still running
    CIRCUIT_OPEN = "circuit open"  # the backend gets a rest: the task failed at once, without it


class BackendBreaker:
    """The backend's circuit: a :class:`~ovos_a2a_solver.resilience.Breaker` that logs in the
    bridge's words and reports to ``/health``."""

    def __init__(self, threshold: int, cool_down: float, clock: Callable[[], float] | None = None,
                 metrics: Metrics = NO_METRICS) -> None:
        self.circuit = Breaker(threshold, cool_down, clock)
        self.metrics = metrics

    @property
    def state(self) -> str:
        return self.circuit.state.value

    @property
    def failures(self) -> int:
        """Failed turns in a row."""
        return self.circuit.failures

    def retry_in(self) -> float:
        """Seconds until a probe is let through (0 when closed or half-open)."""
        return self.circuit.retry_in()

    def allows(self) -> bool:
        """Whether a turn may call the backend now (closed; or the one probe when half-open)."""
        return self.circuit.allows()

    async def tries(self, attempt: Callable[[bool], Awaitable[RelayEnd]], retries: int) -> RelayEnd:
        """One turn's relay, ``attempt(retry)``, tried again after a backoff of full jitter
        (``BACKOFF_BASE``) each time it ends ``RETRY``, ``retries`` more times at most
        (``retry``: whether a failure before anything was said may end it so; not on the last
        try). Its end counts for the circuit: ``FAILED`` as a failed turn, ``ANSWERED`` as one
        that worked; any other end as neither."""
        end = await tried_again(attempt, lambda end: end is RelayEnd.RETRY, retries, BACKOFF_BASE)
        if end is RelayEnd.FAILED:
            self.failed()
        elif end is RelayEnd.ANSWERED:
            self.succeeded()
        return end

    def succeeded(self) -> None:
        if self.circuit.succeeded():
            LOG.warning("the backend answers again: circuit closed")
            self.metrics.circuit(is_open=False)

    def failed(self) -> None:
        if self.circuit.failed():
            self.metrics.circuit(is_open=True, opened=True)
            LOG.warning("the backend failed %d turn(s) in a row: answering 'failed' at once for %g s",
                        self.circuit.failures, self.circuit.cool_down)

    def report(self) -> dict:
        """What ``/health`` shows."""
        return {"state": self.state, "failures_in_a_row": self.circuit.failures,
                "retry_in": round(self.retry_in(), 1)}
