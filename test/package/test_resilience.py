"""The circuit breaker, the backoff both halves use, and the loop of tries (the breaker on an
injected clock)."""
import asyncio

import pytest

from ovos_a2a_solver.resilience import Backoff, Breaker, BreakerState, full_jitter, tried_again


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_circuit_opens_after_the_threshold_and_lets_one_probe_through_after_the_cool_down():
    clock = Clock()
    breaker = Breaker(threshold=3, cool_down=30, clock=clock)
    assert [breaker.failed() for _ in range(3)] == [False, False, True]
    assert breaker.state is BreakerState.OPEN and not breaker.allows()
    assert breaker.retry_in() == 30
    clock.now += 29.5
    assert not breaker.allows() and breaker.retry_in() == pytest.approx(0.5)
    clock.now += 0.5
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allows() and breaker.probing      # the probe
    assert not breaker.allows()                       # and only one
    assert breaker.succeeded() is True                # it answered: closed
    assert breaker.state is BreakerState.CLOSED and breaker.failures == 0 and breaker.allows()


def test_a_failed_probe_opens_the_circuit_again_for_a_whole_cool_down():
    clock = Clock()
    breaker = Breaker(threshold=1, cool_down=10, clock=clock)
    assert breaker.failed() is True
    clock.now += 10
    assert breaker.allows()
    assert breaker.failed() is True
    assert breaker.state is BreakerState.OPEN and breaker.retry_in() == 10


def test_a_late_failure_while_open_does_not_extend_the_cool_down():
    clock = Clock()
    breaker = Breaker(threshold=1, cool_down=10, clock=clock)
    breaker.failed()
    clock.now += 6
    assert breaker.failed() is False   # a call begun before the circuit opened
    assert breaker.retry_in() == pytest.approx(4)


def test_an_abandoned_probe_lets_another_through():
    clock = Clock()
    breaker = Breaker(threshold=1, cool_down=1, clock=clock)
    breaker.failed()
    clock.now += 1
    assert breaker.allows() and not breaker.allows()
    breaker.abandoned()
    assert breaker.allows()


def test_a_success_before_the_threshold_starts_the_count_again():
    breaker = Breaker(threshold=2, cool_down=1, clock=Clock())
    breaker.failed()
    assert breaker.succeeded() is False
    assert breaker.failed() is False and breaker.state is BreakerState.CLOSED


@pytest.mark.parametrize("threshold, cool_down", [(0, 1), (1, 0)])
def test_a_breaker_that_could_never_open_or_close_is_refused(threshold, cool_down):
    with pytest.raises(ValueError):
        Breaker(threshold, cool_down)


def test_full_jitter_stays_within_its_bound_and_its_cap():
    waits = [full_jitter(attempt, 0.25, cap=1.0) for attempt in range(8) for _ in range(50)]
    assert all(0 <= wait <= 1.0 for wait in waits)
    assert max(full_jitter(0, 0.25) for _ in range(200)) <= 0.25
    assert len(set(waits)) > 100  # random, not a fixed schedule


def test_tries_go_on_while_the_outcome_says_again_and_stop_at_the_last():
    told = []

    async def attempt(may_retry: bool) -> str:
        told.append(may_retry)
        return "again" if len(told) < 3 else "done"

    assert asyncio.run(tried_again(attempt, lambda outcome: outcome == "again", 5, 0.001)) == "done"
    assert told == [True, True, True]  # the third try ended it: no more

    told.clear()
    always = asyncio.run(tried_again(attempt, lambda outcome: True, 2, 0.001))
    assert told == [True, True, False]  # retries + 1 tries; the last is told it is the last
    assert always == "done"             # the last outcome, whatever it is

    told.clear()
    assert asyncio.run(tried_again(attempt, lambda outcome: True, 0, 0.001)) == "again" and told == [False]


def test_a_backoff_gives_its_retries_doubling_waits_and_more_only_when_asked():
    backoff = Backoff(2, 0.25, cap=0.4)
    assert backoff.left
    waits = [backoff.next_wait(), backoff.next_wait()]
    assert 0 <= waits[0] <= 0.25 and 0 <= waits[1] <= 0.4 and not backoff.left
    assert backoff.next_wait() is None                       # the retries are spent
    assert 0 <= backoff.next_wait(past_retries=True) <= 0.4  # one worth it anyway, within the cap
    assert Backoff(0, 1.0).next_wait() is None
