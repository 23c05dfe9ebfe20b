"""The suite's wait helper fails loudly: a wait that times out is a failed test, never a silent return."""
import itertools

import pytest

from support.waiting import wait_until


def test_a_wait_returns_the_first_value_that_satisfies_it():
    counter = itertools.count()
    assert wait_until(lambda: next(counter), "the counter to reach 3", interval=0, until=lambda n: n >= 3) == 3


def test_a_wait_that_times_out_fails_naming_what_it_waited_for_and_the_last_value():
    seen = itertools.count(1)
    with pytest.raises(AssertionError) as info:
        wait_until(lambda: {"running": 1, "probe": next(seen)}, "the turn to end", timeout=0.2, interval=0.01,
                   until=lambda health: health["running"] == 0)
    message = str(info.value)
    last = next(seen) - 1  # the value of the probe's last call
    assert "the turn to end" in message and "0.2 s" in message
    assert f"last seen: {{'running': 1, 'probe': {last}}}" in message


def test_a_probe_that_fails_ends_the_wait_at_once():
    def probe():
        raise ConnectionError("nothing listens")

    with pytest.raises(ConnectionError):
        wait_until(probe, "anything", timeout=30)
