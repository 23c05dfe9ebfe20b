"""Waiting on observable state, for tests: the one polling helper of this suite.

    wait_until(lambda: health(bridge)["running"] == 0, "the turn to end")
    task = wait_until(lambda: get_task(url, task_id), "task X to complete",
                      until=lambda t: t["status"]["state"] == "TASK_STATE_COMPLETED")

A wait never returns silently on timeout: it fails the test with an ``AssertionError``
that names what it waited for and the last value it saw.
"""
from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

WAIT = 30.0  # generous upper bound for anything a test waits on (never a measure of speed)


def wait_until(probe: Callable[[], T], what: str, timeout: float = WAIT, interval: float = 0.05,
               until: Callable[[T], Any] = bool) -> T:
    """Call ``probe()`` until ``until(value)`` is true; return that value.

    ``probe`` is called at least once. An exception it raises ends the wait at once (a
    probe that cannot observe is a failure, not a reason to keep trying). On timeout an
    ``AssertionError`` names ``what`` and the last value seen.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}; last seen: {value!r}")
        time.sleep(interval)
