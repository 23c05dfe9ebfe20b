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
import random
import time
from collections.abc import Callable

LOG = logging.getLogger("ovos_a2a_solver.bridge")

BACKOFF_BASE = 0.25  # seconds; the n-th retry waits up to BACKOFF_BASE * 2**n


def retry_delay(attempt: int, base: float = BACKOFF_BASE) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): full jitter."""
    return random.uniform(0, base * 2 ** attempt)


class BackendBreaker:
    """Counts failed turns in a row and opens after ``threshold`` of them."""

    def __init__(self, threshold: int = 3, cool_down: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold, self.cool_down, self._clock = threshold, cool_down, clock
        self.failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self._opened_at >= self.cool_down else "open"

    def retry_in(self) -> float:
        """Seconds until a probe is let through (0 when closed or half-open)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self.cool_down - (self._clock() - self._opened_at))

    def allows(self) -> bool:
        """Whether a turn may call the backend now (closed; or the one probe when half-open)."""
        state = self.state
        if state == "closed":
            return True
        if state == "half-open" and not self._probing:
            self._probing = True
            return True
        return False

    def succeeded(self) -> None:
        if self._opened_at is not None:
            LOG.warning("the backend answers again: circuit closed")
        self.failures, self._opened_at, self._probing = 0, None, False

    def failed(self) -> None:
        self.failures += 1
        if self._probing or self.failures >= self.threshold:
            if self._opened_at is None or self._probing:
                LOG.warning("the backend failed %d turn(s) in a row: answering 'failed' at once for %g s",
                            self.failures, self.cool_down)
            self._opened_at, self._probing = self._clock(), False

    def report(self) -> dict:
        """What ``/health`` shows."""
        return {"state": self.state, "failures_in_a_row": self.failures, "retry_in": round(self.retry_in(), 1)}
