# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""When the backend fails: a turn that fails before it said anything is tried again, and a
backend that keeps failing is given a rest.

* :func:`retry_delay`: exponential backoff with full jitter between the tries of one turn
  (``backend_retries`` more tries; a turn that already said something is never tried again,
  so nobody hears an answer twice).
* :class:`BackendBreaker`: after ``threshold`` failed turns in a row the circuit opens: every
  message is answered ``failed`` at once, without calling the backend, for ``cool_down``
  seconds; then one message is let through as a probe, and its outcome closes the circuit
  or opens it again. ``/health`` shows the state.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.resilience import Breaker, full_jitter

LOG = logging.getLogger("ovos_a2a_solver.bridge")

BACKOFF_BASE = 0.25  # seconds; the n-th retry waits up to BACKOFF_BASE * 2**n


def retry_delay(attempt: int, base: float = BACKOFF_BASE) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): full jitter."""
    return full_jitter(attempt, base)


class BackendBreaker:
    """The backend's circuit: a :class:`~ovos_a2a_solver.resilience.Breaker` that logs in the
    bridge's words and reports to ``/health``."""

    def __init__(self, threshold: int, cool_down: float, clock: Callable[[], float] | None = None,
                 metrics: Metrics = NO_METRICS) -> None:
        self.circuit = Breaker(threshold, cool_down, **({"clock": clock} if clock else {}))
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
