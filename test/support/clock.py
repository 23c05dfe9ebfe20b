# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A clock a test moves by hand, for the classes that take a ``clock`` (the circuit breaker,
the card cache, the conversation store): time passes when the test says, not while it waits.

    clock = ManualClock()
    client = A2AClient(url, breaker=BreakerPolicy(cooldown=30), clock=clock)
    clock.advance(31)   # the cool-down is over
"""
from __future__ import annotations

import threading
import time


class ManualClock:
    """Seconds that move only by :meth:`advance`; callable, like ``time.monotonic`` and ``time.time``."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else float(start)  # now: good for wall-clock stamps too
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        with self._lock:
            self._now += seconds
