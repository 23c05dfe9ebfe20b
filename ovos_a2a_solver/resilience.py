# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How both halves of the package stand failures of what they call: backoff between tries,
and a circuit breaker. A shared leaf module (the standard library only).

* :func:`full_jitter`: exponential backoff with full jitter, a random wait up to
  ``base * 2**attempt`` (at most ``cap``), as the plugin retries an agent, the bridge a
  turn of its backend, and its push deliveries a webhook.
* :class:`Backoff`: the waits between the tries of one call, a set number of them: what the
  plugin's tries of a request to an agent (``agent.request_failures.Attempts``, which also
  bounds them by the turn's deadline and the agent's ``Retry-After``) and :func:`tried_again`
  both count.
* :func:`tried_again`: the loop of a set number of tries with that backoff between them,
  as the bridge tries a turn of its backend and a push delivery.
* :class:`Breaker`: counts failures in a row; after ``threshold`` of them the circuit opens
  for ``cool_down`` seconds, then lets one call through as a probe whose outcome closes it or
  opens it again. Its clock is injectable. The plugin's per-agent breaker and the bridge's
  backend breaker each wrap one with what they say and log.
"""
from __future__ import annotations

import asyncio
import enum
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

Outcome = TypeVar("Outcome")


def full_jitter(attempt: int, base: float, cap: float = math.inf) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): uniform in
    ``[0, min(cap, base * 2**attempt)]``."""
    return random.uniform(0.0, min(cap, base * 2 ** attempt))


class Backoff:
    """The waits between the tries of one call: :func:`full_jitter` ``(n, base, cap)`` before
    retry number ``n``, ``retries`` of them."""

    def __init__(self, retries: int, base: float, cap: float = math.inf) -> None:
        self.retries, self.base, self.cap = retries, base, cap
        self.waits = 0  # given so far

    @property
    def left(self) -> bool:
        """Whether a retry is left (the next try is not the last)."""
        return self.waits < self.retries

    def next_wait(self, *, past_retries: bool = False) -> float | None:
        """Seconds to wait before the next try; ``None`` when no retry is left, unless
        ``past_retries`` (a try worth another whatever the count: an agent that said it is busy)."""
        if not (self.left or past_retries):
            return None
        wait = full_jitter(self.waits, self.base, self.cap)
        self.waits += 1
        return wait


async def tried_again(attempt: Callable[[bool], Awaitable[Outcome]], again: Callable[[Outcome], bool],
                      retries: int, base: float, cap: float = math.inf) -> Outcome:
    """``await attempt(may_retry)``, and again after the :class:`Backoff` ``(retries, base,
    cap)`` each time ``again(outcome)`` says so, ``retries`` more times at most; the last
    outcome. ``may_retry`` tells the attempt whether a failure of its own will be tried again
    (not on the last try)."""
    backoff = Backoff(retries, base, cap)
    while True:
        outcome = await attempt(backoff.left)
        wait = backoff.next_wait() if again(outcome) else None
        if wait is None:
            return outcome
        await asyncio.sleep(wait)


class BreakerState(str, enum.Enum):
    """Where a circuit breaker stands (the values are what ``/health`` and logs show)."""

    CLOSED = "closed"        # calls go through
    OPEN = "open"            # calls fail at once until the cool-down has passed
    HALF_OPEN = "half-open"  # the cool-down has passed: the next call is the probe


class Breaker:
    """Failures in a row, and whether a call may go through now (thread-safe).

    ``failed`` and ``succeeded`` say whether the circuit changed, so that the owner can log
    it in its own words. A failure while the circuit is already open (a call begun before it
    opened) does not extend the cool-down. ``clock``: seconds, ``time.monotonic`` unless given."""

    def __init__(self, threshold: int, cool_down: float, clock: Callable[[], float] | None = None) -> None:
        if threshold < 1 or cool_down <= 0:
            raise ValueError("a breaker needs a threshold of at least 1 and a positive cool-down")
        self.threshold, self.cool_down, self._clock = threshold, cool_down, clock or time.monotonic
        self.failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self._lock = threading.Lock()

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        return BreakerState.HALF_OPEN if self.retry_in() == 0 else BreakerState.OPEN

    @property
    def probing(self) -> bool:
        """Whether the probe of a half-open circuit is under way."""
        return self._probing

    def retry_in(self) -> float:
        """Seconds until the probe may go (0 when closed or half-open)."""
        opened_at = self._opened_at
        return 0.0 if opened_at is None else max(0.0, self.cool_down - (self._clock() - opened_at))

    def allows(self) -> bool:
        """Whether a call may go now: closed, or the one probe of a half-open circuit."""
        with self._lock:
            state = self.state
            if state is BreakerState.CLOSED:
                return True
            if state is BreakerState.HALF_OPEN and not self._probing:
                self._probing = True
                return True
            return False

    def succeeded(self) -> bool:
        """A call succeeded: the circuit closes. True if it was not closed before."""
        with self._lock:
            was_open = self._opened_at is not None
            self.failures, self._opened_at, self._probing = 0, None, False
            return was_open

    def failed(self) -> bool:
        """A call failed. True if this failure opened the circuit (the threshold was
        reached, or the probe failed)."""
        with self._lock:
            self.failures += 1
            if self._probing or (self._opened_at is None and self.failures >= self.threshold):
                self._opened_at, self._probing = self._clock(), False
                return True
            return False

    def abandoned(self) -> None:
        """The call ended without an outcome (it was stopped): another probe may go."""
        with self._lock:
            self._probing = False
